package idmint

import "sync/atomic"

// Stats are a client's counters, read with Client.Stats.
type Stats struct {
	// Ranges is how many ranges of segment IDs were taken from nodes.
	Ranges int64
	// RangeIDs is how many IDs those ranges held.
	RangeIDs int64
	// SnowflakeBatches is how many snowflake batches were taken.
	SnowflakeBatches int64
	// Failovers is how many times the client moved to another node.
	Failovers int64
	// GivenBack is how many IDs nodes took back at Close.
	GivenBack int64
	// NodeFailures is, per node address (host:port), the requests it failed.
	NodeFailures map[string]int64
}

// counters are the live counters behind Stats.
type counters struct {
	ranges, rangeIDs, snowflakeBatches, failovers, givenBack atomic.Int64
	addresses                                                []string
	nodeFailures                                             []atomic.Int64
}

func newCounters(addresses []string) *counters {
	return &counters{addresses: addresses, nodeFailures: make([]atomic.Int64, len(addresses))}
}

func (c *counters) nodeFailed(i int) { c.nodeFailures[i].Add(1) }

func (c *counters) snapshot() Stats {
	s := Stats{
		Ranges:           c.ranges.Load(),
		RangeIDs:         c.rangeIDs.Load(),
		SnowflakeBatches: c.snowflakeBatches.Load(),
		Failovers:        c.failovers.Load(),
		GivenBack:        c.givenBack.Load(),
		NodeFailures:     make(map[string]int64, len(c.addresses)),
	}
	for i, address := range c.addresses {
		s.NodeFailures[address] += c.nodeFailures[i].Load()
	}
	return s
}
