//! The background fetch of the next range: one tokio task at a time per buffer, spawned on the
//! runtime handle the buffer was built with.
//!
//! Retry policy: a retryable store error (`Error::is_retryable`, e.g. the store is down) is
//! recorded, waiters are woken so they see it, and the task tries again after a jittered
//! [`Backoff`] that doubles from [`INITIAL_BACKOFF`] up to a quarter of `max_wait` (at most
//! [`MAX_BACKOFF`]), so a caller waiting `max_wait` sees several attempts and gets an ID soon
//! after the store is back, and the tags of all nodes do not retry in lockstep.
//! The task keeps retrying until it succeeds or the buffer shuts down or is dropped: a
//! prefetch that fails while the current range still has IDs must succeed before the range runs
//! out. An error a retry cannot fix (unknown tag, exhausted tag, corrupt store, a range that
//! breaks an invariant) ends the task, and the callers waiting on it get that error at once; the
//! next caller starts a new fetch, so creating the tag later heals the buffer (and a tail given
//! back by the node that held an exhausted tag's last range is served).

use std::ops::Range;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::loaded_range::LoadedRange;
use super::RangeSource;
use super::{SegmentBuffer, SegmentConfig};
use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::tag::Tag;

/// First pause after a failed fetch.
pub(crate) const INITIAL_BACKOFF: Duration = Duration::from_millis(10);

/// Longest pause between two attempts.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What became of a range the store returned.
#[derive(Debug)]
enum Installed {
    /// Loaded as the next segment (or kept for shutdown to give back).
    Kept,
    /// Refused (it would break strict increase); the error went to the waiters.
    Refused,
    /// The buffer already shut down and gave back what it had: this range must be given back
    /// by the task.
    Orphan(Range<u64>),
}

impl SegmentBuffer {
    /// Spawns fetch number `seq` on the buffer's runtime. Never panics, even when called from
    /// a thread outside any runtime or after the runtime shut down (the task is then dropped
    /// and its guard reports the failure).
    pub(super) fn spawn_fetch(&self, seq: u64) {
        // The guard is made here, not inside the task, so it is dropped (and reports) even if
        // the task is dropped before its first poll.
        let guard = FetchGuard {
            buffer: self.this.clone(),
            seq,
            armed: true,
        };
        let task = run_fetch(
            guard,
            Arc::clone(&self.store),
            self.tag.clone(),
            self.max_backoff(),
        );
        // Detached: the task reports through the buffer, not through its handle.
        drop(self.runtime.spawn(task));
    }

    /// The backoff cap: a quarter of `max_wait`, within 1 ms ..= [`MAX_BACKOFF`].
    fn max_backoff(&self) -> Duration {
        (self.config.max_wait / 4).clamp(Duration::from_millis(1), MAX_BACKOFF)
    }

    /// Called before each attempt: the step to ask for, or `None` when the buffer closed (the
    /// fetch then ends).
    fn plan_fetch(&self, seq: u64) -> Option<u64> {
        let mut control = self.control();
        if control.closed || control.fetch.in_flight != Some(seq) {
            control.fetch.end(seq);
            self.notify();
            return None;
        }
        let min_step = self.min_step();
        let config = SegmentConfig {
            min_step,
            max_step: self.config.max_step.max(min_step),
            ..self.config.clone()
        };
        let step = super::rate::plan_step(control.rate.rate(), &config, control.wanted);
        control.step = step;
        control.fetch.in_store_call = true;
        Some(step)
    }

    /// Takes in a range fetched by fetch `seq`.
    fn install(&self, seq: u64, allocated: Range<u64>) -> Installed {
        let mut control = self.control();
        control.fetch.end(seq);
        if control.closed && control.given_back {
            // Never used, so not checked: our own give-back may have lowered `max_id` below
            // `floor`, and this range is simply returned.
            self.notify();
            return Installed::Orphan(allocated);
        }
        let source_end = self.store.is_last(&allocated);
        let checked = LoadedRange::check_with_end(
            allocated,
            control.floor,
            self.config.prefetch_at,
            source_end,
        );
        let installed = match checked {
            Err(error) => {
                control.fetch.last_error = Some(error.clone());
                control.fetch.fatal = Some((seq, error));
                Installed::Refused
            }
            Ok(range) => {
                control.floor = range.allocated.end;
                control.fetch.last_error = None;
                if range.len >= control.wanted {
                    control.wanted = 0;
                }
                // Closed but not yet given back: kept unpublished, shutdown gives it back.
                if !control.closed {
                    let gen = control.gen.wrapping_add(1);
                    self.slot(gen).publish(gen, range.view());
                }
                control.next = Some(range);
                Installed::Kept
            }
        };
        self.notify();
        installed
    }

    /// Records a failed attempt of fetch `seq`: retried if `retry`, final otherwise.
    fn fetch_failed(&self, seq: u64, error: Error, retry: bool) {
        let mut control = self.control();
        control.fetch.last_error = Some(error.clone());
        if retry {
            control.fetch.in_store_call = false;
        } else {
            control.fetch.end(seq);
            control.fetch.fatal = Some((seq, error));
        }
        self.notify();
    }
}

/// Ends a fetch that was dropped before it finished (its runtime shut down): without this,
/// the buffer would believe a fetch is still running and waiters would wait in vain.
struct FetchGuard {
    buffer: Weak<SegmentBuffer>,
    seq: u64,
    armed: bool,
}

impl Drop for FetchGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(buffer) = self.buffer.upgrade() {
            buffer.fetch_failed(
                self.seq,
                Error::store_unavailable("the segment fetch task was cancelled"),
                false,
            );
        }
    }
}

/// The body of the fetch `guard` stands for. Holds the buffer only weakly between steps, so
/// dropping the last handle of a buffer ends its fetch.
async fn run_fetch(
    mut guard: FetchGuard,
    store: Arc<dyn RangeSource>,
    tag: Tag,
    max_backoff: Duration,
) {
    let buffer = guard.buffer.clone();
    let seq = guard.seq;
    let mut backoff = Backoff::new(INITIAL_BACKOFF, max_backoff);
    while let Some(step) = buffer.upgrade().and_then(|buffer| buffer.plan_fetch(seq)) {
        let outcome: Result<Range<u64>> = store.allocate(&tag, step).await;
        let give_back = match (buffer.upgrade(), outcome) {
            // The buffer is gone: give the range back instead of losing it.
            (None, Ok(range)) => Some(range),
            (None, Err(_)) => None,
            (Some(owner), Ok(range)) => match owner.install(seq, range) {
                Installed::Orphan(range) => Some(range),
                Installed::Kept | Installed::Refused => None,
            },
            (Some(owner), Err(error)) => {
                let retry = error.is_retryable();
                owner.fetch_failed(seq, error, retry);
                if retry {
                    drop(owner);
                    tokio::time::sleep(backoff.next_pause()).await;
                    continue;
                }
                None
            }
        };
        // The fetch is over for the buffer; what is left cannot affect it.
        guard.armed = false;
        if let Some(range) = give_back {
            let _ = store.give_back(&tag, range).await;
        }
        return;
    }
    guard.armed = false;
}
