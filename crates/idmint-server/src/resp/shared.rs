//! What every connection of one Redis-protocol listener shares: the ID service, the options,
//! and the counters `INFO` reports.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::options::RespOptions;
use crate::auth::Grant;
use crate::ids::Ids;
use crate::tally::ListenerTallies;

/// State shared by every connection of one listener: the service, the options and the
/// counters `INFO` reports.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) ids: Arc<Ids>,
    pub(super) options: RespOptions,
    /// The address the listener is bound to (`INFO`'s `tcp_port`).
    pub(super) local_addr: Option<SocketAddr>,
    pub(super) started: Instant,
    /// `INFO`'s `run_id` and `master_replid`: 40 random hex digits, new at every start.
    pub(super) run_id: String,
    next_client_id: AtomicU64,
    pub(super) connected: AtomicUsize,
    pub(super) total_connections: AtomicU64,
    pub(super) rejected_connections: AtomicU64,
    /// Bytes held by the open transactions of every connection (see `cmd::transaction`).
    pub(super) queued_bytes: Arc<AtomicUsize>,
    /// Refusals, timeouts and wrong tokens, counted and logged in aggregate.
    pub(super) tallies: Arc<ListenerTallies>,
    /// Commands run, added once per batch of pipelined commands (not per command, so that
    /// connections on different cores do not fight over one cache line).
    pub(super) total_commands: AtomicU64,
}

impl Shared {
    pub(super) fn new(
        ids: Arc<Ids>,
        options: RespOptions,
        local_addr: Option<SocketAddr>,
        tallies: Arc<ListenerTallies>,
    ) -> Self {
        Self {
            ids,
            options,
            local_addr,
            started: Instant::now(),
            run_id: random_hex40(),
            next_client_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            queued_bytes: Arc::new(AtomicUsize::new(0)),
            tallies,
            total_commands: AtomicU64::new(0),
        }
    }

    /// What a new connection may do before `AUTH`: everything when no token is configured,
    /// nothing otherwise.
    pub(super) fn initial_grant(&self) -> Option<Arc<Grant>> {
        (!self.options.auth.required()).then(Grant::open)
    }

    /// A new connection's `CLIENT ID`.
    pub(super) fn client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// 40 random hex digits, from the standard library's per-process random hash keys (a run ID
/// needs to differ between starts, not to be secret).
fn random_hex40() -> String {
    use std::fmt::Write;
    use std::hash::{BuildHasher, RandomState};
    let mut text = String::with_capacity(48);
    for i in 0u8..3 {
        let _ = write!(text, "{:016x}", RandomState::new().hash_one(i));
    }
    text.truncate(40);
    text
}
