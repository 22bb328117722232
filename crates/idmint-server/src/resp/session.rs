//! One connection's state, as the commands read and change it: who it is (`CLIENT ID`, name,
//! peer), what it may do (its grant, from `AUTH`), how it speaks (RESP2 or RESP3, the ID
//! format), the transaction it is queueing, its cache of tag buffers and the counts it has not
//! reported yet. The commands (`cmd`) apply on it; the connection loop only moves its frames.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use idmint_resp::{Command, Protocol};

use super::queue::Transaction;
use super::reply::IdFormat;
use super::returnables::Returnables;
use super::shared::Shared;
use super::tags::TagCache;
use crate::auth::{Grant, Need};
use crate::telemetry;

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// Go on with the next command.
    Continue,
    /// Write the replies so far, then close (`QUIT`).
    Close,
}

/// A connection's state as the commands see it.
pub(super) struct Session {
    pub(super) shared: Arc<Shared>,
    /// `CLIENT ID`.
    pub(super) id: u64,
    pub(super) peer: SocketAddr,
    pub(super) local: Option<SocketAddr>,
    pub(super) opened: Instant,
    /// What the connection may do: from `AUTH`, or everything from the start when no token is
    /// configured; `None` before `AUTH`.
    pub(super) grant: Option<Arc<Grant>>,
    /// Whether `grant` allows minting: the fast path's one check.
    pub(super) may_mint: bool,
    /// The SHA-256 of the token that gave `grant`, and the tokens' generation it was checked
    /// against: after a reload the token is looked up again (`recheck_token`).
    pub(super) token: Option<[u8; 32]>,
    pub(super) tokens_seen: u64,
    /// Wrong tokens sent so far.
    pub(super) auth_failures: u32,
    /// Whether a complete command has arrived (until then, and until `AUTH` when tokens are
    /// configured, the connection must make progress within `auth_timeout`).
    pub(super) greeted: bool,
    /// `CLIENT SETNAME`.
    pub(super) name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME` / `LIB-VER`.
    pub(super) lib_name: Option<Bytes>,
    pub(super) lib_ver: Option<Bytes>,
    /// RESP2 until `HELLO 3`.
    pub(super) protocol: Protocol,
    /// How ID replies are written (`IDMINT.FORMAT`).
    pub(super) format: IdFormat,
    /// The transaction being queued, between `MULTI` and `EXEC`.
    pub(super) transaction: Option<Transaction>,
    /// The commands of the transaction `EXEC` just started, for the connection loop to run.
    pub(super) exec_queue: Vec<Command>,
    pub(super) tags: TagCache,
    /// The runs `IDMINT.GIVEBACK` may return.
    pub(super) returnable: Returnables,
    /// `idmint_ids_issued_total{kind="snowflake"}` and the snowflakes issued since the last
    /// flush.
    snowflakes_issued: metrics::Counter,
    pub(super) snowflakes_pending: u64,
    /// `idmint_ids_issued_total{kind="uuidv7"}` and `{kind="ulid"}`, and the IDs of each
    /// issued since the last flush (`telemetry::id128_index` order).
    id128s_issued: [metrics::Counter; 2],
    id128s_pending: [u64; 2],
    /// Commands run since the last flush of the shared counter.
    pub(super) commands_pending: u64,
}

impl Session {
    pub(super) fn new(shared: Arc<Shared>, peer: SocketAddr, local: Option<SocketAddr>) -> Self {
        let grant = shared.initial_grant();
        Self {
            may_mint: grant.as_ref().is_some_and(|g| g.allows(Need::Mint)),
            grant,
            token: None,
            tokens_seen: 0,
            auth_failures: 0,
            greeted: false,
            id: shared.client_id(),
            shared,
            peer,
            local,
            opened: Instant::now(),
            name: None,
            lib_name: None,
            lib_ver: None,
            protocol: Protocol::Resp2,
            format: IdFormat::Integer,
            transaction: None,
            exec_queue: Vec::new(),
            tags: TagCache::default(),
            returnable: Returnables::default(),
            snowflakes_issued: telemetry::snowflake_counter(),
            snowflakes_pending: 0,
            id128s_issued: telemetry::id128_counters(),
            id128s_pending: [0; 2],
            commands_pending: 0,
        }
    }

    /// Before each command: counts it, and after the tokens were reloaded looks the
    /// connection's token up again.
    #[inline]
    pub(super) fn begin_command(&mut self) {
        self.commands_pending += 1;
        if self.token.is_some() && self.tokens_seen != self.shared.options.auth.generation() {
            self.recheck_token();
        }
    }

    /// Counts `n` 128-bit IDs of `kind` issued, for the next flush.
    #[inline]
    pub(super) fn count_id128s(&mut self, kind: idmint_core::Id128Kind, n: u64) {
        self.id128s_pending[telemetry::id128_index(kind)] += n;
    }

    /// Sends the counts gathered during a batch to the metrics recorder and `INFO`'s counters.
    pub(super) fn flush_counters(&mut self) {
        self.tags.flush_metrics();
        if self.snowflakes_pending > 0 {
            self.snowflakes_issued.increment(self.snowflakes_pending);
            self.snowflakes_pending = 0;
        }
        for (counter, pending) in self.id128s_issued.iter().zip(&mut self.id128s_pending) {
            if *pending > 0 {
                counter.increment(*pending);
                *pending = 0;
            }
        }
        if self.commands_pending > 0 {
            self.shared
                .total_commands
                .fetch_add(self.commands_pending, Ordering::Relaxed);
            self.commands_pending = 0;
        }
    }
}

impl Session {
    /// Gives the connection `grant`, from the token with SHA-256 `token` (none when no token
    /// is configured): what it may run from now on. The tags it cached under another grant are
    /// forgotten, so the fast path never serves a tag the new one refuses.
    pub(super) fn set_grant(&mut self, grant: Option<Arc<Grant>>, token: Option<[u8; 32]>) {
        self.may_mint = grant.as_ref().is_some_and(|g| g.allows(Need::Mint));
        self.tags.clear();
        self.returnable.clear();
        self.grant = grant;
        self.token = token;
        self.tokens_seen = self.shared.options.auth.generation();
    }

    /// After the tokens were reloaded: the connection's token looked up again, so a token
    /// removed from the file stops working on connections already open, at their next command.
    #[cold]
    pub(super) fn recheck_token(&mut self) {
        let grant = self
            .token
            .and_then(|token| self.shared.options.auth.check_digest(&token));
        let token = grant.as_ref().and(self.token);
        self.set_grant(grant, token);
    }

    /// Refuses the transaction being queued, if any, after a command was refused.
    pub(super) fn doom_transaction(&mut self) {
        if let Some(transaction) = &mut self.transaction {
            transaction.doom();
        }
    }

    /// Whether the connection has shown it is a client: it sent a command, and authenticated
    /// when tokens are configured.
    pub(super) fn admitted(&self) -> bool {
        self.greeted && self.grant.is_some()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.flush_counters();
    }
}
