package idmint

import (
	"context"
	"errors"
	"strings"
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

func TestCloseGivesBackEveryTagsUnusedIDs(t *testing.T) {
	// One node, fixed ranges of 100: after Close the node hands out next, for each tag, the
	// first ID the client never handed out.
	n := startNode(t, sqliteStore(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 100, MaxStep: 100})
	var few, many []int64
	for i := 0; i < 10; i++ { // no refill yet
		id, err := c.Next(bg, "gb_a")
		if err != nil {
			t.Fatal(err)
		}
		few = append(few, id)
	}
	for i := 0; i < 150; i++ { // second range in use, third prefetched
		id, err := c.Next(bg, "gb_b")
		if err != nil {
			t.Fatal(err)
		}
		many = append(many, id)
	}
	time.Sleep(100 * time.Millisecond) // let the prefetch land
	if err := c.Close(bg); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().GivenBack; got < 90+50 {
		t.Errorf("given back %d IDs, want at least 140", got)
	}
	for tag, ids := range map[string][]int64{"gb_a": few, "gb_b": many} {
		v, err := n.command("INCR", tag)
		if err != nil || v.num != ids[len(ids)-1]+1 {
			t.Errorf("%s: INCR after close gave %s (%v), want %d", tag, v.describe(), err, ids[len(ids)-1]+1)
		}
	}
	for _, call := range []func() error{
		func() error { _, err := c.Next(bg, "gb_a"); return err },
		func() error { _, err := c.Next(bg, "brand_new"); return err },
		func() error { _, err := c.Snowflake(bg); return err },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v, want ErrClosed", err)
		}
	}
	if err := c.Close(bg); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestCloseRacingNextNeverHandsOutAGivenBackID(t *testing.T) {
	// Goroutines draw while the client closes; what it gives back is handed out again by the
	// node, so an ID handed out before Close and given back too would show up twice.
	n := startNode(t, sqliteStore(t))
	for round := 0; round < 5; round++ {
		c := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 20, MaxStep: 20})
		var mu sync.Mutex
		var handed []int64
		var wg sync.WaitGroup
		closed := make(chan struct{})
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					startedAfterClose := false
					select {
					case <-closed:
						startedAfterClose = true
					default:
					}
					id, err := c.Next(bg, "race")
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Error(err)
						}
						return
					}
					if startedAfterClose {
						t.Errorf("ID %d handed out by a call made after Close returned", id)
						return
					}
					mu.Lock()
					handed = append(handed, id)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(30 * time.Millisecond)
		if err := c.Close(bg); err != nil {
			t.Fatal(err)
		}
		close(closed)
		wg.Wait()
		after := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 20, MaxStep: 20})
		seen := map[int64]bool{}
		for _, id := range handed {
			seen[id] = true
		}
		for i := 0; i < 200; i++ {
			id, err := after.Next(bg, "race")
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("round %d: ID %d handed out twice (before and after a give-back)", round, id)
			}
		}
		_ = after.Close(bg)
	}
}

func TestFailoverWhenANodeDiesKeepsIDsIncreasing(t *testing.T) {
	store := sqliteStore(t)
	first, second := startNode(t, store), startNode(t, store)
	c := newClient(t, Config{Nodes: []string{first.url(), second.url()}, MinStep: 10, MaxStep: 10,
		Backoff: 200 * time.Millisecond, CallTimeout: 500 * time.Millisecond})
	var ids []int64
	for i := 0; i < 100; i++ {
		id, err := c.Next(bg, "failover")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	first.kill()
	for i := 0; i < 100; i++ {
		id, err := c.Next(bg, "failover")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !increasing(ids) {
		t.Errorf("IDs do not increase across the failover: %v", ids)
	}
	stats := c.Stats()
	if stats.Failovers < 1 || stats.NodeFailures[first.address()] < 1 {
		t.Errorf("no failover counted: %+v", stats)
	}
	// Snowflakes come from the node left too.
	if _, err := c.Snowflake(bg); err != nil {
		t.Error(err)
	}
}

func TestARestartedNodeServesAgain(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 10, MaxStep: 10,
		Backoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxWait: 10 * time.Second})
	var ids []int64
	for i := 0; i < 30; i++ {
		id, err := c.Next(bg, "restart")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	n.kill()
	n.start()
	for i := 0; i < 30; i++ {
		id, err := c.Next(bg, "restart")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !increasing(ids) {
		t.Errorf("IDs do not increase across the restart: %v", ids)
	}
}

func TestUnavailableWithinMaxWaitNamesTheCause(t *testing.T) {
	dead := "redis://127.0.0.1:" + itoa(int64(freePort(t)))
	c := newClient(t, Config{Nodes: []string{dead}, MaxWait: 500 * time.Millisecond, Backoff: 100 * time.Millisecond})
	started := time.Now()
	_, err := c.Next(bg, "nowhere")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("%v, want ErrUnavailable", err)
	}
	if waited := time.Since(started); waited > 2*time.Second {
		t.Errorf("waited %v", waited)
	}
	var e *Error
	if !errors.As(err, &e) || e.Err == nil || !e.Retryable() || e.Code != "store_unavailable" ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("no cause: %v", err)
	}
	if strings.Count(err.Error(), "could serve") != 1 {
		t.Errorf("said twice: %v", err)
	}
	if _, err := c.Snowflake(bg); !errors.Is(err, ErrUnavailable) {
		t.Errorf("snowflake: %v, want ErrUnavailable", err)
	}
	// A context that ends first ends the wait.
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Next(ctx, "nowhere2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v, want the context's error", err)
	}
}

