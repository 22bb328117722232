package idmint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// id128Vectors is clients/conformance/id128_vectors.json: the layouts every implementation
// composes, renders and parses exactly.
type id128Vectors struct {
	Cases []struct {
		Kind      string `json:"kind"`
		Ms        int64  `json:"ms"`
		Counter   uint64 `json:"counter"`
		NodeBits  int    `json:"node_bits"`
		Node      uint32 `json:"node"`
		RandomHex string `json:"random_hex"`
		UUID      string `json:"uuid"`
		Hex       string `json:"hex"`
		ULID      string `json:"ulid"`
		BytesHex  string `json:"bytes_hex"`
	} `json:"cases"`
	Refused  []string `json:"refused"`
	Accepted []struct {
		Text string `json:"text"`
		Hex  string `json:"hex"`
	} `json:"accepted"`
}

func readID128Vectors(t *testing.T) id128Vectors {
	t.Helper()
	raw, err := os.ReadFile("../conformance/id128_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v id128Vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// composeID128 is the ID of these fields, each checked to fit: how the vectors' cases are built.
func composeID128(t *testing.T, kind IDKind, ms int64, counter uint64, nodeBits int, node uint32, random uint64) ID128 {
	t.Helper()
	if ms < 0 || ms >= 1<<48 || counter >= 1<<24 {
		t.Fatalf("ms %d or counter %d does not fit", ms, counter)
	}
	g, err := newGenerator(kind, GeneratorOptions{NodeBits: nodeBits, Node: node}, func() int64 { return ms }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if random&^g.randomMask != 0 {
		t.Fatalf("random %x does not fit %d bits", random, randomBits(kind, nodeBits))
	}
	return g.compose(ms, counter, random)
}

func kindOf(t *testing.T, label string) IDKind {
	for _, k := range []IDKind{KindUUIDv7, KindULID} {
		if k.String() == label {
			return k
		}
	}
	t.Fatalf("unknown kind %q", label)
	return 0
}

func TestID128VectorsComposeRenderAndParseBack(t *testing.T) {
	v := readID128Vectors(t)
	if len(v.Cases) < 32 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range v.Cases {
		kind := kindOf(t, c.Kind)
		random, err := strconv.ParseUint(c.RandomHex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		id := composeID128(t, kind, c.Ms, c.Counter, c.NodeBits, c.Node, random)
		got := []string{id.UUIDString(), id.Hex(), id.ULIDString(), hex.EncodeToString(id.Bytes()), id.String()}
		want := []string{c.UUID, c.Hex, c.ULID, c.BytesHex, c.UUID}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%+v: rendered %q, want %q", c, got[i], want[i])
			}
		}
		for _, text := range []string{c.UUID, c.Hex, c.ULID, strings.ToUpper(c.UUID), strings.ToLower(c.ULID)} {
			back, err := ParseID128(text)
			if err != nil || back != id {
				t.Errorf("ParseID128(%q) = %v, %v; want %v", text, back, err, id)
			}
		}
		raw, _ := hex.DecodeString(c.BytesHex)
		if back, err := ID128FromBytes(raw); err != nil || back != id {
			t.Errorf("ID128FromBytes(%s) = %v, %v", c.BytesHex, back, err)
		}
		d, err := id.Decode(kind, c.NodeBits)
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != kind || d.Millis != c.Ms || uint64(d.Counter) != c.Counter || d.Node != int64(c.Node) || d.NodeBits != c.NodeBits {
			t.Errorf("%+v decoded as %+v", c, d)
		}
		if d.Time.UnixMilli() != c.Ms {
			t.Errorf("%+v: time %v", c, d.Time)
		}
		if kind == KindUUIDv7 {
			if d.Version != 7 || d.Variant != 2 || !id.IsUUIDv7() {
				t.Errorf("%+v: version %d variant %d", c, d.Version, d.Variant)
			}
			if back, err := ParseUUID7(c.UUID); err != nil || back != id {
				t.Errorf("ParseUUID7(%q): %v", c.UUID, err)
			}
		} else if d.Version != -1 || d.Variant != -1 {
			t.Errorf("%+v: a ULID has no version: %+v", c, d)
		}
	}
}

func TestID128RefusedAndAcceptedTexts(t *testing.T) {
	v := readID128Vectors(t)
	if len(v.Refused) < 16 {
		t.Fatalf("%d refused", len(v.Refused))
	}
	for _, text := range v.Refused {
		id, err := ParseID128(text)
		var e *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || !strings.Contains(err.Error(), "not a 128-bit ID") {
			t.Errorf("ParseID128(%q) = %v, %v; want a refusal", text, id, err)
		}
	}
	for _, a := range v.Accepted {
		id, err := ParseID128(a.Text)
		if err != nil || id.Hex() != a.Hex {
			t.Errorf("ParseID128(%q) = %v, %v; want %s", a.Text, id.Hex(), err, a.Hex)
		}
	}
	if _, err := ParseID128(strings.Repeat("x", 1000)); err == nil || len(err.Error()) > 300 ||
		!strings.Contains(err.Error(), "36") || !strings.Contains(err.Error(), "26") {
		t.Errorf("a long text: %v", err)
	}
	if _, err := ID128FromBytes(make([]byte, 15)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("15 bytes: %v", err)
	}
	if _, err := ParseUUID7("9b2c1f9e-3c59-4b3e-8a44-6f2f1c1a2b3c"); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Errorf("a UUIDv4 as a UUIDv7: %v", err)
	}
	if _, err := (ID128{}).Decode(KindULID, 25); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nodeBits 25: %v", err)
	}
}

