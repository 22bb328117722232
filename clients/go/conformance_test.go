//go:build conformance

package idmint

// The runner of the conformance suite (clients/conformance): every scenario of the conductor
// at $IDMINT_CONFORMANCE_URL, one subtest each, played with this library against the nodes
// the conductor starts. Run by clients/go/test:
//
//	IDMINT_CONFORMANCE_URL=http://127.0.0.1:PORT go test -tags conformance -run TestConformance -v

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// scenario is one entry of scenarios.json.
type scenario struct {
	Name  string            `json:"name"`
	Steps []json.RawMessage `json:"steps"`
}

// step is any step; the fields of its op are set.
type step struct {
	Op       string             `json:"op"`
	Name     string             `json:"name"`
	Nodes    []int              `json:"nodes"`
	Token    string             `json:"token"`
	CA       bool               `json:"ca"`
	Config   map[string]float64 `json:"config"`
	Client   string             `json:"client"`
	Kind     string             `json:"kind"`
	Tag      string             `json:"tag"`
	Count    int                `json:"count"`
	Batch    int                `json:"batch"`
	Into     string             `json:"into"`
	SleepMs  int                `json:"sleep_ms"`
	Error    string             `json:"error"`
	WithinMs int                `json:"within_ms"`
	Ms       int                `json:"ms"`

	Unique     []string `json:"unique"`
	Increasing []string `json:"increasing"`
	CountCheck *struct {
		List string `json:"list"`
		Is   int    `json:"is"`
	} `json:"count_check"`
	Follows *struct {
		List  string `json:"list"`
		After string `json:"after"`
	} `json:"follows"`
	Dated *struct {
		List   string `json:"list"`
		Digits int    `json:"digits"`
		Days   int    `json:"days"`
	} `json:"dated"`
}

// setup is the conductor's answer to /start.
type setup struct {
	Nodes  []string          `json:"nodes"`
	Tokens map[string]string `json:"tokens"`
	CAPEM  string            `json:"ca_pem"` // the CA of the run's TLS nodes
}

// conductor talks to the conductor's HTTP API.
type conductor struct{ url string }

func (c conductor) do(method, path string, body interface{}, out interface{}) error {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.url+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return fmt.Errorf("conductor %s %s: %s", method, path, e.Error)
		}
		return fmt.Errorf("conductor %s %s: %s: %s", method, path, resp.Status, shorten(string(raw)))
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func TestConformance(t *testing.T) {
	url := strings.TrimRight(os.Getenv("IDMINT_CONFORMANCE_URL"), "/")
	if url == "" {
		t.Fatal("set IDMINT_CONFORMANCE_URL to the conductor (clients/conformance/run starts one)")
	}
	idmintBin(t) // the unit tests' nodes need it too: the same message when it is missing
	cond := conductor{url: url}
	var scenarios []scenario
	if err := cond.do(http.MethodGet, "/scenarios", nil, &scenarios); err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("the conductor has no scenarios")
	}
	for _, sc := range scenarios {
		sc := sc
		t.Run(sc.Name, func(t *testing.T) { play(t, cond, sc) })
	}
}

// play runs one scenario; the conductor stops its nodes however it ends.
func play(t *testing.T, cond conductor, sc scenario) {
	var nodes setup
	if err := cond.do(http.MethodPost, "/start", map[string]string{"scenario": sc.Name}, &nodes); err != nil {
		t.Fatal(err)
	}
	clients := map[string]*Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close(context.Background())
		}
		if err := cond.do(http.MethodPost, "/stop", map[string]string{"scenario": sc.Name}, nil); err != nil {
			t.Error(err)
		}
	}()
	lists := map[string][]int64{}
	for i, raw := range sc.Steps {
		var s step
		if err := json.Unmarshal(rename(raw), &s); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if err := playStep(cond, nodes, clients, lists, s, raw); err != nil {
			t.Fatalf("step %d (%s): %v", i+1, strings.TrimSpace(string(raw)), err)
		}
	}
}

