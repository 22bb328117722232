package idmint

import (
	"bufio"
	"errors"
	"strings"
	"testing"
	"time"
)

func read(text string) (value, error) {
	return readValue(bufio.NewReaderSize(strings.NewReader(text), 16))
}

func TestTheCodecReadsRepliesAndRefusesBrokenOnes(t *testing.T) {
	if got := string(appendCommand(nil, "IDMINT.RANGE", "t", "10")); got != "*3\r\n$12\r\nIDMINT.RANGE\r\n$1\r\nt\r\n$2\r\n10\r\n" {
		t.Errorf("%q", got)
	}
	v, err := read("*2\r\n:1001\r\n:9223372036854775807\r\n")
	if err != nil || len(v.array) != 2 || v.array[0].num != 1001 || v.array[1].num != maxID {
		t.Errorf("%+v %v", v, err)
	}
	v, err = read("$12\r\nhello\r\nworld\r\n") // a bulk string holds CRLF
	if err != nil || v.str != "hello\r\nworld" {
		t.Errorf("%+v %v", v, err)
	}
	// The largest batch of snowflakes a client asks for, and the longest bulk string read.
	v, err = read("*10000\r\n" + strings.Repeat(":9223372036854775807\r\n", 10000))
	if err != nil || len(v.array) != 10000 {
		t.Errorf("10,000 IDs: %v", err)
	}
	if v, err = read("$65536\r\n" + strings.Repeat("x", 65536) + "\r\n"); err != nil || len(v.str) != 65536 {
		t.Errorf("64 KiB: %v", err)
	}
	v, err = read("$-1\r\n")
	if err != nil || !v.null {
		t.Errorf("%+v %v", v, err)
	}
	v, err = read("-ERR tag_exhausted tag `t` is exhausted\r\n")
	if err != nil || v.kind != '-' || parseReplyError(v.str).idmintCode() != "tag_exhausted" {
		t.Errorf("%+v %v", v, err)
	}
	// A line longer than the reader's buffer is read whole.
	long := strings.Repeat("x", 100)
	if v, err := read("+" + long + "\r\n"); err != nil || v.str != long {
		t.Errorf("%v", err)
	}
	for _, broken := range []string{
		":9223372036854775808\r\n", // above int64: no ID is that large
		":-9223372036854775809\r\n",
		":12a\r\n",
		"$5\r\nabc\r\n",
		"$2\r\nabXY",
		"*99999999\r\n",
		"$99999999\r\n",
		"?what\r\n",
		":1\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		// Within a limit each, beyond the reply's together.
		"*2\r\n*32767\r\n" + strings.Repeat(":1\r\n", 32767) + "*1\r\n:1\r\n",
		"*2\r\n$65536\r\n" + strings.Repeat("x", 65536) + "\r\n$1\r\nx\r\n",
		"$65537\r\n" + strings.Repeat("x", 65537) + "\r\n",
	} {
		if _, err := read(broken); err == nil {
			t.Errorf("%q was read", shorten(broken))
		}
	}
}

func TestRangesMustBeARunAboveWhatTheClientHolds(t *testing.T) {
	run := func(first, last int64) value {
		return value{kind: '*', array: []value{{kind: ':', num: first}, {kind: ':', num: last}}}
	}
	for _, tc := range []struct {
		reply       value
		floor, step int64
		ok          bool
	}{
		{run(1, 10), 0, 10, true},
		{run(101, 110), 100, 10, true},
		{run(100, 110), 100, 20, false}, // not above the floor
		{run(101, 111), 100, 10, false}, // longer than asked
		{run(10, 9), 0, 10, false},      // backwards
		{run(0, 5), -1, 10, false},      // ID 0
		{value{kind: ':', num: 5}, 0, 10, false},
		{value{kind: '*', array: []value{{kind: '$', str: "1"}, {kind: ':', num: 2}}}, 0, 10, false},
	} {
		if _, _, ok := checkRange(tc.reply, tc.floor, tc.step); ok != tc.ok {
			t.Errorf("%s above %d step %d: %v", describeRange(tc.reply), tc.floor, tc.step, ok)
		}
	}
	if _, ok := checkIDs(value{kind: '*', array: []value{{kind: ':', num: 5}, {kind: ':', num: 0}}}, 5); ok {
		t.Error("snowflake 0 taken")
	}
	if _, ok := checkIDs(value{kind: '*', array: []value{{kind: ':', num: 5}, {kind: ':', num: 6}}}, 1); ok {
		t.Error("more snowflakes than asked taken")
	}
}

