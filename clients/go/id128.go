package idmint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// ID128 is a 128-bit ID, a UUIDv7 or a ULID (from a Generator, or read by ParseID128): its 16
// bytes, big-endian. Both layouts start with 48 bits of Unix milliseconds and a 24-bit
// counter, so comparing IDs (Compare, bytes.Compare, or == for equality) and comparing any of
// their texts gives the order a generator made them in. The zero value is the nil UUID.
type ID128 [16]byte

// IDKind is one of the two layouts of an ID128's bits.
type IDKind int

const (
	// KindUUIDv7 is RFC 9562's UUID version 7: the version and variant bits sit between the
	// counter's two halves.
	KindUUIDv7 IDKind = iota + 1
	// KindULID is a ULID (ulid/spec): the counter right after the milliseconds, no fixed bits.
	KindULID
)

// String is the kind's name as the nodes and the test vectors write it: "uuidv7" or "ulid".
func (k IDKind) String() string {
	switch k {
	case KindUUIDv7:
		return "uuidv7"
	case KindULID:
		return "ulid"
	}
	return fmt.Sprintf("IDKind(%d)", int(k))
}

const (
	hexDigits  = "0123456789abcdef"
	crockford  = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	id128Forms = "expected 36 characters (uuid, 8-4-4-4-12), 32 (hex) or 26 (ulid)"
)

// String is the canonical UUID text (UUIDString), the form fmt and logs show. A ULID
// generator's IDs read the same in it; ULIDString gives their usual text.
func (id ID128) String() string { return id.UUIDString() }

// UUIDString is the canonical text: 0192f3a1-7c2e-7a3b-8d4e-5f60718293a4, lowercase.
func (id ID128) UUIDString() string {
	var out [36]byte
	at := 0
	for i, b := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[at] = '-'
			at++
		}
		out[at], out[at+1] = hexDigits[b>>4], hexDigits[b&15]
		at += 2
	}
	return string(out[:])
}

// ULIDString is the 26-character ULID text: Crockford's base32, uppercase.
func (id ID128) ULIDString() string {
	hi, lo := id.halves()
	var out [26]byte
	for i := range out {
		shift := uint(5 * (25 - i)) // of the digit's lowest bit, counted from the ID's lowest
		var digit uint64
		switch {
		case shift >= 64:
			digit = hi >> (shift - 64)
		case shift+5 > 64: // straddles the halves
			digit = lo>>shift | hi<<(64-shift)
		default:
			digit = lo >> shift
		}
		out[i] = crockford[digit&31]
	}
	return string(out[:])
}

// Hex is the 32 lowercase hex digits.
func (id ID128) Hex() string {
	var out [32]byte
	for i, b := range id {
		out[2*i], out[2*i+1] = hexDigits[b>>4], hexDigits[b&15]
	}
	return string(out[:])
}

// Bytes is a copy of the 16 bytes, big-endian.
func (id ID128) Bytes() []byte {
	out := id
	return out[:]
}

// Compare is -1, 0 or +1 as id is below, equal to or above other: generation order.
func (id ID128) Compare(other ID128) int { return bytes.Compare(id[:], other[:]) }

// Millis is the Unix milliseconds of the top 48 bits.
func (id ID128) Millis() int64 {
	hi, _ := id.halves()
	return int64(hi >> 16)
}

// IsUUIDv7 reports whether the bits carry UUID version 7 and the RFC variant 0b10.
func (id ID128) IsUUIDv7() bool { return id[6]>>4 == 7 && id[8]>>6 == 2 }

func (id ID128) halves() (hi, lo uint64) {
	return binary.BigEndian.Uint64(id[:8]), binary.BigEndian.Uint64(id[8:])
}

func fromHalves(hi, lo uint64) ID128 {
	var id ID128
	binary.BigEndian.PutUint64(id[:8], hi)
	binary.BigEndian.PutUint64(id[8:], lo)
	return id
}

// Decoded128 is the fields of an ID128, from Decode.
type Decoded128 struct {
	Kind   IDKind
	Millis int64     // Unix milliseconds
	Time   time.Time // Millis as a time, in UTC
	// Version is the UUID version nibble (7 for a UUIDv7) and Variant the top two bits of
	// byte 8 (2, 0b10, for RFC 9562); both -1 for a ULID.
	Version, Variant int
	Counter          uint32 // the 24-bit counter
	// NodeBits is the node field's width it was read with, and Node its value; both -1 when
	// the width was not given.
	NodeBits int
	Node     int64
}

