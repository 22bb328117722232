package idmint

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"sync"
)

// randomBuffer is 4 KiB of crypto/rand output and how much of it is used. Each goroutine
// takes one from the pool for the few nanoseconds it needs it, so goroutines never wait on
// each other, and crypto/rand (a system call) is read once per 512 IDs instead of once per
// ID. Bytes are handed out once: a buffer the pool drops takes its unused bytes with it.
type randomBuffer struct {
	bytes [4096]byte
	at    int
}

var randomBuffers = sync.Pool{New: func() any { return &randomBuffer{at: 4096} }}

// secureUint64 is 64 bits from crypto/rand. It panics if the operating system's random source
// fails, which a Linux getrandom does not: an ID without randomness would be worse.
func secureUint64() uint64 {
	b := randomBuffers.Get().(*randomBuffer)
	if b.at == len(b.bytes) {
		if _, err := io.ReadFull(rand.Reader, b.bytes[:]); err != nil {
			panic("idmint: crypto/rand failed: " + err.Error())
		}
		b.at = 0
	}
	v := binary.LittleEndian.Uint64(b.bytes[b.at:])
	b.at += 8
	randomBuffers.Put(b)
	return v
}
