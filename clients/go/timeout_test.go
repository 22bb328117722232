package idmint

import (
	"net"
	"testing"
	"time"
)

// A request that times out leaves the connection to the others in flight on it: their
// replies still come (pipelined, after the late one).
func TestATimeoutFailsOnlyItsOwnRequest(t *testing.T) {
	fake := startFake(t, func(w net.Conn, args []string) bool {
		if args[0] == "IDMINT.RANGE" && args[1] == "slow" {
			time.Sleep(400 * time.Millisecond)
		}
		w.Write([]byte(rangeReply("1", "10")))
		return true
	})
	config := quick(fake.url())
	config.CallTimeout = 300 * time.Millisecond
	c := newClient(t, config)
	slow := make(chan error, 1)
	go func() { _, err := c.nodes.callOn(bg, 0, anyShape, "IDMINT.RANGE", "slow", "10"); slow <- err }()
	time.Sleep(200 * time.Millisecond)
	if _, err := c.nodes.callOn(bg, 0, anyShape, "IDMINT.RANGE", "fast", "10"); err != nil {
		t.Errorf("a request in flight beside one that timed out: %v", err)
	}
	if err := <-slow; err == nil {
		t.Error("the slow request did not time out")
	}
	// The connection the slow request timed out on is closed once nobody waits on it; the
	// next request goes on a new one.
	nd := c.nodes.list[0]
	nd.mu.Lock()
	retired := append([]*conn(nil), nd.retired...)
	nd.mu.Unlock()
	for _, old := range retired {
		if !old.isBroken() {
			t.Error("a retired connection left open with nobody waiting on it")
		}
	}
	if _, err := c.nodes.callOn(bg, 0, anyShape, "IDMINT.RANGE", "fast", "10"); err != nil {
		t.Error(err)
	}
}
