package idmint

// The Redis protocol (RESP2), as much of it as the nodes' commands need: commands go out as
// arrays of bulk strings, replies come back as simple strings, errors, integers, bulk strings
// and arrays. Written here rather than taken from a Redis client so the module needs nothing
// beyond the standard library, and so every reply is checked as idmint's contract wants it
// (integers within int64, bounded sizes).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Limits of a reply: the nodes' answers are small (at most 10,000 IDs; bulk strings only in
// IDMINT.SPACE's few words and in refusals), so anything much larger is a broken or hostile peer, refused before memory is given to it. The limits are
// on the whole reply, not on each array or string in it: arrays nested in arrays, each
// within a per-array limit, would multiply it.
const (
	maxReplyValues = 1 << 15  // values in one reply, nested ones included
	maxReplyBytes  = 64 << 10 // bytes of the bulk strings of one reply, together
	maxLineLen     = 64 << 10 // a simple string, an error, a length
	maxNestDepth   = 4
)

// errProtocol is a reply that does not parse: the connection cannot be trusted after it.
var errProtocol = errors.New("RESP protocol error")

// value is one reply.
type value struct {
	kind  byte // '+' simple string, '-' error, ':' integer, '$' bulk string, '*' array
	null  bool // a null bulk string or array
	str   string
	num   int64
	array []value
}

// appendCommand writes args as a RESP array of bulk strings.
func appendCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, arg := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(arg)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, arg...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}

// budget is what is left of one reply's limits while it is read.
type budget struct {
	values int
	bytes  int
}

// readValue reads one reply.
func readValue(r *bufio.Reader) (value, error) {
	return readNested(r, 0, &budget{values: maxReplyValues, bytes: maxReplyBytes})
}

func readNested(r *bufio.Reader, depth int, left *budget) (value, error) {
	if left.values--; left.values < 0 {
		return value{}, fmt.Errorf("%w: more than %d values in one reply", errProtocol, maxReplyValues)
	}
	line, err := readLine(r)
	if err != nil {
		return value{}, err
	}
	if len(line) == 0 {
		return value{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	kind, rest := line[0], string(line[1:])
	switch kind {
	case '+', '-':
		return value{kind: kind, str: rest}, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			// Includes integers outside int64: IDs are below 2^63, nothing larger is read.
			return value{}, fmt.Errorf("%w: integer %q", errProtocol, shorten(rest))
		}
		return value{kind: kind, num: n}, nil
	case '$':
		n, err := readLength(rest, left.bytes)
		if err != nil || n < 0 {
			return value{kind: kind, null: true}, err
		}
		left.bytes -= n
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return value{}, err
		}
		if body[n] != '\r' || body[n+1] != '\n' {
			return value{}, fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
		}
		return value{kind: kind, str: string(body[:n])}, nil
	case '*':
		n, err := readLength(rest, left.values)
		if err != nil || n < 0 {
			return value{kind: kind, null: true}, err
		}
		if depth >= maxNestDepth {
			return value{}, fmt.Errorf("%w: arrays nested too deep", errProtocol)
		}
		items := make([]value, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			item, err := readNested(r, depth+1, left)
			if err != nil {
				return value{}, err
			}
			items = append(items, item)
		}
		return value{kind: kind, array: items}, nil
	}
	return value{}, fmt.Errorf("%w: unknown reply type %q", errProtocol, kind)
}

// readLength reads the length of a bulk string or array: -1 for null, else 0..=max (what is
// left of the reply's budget).
func readLength(text string, max int) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < -1 || n > max {
		return 0, fmt.Errorf("%w: length %q", errProtocol, shorten(text))
	}
	return n, nil
}

// readLine reads a line up to CRLF, without it.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil || errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, chunk...)
			if len(line) > maxLineLen {
				return nil, fmt.Errorf("%w: line too long", errProtocol)
			}
			if err == nil {
				break
			}
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(line)+len(chunk) == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not ended by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}

// describe shows a reply briefly, for messages about a reply of the wrong shape.
func (v value) describe() string {
	switch {
	case v.null:
		return "null"
	case v.kind == ':':
		return strconv.FormatInt(v.num, 10)
	case v.kind == '*':
		return fmt.Sprintf("an array of %d", len(v.array))
	case v.kind == '-':
		return "error " + shorten(v.str)
	}
	return strconv.Quote(shorten(v.str))
}

// shorten cuts text to 40 bytes for messages.
func shorten(text string) string {
	if len(text) > 40 {
		return text[:40] + "…"
	}
	return text
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
