package idmint

import (
	"fmt"
	"sync/atomic"
	"time"
)

const (
	maxNodeBits    = 24
	counterBits    = 24
	counterMask    = 1<<counterBits - 1
	seedMask       = 1<<23 - 1 // a new millisecond's counter starts below 2^23
	uuidRandomBits = 50        // random bits of a UUIDv7 without a node field
	ulidRandomBits = 56        // and of a ULID
	uuidVersion7   = 0x7000    // in the high half
	uuidVariantRFC = 1 << 63   // 0b10 in the low half
	defaultLeadMs  = 1000
)

// GeneratorOptions are a Generator's settings; the zero value is a generator without a node
// field.
type GeneratorOptions struct {
	// NodeBits is the node field's width, 0..24 (0: none).
	NodeBits int
	// Node is the node field's value, below 2^NodeBits: a leased worker ID, say. Generators
	// with different Node values never make the same ID, even if their random sources failed;
	// it costs NodeBits random bits per ID.
	Node uint32
}

// Generator makes UUIDv7s or ULIDs here, with no round trip: 48 bits of Unix milliseconds, a
// 24-bit counter, the node field, then random bits (50 or 56, less the node field's) from
// crypto/rand.
//
// Safe for any number of goroutines, lock-free: one generator's IDs strictly increase in the
// order they are issued, across all its goroutines. The first ID of a millisecond starts the
// counter at a random value below 2^23, each next one in it adds one, and past 2^24 - 1 an ID
// borrows the next millisecond (counter 0), at most a second ahead of the clock before it
// waits for it. A clock that steps back changes nothing visible: IDs count on from the last
// one until the clock catches up.
//
// Make one with NewUUID7Generator or NewULIDGenerator (the zero value cannot make IDs), and
// share it: IDs of two generators are unique (random bits, or node fields) but not ordered
// between them.
type Generator struct {
	kind IDKind
	// state is the last (millisecond, counter) issued: (ms - base) << 24 | counter. Within a
	// millisecond each ID is one atomic add, which never fails or retries and returns a value
	// above every one returned before; a counter past 2^24 - 1 carries into the millisecond
	// by itself (the borrow). A new millisecond is a compare-and-swap to (now, seed).
	state atomic.Uint64
	base  int64 // the millisecond of offset 0: one before the clock at creation
	// clockHigh is the highest clock reading that started a millisecond: the lead is measured
	// from it, so a clock stepped back does not stall the counting on.
	clockHigh atomic.Int64
	maxLeadMs int64

	nodeBits    int
	nodeInPlace uint64 // the node value shifted to its place in the low half
	randomMask  uint64

	now   func() int64   // Unix ms
	sleep func(ms int64) // waits; the clock moves meanwhile
	rand  func() uint64  // 64 random bits
}

// NewUUID7Generator is a generator of UUIDv7s (RFC 9562: version 7, variant 0b10). It refuses
// a NodeBits outside 0..24 or a Node that does not fit it with a *ConfigError naming the
// field.
func NewUUID7Generator(opts GeneratorOptions) (*Generator, error) {
	return newGenerator(KindUUIDv7, opts, systemMillis, systemSleep, secureUint64)
}

// NewULIDGenerator is a generator of ULIDs (ulid/spec); its IDs' usual text is ULIDString.
// Options as NewUUID7Generator's.
func NewULIDGenerator(opts GeneratorOptions) (*Generator, error) {
	return newGenerator(KindULID, opts, systemMillis, systemSleep, secureUint64)
}

func newGenerator(kind IDKind, opts GeneratorOptions, now func() int64, sleep func(int64), rand func() uint64) (*Generator, error) {
	if opts.NodeBits < 0 || opts.NodeBits > maxNodeBits {
		return nil, &ConfigError{Field: "NodeBits", Reason: fmt.Sprintf("%d is not in 0..%d", opts.NodeBits, maxNodeBits)}
	}
	if uint64(opts.Node) >= 1<<opts.NodeBits {
		return nil, &ConfigError{Field: "Node", Reason: fmt.Sprintf("%d does not fit NodeBits = %d (0..%d)",
			opts.Node, opts.NodeBits, uint64(1)<<opts.NodeBits-1)}
	}
	rb := randomBits(kind, opts.NodeBits)
	g := &Generator{
		kind: kind, maxLeadMs: defaultLeadMs,
		nodeBits: opts.NodeBits, nodeInPlace: uint64(opts.Node) << rb, randomMask: 1<<rb - 1,
		now: now, sleep: sleep, rand: rand,
	}
	t := now()
	g.base = t - 1 // the state 0 is then behind the clock: the first ID seeds the counter
	g.clockHigh.Store(t)
	return g, nil
}

func randomBits(kind IDKind, nodeBits int) uint {
	if kind == KindUUIDv7 {
		return uint(uuidRandomBits - nodeBits)
	}
	return uint(ulidRandomBits - nodeBits)
}

func systemMillis() int64 { return time.Now().UnixMilli() }

func systemSleep(ms int64) { time.Sleep(time.Duration(ms) * time.Millisecond) }

// Kind is the layout the generator makes.
func (g *Generator) Kind() IDKind { return g.kind }

// NodeBits is the node field's width (0: none).
func (g *Generator) NodeBits() int { return g.nodeBits }

// Next is the next ID: above every ID this generator issued before.
func (g *Generator) Next() ID128 {
	word := g.nextWord()
	return g.compose(g.base+int64(word>>counterBits), word&counterMask, g.rand())
}

// nextWord takes the next (ms offset, counter) word.
func (g *Generator) nextWord() uint64 {
	for {
		now := g.now()
		last := g.state.Load()
		if now-g.base > int64(last>>counterBits) {
			// A new millisecond: seed the counter. Lost to another goroutine, read again.
			fresh := uint64(now-g.base)<<counterBits | g.rand()&seedMask
			if g.state.CompareAndSwap(last, fresh) {
				if now > g.clockHigh.Load() {
					g.clockHigh.Store(now) // a racing lower store only makes a wait come sooner
				}
				return fresh
			}
			continue
		}
		// The clock's millisecond, or the state is ahead of the clock: count on.
		taken := g.state.Add(1)
		ms := g.base + int64(taken>>counterBits)
		if ms > now {
			high := g.clockHigh.Load()
			if now > high {
				high = now
			}
			if ms > high+g.maxLeadMs {
				g.awaitClock(ms - g.maxLeadMs)
			}
		}
		return taken
	}
}

// awaitClock holds the ID just taken until the clock reaches ms: a borrow beyond the lead.
// The value is already this caller's, so the wait delays only it.
func (g *Generator) awaitClock(ms int64) {
	for now := g.now(); now < ms; now = g.now() {
		wait := ms - now
		if wait > 100 {
			wait = 100
		}
		g.sleep(wait)
	}
}

// compose lays the fields out in the generator's kind; rand is cut to the random bits kept.
func (g *Generator) compose(ms int64, counter uint64, rand uint64) ID128 {
	r := rand & g.randomMask
	if g.kind == KindUUIDv7 {
		return fromHalves(uint64(ms)<<16|uuidVersion7|counter>>12,
			uuidVariantRFC|(counter&0xFFF)<<50|g.nodeInPlace|r)
	}
	return fromHalves(uint64(ms)<<16|counter>>8, (counter&0xFF)<<56|g.nodeInPlace|r)
}

// restoreForTest sets the last (ms, counter) issued: tests of the overflow, without 2^23 IDs.
func (g *Generator) restoreForTest(ms int64, counter uint64) {
	g.state.Store(uint64(ms-g.base)<<counterBits | counter)
}
