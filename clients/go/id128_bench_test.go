package idmint

// Item 3 of issue 31: an ID128 made here against crypto/rand's 16 bytes (what a plain random
// UUID costs) and against the floor of any such generator, one atomic add and 64 bits from the
// same pooled crypto/rand buffers. From clients/go, one and two goroutines:
//
//	go test -run '^$' -bench 'ID128|CryptoRand16|Floor' -cpu 1,2 -benchtime 2s -count 5
//
// Each benchmark runs in RunParallel, so -cpu N is N goroutines drawing at once; the ns/op Go
// prints is wall time over all IDs, so with two goroutines the cost per ID on each goroutine is
// twice it.

import (
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
)

var benchSink ID128

func benchGenerator(b *testing.B, g *Generator, err error) {
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		var last ID128
		for pb.Next() {
			last = g.Next()
		}
		benchSink = last
	})
}

func BenchmarkID128UUID7(b *testing.B) {
	g, err := NewUUID7Generator(GeneratorOptions{})
	benchGenerator(b, g, err)
}

func BenchmarkID128ULID(b *testing.B) {
	g, err := NewULIDGenerator(GeneratorOptions{})
	benchGenerator(b, g, err)
}

// BenchmarkID128UUID7Text includes the canonical text, what a service usually hands out.
func BenchmarkID128UUID7Text(b *testing.B) {
	g, err := NewUUID7Generator(GeneratorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n += len(g.Next().UUIDString())
		}
		benchSink[0] = byte(n)
	})
}

// BenchmarkCryptoRand16 is 16 bytes of crypto/rand per ID: a random (version 4) UUID's cost.
func BenchmarkCryptoRand16(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var id ID128
		for pb.Next() {
			if _, err := rand.Read(id[:]); err != nil {
				b.Error(err)
				return
			}
		}
		benchSink = id
	})
}

// BenchmarkFloorAtomicAddRandom is the floor: one atomic add of a shared word and 64 random
// bits, nothing else (no clock, no layout).
func BenchmarkFloorAtomicAddRandom(b *testing.B) {
	var n int64
	b.RunParallel(func(pb *testing.PB) {
		var x uint64
		for pb.Next() {
			x ^= uint64(atomic.AddInt64(&n, 1)) ^ secureUint64()
		}
		benchSink[0] = byte(x)
	})
}

// BenchmarkFloorMutexRandom is the floor with a mutex instead of the atomic add: what a
// generator holding a lock would start from.
func BenchmarkFloorMutexRandom(b *testing.B) {
	var mu sync.Mutex
	var n uint64
	b.RunParallel(func(pb *testing.PB) {
		var x uint64
		for pb.Next() {
			mu.Lock()
			n++
			v := n
			mu.Unlock()
			x ^= v ^ secureUint64()
		}
		benchSink[0] = byte(x)
	})
}