func TestRefusalsAreAnAllowList(t *testing.T) {
	for _, tc := range []struct {
		reply string
		kind  error // nil: the node's failure, tried elsewhere and again
	}{
		{"ERR tag_exhausted tag `t` is exhausted", ErrTagExhausted},
		{"ERR period_unavailable tag `t`: the period 20261127 is used up", ErrPeriodUnavailable},
		{"ERR dated tag `t` is dated", ErrDated},
		{"ERR permuted this node hands out its IDs permuted", ErrPermuted},
		{"ERR too_many_tags too many tags", ErrRefused},
		{"ERR tag_quota tag quota", ErrRefused},
		{"ERR unknown tag `t`", ErrRefused},
		{"ERR count must be between 1 and 50, got 100", ErrRefused},
		{"ERR COUNT must be between 1 and 50, got 64", ErrRefused},
		{"ERR syntax error", ErrRefused},
		{"ERR unknown command 'IDMINT.X'", ErrRefused},
		{"WRONGPASS invalid username-password pair", ErrAuth},
		{"NOAUTH Authentication required.", ErrAuth},
		{"NOPERM no permission", ErrAuth},
		{"ERR AUTH <password> called without any password configured", ErrAuth},
		{"ERR store_corrupt store corrupt: malformed", nil},
		{"ERR max number of clients reached", nil},
		{"ERR tag_exhaustedness is not a code", nil},
		{"TRYAGAIN idmint is temporarily unavailable", nil},
		{"LOADING dataset", nil},
		{"something new", nil},
	} {
		r := parseReplyError(tc.reply)
		if r.isRefusal() != (tc.kind != nil) {
			t.Errorf("%q: refusal %v", tc.reply, r.isRefusal())
			continue
		}
		if tc.kind != nil {
			if err := refusal("n:1", "t", r); !errors.Is(err, tc.kind) {
				t.Errorf("%q: %v, want %v", tc.reply, err, tc.kind)
			}
		}
	}
}

func TestBackoffStepsOncePerOutageAndResets(t *testing.T) {
	nd := &node{}
	if !nd.fail(time.Second, 8*time.Second, nil) {
		t.Fatal("a first failure not counted")
	}
	if nd.fail(time.Second, 8*time.Second, nil) {
		t.Error("requests in flight together counted twice")
	}
	if nd.nextPause != 2*time.Second {
		t.Errorf("next pause %v", nd.nextPause)
	}
	nd.downUntil = time.Now().Add(-time.Millisecond) // the back-off ran out
	nd.fail(time.Second, 8*time.Second, nil)
	if until := time.Until(nd.downUntil); until < 1500*time.Millisecond || nd.nextPause != 4*time.Second {
		t.Errorf("avoided %v, next %v", until, nd.nextPause)
	}
	nd.answered()
	if !nd.downUntil.IsZero() || nd.nextPause != 0 {
		t.Error("not reset")
	}
	// Every node avoided: only the one whose back-off ends first is tried.
	ns := &nodes{list: []*node{{downUntil: time.Now().Add(time.Hour)}, {downUntil: time.Now().Add(time.Minute)}}}
	if got := ns.order(); len(got) != 1 || got[0] != 1 {
		t.Errorf("order %v", got)
	}
}

func TestTheRangeSizeFollowsTheRate(t *testing.T) {
	var m rateMeter
	if planStep(&m, 100, 10_000, 10*time.Second, 0) != 100 {
		t.Error("no rate: not the smallest")
	}
	start := time.Now()
	m.observe(0, start)
	m.observe(1000, start.Add(500*time.Millisecond)) // 2,000/s
	if m.rate != 2000 {
		t.Errorf("rate %v", m.rate)
	}
	if got := planStep(&m, 100, 10_000, time.Second, 0); got != 2000 {
		t.Errorf("step %d", got)
	}
	if got := planStep(&m, 100, 10_000, time.Hour, 0); got != 10_000 {
		t.Errorf("step %d", got)
	}
	m.observe(1000, start.Add(5500*time.Millisecond)) // quiet for 5 s: falls slowly
	if m.rate < 1800 || m.rate >= 2000 {
		t.Errorf("rate %v", m.rate)
	}
}
