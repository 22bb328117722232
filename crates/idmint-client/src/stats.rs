//! What a client counts, for the program that embeds it: read directly with
//! [`Client::stats`](crate::Client::stats), and sent to the `metrics` facade (so whatever
//! recorder the program installed, Prometheus or other, exports them).
//!
//! | Metric | Kind | Meaning |
//! |---|---|---|
//! | `idmint_client_ranges_total` | counter | ranges of segment IDs taken from nodes |
//! | `idmint_client_range_ids_total` | counter | IDs in those ranges |
//! | `idmint_client_snowflake_batches_total` | counter | snowflake batches taken |
//! | `idmint_client_node_failures_total{node}` | counter | requests a node failed (down, timeout, store unavailable) |
//! | `idmint_client_failovers_total{node}` | counter | times the client moved to `node` |
//! | `idmint_client_node_up{node}` | gauge | 1 if the node's last request succeeded, 0 if it failed |
//! | `idmint_client_given_back_total` | counter | IDs given back to nodes at close |

use std::sync::atomic::{AtomicU64, Ordering};

/// The counters of one client.
#[derive(Debug)]
pub(crate) struct Stats {
    nodes: Vec<(String, AtomicU64)>,
    ranges: AtomicU64,
    range_ids: AtomicU64,
    snowflake_batches: AtomicU64,
    failovers: AtomicU64,
    given_back: AtomicU64,
}

/// A snapshot of a client's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Ranges of segment IDs taken from nodes.
    pub ranges: u64,
    /// IDs in those ranges.
    pub range_ids: u64,
    /// Snowflake batches taken.
    pub snowflake_batches: u64,
    /// Times the client moved to another node.
    pub failovers: u64,
    /// IDs given back at close.
    pub given_back: u64,
    /// Each node's address and the requests it failed.
    pub node_failures: Vec<(String, u64)>,
}

impl Stats {
    pub(crate) fn new(addresses: Vec<String>) -> Self {
        Self {
            nodes: addresses
                .into_iter()
                .map(|a| (a, AtomicU64::new(0)))
                .collect(),
            ranges: AtomicU64::new(0),
            range_ids: AtomicU64::new(0),
            snowflake_batches: AtomicU64::new(0),
            failovers: AtomicU64::new(0),
            given_back: AtomicU64::new(0),
        }
    }

    pub(crate) fn range(&self, ids: u64) {
        self.ranges.fetch_add(1, Ordering::Relaxed);
        self.range_ids.fetch_add(ids, Ordering::Relaxed);
        metrics::counter!("idmint_client_ranges_total").increment(1);
        metrics::counter!("idmint_client_range_ids_total").increment(ids);
    }

    pub(crate) fn snowflake_batch(&self) {
        self.snowflake_batches.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("idmint_client_snowflake_batches_total").increment(1);
    }

    pub(crate) fn failover(&self, to: &str) {
        self.failovers.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("idmint_client_failovers_total", "node" => to.to_owned()).increment(1);
    }

    pub(crate) fn node_failed(&self, address: &str) {
        if let Some((_, n)) = self.nodes.iter().find(|(a, _)| a == address) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let node = address.to_owned();
        metrics::counter!("idmint_client_node_failures_total", "node" => node.clone()).increment(1);
        metrics::gauge!("idmint_client_node_up", "node" => node).set(0.0);
    }

    pub(crate) fn node_up(&self, address: &str) {
        let node = address.to_owned();
        metrics::gauge!("idmint_client_node_up", "node" => node).set(1.0);
    }

    pub(crate) fn given_back(&self, ids: u64) {
        self.given_back.fetch_add(ids, Ordering::Relaxed);
        metrics::counter!("idmint_client_given_back_total").increment(ids);
    }

    pub(crate) fn snapshot(&self) -> ClientStats {
        let read = |n: &AtomicU64| n.load(Ordering::Relaxed);
        ClientStats {
            ranges: read(&self.ranges),
            range_ids: read(&self.range_ids),
            snowflake_batches: read(&self.snowflake_batches),
            failovers: read(&self.failovers),
            given_back: read(&self.given_back),
            node_failures: self
                .nodes
                .iter()
                .map(|(a, n)| (a.clone(), read(n)))
                .collect(),
        }
    }
}
