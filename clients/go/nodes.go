package idmint

// The nodes a client knows, and failing over between them.
//
// A request goes to the node that answered last (so a client stays where it is), then to the
// others in order. A node that fails (no connection, a timeout, a dropped connection, a reply
// that does not parse, or TRYAGAIN: its store is unavailable) is avoided for a back-off period
// that doubles at each further failure (failures of requests in flight together count once)
// and resets when it answers. When every node is avoided, only the one whose back-off ends
// first is tried, after a short pause: a client never sits idle while a node might answer, and
// never hammers a cluster that is down.
//
// A node's refusal is not a failure of the node: another node is tried, but when every node
// refused in the same round the refusal is the answer at once, without waiting out MaxWait.
// Refusals are the answers no retry changes (errors.go: isRefusal).
//
// A request whose node died while it was in flight may or may not have been served there. It
// is sent again to the next node: a range the dead node handed out is lost (a gap, never
// reissued, since that node took it from its store), never given to anyone else.

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// nodes are the client's nodes and their health.
type nodes struct {
	list        []*node
	preferred   atomic.Int64 // the node that answered last
	callTimeout time.Duration
	backoff     time.Duration
	maxBackoff  time.Duration
	stats       *counters
	closed      atomic.Bool // set by close: no more requests
	// lastFailure is the last failure of any node, for an ErrUnavailable whose own wait saw
	// none end (a fetch still waiting for a node when the caller's MaxWait ran out).
	lastFailure atomic.Value // of failureBox
}

// failureBox holds a failure in lastFailure (an atomic.Value keeps one concrete type).
type failureBox struct{ err error }

// lastFailureOr is the last failure of a node, or fallback when none failed yet.
func (ns *nodes) lastFailureOr(fallback error) error {
	if box, ok := ns.lastFailure.Load().(failureBox); ok {
		return box.err
	}
	return fallback
}

// node is one node: how to reach it, its connection, its health.
type node struct {
	address string // host:port
	tls     *tls.Config
	token   string

	// connecting is held (a one-slot semaphore, so waiting for it respects a deadline) while
	// the connection is replaced.
	connecting chan struct{}
	mu         sync.Mutex
	conn       *conn
	retired    []*conn       // connections taken out of use with requests still on them
	downUntil  time.Time     // avoided until then
	nextPause  time.Duration // the next back-off; 0 when healthy
	closed     bool
}

// attemptError is how one attempt on one node failed.
type attemptError struct {
	refused  *replyError  // the node refused the request
	failed   *nodeFailure // the node failed
	cutShort bool         // failed: no answer in what was left of MaxWait, not the node's fault
}

func newNodes(c *Config) (*nodes, error) {
	ns := &nodes{callTimeout: c.CallTimeout, backoff: c.Backoff, maxBackoff: c.MaxBackoff}
	var addresses []string
	for _, raw := range c.Nodes {
		address, err := parseNode(raw, c.CAPEM)
		if err != nil {
			return nil, err
		}
		ns.list = append(ns.list, &node{
			address:    address.hostPort,
			tls:        address.tls,
			token:      c.Token,
			connecting: make(chan struct{}, 1),
		})
		addresses = append(addresses, address.hostPort)
	}
	ns.stats = newCounters(addresses)
	return ns, nil
}

// call sends args to the nodes in turn until one answers, for at most maxWait (and no longer
// than ctx allows). It returns which node answered and its reply. Its errors: a refusal as
// the caller's *Error, ErrUnavailable naming the last failure, or ctx's error.
func (ns *nodes) call(ctx context.Context, tag string, maxWait time.Duration, want shape, args ...string) (int, value, error) {
	started := time.Now()
	deadline := started.Add(maxWait)
	pause := 10 * time.Millisecond
	var last error // the last failure, over every round
	for {
		if ns.closed.Load() {
			return 0, value{}, ErrClosed
		}
		var lastRefusal *Error
		allRefused := true
		for _, i := range ns.order() {
			// No attempt outlasts the call's MaxWait: CallTimeout bounds each one, and
			// what is left of MaxWait the last.
			timeout := ns.callTimeout
			if left := time.Until(deadline); left < timeout {
				timeout = left
			}
			if timeout <= 0 {
				break
			}
			v, failure := ns.try(ctx, i, timeout, want, args...)
			if failure == nil {
				if int(ns.preferred.Swap(int64(i))) != i {
					ns.stats.failovers.Add(1)
				}
				return i, v, nil
			}
			if failure.refused != nil {
				lastRefusal = refusal(ns.list[i].address, tag, failure.refused)
				last = lastRefusal
			} else {
				allRefused = false
				// A node cut short by the end of MaxWait says less than the failure before.
				if !failure.cutShort || last == nil {
					last = failure.failed
				}
			}
			if err := ctx.Err(); err != nil {
				return 0, value{}, err
			}
			if !time.Now().Before(deadline) {
				break
			}
		}
		if allRefused && lastRefusal != nil {
			return 0, value{}, lastRefusal
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, value{}, unavailable(tag, time.Since(started), last)
		}
		if pause > left {
			pause = left
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return 0, value{}, ctx.Err()
		case <-timer.C:
		}
		if pause *= 2; pause > 200*time.Millisecond {
			pause = 200 * time.Millisecond
		}
	}
}

// callOn sends args to node i only (IDMINT.GIVEBACK goes where the range came from).
func (ns *nodes) callOn(ctx context.Context, i int, want shape, args ...string) (value, error) {
	v, failure := ns.try(ctx, i, ns.callTimeout, want, args...)
	switch {
	case failure == nil:
		return v, nil
	case failure.refused != nil:
		return value{}, refusal(ns.list[i].address, "", failure.refused)
	default:
		return value{}, failure.failed
	}
}

