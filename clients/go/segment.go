package idmint

// One tag's IDs in memory: a double buffer of ranges from the nodes, the Go form of the
// buffer idmint-core runs on every node (and the Rust client over the nodes).
//
// # The hot path
//
// One atomic word packs (generation, offset): generation g names the current segment (a
// range, or one of the two parts a range is published in), held in an immutable *segment
// that carries its generation. Taking an ID is one atomic add on the word and one atomic
// load of the segment: if the segment is of generation g and the offset is below its length,
// the ID is start + offset. Otherwise the caller takes the slow path, under the buffer's
// mutex: switch to the second part of the range (and start fetching the next range), or to
// the next range if it is loaded, or make sure a fetch runs and wait for it, at most MaxWait.
//
// # Why no ID is handed out twice, and IDs strictly increase
//
// Every claim is an atomic add on the word, so claims are totally ordered. Within one
// generation the offset only grows, so each offset is claimed once. The generation changes
// only under the mutex, once the word was seen past the range's end (every offset claimed):
// the new segment is stored before the word (g+1, 0), so a claim of g+1 finds it. A claim
// whose segment is no longer of its generation (a goroutine preempted while the buffer moved
// on) is dropped: a gap, never a duplicate. Each range is asked for above the end of the
// previous one (ABOVE), and refused unless it is, so ranges increase and so do IDs.
//
// Generations are 32 bits and wrap: a goroutine would have to stall between its add and its
// load while the buffer went through 2^32 ranges (each a round trip to a node) for a stale
// claim to pass. The offset never carries into the generation: a range is at most 2^30 IDs,
// closing parks the word at 2^31, and the slow path pulls a runaway offset back.

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

const (
	offsetBits = 32
	offsetMask = 1<<offsetBits - 1
	// exhausted is the offset at which every claim fails (close, see above).
	exhausted = 1 << 31
	// runaway is an offset the slow path pulls back to exhausted.
	runaway = exhausted + 1<<30
)

func pack(gen uint32, offset uint64) uint64 { return uint64(gen)<<offsetBits | offset }

func unpack(word uint64) (uint32, uint64) { return uint32(word >> offsetBits), word & offsetMask }

// segment is one range in use, or the first part of one, never changed once published. A
// range is published in two parts, split where the next range is to be asked for: the claim
// that finds the first part used up takes the slow path, which starts the fetch and publishes
// the second part. So the hot path has no prefetch test of its own, and that fetch starts
// once per range.
type segment struct {
	gen      uint32
	start    int64
	len      uint64
	allocEnd int64    // the end (exclusive) of the whole range as allocated
	last     bool     // the tag's last range: nothing follows it
	rest     *segment // the second part, for the first part of a range
}

// tagBuffer is one tag's IDs.
type tagBuffer struct {
	tag    string
	state  atomic.Uint64
	cur    atomic.Pointer[segment]
	dated  atomic.Bool // the nodes refused the tag a range: it is dated (see client.go)
	client *Client

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change, to wake waiters
	gen     uint32        // the generation of cur
	next    *segment      // the next range, loaded, not yet in use
	floor   int64         // the end (exclusive) of the last range loaded
	// consumedBefore is how many IDs the ranges before cur held, for the rate.
	consumedBefore int64
	rate           rateMeter

	fetching  bool   // a fetch runs
	fetchSeq  uint64 // the number of the latest fetch
	inCall    bool   // the fetch is waiting for a node
	fatal     error  // how fetch fatalSeq failed for good
	fatalSeq  uint64
	lastError error // the last failure of a fetch, for ErrUnavailable
	closed    bool
	givenBack bool // close took the ranges: a range fetched later is given back by its fetch
}

func newTagBuffer(c *Client, tag string) *tagBuffer {
	b := &tagBuffer{tag: tag, client: c, changed: make(chan struct{})}
	b.cur.Store(&segment{})
	return b
}

// tryNext is the hot path: an ID from memory, or false. Small enough for the compiler to
// inline it into Next.
func (b *tagBuffer) tryNext() (int64, bool) {
	word := b.state.Add(1) - 1
	seg := b.cur.Load()
	offset := word & offsetMask
	if seg.gen != uint32(word>>offsetBits) || offset >= seg.len {
		return 0, false
	}
	return seg.start + int64(offset), true
}

// notifyLocked wakes every waiter.
func (b *tagBuffer) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// startFetchLocked starts a fetch unless one runs, the next range is loaded, or none can come.
// It returns the number of the fetch running.
func (b *tagBuffer) startFetchLocked() uint64 {
	if b.fetching || b.closed || b.next != nil || b.cur.Load().last {
		return b.fetchSeq
	}
	b.fetching = true
	b.fetchSeq++
	go b.fetch(b.fetchSeq)
	return b.fetchSeq
}