// rename moves a check's "count" object to "count_check", since "count" is a number in the
// steps that take IDs.
func rename(raw json.RawMessage) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	if c, ok := fields["count"]; ok && len(c) > 0 && c[0] == '{' {
		fields["count_check"] = c
		delete(fields, "count")
	}
	out, _ := json.Marshal(fields)
	return out
}

func playStep(cond conductor, nodes setup, clients map[string]*Client, lists map[string][]int64, s step, raw json.RawMessage) error {
	ctx := context.Background()
	switch s.Op {
	case "client":
		config, err := configOf(s.Config)
		if err != nil {
			return err
		}
		for _, i := range s.Nodes {
			if i < 0 || i >= len(nodes.Nodes) {
				return fmt.Errorf("no node %d", i)
			}
			config.Nodes = append(config.Nodes, nodes.Nodes[i])
		}
		if s.Token != "" {
			token, ok := nodes.Tokens[s.Token]
			if !ok {
				return fmt.Errorf("no token %q", s.Token)
			}
			config.Token = token
		}
		if s.CA {
			if nodes.CAPEM == "" {
				return fmt.Errorf("the step trusts the run's CA, and the setup has none")
			}
			config.CAPEM = []byte(nodes.CAPEM)
		}
		c, err := New(config)
		if err != nil {
			return err
		}
		clients[s.Name] = c
	case "take":
		c, err := clientOf(clients, s.Client)
		if err != nil {
			return err
		}
		calls := s.Count
		if s.Kind == "snowflakes" {
			if s.Batch < 1 || s.Count%s.Batch != 0 {
				return fmt.Errorf("count %d is not a multiple of batch %d", s.Count, s.Batch)
			}
			calls = s.Count / s.Batch
		}
		for i := 0; i < calls; i++ {
			ids, err := takeOne(ctx, c, s)
			if err != nil {
				return fmt.Errorf("call %d of %d: %w", i+1, calls, err)
			}
			lists[s.Into] = append(lists[s.Into], ids...)
			if s.SleepMs > 0 {
				time.Sleep(time.Duration(s.SleepMs) * time.Millisecond)
			}
		}
	case "fail":
		c, err := clientOf(clients, s.Client)
		if err != nil {
			return err
		}
		want, ok := categories[s.Error]
		if !ok {
			return fmt.Errorf("unknown error category %q", s.Error)
		}
		started := time.Now()
		ids, err := takeOne(ctx, c, s)
		took := time.Since(started)
		if err == nil {
			return fmt.Errorf("succeeded with %v, want a failure %s", ids, s.Error)
		}
		if !errors.Is(err, want) {
			return fmt.Errorf("failed with %v, want %s", err, s.Error)
		}
		if s.WithinMs > 0 && took > time.Duration(s.WithinMs)*time.Millisecond {
			return fmt.Errorf("failed as %s after %v, want within %d ms", s.Error, took, s.WithinMs)
		}
	case "close":
		c, err := clientOf(clients, s.Client)
		if err != nil {
			return err
		}
		return c.Close(ctx)
	case "sleep":
		time.Sleep(time.Duration(s.Ms) * time.Millisecond)
	case "check":
		return check(lists, s)
	default:
		return cond.do(http.MethodPost, "/act", raw, nil)
	}
	return nil
}

// categories are the conformance suite's error names.
var categories = map[string]error{
	"unavailable":        ErrUnavailable,
	"tag_exhausted":      ErrTagExhausted,
	"period_unavailable": ErrPeriodUnavailable,
	"permuted":           ErrPermuted,
	"dated":              ErrDated,
	"auth":               ErrAuth,
	"closed":             ErrClosed,
}

func clientOf(clients map[string]*Client, name string) (*Client, error) {
	c, ok := clients[name]
	if !ok {
		return nil, fmt.Errorf("no client %q", name)
	}
	return c, nil
}

// takeOne is one call of a take step's kind.
func takeOne(ctx context.Context, c *Client, s step) ([]int64, error) {
	switch s.Kind {
	case "segment":
		id, err := c.Next(ctx, s.Tag)
		return []int64{id}, err
	case "snowflake":
		id, err := c.Snowflake(ctx)
		return []int64{id}, err
	case "snowflakes":
		return c.Snowflakes(ctx, s.Batch)
	}
	return nil, fmt.Errorf("unknown kind %q", s.Kind)
}

