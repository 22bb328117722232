package idmint

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"
)

// Config says how a Client reaches idmint and how much it keeps in memory. Only Nodes is
// required: every other field left at its zero value takes the default written beside it,
// which suits a service drawing up to some thousands of IDs a second per tag. Negative values
// are refused.
type Config struct {
	// Nodes are the nodes' Redis-protocol addresses, redis://host:port or rediss://host:port
	// (TLS). Tried in this order; a client stays on the first that works.
	Nodes []string
	// Token is sent with AUTH as each connection's first command; a mint token suffices.
	// Empty: no AUTH.
	Token string
	// CAPEM is a PEM certificate authority to trust for rediss:// nodes instead of the
	// system's (for a node whose certificate an operator made).
	CAPEM []byte

	// MinStep is the smallest range asked for. Default 100.
	MinStep int64
	// MaxStep is the largest range asked for at once; the nodes' --max-count (default
	// 10,000) caps it, and the client learns that cap from the nodes' refusal. A process
	// that crashes loses at most two ranges per tag. Default 10,000.
	MaxStep int64
	// TargetLifetime is how long one range should last at the observed rate (the range size
	// follows the rate). Default 10 s.
	TargetLifetime time.Duration
	// PrefetchAt is the share of a range used when the next one is asked for, in (0, 1].
	// Default 0.2.
	PrefetchAt float64
	// MaxWait is the longest a call waits for IDs when none are in memory, across every node
	// tried, before it fails with ErrUnavailable. Default 3 s.
	MaxWait time.Duration
	// CallTimeout is the longest one request to one node may take, connecting included,
	// before the node counts as failed and the next is tried. Default 1 s.
	CallTimeout time.Duration
	// Backoff is how long a failed node is avoided at first; doubled at each further failure
	// up to MaxBackoff, reset when it answers. Default 1 s.
	Backoff time.Duration
	// MaxBackoff is the longest a failing node is avoided. Default 30 s.
	MaxBackoff time.Duration
	// SnowflakeBatch is how many snowflakes are asked for at once. Default 64.
	SnowflakeBatch int
	// SnowflakeMaxAge is the age past which a snowflake batch is thrown away unused, so that
	// the snowflakes handed out stay close to the time they are handed out. Default 100 ms.
	SnowflakeMaxAge time.Duration
}

// The defaults of Config's fields.
const (
	DefaultMinStep         = 100
	DefaultMaxStep         = 10_000
	DefaultTargetLifetime  = 10 * time.Second
	DefaultPrefetchAt      = 0.2
	DefaultMaxWait         = 3 * time.Second
	DefaultCallTimeout     = time.Second
	DefaultBackoff         = time.Second
	DefaultMaxBackoff      = 30 * time.Second
	DefaultSnowflakeBatch  = 64
	DefaultSnowflakeMaxAge = 100 * time.Millisecond
)

// maxSegmentLen is the longest range kept: the offset within a range must stay far from the
// 32 bits the hot path's state word gives it (see segment.go).
const maxSegmentLen = 1 << 30

// String shows the config without its token.
func (c Config) String() string {
	token := ""
	if c.Token != "" {
		token = "<hidden>"
	}
	return fmt.Sprintf("idmint.Config{Nodes:%v Token:%s MinStep:%d MaxStep:%d TargetLifetime:%v "+
		"PrefetchAt:%g MaxWait:%v CallTimeout:%v Backoff:%v MaxBackoff:%v SnowflakeBatch:%d "+
		"SnowflakeMaxAge:%v}", c.Nodes, token, c.MinStep, c.MaxStep, c.TargetLifetime,
		c.PrefetchAt, c.MaxWait, c.CallTimeout, c.Backoff, c.MaxBackoff, c.SnowflakeBatch,
		c.SnowflakeMaxAge)
}

// GoString is String, so %#v does not print the token either.
func (c Config) GoString() string { return c.String() }