// take is the slow path: switch to the next range, or wait for one, at most MaxWait.
func (b *tagBuffer) take(ctx context.Context) (int64, error) {
	var started time.Time
	var waitingOn uint64
	for {
		if id, ok := b.tryNext(); ok {
			return id, nil
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return 0, ErrClosed
		}
		gen, offset := unpack(b.state.Load())
		seg := b.cur.Load()
		if gen != b.gen || offset < seg.len {
			b.mu.Unlock()
			continue // the buffer moved on meanwhile: claim again
		}
		if offset >= runaway {
			b.state.CompareAndSwap(pack(gen, offset), pack(gen, exhausted))
		}
		if seg.rest != nil {
			// The prefetch point: the rest of the range, and the next one asked for.
			b.switchLocked(seg.rest)
			b.startFetchLocked()
			b.mu.Unlock()
			continue
		}
		if b.next != nil {
			next := b.next
			b.next = nil
			b.switchLocked(next)
			b.mu.Unlock()
			continue
		}
		if seg.last {
			b.mu.Unlock()
			return 0, &Error{Kind: ErrTagExhausted, Code: "tag_exhausted", Tag: b.tag,
				message: "tag `" + b.tag + "` is exhausted"}
		}
		if waitingOn != 0 && b.fatalSeq == waitingOn && b.fatal != nil {
			err := b.fatal
			b.mu.Unlock()
			return 0, err
		}
		waitingOn = b.startFetchLocked()
		changed, lastError := b.changed, b.lastError
		b.mu.Unlock()

		now := time.Now()
		if started.IsZero() {
			started = now
		}
		left := b.client.config.MaxWait - now.Sub(started)
		if left <= 0 {
			if lastError == nil {
				lastError = b.client.nodes.lastFailureOr(errNoRangeInTime)
			}
			// The fetch's own ErrUnavailable: its cause, not it, is this one's.
			var e *Error
			if errors.As(lastError, &e) && e.Kind == ErrUnavailable && e.Err != nil {
				lastError = e.Err
			}
			return 0, unavailable(b.tag, time.Since(started), lastError)
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return 0, ctx.Err()
		}
		timer.Stop()
	}
}

// switchLocked puts next in use: the next range, or the second part of the current one.
func (b *tagBuffer) switchLocked(next *segment) {
	b.consumedBefore += int64(b.cur.Load().len)
	b.gen++
	next.gen = b.gen
	b.cur.Store(next)
	b.state.Store(pack(b.gen, 0))
	b.rate.observe(b.consumedBefore, time.Now())
	b.notifyLocked()
}

// fetch takes the next range from the nodes, retrying while they are unavailable, until it
// has one, the buffer closes, or a failure no retry changes.
func (b *tagBuffer) fetch(seq uint64) {
	config := &b.client.config
	pause := 10 * time.Millisecond
	maxPause := config.MaxWait / 4
	if maxPause > time.Second {
		maxPause = time.Second
	}
	if maxPause < time.Millisecond {
		maxPause = time.Millisecond
	}
	for {
		b.mu.Lock()
		if b.closed || b.fetchSeq != seq {
			b.fetching = false
			b.notifyLocked()
			b.mu.Unlock()
			return
		}
		step := planStep(&b.rate, config.MinStep, config.MaxStep, config.TargetLifetime, 0)
		b.inCall = true
		b.mu.Unlock()

		first, last, err := b.client.ranges.allocate(context.Background(), b.tag, step)

		b.mu.Lock()
		b.inCall = false
		if err == nil {
			if b.closed && b.givenBack {
				// Close has given back what it held already: this range is the fetch's to
				// give back.
				b.fetching = false
				b.notifyLocked()
				b.mu.Unlock()
				b.client.giveBack(b.tag, first, last)
				return
			}
			b.install(first, last)
			b.fetching = false
			b.lastError = nil
			b.notifyLocked()
			b.mu.Unlock()
			return
		}
		b.lastError = err
		if !isRetryable(err) {
			b.fetching = false
			b.fatal, b.fatalSeq = err, seq
			b.notifyLocked()
			b.mu.Unlock()
			return
		}
		b.notifyLocked()
		closing := b.client.closing
		b.mu.Unlock()
		// Jittered, so the tags of many clients do not retry in lockstep.
		sleep := pause/2 + time.Duration(rand.Int63n(int64(pause/2)+1))
		select {
		case <-time.After(sleep):
		case <-closing:
		}
		if pause *= 2; pause > maxPause {
			pause = maxPause
		}
	}
}

// install loads [first, last] as the next range (held unpublished when closing: close gives
// it back).
func (b *tagBuffer) install(first, last int64) {
	length := uint64(last - first + 1)
	if length > maxSegmentLen {
		length = maxSegmentLen
	}
	// The first part ends after the ID at the prefetch point; at most all but one ID, so
	// that a second part always follows it.
	split := uint64(float64(length)*b.client.config.PrefetchAt) + 1
	if split > length {
		split = length
	}
	seg := &segment{start: first, len: split, allocEnd: last + 1, last: last == maxID}
	if split < length {
		seg.rest = &segment{start: first + int64(split), len: length - split, allocEnd: last + 1, last: seg.last}
	}
	b.next = seg
	b.floor = last + 1
}

// shutdown stops every claim, waits (at most MaxWait) for a fetch that is asking a node, and
// returns the unused IDs to give back, [first, last], or ok false. A fetch that returns later
// gives its range back itself.
func (b *tagBuffer) shutdown() (first, last int64, ok bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, 0, false
	}
	b.closed = true
	// From here on every claim fails; claims before the swap got offsets below its offset,
	// so none of them is in the tail.
	_, offset := unpack(b.state.Swap(pack(b.gen, exhausted)))
	seg := b.cur.Load()
	if offset > seg.len {
		offset = seg.len
	}
	tailFrom, tailEnd := seg.start+int64(offset), seg.allocEnd
	b.notifyLocked()
	deadline := time.Now().Add(b.client.config.MaxWait)
	for b.inCall {
		changed := b.changed
		b.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			b.mu.Lock()
			break
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
		b.mu.Lock()
	}
	b.givenBack = true
	next := b.next
	b.next = nil
	b.mu.Unlock()

	hasTail := tailFrom < tailEnd
	switch {
	case next != nil && hasTail && tailEnd == next.start:
		return tailFrom, next.allocEnd - 1, true
	case next != nil:
		// Another node allocated between the two: the current tail is a gap.
		return next.start, next.allocEnd - 1, true
	case hasTail:
		return tailFrom, tailEnd - 1, true
	}
	return 0, 0, false
}
