package idmint

// A fake node for the tests of what a real node never does: replies of the wrong shape, out
// of range, hostile (endless, huge, dribbled), or none at all. It reads commands as RESP
// arrays and answers each with what the test's handler writes.

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeNode is a TCP listener on loopback whose connections a handler answers.
type fakeNode struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
	// commands counts the commands read, by name.
	commands map[string]int
}

// fakeHandler answers one command on w; it returns false to close the connection.
type fakeHandler func(w net.Conn, args []string) bool

// startFake listens on loopback and answers with handle until the test ends; it answers
// AUTH itself (+OK, any token).
func startFake(t testing.TB, handle fakeHandler) *fakeNode {
	t.Helper()
	return startFakeRaw(t, func(w net.Conn, args []string) bool {
		if args[0] == "AUTH" {
			w.Write([]byte("+OK\r\n"))
			return true
		}
		return handle(w, args)
	})
}

// startFakeRaw is startFake with every command, AUTH too, left to handle.
func startFakeRaw(t testing.TB, handle fakeHandler) *fakeNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{l: l, commands: map[string]int{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, c)
			f.mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					f.mu.Lock()
					f.commands[args[0]]++
					f.mu.Unlock()
					if !handle(c, args) {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeNode) url() string { return "redis://" + f.l.Addr().String() }

func (f *fakeNode) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commands[name]
}

// stop closes the listener and every connection, and waits for the handlers.
func (f *fakeNode) stop() {
	f.l.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// readCommand reads one command, an array of bulk strings, with the client's own codec.
func readCommand(r *bufio.Reader) ([]string, error) {
	v, err := readValue(r)
	if err != nil {
		return nil, err
	}
	args := make([]string, len(v.array))
	for i, a := range v.array {
		args[i] = a.str
	}
	if len(args) == 0 {
		return nil, errProtocol
	}
	return args, nil
}

// rangeReply is IDMINT.RANGE's answer [first, last] as a node writes it.
func rangeReply(first, last string) string {
	return "*2\r\n:" + first + "\r\n:" + last + "\r\n"
}

// countOf is the count n of IDMINT.RANGE tag n [ABOVE last].
func countOf(args []string) int64 {
	n, _ := strconv.ParseInt(args[2], 10, 64)
	return n
}

// quick is a config for a fake node: short waits, fixed ranges.
func quick(urls ...string) Config {
	return Config{Nodes: urls, MinStep: 10, MaxStep: 10, MaxWait: 400 * time.Millisecond,
		CallTimeout: 150 * time.Millisecond, Backoff: 50 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond}
}

// answerSpace answers IDMINT.SPACE as a node handing out plain IDs; it reports whether it did.
func answerSpace(w net.Conn, args []string) bool {
	if args[0] == "IDMINT.SPACE" {
		w.Write([]byte("*2\r\n$8\r\npermuted\r\n:0\r\n"))
		return true
	}
	return false
}
