package idmint

// The nodes as the source of a tag's ranges. Each range is `IDMINT.RANGE tag n ABOVE last`,
// `last` the end of the previous range this client got for the tag. Nodes each hold their own
// part of a tag's sequence, so a node the client fails over to may be behind the one it left;
// ABOVE makes it serve IDs above what the client holds already, so the client's IDs keep
// increasing.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// remoteRanges takes ranges from the nodes and gives their unused tails back.
type remoteRanges struct {
	nodes   *nodes
	maxWait time.Duration
	mu      sync.Mutex
	last    map[string]lastRange // per tag
	// largest is the largest range the nodes grant (their --max-count), once one refused
	// more; math.MaxInt64 until then.
	largest atomic.Int64
}

// lastRange is the last range the client got for a tag: its last ID and the node that gave it.
type lastRange struct {
	last int64
	node int
}

// countLimit finds N in the nodes' refusal "count must be between 1 and N" (IDMINT.RANGE) or
// "COUNT must be between 1 and N" (IDMINT.SNOWFLAKE COUNT).
var countLimit = regexp.MustCompile(`(?i)count must be between 1 and (\d+)`)

// learnCountLimit reads the nodes' --max-count from their refusal of `asked` IDs: it keeps it
// as the most any later request asks for (ranges and snowflake batches alike), and returns it.
func (r *remoteRanges) learnCountLimit(err error, asked int64) (int64, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrRefused {
		return 0, false
	}
	m := countLimit.FindStringSubmatch(e.Reply)
	if m == nil {
		return 0, false
	}
	n, perr := strconv.ParseInt(m[1], 10, 64)
	if perr != nil || n < 1 || n >= asked {
		return 0, false
	}
	r.largest.Store(n)
	return n, true
}

// capCount is n within the largest count the nodes grant, as far as the client knows it.
func (r *remoteRanges) capCount(n int64) int64 {
	if largest := r.largest.Load(); n > largest {
		return largest
	}
	return n
}

func newRemoteRanges(ns *nodes, maxWait time.Duration) *remoteRanges {
	r := &remoteRanges{nodes: ns, maxWait: maxWait, last: map[string]lastRange{}}
	r.largest.Store(math.MaxInt64)
	return r
}

// allocate takes a range of at most step IDs of tag, above every ID the client got for it:
// [first, last].
func (r *remoteRanges) allocate(ctx context.Context, tag string, step int64) (int64, int64, error) {
	r.mu.Lock()
	previous, held := r.last[tag]
	r.mu.Unlock()
	step = r.capCount(step)
	for {
		args := []string{"IDMINT.RANGE", tag, strconv.FormatInt(step, 10)}
		if held {
			args = append(args, "ABOVE", strconv.FormatInt(previous.last, 10))
		}
		node, reply, err := r.nodes.call(ctx, tag, r.maxWait, rangeShape, args...)
		if err != nil {
			// The nodes' --max-count is below the client's MaxStep: ask for less, from now
			// on, rather than fail every refill once the rate grows.
			if n, ok := r.learnCountLimit(err, step); ok {
				step = n
				continue
			}
			return 0, 0, err
		}
		floor := int64(0)
		if held {
			floor = previous.last
		}
		first, last, ok := checkRange(reply, floor, step)
		if !ok {
			// A node that breaks the contract: never hand its IDs out.
			return 0, 0, badReply(r.nodes.list[node].address, tag, fmt.Sprintf(
				"IDMINT.RANGE %s %d with %s, not a run of at most %d above %d",
				tag, step, describeRange(reply), step, floor))
		}
		r.mu.Lock()
		r.last[tag] = lastRange{last: last, node: node}
		r.mu.Unlock()
		r.nodes.stats.ranges.Add(1)
		r.nodes.stats.rangeIDs.Add(last - first + 1)
		return first, last, nil
	}
}

// checkRange reads IDMINT.RANGE's [first, last] and checks it is a run of at most step IDs
// strictly above floor (and, IDs being positive int64s, at least 1).
func checkRange(reply value, floor, step int64) (int64, int64, bool) {
	if reply.kind != '*' || len(reply.array) != 2 || reply.array[0].kind != ':' || reply.array[1].kind != ':' {
		return 0, 0, false
	}
	first, last := reply.array[0].num, reply.array[1].num
	if first < 1 || first > last || first <= floor || last-first >= step {
		return 0, 0, false
	}
	return first, last, true
}

func describeRange(reply value) string {
	if reply.kind == '*' && len(reply.array) == 2 {
		return "[" + reply.array[0].describe() + ", " + reply.array[1].describe() + "]"
	}
	return reply.describe()
}

// giveBack returns the unused IDs [first, last] of tag to the node that handed them out,
// if they end the last range the client got for the tag. It reports whether the node took
// them back.
func (r *remoteRanges) giveBack(ctx context.Context, tag string, first, last int64) (bool, error) {
	r.mu.Lock()
	previous, held := r.last[tag]
	r.mu.Unlock()
	if !held || first > last || last != previous.last {
		return false, nil
	}
	reply, err := r.nodes.callOn(ctx, previous.node, integerShape, "IDMINT.GIVEBACK", tag,
		strconv.FormatInt(first, 10), strconv.FormatInt(last, 10))
	if err != nil {
		return false, err
	}
	taken := reply.kind == ':' && reply.num == 1
	if taken {
		r.nodes.stats.givenBack.Add(last - first + 1)
	}
	return taken, nil
}
