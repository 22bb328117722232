package idmint

// Real idmint nodes for the tests: `$IDMINT_BIN serve` processes on loopback, stopped by
// their PID when the test ends. Nothing here imitates a node.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testToken is the admin token of every node the tests start.
const testToken = "go-unit-test-token"

// testNode is one `idmint serve` process.
type testNode struct {
	t     testing.TB
	args  []string
	resp  int
	http  int
	mu    sync.Mutex
	cmd   *exec.Cmd
	store string
	tls   *tls.Config // for the tests' own connections to a node serving TLS
}

// idmintBin is the binary under test: the tests fail, never skip, without it.
func idmintBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("IDMINT_BIN")
	if bin == "" {
		t.Fatal("set IDMINT_BIN to the idmint binary (the tests start real nodes; nothing is skipped)")
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sqliteStore is a store URL in a directory the test removes.
func sqliteStore(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "ids.db")
}

// startNode starts a node on store with extra flags, waits until it answers, and stops it when
// the test ends.
func startNode(t testing.TB, store string, extra ...string) *testNode {
	t.Helper()
	return startNodeTLS(t, store, nil, extra...)
}

// startNodeTLS is startNode for a node serving TLS (its flags in extra), reached with
// tlsConfig.
func startNodeTLS(t testing.TB, store string, tlsConfig *tls.Config, extra ...string) *testNode {
	t.Helper()
	n := &testNode{t: t, resp: freePort(t), http: freePort(t), store: store, tls: tlsConfig}
	n.args = append([]string{"serve", "--store", store,
		"--node-name", fmt.Sprintf("go%d", n.resp),
		"--resp", fmt.Sprintf("127.0.0.1:%d", n.resp),
		"--http", fmt.Sprintf("127.0.0.1:%d", n.http),
		"--admin-token", testToken}, extra...)
	n.start()
	t.Cleanup(n.kill)
	return n
}

func (n *testNode) url() string { return fmt.Sprintf("redis://127.0.0.1:%d", n.resp) }

func (n *testNode) address() string { return fmt.Sprintf("127.0.0.1:%d", n.resp) }

func (n *testNode) start() {
	n.t.Helper()
	cmd := exec.Command(idmintBin(n.t), n.args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("starting idmint: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.mu.Lock()
	n.cmd = cmd
	n.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, err := n.command("PING"); err == nil && v.kind == '+' {
			return
		}
		select {
		case <-exited:
			n.t.Fatalf("idmint node %s exited at start", n.address())
		default:
		}
		if time.Now().After(deadline) {
			n.kill()
			n.t.Fatalf("idmint node %s did not start", n.address())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the node's process (SIGKILL: as a crash).
func (n *testNode) kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		// Wait for the port to be free (the goroutine of start reaps the process).
		for i := 0; i < 100; i++ {
			if _, err := net.DialTimeout("tcp", n.address(), 50*time.Millisecond); err != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	n.cmd = nil
}

// command sends one command (after AUTH) on a connection of its own, for the tests' own looks
// at a node.
func (n *testNode) command(args ...string) (value, error) {
	var nc net.Conn
	var err error
	dialer := &net.Dialer{Timeout: time.Second}
	if n.tls != nil {
		nc, err = tls.DialWithDialer(dialer, "tcp", n.address(), n.tls)
	} else {
		nc, err = dialer.Dial("tcp", n.address())
	}
	if err != nil {
		return value{}, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(nc)
	if _, err := nc.Write(appendCommand(nil, "AUTH", testToken)); err != nil {
		return value{}, err
	}
	if v, err := readValue(r); err != nil || v.kind != '+' {
		return value{}, fmt.Errorf("AUTH: %v %s", err, v.describe())
	}
	if _, err := nc.Write(appendCommand(nil, args...)); err != nil {
		return value{}, err
	}
	return readValue(r)
}

// newClient is a client of urls with the test token, closed when the test ends.
func newClient(t testing.TB, config Config) *Client {
	t.Helper()
	if config.Token == "" {
		config.Token = testToken
	}
	c, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func increasing(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
