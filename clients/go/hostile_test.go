package idmint

// What a node that breaks the protocol, or never answers, gets from the client: nothing of
// its reply handed out, time bounded by MaxWait, memory bounded by the reply limits, the
// other requests on the same connection left alone. A real node cannot misbehave this way,
// so these tests use a fake one (fakenode_test.go).

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// allocatedDuring is how many bytes the heap handed out while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHostileRepliesCostBoundedTimeAndMemory(t *testing.T) {
	// endless writes head, then unit again and again until the client hangs up. Its chunk is
	// made once, so the fake's own allocations do not count against the client's.
	endless := func(head, unit string) func(w net.Conn) {
		chunk := []byte(strings.Repeat(unit, 64<<10/len(unit)+1))
		return func(w net.Conn) {
			w.Write([]byte(head))
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		answer func(w net.Conn)
	}{
		{"an endless error line", endless("-ERR ", "x")},
		{"an endless simple string", endless("+", "x")},
		{"a 64 MiB bulk string", endless("$67108864\r\n", "x")},
		{"a 60 million item array", endless("*60000000\r\n", ":1\r\n")},
		{"nested arrays of a million", endless("*1048576\r\n*1048576\r\n", ":1\r\n")},
		{"arrays of bulk strings", endless("*16\r\n", "$1048576\r\n"+strings.Repeat("x", 1048576)+"\r\n")},
		{"one byte at a time", func(w net.Conn) {
			for _, b := range []byte("*2\r\n:1\r\n:10\r\n") {
				time.Sleep(100 * time.Millisecond)
				if _, err := w.Write([]byte{b}); err != nil {
					return
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := startFake(t, func(w net.Conn, args []string) bool {
				if !answerSpace(w, args) {
					tc.answer(w)
				}
				return true
			})
			config := quick(fake.url())
			config.CallTimeout = time.Second // longer than MaxWait: MaxWait bounds the call
			c := newClient(t, config)
			for k, call := range []func() error{
				func() error { _, err := c.Next(bg, "t"); return err },
				func() error { _, err := c.Snowflake(bg); return err },
				func() error { _, err := c.datedNext(bg, "d"); return err },
			} {
				var err error
				var took time.Duration
				allocated := allocatedDuring(func() {
					started := time.Now()
					err = call()
					took = time.Since(started)
				})
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("call %d: %v, want ErrUnavailable", k, err)
				}
				if took > config.MaxWait+300*time.Millisecond {
					t.Errorf("call %d took %v, MaxWait is %v", k, took, config.MaxWait)
				}
				if allocated > 16<<20 {
					t.Errorf("call %d allocated %d MiB", k, allocated>>20)
				}
			}
		})
	}
}

// libraryGoroutines are the goroutines running the library's code (not the tests' fakes),
// and their stacks.
func libraryGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	var found []string
	for _, stack := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		for _, line := range strings.Split(stack, "\n") {
			line = strings.TrimSpace(line)
			if strings.Contains(line, "/clients/go/") && !strings.Contains(line, "_test.go") {
				found = append(found, stack)
				break
			}
		}
	}
	return len(found), strings.Join(found, "\n\n")
}

// goroutinesSettle waits for the library's goroutines to end.
func goroutinesSettle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, stacks := libraryGoroutines()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the library left:\n%s", n, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseAndCancelLeaveNoGoroutineBehind(t *testing.T) {
	hang := make(chan struct{})
	hung := startFake(t, func(w net.Conn, args []string) bool { <-hang; return false })
	silentAuth := startFakeRaw(t, func(w net.Conn, args []string) bool { <-hang; return false })
	defer close(hang)

	c, err := New(quick(hung.url()))
	if err != nil {
		t.Fatal(err)
	}
	// A deadline mid-wait: the caller's error, at once.
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	started := time.Now()
	if _, err := c.Next(ctx, "t"); !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 150*time.Millisecond {
		t.Errorf("%v after %v", err, time.Since(started))
	}
	cancel()
	ctx, cancel = context.WithCancel(bg)
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	if _, err := c.Snowflake(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("%v", err)
	}
	// Close while calls wait: they end, with ErrClosed or ErrUnavailable, never an ID.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = c.Next(bg, "t")
			} else {
				_, err = c.Snowflake(bg)
			}
			if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrUnavailable) {
				t.Errorf("%v", err)
			}
		}(i)
	}
	time.Sleep(50 * time.Millisecond)
	closed := time.Now()
	if err := c.Close(bg); err != nil {
		t.Error(err)
	}
	wg.Wait()
	if took := time.Since(closed); took > 600*time.Millisecond {
		t.Errorf("calls ended %v after Close", took)
	}
	if err := c.Close(bg); err != nil {
		t.Errorf("Close twice: %v", err)
	}
	if _, err := c.Next(bg, "t"); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v", err)
	}
	if _, err := c.Snowflakes(bg, 3); !errors.Is(err, ErrClosed) {
		t.Errorf("Snowflakes after Close: %v", err)
	}

	// A node that never answers AUTH: unavailable within MaxWait.
	config := quick(silentAuth.url())
	config.Token = "secret"
	c2, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	started = time.Now()
	if _, err := c2.Next(bg, "t"); !errors.Is(err, ErrUnavailable) || time.Since(started) > 550*time.Millisecond {
		t.Errorf("%v after %v", err, time.Since(started))
	}
	c2.Close(bg)
	goroutinesSettle(t)
}