// handClock is a clock moved by hand; sleeping moves it.
type handClock struct {
	mu    sync.Mutex
	ms    int64
	slept int64
}

func (c *handClock) now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ms
}

func (c *handClock) sleep(ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms += ms
	c.slept += ms
}

func (c *handClock) set(ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms = ms
}

const testT = 1_764_201_600_000

// fixedRandom is a broken random source: the same bits every time.
func fixedRandom(bits uint64) func() uint64 { return func() uint64 { return bits } }

func handGenerator(t *testing.T, kind IDKind, opts GeneratorOptions, clock *handClock, random uint64) *Generator {
	t.Helper()
	g, err := newGenerator(kind, opts, clock.now, clock.sleep, fixedRandom(random))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustGenerator(t *testing.T, kind IDKind) *Generator {
	t.Helper()
	g, err := map[IDKind]func(GeneratorOptions) (*Generator, error){
		KindUUIDv7: NewUUID7Generator, KindULID: NewULIDGenerator}[kind](GeneratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func assertIncreasing(t *testing.T, ids []ID128) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i-1].Compare(ids[i]) >= 0 {
			t.Fatalf("not increasing at %d: %v then %v", i, ids[i-1], ids[i])
		}
	}
}

// 8 goroutines draw at once, each appending under one lock as it gets an ID: the list is in
// generation order and must strictly increase.
func TestID128StrictlyIncreasingAcrossGoroutinesInIssueOrder(t *testing.T) {
	for _, kind := range []IDKind{KindUUIDv7, KindULID} {
		g := mustGenerator(t, kind)
		var mu sync.Mutex
		var ids []ID128
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5000; i++ {
					mu.Lock()
					ids = append(ids, g.Next())
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(ids) != 40_000 {
			t.Fatal(len(ids))
		}
		assertIncreasing(t, ids)
	}
}

// No lock around the draws: each goroutine's IDs increase, and none comes twice.
func TestID128RacingGoroutinesNeverShareAnID(t *testing.T) {
	g := mustGenerator(t, KindUUIDv7)
	per := make([][]ID128, 8)
	var wg sync.WaitGroup
	for w := range per {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20_000; i++ {
				per[w] = append(per[w], g.Next())
			}
		}(w)
	}
	wg.Wait()
	seen := map[ID128]bool{}
	for _, ids := range per {
		assertIncreasing(t, ids)
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%v issued twice", id)
			}
			seen[id] = true
		}
	}
}

func TestID128FirstIDOfAMillisecondSeedsBelowTwoToThe23(t *testing.T) {
	clock := &handClock{ms: testT}
	g := handGenerator(t, KindUUIDv7, GeneratorOptions{}, clock, ^uint64(0))
	d, _ := g.Next().Decode(KindUUIDv7, 0)
	if d.Millis != testT || d.Counter != 1<<23-1 {
		t.Fatalf("first: %+v", d)
	}
	if d, _ := g.Next().Decode(KindUUIDv7, 0); d.Counter != 1<<23 {
		t.Fatalf("second: %+v", d)
	}
	for i := 0; i < 1000; i++ {
		g := mustGenerator(t, KindULID)
		if d, _ := g.Next().Decode(KindULID, 0); d.Counter >= 1<<23 {
			t.Fatalf("seed %d", d.Counter)
		}
	}
}

func TestID128CounterOverflowBorrowsTheNextMillisecond(t *testing.T) {
	for _, kind := range []IDKind{KindUUIDv7, KindULID} {
		clock := &handClock{ms: testT}
		g := handGenerator(t, kind, GeneratorOptions{}, clock, 0)
		g.restoreForTest(testT, 1<<24-3)
		var ids []ID128
		for i := 0; i < 4; i++ {
			ids = append(ids, g.Next())
		}
		assertIncreasing(t, ids)
		want := [][2]int64{{testT, 1<<24 - 2}, {testT, 1<<24 - 1}, {testT + 1, 0}, {testT + 1, 1}}
		for i, id := range ids {
			d, _ := id.Decode(kind, 0)
			if d.Millis != want[i][0] || int64(d.Counter) != want[i][1] {
				t.Errorf("%v %d: %d/%d, want %v", kind, i, d.Millis, d.Counter, want[i])
			}
		}
		if clock.slept != 0 {
			t.Errorf("a borrow within the lead waited %d ms", clock.slept)
		}
	}
}

