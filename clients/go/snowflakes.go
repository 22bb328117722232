package idmint

// Snowflakes in small batches that never get old.
//
// A snowflake carries the time it was made, and its use is to sort by it; a batch kept for
// long would hand out IDs whose time lies in the past. So what is left of a batch is thrown
// away once it is older than SnowflakeMaxAge (counted from when it was asked for), and a call
// that finds none fresh asks a node for a new one and takes its own share of the answer
// whatever the round trip took (a node farther away than the bound still serves). The
// snowflakes one client hands out strictly increase: an ID not above the last one handed out
// (a batch from another node whose clock or worker ID sorts lower) is skipped.
//
// Unless the nodes hand out their IDs permuted (serve --permutation-key-file): then no ID
// sorts by time, and keeping them in order would skip nearly all of them. The client asks once,
// before its first batch, with IDMINT.SPACE (a node too old to know it hands out plain IDs),
// and hands permuted batches out as they come.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// MaxSnowflakes is the most snowflakes one Snowflakes call hands out (the nodes' default
// --max-count).
const MaxSnowflakes = 10_000

// snowflakes is the batch in hand.
type snowflakes struct {
	batch  int
	maxAge time.Duration

	mu       sync.Mutex
	ids      []int64
	askedAt  time.Time
	last     int64
	permuted int // 0 not asked yet, 1 plain, 2 permuted
	// asking is held (a one-slot semaphore) by the one call asking for a batch: callers that
	// find the batch empty wait for it, as long as their context allows.
	asking chan struct{}
}

func newSnowflakes(batch int, maxAge time.Duration) *snowflakes {
	return &snowflakes{batch: batch, maxAge: maxAge, asking: make(chan struct{}, 1)}
}

// takeFresh moves up to n-len(out) IDs of a batch no older than maxAge into out.
func (s *snowflakes) takeFresh(n int, out []int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.askedAt.IsZero() || time.Since(s.askedAt) > s.maxAge {
		s.ids = nil
	}
	return s.takeLocked(n, out)
}

// takeLocked moves up to n-len(out) IDs into out, however old: for the call that asked.
func (s *snowflakes) takeLocked(n int, out []int64) []int64 {
	for len(out) < n && len(s.ids) > 0 {
		id := s.ids[0]
		s.ids = s.ids[1:]
		if s.permuted == 2 {
			out = append(out, id)
		} else if id > s.last {
			s.last = id
			out = append(out, id)
		}
	}
	return out
}

// take returns n snowflakes (1..=MaxSnowflakes), increasing, none from a batch kept past the
// bound.
func (s *snowflakes) take(ctx context.Context, c *Client, n int) ([]int64, error) {
	if n < 1 || n > MaxSnowflakes {
		return nil, &Error{Kind: ErrInvalidArgument, Code: "invalid_argument",
			message: fmt.Sprintf("snowflakes: n must be between 1 and %d, not %d", MaxSnowflakes, n)}
	}
	started := time.Now()
	out := s.takeFresh(n, make([]int64, 0, n))
	for len(out) < n {
		select {
		case s.asking <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var err error
		out, err = s.ask(ctx, c, n, out, started)
		<-s.asking
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ask takes what a fresh batch holds, or asks a node for one (holding s.asking).
func (s *snowflakes) ask(ctx context.Context, c *Client, n int, out []int64, started time.Time) ([]int64, error) {
	if out = s.takeFresh(n, out); len(out) == n {
		return out, nil
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	left := c.config.MaxWait - time.Since(started)
	if left <= 0 {
		return nil, unavailable("", time.Since(started), errNoSnowflakesInTime)
	}
	s.mu.Lock()
	known := s.permuted != 0
	s.mu.Unlock()
	if !known {
		permuted, err := askPermuted(ctx, c, left)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.permuted = 1
		if permuted {
			s.permuted = 2
		}
		s.mu.Unlock()
		if left = c.config.MaxWait - time.Since(started); left <= 0 {
			return nil, unavailable("", time.Since(started), errNoSnowflakesInTime)
		}
	}
	want := s.batch
	if n-len(out) > want {
		want = n - len(out)
	}
	want = int(c.ranges.capCount(int64(want)))
	askedAt := time.Now()
	node, reply, err := c.nodes.call(ctx, "", left, idsShape, "IDMINT.SNOWFLAKE", "COUNT", strconv.Itoa(want))
	if err != nil {
		// The nodes grant fewer at once (--max-count): ask for that many from now on.
		if _, learned := c.ranges.learnCountLimit(err, int64(want)); learned {
			return out, nil
		}
		return nil, err
	}
	ids, ok := checkIDs(reply, want)
	if !ok {
		return nil, badReply(c.nodes.list[node].address, "",
			fmt.Sprintf("IDMINT.SNOWFLAKE COUNT %d with %s, not up to %d IDs", want, reply.describe(), want))
	}
	c.nodes.stats.snowflakeBatches.Add(1)
	before := len(out)
	s.mu.Lock()
	s.ids, s.askedAt = ids, askedAt
	out = s.takeLocked(n, out)
	s.mu.Unlock()
	if len(out) == before {
		// Every ID of the batch sorts below one handed out already (a node whose clock is
		// behind the last one's): let time pass before asking again.
		time.Sleep(time.Millisecond)
	}
	return out, nil
}

// checkIDs reads an array of 1..=max IDs, each in 1..2^63-1.
func checkIDs(reply value, max int) ([]int64, bool) {
	if reply.kind != '*' || len(reply.array) < 1 || len(reply.array) > max {
		return nil, false
	}
	ids := make([]int64, len(reply.array))
	for i, v := range reply.array {
		if v.kind != ':' || v.num < 1 {
			return nil, false
		}
		ids[i] = v.num
	}
	return ids, true
}

// askPermuted asks IDMINT.SPACE whether the nodes hand out permuted IDs; false from a node
// that does not know the command (older than permuted IDs).
func askPermuted(ctx context.Context, c *Client, maxWait time.Duration) (bool, error) {
	_, reply, err := c.nodes.call(ctx, "", maxWait, mapShape, "IDMINT.SPACE")
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == ErrRefused && contains(e.Reply, "unknown command") {
			return false, nil
		}
		return false, err
	}
	// A map in RESP2: its keys and values in turn.
	for i := 0; i+1 < len(reply.array); i += 2 {
		if reply.array[i].str == "permuted" {
			return reply.array[i+1].kind == ':' && reply.array[i+1].num == 1, nil
		}
	}
	return false, nil
}
