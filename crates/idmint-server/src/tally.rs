//! Counting what a hostile client can make happen often (refused connections, wrong tokens)
//! without letting it write the log: each kind of event goes to a Prometheus counter every
//! time, and to the log at most once per [`LOG_EVERY`], with the count since the last line.
//!
//! The first event after a quiet interval is logged at once (an operator sees the first wrong
//! token when it happens); the ones after it are summed and logged by the next event past the
//! interval or by [`Tally::flush`], which a task of each listener calls every [`LOG_EVERY`],
//! and which runs once more when the listener's tallies are dropped at shutdown: the end of a
//! burst is logged within [`LOG_EVERY`] of it, never lost. Every line names the listener, the
//! count and the address of the last client, on both front ends alike.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use metrics::Counter;

use crate::telemetry;

/// Longest a count waits before it is logged.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(10);

/// One kind of event of one listener.
#[derive(Debug)]
pub(crate) struct Tally {
    listener: &'static str,
    /// What happened, for the log line ("connections refused: too many connections").
    what: &'static str,
    counter: Counter,
    /// Events since the last log line.
    pending: AtomicU64,
    /// Milliseconds after `base` when the next line may be written.
    next_log_ms: AtomicU64,
    base: Instant,
    /// The client of the last event, for the line that sums it.
    last_peer: Mutex<Option<SocketAddr>>,
}

impl Tally {
    /// Refused or closed connections of `listener` for `reason` (a label of
    /// [`telemetry::CONNECTIONS_REFUSED`]).
    pub(crate) fn refused(
        listener: &'static str,
        reason: &'static str,
        what: &'static str,
    ) -> Self {
        let counter = metrics::counter!(telemetry::CONNECTIONS_REFUSED, "listener" => listener, "reason" => reason);
        Self::new(listener, what, counter)
    }

    /// Missing or wrong tokens on `listener`.
    pub(crate) fn auth_failures(listener: &'static str) -> Self {
        let counter = metrics::counter!(telemetry::AUTH_FAILURES, "listener" => listener);
        Self::new(listener, "authentication failed", counter)
    }

    fn new(listener: &'static str, what: &'static str, counter: Counter) -> Self {
        Self {
            listener,
            what,
            counter,
            pending: AtomicU64::new(0),
            next_log_ms: AtomicU64::new(0),
            base: Instant::now(),
            last_peer: Mutex::new(None),
        }
    }

    /// Counts one event from `peer` (logged when it is the first of an interval).
    pub(crate) fn add(&self, peer: SocketAddr) {
        self.counter.increment(1);
        *self
            .last_peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(peer);
        self.pending.fetch_add(1, Ordering::Relaxed);
        let now = self.elapsed_ms();
        let due = self.next_log_ms.load(Ordering::Relaxed);
        if now >= due
            && self
                .next_log_ms
                .compare_exchange(
                    due,
                    now + log_every_ms(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            let count = self.pending.swap(0, Ordering::Relaxed);
            self.report(count, peer);
        }
    }

    /// Logs the events counted since the last line, if any: call it every [`LOG_EVERY`].
    pub(crate) fn flush(&self) {
        let count = self.pending.swap(0, Ordering::Relaxed);
        if count > 0 {
            self.next_log_ms
                .store(self.elapsed_ms() + log_every_ms(), Ordering::Relaxed);
            let peer = *self
                .last_peer
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match peer {
                Some(peer) => self.report(count, peer),
                None => self.report(count, "an unknown client"),
            }
        }
    }

    /// The one line of `count` events, the last from `peer`.
    fn report(&self, count: u64, peer: impl std::fmt::Display) {
        tracing::warn!(
            listener = self.listener,
            count,
            last_peer = %peer,
            "{}: {count} since the last report, the last from {peer} (at most one report per {} s)",
            self.what,
            LOG_EVERY.as_secs()
        );
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The tallies of one listener, flushed to the log every [`LOG_EVERY`] by a task that ends
/// when the last holder drops them.
#[derive(Debug)]
pub(crate) struct ListenerTallies {
    /// Beyond `--max-connections`.
    pub(crate) over_limit: Tally,
    /// Beyond `--max-connections-per-address`.
    pub(crate) per_address: Tally,
    /// Not authenticated (or silent) within `--auth-timeout`.
    pub(crate) auth_timeout: Tally,
    /// Idle past `--idle-timeout`.
    pub(crate) idle_timeout: Tally,
    /// Closed after too many wrong tokens.
    pub(crate) auth_closed: Tally,
    /// TLS handshakes that failed.
    pub(crate) tls_failed: Tally,
    /// Missing or wrong tokens.
    pub(crate) auth_failures: Tally,
}

impl ListenerTallies {
    /// The tallies of `listener` (`http` or `resp`), with their flushing task.
    pub(crate) fn start(listener: &'static str) -> std::sync::Arc<Self> {
        let tallies = std::sync::Arc::new(Self {
            over_limit: Tally::refused(
                listener,
                "max_connections",
                "connections refused: too many connections (--max-connections)",
            ),
            per_address: Tally::refused(
                listener,
                "per_address",
                "connections refused: too many from one address (--max-connections-per-address)",
            ),
            auth_timeout: Tally::refused(
                listener,
                "auth_timeout",
                "connections closed: not authenticated in time",
            ),
            idle_timeout: Tally::refused(listener, "idle_timeout", "connections closed: idle"),
            auth_closed: Tally::refused(
                listener,
                "auth_failures",
                "connections closed: too many wrong tokens",
            ),
            tls_failed: Tally::refused(
                listener,
                "tls_handshake",
                "connections closed: TLS handshake failed",
            ),
            auth_failures: Tally::auth_failures(listener),
        });
        let weak = std::sync::Arc::downgrade(&tallies);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let mut ticks = tokio::time::interval(LOG_EVERY);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    let Some(tallies) = weak.upgrade() else {
                        return;
                    };
                    tallies.flush();
                }
            });
        }
        tallies
    }

    /// Logs every count pending (also when dropped, at shutdown).
    pub(crate) fn flush(&self) {
        for tally in [
            &self.over_limit,
            &self.per_address,
            &self.auth_timeout,
            &self.idle_timeout,
            &self.auth_closed,
            &self.tls_failed,
            &self.auth_failures,
        ] {
            tally.flush();
        }
    }
}

impl Drop for ListenerTallies {
    /// The listener is done (its last connection closed at shutdown): what is pending is
    /// logged now, or never.
    fn drop(&mut self) {
        self.flush();
    }
}

fn log_every_ms() -> u64 {
    u64::try_from(LOG_EVERY.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_one_line_then_one_sum() {
        let tally = Tally::auth_failures("test");
        let a = SocketAddr::from(([127, 0, 0, 1], 1));
        tally.add(a);
        // The first was logged at once; the next ones wait for the interval.
        assert_eq!(tally.pending.load(Ordering::Relaxed), 0);
        for _ in 0..999 {
            tally.add(a);
        }
        assert_eq!(tally.pending.load(Ordering::Relaxed), 999);
        tally.flush();
        assert_eq!(tally.pending.load(Ordering::Relaxed), 0);
        tally.add(a);
        assert_eq!(tally.pending.load(Ordering::Relaxed), 1);
    }
}
