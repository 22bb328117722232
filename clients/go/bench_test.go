package idmint

// Item 7 of issue 30: Next from memory against Go's plain atomic increment and against a round
// trip of INCR to a real node. From clients/go:
//
//	IDMINT_BIN=/path/to/idmint go test -run '^$' -bench . -benchtime 2s -count 5
//
// The INCR round trip goes through this module's own RESP codec over one TCP connection:
// go-redis, the ecosystem's usual client, cannot be installed here (no module proxy), and a
// round trip costs the same network and server work whichever client sends it.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// benchClient is a client whose ranges are large enough that a benchmark draws from memory:
// ranges of up to a million IDs (the node started with --max-count to match), the next one
// asked for when a fifth of the current one is used.
func benchClient(b *testing.B) *Client {
	b.Helper()
	n := startNode(b, sqliteStore(b), "--max-count", "1000000")
	c := newClient(b, Config{Nodes: []string{n.url()}, MinStep: 1_000_000, MaxStep: 1_000_000})
	// Warm up: the first range, and the connection, are taken before the timer starts.
	for i := 0; i < 10; i++ {
		if _, err := c.Next(context.Background(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

func BenchmarkNext(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Next(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextTagHandle(b *testing.B) {
	c := benchClient(b)
	h, err := c.Tag("bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextParallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Next(ctx, "bench"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAtomicAddInt64(b *testing.B) {
	var n int64
	for i := 0; i < b.N; i++ {
		atomic.AddInt64(&n, 1)
	}
}

func BenchmarkAtomicAddInt64Parallel(b *testing.B) {
	var n int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			atomic.AddInt64(&n, 1)
		}
	})
}

func BenchmarkIncrRoundTrip(b *testing.B) {
	n := startNode(b, sqliteStore(b))
	deadline := time.Now().Add(5 * time.Second)
	c, err := dial(context.Background(), n.address(), nil, testToken, deadline)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := c.do(ctx, "INCR", "bench")
		if err != nil || v.kind != ':' {
			b.Fatalf("INCR: %s %v", v.describe(), err)
		}
	}
}