func TestAWrongOrMissingTokenIsAnAuthError(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	wrong := newClient(t, Config{Nodes: []string{n.url()}, Token: "wrong", MaxWait: 2 * time.Second})
	started := time.Now()
	_, err := wrong.Next(bg, "auth")
	var refused *Error
	if !errors.Is(err, ErrAuth) || !errors.As(err, &refused) || refused.Code != "unauthorized" {
		t.Errorf("wrong token: %v, want ErrAuth with the code unauthorized", err)
	}
	if time.Since(started) > time.Second {
		t.Errorf("a refused token waited out MaxWait")
	}
	var none *Client
	none, err = New(Config{Nodes: []string{n.url()}, MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close(bg)
	_, err = none.Snowflake(bg)
	var e *Error
	if !errors.Is(err, ErrAuth) || !errors.As(err, &e) || e.Reply == "" {
		t.Errorf("no token: %v, want ErrAuth with the node's reply", err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	good := []string{"redis://127.0.0.1:6379"}
	for _, tc := range []struct {
		config Config
		field  string
	}{
		{Config{}, "Nodes"},
		{Config{Nodes: []string{"http://127.0.0.1:1"}}, "Nodes"},
		{Config{Nodes: []string{"redis://:secret@127.0.0.1:1"}}, "Nodes"},
		{Config{Nodes: []string{"redis://"}}, "Nodes"},
		{Config{Nodes: good, Token: "  "}, "Token"},
		{Config{Nodes: good, MinStep: 10, MaxStep: 5}, "MaxStep"},
		{Config{Nodes: good, MinStep: -1}, "MinStep"},
		{Config{Nodes: good, MaxWait: -time.Second}, "MaxWait"},
		{Config{Nodes: good, PrefetchAt: 1.5}, "PrefetchAt"},
		{Config{Nodes: good, Backoff: 2 * time.Second, MaxBackoff: time.Second}, "MaxBackoff"},
		{Config{Nodes: good, SnowflakeBatch: -3}, "SnowflakeBatch"},
		{Config{Nodes: []string{"rediss://127.0.0.1:1"}, CAPEM: []byte("not pem")}, "CAPEM"},
	} {
		_, err := New(tc.config)
		var ce *ConfigError
		if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%v: %v, want a ConfigError of %s", tc.config, err, tc.field)
		}
	}
	shown := Config{Nodes: good, Token: "s3cret"}
	for _, text := range []string{shown.String(), shown.GoString()} {
		if contains(text, "s3cret") {
			t.Errorf("the token shows: %s", text)
		}
	}
}

func TestSnowflakesIncreaseAndStaleBatchesAreDropped(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, SnowflakeMaxAge: 50 * time.Millisecond})
	ids, err := c.Snowflakes(bg, 500)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		id, err := c.Snowflake(bg)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !increasing(ids) {
		t.Fatal("snowflakes do not increase")
	}
	batches := c.Stats().SnowflakeBatches
	time.Sleep(100 * time.Millisecond)
	if _, err := c.Snowflake(bg); err != nil {
		t.Fatal(err)
	}
	if c.Stats().SnowflakeBatches != batches+1 {
		t.Errorf("a batch older than SnowflakeMaxAge was used")
	}
	for _, bad := range []int{0, -1, MaxSnowflakes + 1} {
		if _, err := c.Snowflakes(bg, bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Snowflakes(%d): %v, want ErrInvalidArgument", bad, err)
		}
	}
	all, err := c.Snowflakes(bg, MaxSnowflakes)
	if err != nil || len(all) != MaxSnowflakes || !increasing(all) {
		t.Errorf("Snowflakes(%d): %d IDs, %v", MaxSnowflakes, len(all), err)
	}
}

func TestSnowflakesFromManyGoroutinesAreUnique(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, SnowflakeBatch: 16})
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []int64
			for i := 0; i < 500; i++ {
				id, err := c.Snowflake(bg)
				if err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, id)
			}
			if !increasing(mine) {
				t.Error("one goroutine's snowflakes do not increase")
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range mine {
				if seen[id] {
					t.Errorf("snowflake %d twice", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
}

func TestTheNodesMaxCountIsLearned(t *testing.T) {
	n := startNode(t, sqliteStore(t), "--max-count", "50")
	c := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 200, MaxStep: 1000})
	var ids []int64
	for i := 0; i < 500; i++ {
		id, err := c.Next(bg, "capped")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !increasing(ids) {
		t.Error("IDs do not increase")
	}
	if got := c.ranges.largest.Load(); got != 50 {
		t.Errorf("learned %d, want 50", got)
	}
	if s := c.Stats(); s.RangeIDs > 50*s.Ranges {
		t.Errorf("a range above the nodes' cap: %+v", s)
	}
	// Snowflake batches keep within it too (the default batch is 64), even for a call that
	// asks for more than one batch may hold.
	fresh := newClient(t, Config{Nodes: []string{n.url()}})
	flakes, err := fresh.Snowflakes(bg, 200)
	if err != nil || len(flakes) != 200 || !increasing(flakes) {
		t.Errorf("snowflakes: %d, %v", len(flakes), err)
	}
}

func TestBadTagsAreRefusedBeforeAnythingIsSent(t *testing.T) {
	c := newClient(t, Config{Nodes: []string{"redis://127.0.0.1:1"}})
	for _, tag := range []string{"", " lead", "trail ", "a\nb", string(make([]byte, 129)), "\xff"} {
		_, err := c.Next(bg, tag)
		var e *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Code != "invalid_tag" {
			t.Errorf("%q: %v", tag, err)
		}
	}
}

func TestTagHandleDrawsTheSameSequence(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, MinStep: 10, MaxStep: 10})
	h, err := c.Tag("handle")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := 0; i < 50; i++ {
		a, err := h.Next(bg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Next(bg, "handle")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a, b)
	}
	if !increasing(ids) {
		t.Errorf("not one sequence: %v", ids)
	}
}