func TestID128BorrowingPastTheLeadWaitsForTheClock(t *testing.T) {
	clock := &handClock{ms: testT}
	g := handGenerator(t, KindUUIDv7, GeneratorOptions{}, clock, 0)
	g.maxLeadMs = 2
	g.restoreForTest(testT+2, 1<<24-1)
	id := g.Next()
	d, _ := id.Decode(KindUUIDv7, 0)
	// testT+3 is 3 ms ahead of the clock: handed out once the clock reached testT+1.
	if d.Millis != testT+3 || d.Counter != 0 || clock.now() != testT+1 || clock.slept != 1 {
		t.Fatalf("%+v, clock %d, slept %d", d, clock.now(), clock.slept)
	}
	if g.Next().Compare(id) <= 0 {
		t.Fatal("not increasing after the wait")
	}
}

func TestID128ClockSteppedBackNeverRepeatsNorDecreases(t *testing.T) {
	clock := &handClock{ms: testT}
	g := handGenerator(t, KindULID, GeneratorOptions{}, clock, 0x5555_5555_5555_5555)
	var ids []ID128
	for i := 0; i < 100; i++ {
		ids = append(ids, g.Next())
	}
	clock.set(testT - 5000) // stepped back 5 s
	for i := 0; i < 100_000; i++ {
		ids = append(ids, g.Next())
	}
	if ms := ids[len(ids)-1].Millis(); ms != testT || clock.slept != 0 {
		t.Fatalf("counted on at %d, slept %d", ms, clock.slept)
	}
	clock.set(testT + 1)
	ids = append(ids, g.Next())
	if ms := ids[len(ids)-1].Millis(); ms != testT+1 {
		t.Fatalf("caught up at %d", ms)
	}
	assertIncreasing(t, ids)
}

func TestID128DistinctNodeFieldsNeverCollideWithABrokenRandomSource(t *testing.T) {
	clock := &handClock{ms: testT}
	for _, kind := range []IDKind{KindUUIDv7, KindULID} {
		seen := map[ID128]bool{}
		for node := uint32(0); node < 4; node++ {
			g := handGenerator(t, kind, GeneratorOptions{NodeBits: 8, Node: node}, clock, 0)
			for i := 0; i < 1000; i++ {
				id := g.Next()
				if d, _ := id.Decode(kind, 8); d.Node != int64(node) {
					t.Fatalf("node %d read as %d", node, d.Node)
				}
				if seen[id] {
					t.Fatalf("%v: two nodes made %v", kind, id)
				}
				seen[id] = true
			}
		}
	}
}

func TestID128NodeOptionsAreChecked(t *testing.T) {
	for _, c := range []struct {
		opts  GeneratorOptions
		field string
	}{
		{GeneratorOptions{NodeBits: 25}, "NodeBits"},
		{GeneratorOptions{NodeBits: -1}, "NodeBits"},
		{GeneratorOptions{NodeBits: 8, Node: 256}, "Node"},
		{GeneratorOptions{Node: 1}, "Node"},
	} {
		_, err := NewUUID7Generator(c.opts)
		var ce *ConfigError
		if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v", c.opts, err)
		}
	}
	g, err := NewULIDGenerator(GeneratorOptions{NodeBits: 24, Node: 1<<24 - 1})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := g.Next().Decode(KindULID, 24); d.Node != 1<<24-1 {
		t.Fatalf("node %d", d.Node)
	}
}

func TestID128SortingTextsOrBytesGivesGenerationOrder(t *testing.T) {
	for _, kind := range []IDKind{KindUUIDv7, KindULID} {
		g := mustGenerator(t, kind)
		ids := make([]ID128, 10_000)
		for i := range ids {
			ids[i] = g.Next()
			if kind == KindUUIDv7 && !ids[i].IsUUIDv7() {
				t.Fatalf("%v is not a UUIDv7", ids[i])
			}
		}
		shuffled := append([]ID128(nil), ids...)
		rand.New(rand.NewSource(31)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, form := range []func(ID128) string{ID128.UUIDString, ID128.ULIDString, ID128.Hex,
			func(id ID128) string { return string(id.Bytes()) }} {
			texts := make([]string, len(shuffled))
			for i, id := range shuffled {
				texts[i] = form(id)
			}
			sort.Strings(texts)
			for i, id := range ids {
				if texts[i] != form(id) {
					t.Fatalf("%v: sorted texts differ from generation order at %d", kind, i)
				}
			}
		}
		sort.Slice(shuffled, func(i, j int) bool { return bytes.Compare(shuffled[i][:], shuffled[j][:]) < 0 })
		for i := range ids {
			if ids[i] != shuffled[i] {
				t.Fatalf("sorted bytes differ at %d", i)
			}
		}
	}
}

func TestID128TheClientMakesThemLocally(t *testing.T) {
	c, err := New(Config{Nodes: []string{"redis://127.0.0.1:1"}}) // no node: none is asked
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.UUID7(), c.UUID7()
	if a.Compare(b) >= 0 || !a.IsUUIDv7() {
		t.Fatalf("%v then %v", a, b)
	}
	if u, v := c.ULID(), c.ULID(); u.Compare(v) >= 0 {
		t.Fatalf("%v then %v", u.ULIDString(), v.ULIDString())
	}
}