// configOf reads a client step's settings.
func configOf(settings map[string]float64) (Config, error) {
	var c Config
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for key, v := range settings {
		switch key {
		case "min_step":
			c.MinStep = int64(v)
		case "max_step":
			c.MaxStep = int64(v)
		case "target_lifetime_ms":
			c.TargetLifetime = ms(v)
		case "prefetch_at":
			c.PrefetchAt = v
		case "max_wait_ms":
			c.MaxWait = ms(v)
		case "call_timeout_ms":
			c.CallTimeout = ms(v)
		case "backoff_ms":
			c.Backoff = ms(v)
		case "max_backoff_ms":
			c.MaxBackoff = ms(v)
		case "snowflake_batch":
			c.SnowflakeBatch = int(v)
		case "snowflake_max_age_ms":
			c.SnowflakeMaxAge = ms(v)
		default:
			return c, fmt.Errorf("unknown setting %q", key)
		}
	}
	return c, nil
}

// check runs each check the step names.
func check(lists map[string][]int64, s step) error {
	concat := func(names []string) ([]int64, error) {
		var all []int64
		for _, name := range names {
			list, ok := lists[name]
			if !ok {
				return nil, fmt.Errorf("no list %q", name)
			}
			all = append(all, list...)
		}
		return all, nil
	}
	if s.Unique != nil {
		all, err := concat(s.Unique)
		if err != nil {
			return err
		}
		seen := make(map[int64]bool, len(all))
		for _, id := range all {
			if seen[id] {
				return fmt.Errorf("unique %v: %d twice", s.Unique, id)
			}
			seen[id] = true
		}
	}
	if s.Increasing != nil {
		all, err := concat(s.Increasing)
		if err != nil {
			return err
		}
		for i := 1; i < len(all); i++ {
			if all[i] <= all[i-1] {
				return fmt.Errorf("increasing %v: %d after %d (position %d)", s.Increasing, all[i], all[i-1], i)
			}
		}
	}
	if s.CountCheck != nil {
		if got := len(lists[s.CountCheck.List]); got != s.CountCheck.Is {
			return fmt.Errorf("count of %s: %d, want %d", s.CountCheck.List, got, s.CountCheck.Is)
		}
	}
	if s.Follows != nil {
		list, after := lists[s.Follows.List], lists[s.Follows.After]
		if len(list) == 0 || len(after) == 0 {
			return fmt.Errorf("follows: %s or %s is empty", s.Follows.List, s.Follows.After)
		}
		if list[0] != after[len(after)-1]+1 {
			return fmt.Errorf("follows: %s starts at %d, want %d (one after %s's last)",
				s.Follows.List, list[0], after[len(after)-1]+1, s.Follows.After)
		}
	}
	if s.Dated != nil {
		return checkDated(lists[s.Dated.List], s.Dated.Digits, s.Dated.Days)
	}
	return nil
}

// checkDated: every ID is yyyymmdd·10^digits + counter (counter at least 1), the dates do not
// go back, the counters increase within a date, and there are `days` dates.
func checkDated(ids []int64, digits, days int) error {
	scale := int64(math.Pow10(digits))
	dates := 0
	var lastDate, lastCounter int64
	for i, id := range ids {
		date, counter := id/scale, id%scale
		if counter < 1 || date < 19700101 || date > 99991231 {
			return fmt.Errorf("dated: ID %d is not yyyymmdd and a counter of %d digits", id, digits)
		}
		switch {
		case i == 0 || date > lastDate:
			dates++
		case date < lastDate:
			return fmt.Errorf("dated: date %d after %d", date, lastDate)
		case counter <= lastCounter:
			return fmt.Errorf("dated: counter %d after %d on %d", counter, lastCounter, date)
		}
		lastDate, lastCounter = date, counter
	}
	if dates != days {
		return fmt.Errorf("dated: %d dates, want %d", dates, days)
	}
	return nil
}
