package idmint

import (
	"context"
	"sync"
	"testing"
	"time"
)

var bg = context.Background()

func TestIDsIncreaseAndAreUniqueAcrossGoroutinesAndClients(t *testing.T) {
	store := sqliteStore(t)
	a, b := startNode(t, store), startNode(t, store)
	one := newClient(t, Config{Nodes: []string{a.url(), b.url()}, MinStep: 50, MaxStep: 500,
		TargetLifetime: 50 * time.Millisecond})
	two := newClient(t, Config{Nodes: []string{b.url(), a.url()}, MinStep: 50, MaxStep: 500})
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for _, c := range []*Client{one, one, one, two, two, two} {
		wg.Add(1)
		go func(c *Client) {
			defer wg.Done()
			mine := make([]int64, 0, 20_000)
			for i := 0; i < 20_000; i++ {
				id, err := c.Next(bg, "unique")
				if err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, id)
			}
			if !increasing(mine) {
				t.Error("one goroutine's IDs do not increase")
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	seen := make(map[int64]bool, len(all))
	for _, id := range all {
		if seen[id] {
			t.Fatalf("ID %d handed out twice", id)
		}
		seen[id] = true
	}
	if len(all) != 120_000 {
		t.Fatalf("%d IDs", len(all))
	}
	stats := one.Stats()
	if stats.Ranges < 2 || stats.RangeIDs/stats.Ranges <= 50 {
		t.Errorf("the range size does not follow the rate: %+v", stats)
	}
}
