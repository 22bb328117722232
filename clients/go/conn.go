package idmint

// One connection to a node, shared by every request to it: requests are written in turn
// (pipelined) and one reader goroutine hands the replies back in the same order. One
// connection, not a pool, because IDMINT.GIVEBACK is taken only from the connection that took
// the range: a range's tail can be given back as long as its connection lives.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// conn is a pipelined RESP2 connection.
type conn struct {
	nc net.Conn

	mu      sync.Mutex // orders writes with the queue of waiting replies
	out     []byte
	pending []chan result
	broken  error // set once; every later request fails with it
	// waiting counts the requests still waiting for their reply (not those given up on).
	waiting int
	// retired: no new request is sent (the node replaced the connection after one timed
	// out); it closes once no request waits on it.
	retired bool
}

// result is one reply, or why there is none.
type result struct {
	v   value
	err error
}

// dial opens a connection to address (TLS when tlsConfig is set) and, with a token, sends
// AUTH as its first command, all before the deadline. AUTH's error reply is returned as it
// came (a *replyError), so a wrong token is told from a node that is down.
func dial(ctx context.Context, address string, tlsConfig *tls.Config, token string, deadline time.Time) (*conn, error) {
	dialer := net.Dialer{Deadline: deadline, KeepAlive: 30 * time.Second}
	var nc net.Conn
	var err error
	if tlsConfig != nil {
		tlsDialer := tls.Dialer{NetDialer: &dialer, Config: tlsConfig}
		nc, err = tlsDialer.DialContext(ctx, "tcp", address)
	} else {
		nc, err = dialer.DialContext(ctx, "tcp", address)
	}
	if err != nil {
		return nil, err
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	reader := bufio.NewReaderSize(nc, 16<<10)
	if token != "" {
		// Sent and read before the reader goroutine starts: the connection is not shared yet.
		_ = nc.SetDeadline(deadline)
		if _, err := nc.Write(appendCommand(nil, "AUTH", token)); err != nil {
			nc.Close()
			return nil, err
		}
		reply, err := readValue(reader)
		if err != nil {
			nc.Close()
			return nil, err
		}
		if reply.kind == '-' {
			nc.Close()
			return nil, parseReplyError(reply.str)
		}
		if reply.kind != '+' {
			nc.Close()
			return nil, fmt.Errorf("%w: AUTH answered %s", errProtocol, reply.describe())
		}
		_ = nc.SetDeadline(time.Time{})
	}
	c := &conn{nc: nc}
	go c.readLoop(reader)
	return c, nil
}

// readLoop hands each reply to the oldest request waiting, until the connection fails.
func (c *conn) readLoop(reader *bufio.Reader) {
	for {
		v, err := readValue(reader)
		c.mu.Lock()
		if err != nil {
			c.failLocked(err)
			c.mu.Unlock()
			return
		}
		if len(c.pending) == 0 {
			c.failLocked(fmt.Errorf("%w: a reply nobody asked for", errProtocol))
			c.mu.Unlock()
			return
		}
		waiter := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		waiter <- result{v: v}
	}
}

// failLocked breaks the connection: it is closed, and every request waiting gets err.
func (c *conn) failLocked(err error) {
	if c.broken == nil {
		c.broken = err
		c.nc.Close()
	}
	for _, waiter := range c.pending {
		waiter <- result{err: c.broken}
	}
	c.pending = nil
}

// close breaks the connection for good.
func (c *conn) close() {
	c.mu.Lock()
	c.failLocked(errConnClosed)
	c.mu.Unlock()
}

// retire takes the connection out of use without failing the requests waiting on it: a
// request that timed out says the node is slow, not that the replies of the others in
// flight on the connection will not come (they come in order, after the late one). The
// connection is closed once none waits.
func (c *conn) retire() {
	c.mu.Lock()
	c.retired = true
	if c.waiting == 0 {
		c.failLocked(errConnClosed)
	}
	c.mu.Unlock()
}

// isBroken reports whether the connection is closed.
func (c *conn) isBroken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken != nil
}

// usable reports whether new requests may be sent on the connection.
func (c *conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken == nil && !c.retired
}

var errConnClosed = errors.New("connection closed")

// do sends one command and waits for its reply until ctx ends. A request given up on leaves
// its reply to be read and dropped; the caller retires the connection when the node timed
// out.
func (c *conn) do(ctx context.Context, args ...string) (value, error) {
	waiter := make(chan result, 1)
	c.mu.Lock()
	if c.broken != nil {
		err := c.broken
		c.mu.Unlock()
		return value{}, err
	}
	c.out = appendCommand(c.out[:0], args...)
	c.pending = append(c.pending, waiter)
	deadline, _ := ctx.Deadline() // none: the zero time, no deadline
	_ = c.nc.SetWriteDeadline(deadline)
	if _, err := c.nc.Write(c.out); err != nil {
		c.failLocked(err)
		c.mu.Unlock()
		return value{}, err
	}
	c.waiting++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.waiting--; c.waiting == 0 && c.retired {
			c.failLocked(errConnClosed)
		}
		c.mu.Unlock()
	}()
	select {
	case r := <-waiter:
		return r.v, r.err
	case <-ctx.Done():
		return value{}, ctx.Err()
	}
}