// order is the nodes to try: the preferred one, then the others, those not avoided first;
// when every node is avoided, only the one whose back-off ends first.
func (ns *nodes) order() []int {
	now := time.Now()
	n := len(ns.list)
	first := int(ns.preferred.Load()) % n
	ready := make([]int, 0, n)
	soonest, soonestAt := -1, time.Time{}
	for k := 0; k < n; k++ {
		i := (first + k) % n
		until := ns.list[i].avoidedUntil()
		if until.After(now) {
			if soonest < 0 || until.Before(soonestAt) {
				soonest, soonestAt = i, until
			}
			continue
		}
		ready = append(ready, i)
	}
	if len(ready) == 0 && soonest >= 0 {
		ready = append(ready, soonest)
	}
	return ready
}

// try is one attempt on node i, bounded by timeout (connecting included): CallTimeout, or
// less when that is all the call has left. A reply not of the shape wanted is the node's
// failure; no reply within CallTimeout too, but not within less (the node was not given the
// time it is allowed).
func (ns *nodes) try(ctx context.Context, i int, timeout time.Duration, want shape, args ...string) (value, *attemptError) {
	nd := ns.list[i]
	attempt, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := nd.connection(attempt)
	var v value
	if err == nil {
		v, err = c.do(attempt, args...)
		if err == nil && v.kind == '-' {
			err = parseReplyError(v.str)
		}
	}
	if err == nil && want.ok != nil && !want.ok(v) {
		// As a dropped connection: the reply says nothing of what else is on it.
		return value{}, ns.failed(i, &nodeFailure{node: nd.address,
			what: "answered " + args[0] + " with " + v.describe() + ", not " + want.what}, c)
	}
	if err == nil {
		nd.answered()
		return v, nil
	}
	if ctx.Err() != nil {
		// The caller gave up: not the node's failure.
		return value{}, &attemptError{failed: &nodeFailure{node: nd.address, what: "was left", err: ctx.Err()}}
	}
	var reply *replyError
	if errors.As(err, &reply) {
		if reply.isRefusal() {
			nd.answered()
			return value{}, &attemptError{refused: reply}
		}
		// TRYAGAIN: the node answers, its store does not. Keep the connection (and what it
		// may give back); avoid the node for a while. Other error replies the same.
		what := "failed"
		if reply.code == "TRYAGAIN" {
			what = "is unavailable"
		}
		return value{}, ns.failed(i, &nodeFailure{node: nd.address, what: what, reply: reply}, nil)
	}
	what := "failed"
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		what = "did not answer within " + timeout.String()
		if timeout < ns.callTimeout {
			return value{}, &attemptError{cutShort: true, failed: &nodeFailure{node: nd.address,
				what: what + ", what was left of the call's MaxWait"}}
		}
		err = nil
	}
	return value{}, ns.failed(i, &nodeFailure{node: nd.address, what: what, err: err}, c)
}

// failed marks node i failed: avoided for a while, and `broken` (the connection that failed,
// if any) retired.
func (ns *nodes) failed(i int, failure *nodeFailure, broken *conn) *attemptError {
	nd := ns.list[i]
	ns.lastFailure.Store(failureBox{err: failure})
	if nd.fail(ns.backoff, ns.maxBackoff, broken) {
		ns.stats.nodeFailed(i)
	}
	return &attemptError{failed: failure}
}

// close drops every connection; later requests fail.
func (ns *nodes) close() {
	ns.closed.Store(true)
	for _, nd := range ns.list {
		nd.mu.Lock()
		nd.closed = true
		if nd.conn != nil {
			nd.conn.close()
			nd.conn = nil
		}
		for _, c := range nd.retired {
			c.close()
		}
		nd.retired = nil
		nd.mu.Unlock()
	}
}

// connection is the node's open connection, or a new one.
func (nd *node) connection(ctx context.Context) (*conn, error) {
	select {
	case nd.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-nd.connecting }()
	nd.mu.Lock()
	c, closed := nd.conn, nd.closed
	nd.mu.Unlock()
	if closed {
		return nil, errConnClosed
	}
	if c != nil && c.usable() {
		return c, nil
	}
	deadline, _ := ctx.Deadline()
	c, err := dial(ctx, nd.address, nd.tls, nd.token, deadline)
	if err != nil {
		return nil, err
	}
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.closed {
		c.close()
		return nil, errConnClosed
	}
	nd.conn = c
	return c, nil
}

func (nd *node) avoidedUntil() time.Time {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.downUntil
}

// answered resets the node's back-off.
func (nd *node) answered() {
	nd.mu.Lock()
	nd.downUntil, nd.nextPause = time.Time{}, 0
	nd.mu.Unlock()
}

// fail steps the back-off up, once for requests that were in flight together, and retires
// the connection `broken` (the next request opens another; those in flight on it keep
// waiting for their replies). It reports whether this was a new failure.
func (nd *node) fail(first, max time.Duration, broken *conn) bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if broken != nil {
		broken.retire()
		if nd.conn == broken {
			nd.conn = nil
		}
		// Kept for close, which ends the requests on them too; those closed since dropped.
		open := nd.retired[:0]
		for _, c := range append(nd.retired, broken) {
			if !c.isBroken() {
				open = append(open, c)
			}
		}
		nd.retired = open
	}
	now := time.Now()
	if nd.downUntil.After(now) {
		return false
	}
	pause := nd.nextPause
	if pause == 0 {
		pause = first
	}
	if pause > max {
		pause = max
	}
	nd.downUntil = now.Add(pause)
	if nd.nextPause = pause * 2; nd.nextPause > max {
		nd.nextPause = max
	}
	return true
}
