package idmint

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func TestEveryTagIsFoundOnceWhileTagsAreAdded(t *testing.T) {
	table := newTagTable()
	var made atomic.Int64
	var wg sync.WaitGroup
	found := make([]map[string]*tagBuffer, 4)
	for g := range found {
		found[g] = map[string]*tagBuffer{}
		wg.Add(1)
		go func(mine map[string]*tagBuffer) {
			defer wg.Done()
			for i := 0; i < 3000; i++ {
				name := "t" + strconv.Itoa(i)
				b := table.load(name)
				if b == nil {
					b = table.loadOrAdd(name, func() *tagBuffer {
						made.Add(1)
						return &tagBuffer{tag: name}
					})
				}
				mine[name] = b
			}
		}(found[g])
	}
	wg.Wait()
	if made.Load() != 3000 || len(table.all()) != 3000 {
		t.Fatalf("%d buffers made, %d held, want 3000", made.Load(), len(table.all()))
	}
	for _, mine := range found[1:] {
		for name, b := range mine {
			if found[0][name] != b || b.tag != name || table.load(name) != b {
				t.Fatalf("tag %s: two buffers", name)
			}
		}
	}
}

// A client of many tags (one per customer, say) costs memory in proportion to them, not to
// their square: the table of tags is not copied whole for every tag added.
func TestManyTagsCostMemoryInProportion(t *testing.T) {
	var next atomic.Int64
	fake := startFake(t, func(w net.Conn, args []string) bool {
		n := countOf(args)
		first := next.Add(n) - n + 1
		w.Write([]byte(rangeReply(strconv.FormatInt(first, 10), strconv.FormatInt(first+n-1, 10))))
		return true
	})
	c := newClient(t, quick(fake.url()))
	allocated := allocatedDuring(func() {
		for i := 0; i < 5000; i++ {
			if _, err := c.Next(bg, "tag"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocated > 64<<20 {
		t.Errorf("5,000 tags allocated %d MiB", allocated>>20)
	}
}
