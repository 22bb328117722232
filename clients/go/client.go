package idmint

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// maxID is the largest ID: IDs are positive in a signed 64-bit column.
const maxID = math.MaxInt64

// maxTagLen is the longest tag name, in bytes.
const maxTagLen = 128

var (
	errNoRangeInTime      = errors.New("no range of IDs arrived in time")
	errNoSnowflakesInTime = errors.New("no fresh snowflake batch in time")
)

// Client hands out IDs of idmint nodes from its own memory and fails over between nodes.
// Every method may be called from any goroutine.
type Client struct {
	config Config
	nodes  *nodes
	ranges *remoteRanges
	flakes *snowflakes

	// tags maps tag names to their buffers, read without a lock on every Next (tags.go);
	// tags are added under adding.
	tags   *tagTable
	adding sync.Mutex

	closed  atomic.Bool
	closing chan struct{} // closed by Close: background retries stop

	uuid7, ulid *Generator // made here, no node involved
}

// New makes a client of config.Nodes. It opens no connection yet (the first call does); it
// refuses a config that cannot work with a *ConfigError naming the field.
func New(config Config) (*Client, error) {
	cfg, err := config.withDefaults()
	if err != nil {
		return nil, err
	}
	ns, err := newNodes(&cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{
		config:  cfg,
		nodes:   ns,
		ranges:  newRemoteRanges(ns, cfg.MaxWait),
		flakes:  newSnowflakes(cfg.SnowflakeBatch, cfg.SnowflakeMaxAge),
		closing: make(chan struct{}),
		tags:    newTagTable(),
	}
	// Without a node field these cannot be refused.
	c.uuid7, _ = NewUUID7Generator(GeneratorOptions{})
	c.ulid, _ = NewULIDGenerator(GeneratorOptions{})
	return c, nil
}

// Next returns the next segment ID of tag: strictly above every ID this client handed out for
// it before, unique across every client and node. Nearly always from memory; otherwise it
// waits (at most MaxWait, and no longer than ctx allows) for a range from a node.
//
// A dated tag (made with a period on the nodes) is the exception: a range kept here would
// outlive its period, so each ID is taken from a node when asked for (IDMINT.NEXT), one
// round trip each. Its IDs are unique and dated by the store's clock, and increase as long as
// the client talks to one node.
func (c *Client) Next(ctx context.Context, tag string) (int64, error) {
	if b := (*c.tags.read.Load())[tag]; b != nil {
		if id, ok := b.tryNext(); ok {
			return id, nil
		}
		return c.nextSlow(ctx, b)
	}
	b, err := c.buffer(tag)
	if err != nil {
		return 0, err
	}
	return c.nextSlow(ctx, b)
}

// UUID7 is a UUIDv7 made here, with no round trip: above every one this client made before
// (see Generator; no node field). It needs no node, so it works after Close too.
func (c *Client) UUID7() ID128 { return c.uuid7.Next() }

// ULID is a ULID made here, with no round trip (its text: ULIDString): above every one this
// client made before. It needs no node, so it works after Close too.
func (c *Client) ULID() ID128 { return c.ulid.Next() }

// Tag returns a handle on one tag's IDs, for a loop that draws many: its Next skips the lookup
// by name. It stops (with ErrClosed) once the client is closed.
func (c *Client) Tag(tag string) (*TagIDs, error) {
	b, err := c.buffer(tag)
	if err != nil {
		return nil, err
	}
	return &TagIDs{client: c, buffer: b}, nil
}

// TagIDs is one tag's IDs, from Client.Tag.
type TagIDs struct {
	client *Client
	buffer *tagBuffer
}

// Next is Client.Next of the handle's tag.
func (t *TagIDs) Next(ctx context.Context) (int64, error) {
	if id, ok := t.buffer.tryNext(); ok {
		return id, nil
	}
	return t.client.nextSlow(ctx, t.buffer)
}

// nextSlow waits for a range; for a dated tag, takes an ID from a node.
func (c *Client) nextSlow(ctx context.Context, b *tagBuffer) (int64, error) {
	if b.dated.Load() {
		return c.datedNext(ctx, b.tag)
	}
	id, err := b.take(ctx)
	if errors.Is(err, ErrDated) {
		b.dated.Store(true)
		// Shut, so the hot path finds nothing and no fetch the nodes refuse is started.
		b.shutdown()
		return c.datedNext(ctx, b.tag)
	}
	return id, err
}

// datedNext is one ID of the dated tag, from the first node that answers within MaxWait.
func (c *Client) datedNext(ctx context.Context, tag string) (int64, error) {
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	node, reply, err := c.nodes.call(ctx, tag, c.config.MaxWait, idShape, "IDMINT.NEXT", tag, "FORMAT", "INTEGER")
	if err != nil {
		return 0, err
	}
	if reply.kind != ':' || reply.num < 1 {
		return 0, badReply(c.nodes.list[node].address, tag,
			fmt.Sprintf("IDMINT.NEXT %s FORMAT INTEGER with %s, not an ID", tag, reply.describe()))
	}
	return reply.num, nil
}

// Snowflake returns one snowflake, taken from a batch no older than SnowflakeMaxAge.
func (c *Client) Snowflake(ctx context.Context) (int64, error) {
	ids, err := c.Snowflakes(ctx, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// Snowflakes returns n snowflakes (1..=MaxSnowflakes), increasing (in the nodes' order on
// nodes that hand out permuted IDs).
func (c *Client) Snowflakes(ctx context.Context, n int) ([]int64, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return c.flakes.take(ctx, c, n)
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats { return c.nodes.stats.snapshot() }

// Close stops handing out IDs and gives every tag's unused IDs back to the node that handed
// them out, where it can still take them (nothing taken there since); then it closes the
// connections. Later calls fail with ErrClosed. It waits for the give-backs at most MaxWait,
// and no longer than ctx allows (then it returns ctx's error; what was not given back is a
// gap, never reissued). Closing twice does nothing.
func (c *Client) Close(ctx context.Context) error {
	c.adding.Lock()
	if c.closed.Swap(true) {
		c.adding.Unlock()
		return nil
	}
	close(c.closing)
	buffers := c.tags.all()
	c.adding.Unlock()

	// Every tag at once: a node that hangs costs one wait, not one per tag.
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, b := range buffers {
		wg.Add(1)
		go func(b *tagBuffer) {
			defer wg.Done()
			if first, last, ok := b.shutdown(); ok {
				c.giveBack(b.tag, first, last)
			}
		}(b)
	}
	go func() { wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.nodes.close()
	return err
}

// giveBack returns [first, last] of tag to the node that gave it, at most MaxWait; a refusal
// or a failure leaves a gap, never a duplicate.
func (c *Client) giveBack(tag string, first, last int64) {
	ctx, cancel := context.WithTimeout(context.Background(), c.config.MaxWait)
	defer cancel()
	_, _ = c.ranges.giveBack(ctx, tag, first, last)
}

func (c *Client) checkOpen() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// buffer is the buffer of tag, made on first use.
func (c *Client) buffer(tag string) (*tagBuffer, error) {
	if b := c.tags.load(tag); b != nil {
		return b, nil
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	c.adding.Lock()
	defer c.adding.Unlock()
	// Checked again under the lock Close takes: no buffer is added after its snapshot.
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return c.tags.loadOrAdd(tag, func() *tagBuffer { return newTagBuffer(c, tag) }), nil
}

// checkTag refuses a tag name the nodes would refuse: empty, over 128 bytes, not UTF-8, with
// a control or line-separator character, or a space at either end.
func checkTag(tag string) error {
	bad := tag == "" || len(tag) > maxTagLen || !utf8.ValidString(tag) ||
		strings.HasPrefix(tag, " ") || strings.HasSuffix(tag, " ") ||
		strings.IndexFunc(tag, func(r rune) bool {
			return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
		}) >= 0
	if bad {
		return &Error{Kind: ErrInvalidArgument, Code: "invalid_tag", Tag: tag,
			message: fmt.Sprintf("invalid tag %q: 1 to %d bytes of UTF-8, no control characters, no space at either end", shorten(tag), maxTagLen)}
	}
	return nil
}

// isRetryable reports whether a fetch that failed with err may succeed later.
func isRetryable(err error) bool { return errors.Is(err, ErrUnavailable) }

// contains is strings.Contains, named for the reader of snowflakes.go.
func contains(text, part string) bool { return strings.Contains(text, part) }
