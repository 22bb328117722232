//! The slow path: what to do when a claim failed. Runs under the buffer's mutex, never waits.
//!
//! The outcomes: the claim was stale or the current segment is fine (retry); the segment is
//! used up and the next one is loaded (switch to it, retry); the used-up segment was the tag's
//! last (fail with `TagExhausted` at once, fetching nothing); the next one is not loaded (make
//! sure a fetch runs, tell the caller what to wait on); the buffer is closed.

use std::sync::atomic::Ordering;

use tokio::sync::watch;

use super::control::Control;
use super::loaded_range::LoadedRange;
use super::state_word::Claim;
use super::SegmentBuffer;
use crate::error::Error;

/// What a caller whose claim failed should do next.
#[derive(Debug)]
pub(crate) enum Advance {
    /// Claim again: the segment moved on or has IDs left.
    Retry,
    /// Nothing to hand out until fetch number `fetch` ends: wait for a change on `events`
    /// (subscribed under the lock, so no wake-up is lost).
    Wait {
        /// Bumped on every change of the fetch or the segments.
        events: watch::Receiver<u64>,
        /// The fetch waited for.
        fetch: u64,
    },
    /// The fetch waited for ended with this error and will not retry.
    Failed(Error),
    /// The buffer was shut down.
    Closed,
}

impl SegmentBuffer {
    /// Resolves a failed claim of generation `seen_gen`. `waiting_on` is the fetch this caller
    /// already waited for (so its failure is reported rather than retried forever); `wanted` is
    /// the run length the caller needs, which sizes the next fetch.
    pub(super) fn advance(&self, seen_gen: u32, waiting_on: Option<u64>, wanted: u64) -> Advance {
        let (outcome, spawn) = {
            let mut control = self.control();
            self.advance_locked(&mut control, seen_gen, waiting_on, wanted)
        };
        // Spawned outside the lock: on a runtime that is shutting down the task is dropped
        // inside `spawn`, and its drop guard takes the lock.
        if let Some(seq) = spawn {
            self.spawn_fetch(seq);
        }
        outcome
    }

    /// [`SegmentBuffer::advance`] with the lock held; returns a fetch to spawn, if any.
    fn advance_locked(
        &self,
        control: &mut Control,
        seen_gen: u32,
        waiting_on: Option<u64>,
        wanted: u64,
    ) -> (Advance, Option<u64>) {
        if control.closed {
            return (Advance::Closed, None);
        }
        let now = Claim::unpack(self.state.0.load(Ordering::Acquire));
        if now.gen != seen_gen || now.offset < control.current.len {
            return (Advance::Retry, None);
        }
        if let Some(next) = control.next.take() {
            self.switch_to(control, next);
            return (Advance::Retry, None);
        }
        if control.current.last {
            return (Advance::Failed(self.exhausted()), None);
        }
        if let Some((seq, error)) = &control.fetch.fatal {
            if Some(*seq) == waiting_on {
                return (Advance::Failed(error.clone()), None);
            }
        }
        control.wanted = control.wanted.max(wanted);
        let (fetch, spawn) = match control.fetch.in_flight {
            Some(seq) => (seq, None),
            None => {
                let seq = control.fetch.begin();
                (seq, Some(seq))
            }
        };
        let events = self.events.subscribe();
        (Advance::Wait { events, fetch }, spawn)
    }

    /// Makes `next` (already published in its slot) the current segment.
    ///
    /// A plain store of `(gen + 1, 0)` is safe although other threads `fetch_add` on the word
    /// concurrently: the current segment is used up (`offset >= len` was just read, and the
    /// offset of a generation never drops below its length once there: `take_back` lowers it only
    /// from the exact end of a run, below the length, and under the mutex held here), so every update the
    /// store overwrites was a failed claim, whose caller comes back here and retries; and
    /// compare-and-swaps on the old value fail. The `Release` pairs with the `Acquire` of the
    /// claims, which then see the slot published before.
    fn switch_to(&self, control: &mut Control, next: LoadedRange) {
        let gen = control.gen.wrapping_add(1);
        control.consumed_before = control.consumed_before.saturating_add(control.current.len);
        self.state.0.store(Claim::pack(gen, 0), Ordering::Release);
        control.gen = gen;
        control.current = next;
        let consumed = control.consumed_before;
        control.rate.observe(consumed, self.clock.now_ms());
        self.notify();
    }
}
