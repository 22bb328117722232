package idmint

// The client's buffers by tag name, found on every Next with one atomic load and one lookup
// in a plain map, no lock.
//
// That map is read-only, replaced whole by a copy. Copying it for every tag added cost a copy
// of every tag per tag (quadratic: 20,000 tags allocated 10 GB), so new tags go first into a
// second map under a mutex, and the two are merged into a new read-only map once the lookups
// that had to take the mutex (each new tag counts as one) reach the size of the read-only
// one: each merge copies at most twice as many tags as lookups paid for it, constant time
// per tag added (sync.Map's scheme; sync.Map itself costs twice as much per lookup, its keys
// being interfaces).

import (
	"sync"
	"sync/atomic"
)

// tagTable is the buffers by tag name.
type tagTable struct {
	read   atomic.Pointer[map[string]*tagBuffer] // never changed once stored
	mu     sync.Mutex
	recent map[string]*tagBuffer // tags added since the last merge, not in read
	misses int                   // lookups that took mu since the last merge
}

func newTagTable() *tagTable {
	t := &tagTable{recent: map[string]*tagBuffer{}}
	empty := map[string]*tagBuffer{}
	t.read.Store(&empty)
	return t
}

// snapshot is the read-only map.
func (t *tagTable) snapshot() map[string]*tagBuffer { return *t.read.Load() }

// load is the buffer of tag, or nil: lock-free for a tag already merged, the mutex for one
// added since.
func (t *tagTable) load(tag string) *tagBuffer {
	if b := t.snapshot()[tag]; b != nil {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked(tag)
}

func (t *tagTable) loadLocked(tag string) *tagBuffer {
	if b := t.snapshot()[tag]; b != nil {
		return b
	}
	b := t.recent[tag]
	if b != nil {
		t.missLocked()
	}
	return b
}

// loadOrAdd is the buffer of tag, made by make when there is none.
func (t *tagTable) loadOrAdd(tag string, make func() *tagBuffer) *tagBuffer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.loadLocked(tag); b != nil {
		return b
	}
	b := make()
	t.recent[tag] = b
	t.missLocked()
	return b
}

// missLocked counts a lookup that took the mutex, and merges once they pay for a copy.
func (t *tagTable) missLocked() {
	read := t.snapshot()
	if t.misses++; t.misses < len(read) {
		return
	}
	merged := make(map[string]*tagBuffer, len(read)+len(t.recent))
	for name, b := range read {
		merged[name] = b
	}
	for name, b := range t.recent {
		merged[name] = b
	}
	t.read.Store(&merged)
	t.recent = map[string]*tagBuffer{}
	t.misses = 0
}

// all is every buffer.
func (t *tagTable) all() []*tagBuffer {
	t.mu.Lock()
	defer t.mu.Unlock()
	read := t.snapshot()
	buffers := make([]*tagBuffer, 0, len(read)+len(t.recent))
	for _, b := range read {
		buffers = append(buffers, b)
	}
	for _, b := range t.recent {
		buffers = append(buffers, b)
	}
	return buffers
}