// withDefaults fills the zero fields and refuses what cannot work, naming the field.
func (c Config) withDefaults() (Config, error) {
	refuse := func(field, why string) (Config, error) {
		return c, &ConfigError{Field: field, Reason: why}
	}
	if len(c.Nodes) == 0 {
		return refuse("Nodes", "give at least one node")
	}
	if c.Token != "" && strings.TrimSpace(c.Token) == "" {
		return refuse("Token", "is blank; leave it empty for nodes without tokens")
	}
	ints := []struct {
		name  string
		value *int64
		def   int64
	}{
		{"MinStep", &c.MinStep, DefaultMinStep},
		{"MaxStep", &c.MaxStep, DefaultMaxStep},
	}
	for _, f := range ints {
		if *f.value < 0 {
			return refuse(f.name, "must not be negative")
		}
		if *f.value == 0 {
			*f.value = f.def
		}
	}
	if c.MaxStep < c.MinStep {
		return refuse("MaxStep", fmt.Sprintf("must be at least MinStep (%d)", c.MinStep))
	}
	if c.MaxStep > maxSegmentLen {
		return refuse("MaxStep", fmt.Sprintf("must be at most %d", maxSegmentLen))
	}
	durations := []struct {
		name  string
		value *time.Duration
		def   time.Duration
	}{
		{"TargetLifetime", &c.TargetLifetime, DefaultTargetLifetime},
		{"MaxWait", &c.MaxWait, DefaultMaxWait},
		{"CallTimeout", &c.CallTimeout, DefaultCallTimeout},
		{"Backoff", &c.Backoff, DefaultBackoff},
		{"MaxBackoff", &c.MaxBackoff, DefaultMaxBackoff},
		{"SnowflakeMaxAge", &c.SnowflakeMaxAge, DefaultSnowflakeMaxAge},
	}
	for _, f := range durations {
		if *f.value < 0 {
			return refuse(f.name, "must not be negative")
		}
		if *f.value == 0 {
			*f.value = f.def
		}
	}
	if c.MaxBackoff < c.Backoff {
		return refuse("MaxBackoff", fmt.Sprintf("must be at least Backoff (%v)", c.Backoff))
	}
	if c.PrefetchAt == 0 {
		c.PrefetchAt = DefaultPrefetchAt
	}
	if math.IsNaN(c.PrefetchAt) || c.PrefetchAt < 0 || c.PrefetchAt > 1 {
		return refuse("PrefetchAt", "must be between 0 and 1")
	}
	if c.SnowflakeBatch < 0 {
		return refuse("SnowflakeBatch", "must not be negative")
	}
	if c.SnowflakeBatch == 0 {
		c.SnowflakeBatch = DefaultSnowflakeBatch
	}
	if c.SnowflakeBatch > MaxSnowflakes {
		return refuse("SnowflakeBatch", fmt.Sprintf("must be at most %d", MaxSnowflakes))
	}
	c.Nodes = append([]string(nil), c.Nodes...)
	return c, nil
}

// nodeAddress is a node's address as read from its URL.
type nodeAddress struct {
	hostPort string      // host:port, for dialing and messages
	tls      *tls.Config // nil for redis://
}

// parseNode reads a redis:// or rediss:// URL, refusing what this client would not honour.
func parseNode(raw string, caPEM []byte) (nodeAddress, error) {
	bad := func(why string, err error) (nodeAddress, error) {
		return nodeAddress{}, &ConfigError{Field: "Nodes", Reason: fmt.Sprintf("`%s`: %s", raw, why), Err: err}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a redis:// or rediss:// URL", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return bad("not a redis:// or rediss:// URL", nil)
	}
	if u.User != nil {
		return bad("give the token in Token, not in the URL", nil)
	}
	if u.Hostname() == "" {
		return bad("no host", nil)
	}
	if (u.Path != "" && u.Path != "/" && u.Path != "/0") || u.RawQuery != "" || u.Fragment != "" {
		return bad("a node URL is scheme, host and port only", nil)
	}
	port := u.Port()
	if port == "" {
		port = "6379"
	}
	address := nodeAddress{hostPort: net.JoinHostPort(u.Hostname(), port)}
	if u.Scheme == "rediss" {
		address.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
		if len(caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				return nodeAddress{}, &ConfigError{Field: "CAPEM", Reason: "holds no PEM certificate"}
			}
			address.tls.RootCAs = pool
		}
	}
	return address, nil
}
