package idmint

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// createDatedTag makes a tag with a daily period on the node, by its HTTP API.
func createDatedTag(t *testing.T, n *testNode, tag string, digits int) {
	t.Helper()
	body := fmt.Sprintf(`{"period": "day", "time_zone": "UTC", "digits": %d, "step": 5}`, digits)
	req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("http://127.0.0.1:%d/v1/tags/%s", n.http, tag), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating dated tag %s: %s", tag, resp.Status)
	}
}

func todayUTC() int64 {
	var day int64
	fmt.Sscan(time.Now().UTC().Format("20060102"), &day)
	return day
}

func TestADatedTagIsServedOneIDAtATime(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	createDatedTag(t, n, "orders", 6)
	createDatedTag(t, n, "tiny", 1)
	c := newClient(t, Config{Nodes: []string{n.url()}, MaxWait: 5 * time.Second})
	before := todayUTC()
	var ids []int64
	for i := 0; i < 30; i++ {
		id, err := c.Next(bg, "orders")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	after := todayUTC()
	if day := ids[0] / 1_000_000; before == after && day == before {
		for i, id := range ids {
			if id != day*1_000_000+int64(i+1) {
				t.Fatalf("not the day's counters in order: %v", ids)
			}
		}
	}
	// A plain tag beside it still comes from ranges.
	for want := int64(1); want <= 10; want++ {
		if id, err := c.Next(bg, "plain"); err != nil || id != want {
			t.Fatalf("plain: %d %v, want %d", id, err, want)
		}
	}
	// A used-up period is refused at once, and blames no node.
	for i := 1; i <= 9; i++ {
		id, err := c.Next(bg, "tiny")
		if err != nil || id%10 != int64(i) {
			t.Fatalf("tiny: %d %v", id, err)
		}
	}
	started := time.Now()
	_, err := c.Next(bg, "tiny")
	var e *Error
	if !errors.Is(err, ErrPeriodUnavailable) || !errors.As(err, &e) || e.Code != "period_unavailable" {
		t.Fatalf("%v, want ErrPeriodUnavailable", err)
	}
	if time.Since(started) > 2*time.Second {
		t.Error("a used-up period waited out MaxWait")
	}
	started = time.Now()
	if _, err := c.Next(bg, "plain2"); err != nil || time.Since(started) > 400*time.Millisecond {
		t.Errorf("the node was blamed: %v after %v", err, time.Since(started))
	}
}

// permutationKey writes a key made by the binary and returns its path.
func permutationKey(t *testing.T) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "ids.key")
	out, err := exec.Command(idmintBin(t), "permutation-key").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return key
}

func TestOnAPermutedNode(t *testing.T) {
	n := startNode(t, sqliteStore(t), "--permutation-key-file", permutationKey(t))
	c := newClient(t, Config{Nodes: []string{n.url()}, MaxWait: 10 * time.Second})
	started := time.Now()
	_, err := c.Next(bg, "orders")
	var e *Error
	if !errors.Is(err, ErrPermuted) || !errors.As(err, &e) || e.Code != "permuted" {
		t.Fatalf("%v, want ErrPermuted", err)
	}
	if !strings.Contains(err.Error(), "IDMINT.NEXT") || time.Since(started) > 5*time.Second {
		t.Errorf("%v after %v", err, time.Since(started))
	}
	// Snowflakes come in the node's order, none skipped, even one per batch.
	for _, batch := range []int{1, 64} {
		c := newClient(t, Config{Nodes: []string{n.url()}, SnowflakeBatch: batch})
		var ids []int64
		for i := 0; i < 100; i++ {
			three, err := c.Snowflakes(bg, 3)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, three...)
		}
		seen := map[int64]bool{}
		descents := 0
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("snowflake %d twice", id)
			}
			seen[id] = true
			if i > 0 && id < ids[i-1] {
				descents++
			}
		}
		if len(ids) != 300 || descents < 50 {
			t.Errorf("batch %d: %d IDs, %d descents: not handed out as the node permuted them", batch, len(ids), descents)
		}
	}
}