// Decode reads the fields of id in kind's layout, with a node field of nodeBits bits (the
// generator's setting, 0 for none; -1 when unknown: Node is then -1). It refuses an unknown
// kind or nodeBits outside -1..24 with ErrInvalidArgument.
func (id ID128) Decode(kind IDKind, nodeBits int) (Decoded128, error) {
	if kind != KindUUIDv7 && kind != KindULID {
		return Decoded128{}, invalid("kind", fmt.Sprintf("%v is neither KindUUIDv7 nor KindULID", kind))
	}
	if nodeBits < -1 || nodeBits > maxNodeBits {
		return Decoded128{}, invalid("nodeBits", fmt.Sprintf("%d is not in 0..%d (or -1: unknown)", nodeBits, maxNodeBits))
	}
	hi, lo := id.halves()
	d := Decoded128{Kind: kind, Millis: id.Millis(), Version: -1, Variant: -1, NodeBits: nodeBits, Node: -1}
	d.Time = time.UnixMilli(d.Millis).UTC()
	if kind == KindUUIDv7 {
		d.Version, d.Variant = int(id[6]>>4), int(id[8]>>6)
		d.Counter = uint32((hi&0xFFF)<<12 | (lo>>50)&0xFFF)
	} else {
		d.Counter = uint32((hi&0xFFFF)<<8 | lo>>56)
	}
	if nodeBits >= 0 {
		d.Node = int64(lo >> randomBits(kind, nodeBits) & (1<<nodeBits - 1))
	}
	return d, nil
}

// hexValue and crockfordValue map a character to its digit value, 0xFF for the rest.
var hexValue, crockfordValue = digitTable(hexDigits, true), digitTable(crockford, false)

func digitTable(digits string, hexLetters bool) [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = 0xFF
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		t[c] = byte(i)
		if c >= 'a' && c <= 'z' && hexLetters {
			t[c-'a'+'A'] = byte(i)
		}
		if c >= 'A' && c <= 'Z' {
			t[c-'A'+'a'] = byte(i)
		}
	}
	return t
}

// ParseID128 reads an ID in any of its texts, told apart by length in bytes: 36, the
// canonical UUID (dashes at 8, 13, 18, 23; hex digits in either case); 32, hex; 26, a ULID
// (either case; I, L, O and U are not in its alphabet, and a first character above 7 would not
// fit 128 bits). Anything else is refused with an *Error matching ErrInvalidArgument that says
// why. A UUID text of any version is read (Decode reports it; ParseUUID7 insists on 7).
func ParseID128(text string) (ID128, error) {
	switch len(text) {
	case 36, 32:
		return parseHexID(text)
	case 26:
		return parseULID(text)
	}
	return ID128{}, badID128(text, fmt.Sprintf("%d bytes; %s", len(text), id128Forms))
}

// ParseUUID7 is ParseID128 of a UUIDv7: other versions and variants are refused.
func ParseUUID7(text string) (ID128, error) {
	id, err := ParseID128(text)
	if err == nil && !id.IsUUIDv7() {
		err = badID128(text, fmt.Sprintf("not a UUIDv7: version %d, variant %d", id[6]>>4, id[8]>>6))
	}
	return id, err
}

// ID128FromBytes is the ID of 16 big-endian bytes; any other length is refused
// (ErrInvalidArgument).
func ID128FromBytes(b []byte) (ID128, error) {
	var id ID128
	if len(b) != len(id) {
		return id, invalid("128-bit ID", fmt.Sprintf("%d bytes, not 16", len(b)))
	}
	copy(id[:], b)
	return id, nil
}

func parseHexID(text string) (ID128, error) {
	dashed := len(text) == 36
	var id ID128
	n := 0 // hex digits read
	for i := 0; i < len(text); i++ {
		c := text[i]
		if dashed && (i == 8 || i == 13 || i == 18 || i == 23) {
			if c != '-' {
				return ID128{}, badID128(text, fmt.Sprintf("byte %d should be '-' (uuid form 8-4-4-4-12)", i+1))
			}
			continue
		}
		v := hexValue[c]
		if v == 0xFF {
			return ID128{}, badID128(text, fmt.Sprintf("byte %d is not a hex digit", i+1))
		}
		id[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	return id, nil
}

func parseULID(text string) (ID128, error) {
	var hi, lo uint64
	for i := 0; i < 26; i++ {
		v := crockfordValue[text[i]]
		if v == 0xFF {
			return ID128{}, badID128(text, fmt.Sprintf("byte %d is not in the ULID alphabet 0-9 A-Z without I, L, O, U", i+1))
		}
		if i == 0 && v > 7 {
			return ID128{}, badID128(text, "above the largest ULID 7ZZZZZZZZZZZZZZZZZZZZZZZZZ (128 bits)")
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	return fromHalves(hi, lo), nil
}

func badID128(text, reason string) *Error {
	return invalid(fmt.Sprintf("not a 128-bit ID: %q", shortenChars(text)), reason)
}
