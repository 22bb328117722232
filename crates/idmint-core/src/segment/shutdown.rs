//! Graceful shutdown: stop handing out IDs and give the unused tail back to the store.
//!
//! The store takes a range back only if it ends at the tag's `max_id`, i.e. if nobody
//! allocated after it (`SegmentStore::give_back` is a conditional update). So the buffer gives
//! back the part of its *last allocated* range that it did not use:
//!
//! - no next range loaded: the current segment's tail `[first unclaimed ID, end)`;
//! - the next range loaded and unused, right after the current one in the store (nobody
//!   allocated in between): both at once, `[first unclaimed ID of the current, end of next)`;
//! - the next range loaded but another node allocated between the two: the whole next range;
//!   the current tail is lost (a gap), since it no longer ends at `max_id`.
//!
//! If another node allocated after our last range, the store refuses and the tail is a gap:
//! never a duplicate. A fetch still inside `store.allocate` when shutdown starts is waited for
//! (up to `max_wait`) so its range can be included; one that returns later is given back by
//! the fetch task itself.

use std::ops::Range;
use std::sync::atomic::Ordering;

use tokio::time::Instant;

use super::state_word::{Claim, EXHAUSTED};
use super::SegmentBuffer;
use crate::error::Result;

/// What to give back, from the current segment's unused tail and the unused next range.
pub(crate) fn give_back_plan(
    current_tail: Option<Range<u64>>,
    next: Option<Range<u64>>,
) -> Option<Range<u64>> {
    match (current_tail, next) {
        (Some(tail), Some(next)) if tail.end == next.start => Some(tail.start..next.end),
        (_, Some(next)) => Some(next),
        (tail, None) => tail,
    }
}

impl SegmentBuffer {
    /// See [`SegmentBuffer::shutdown`](super::SegmentBuffer::shutdown).
    pub(super) async fn shut_down(&self) -> Result<bool> {
        match self.close().await {
            Some((tail, next)) => match give_back_plan(tail, next) {
                Some(range) => self.store.give_back(&self.tag, range).await,
                None => Ok(false),
            },
            None => Ok(false),
        }
    }

    /// See [`SegmentBuffer::retire`](super::SegmentBuffer::retire).
    pub(super) async fn retire_keeping_next(&self) -> Option<Range<u64>> {
        self.close().await.and_then(|(_, next)| next)
    }

    /// Stops every claim, waits (up to `max_wait`) for a fetch inside its store call, and
    /// returns the current segment's unused tail and the unused next range, which are now this
    /// caller's to give back or to use; `None` when it was closed already. A fetch that returns
    /// later gives its range back itself.
    async fn close(&self) -> Option<(Option<Range<u64>>, Option<Range<u64>>)> {
        let (tail, mut events, fetching) = {
            let mut control = self.control();
            if control.closed {
                return None;
            }
            control.closed = true;
            // From here on every claim fails: `fetch_add`s land past the end, and the
            // compare-and-swaps of runs see a changed word. Claims ordered before the swap got
            // offsets below `old.offset`, so none of them is in the tail.
            let old = Claim::unpack(
                self.state
                    .0
                    .swap(Claim::pack(control.gen, EXHAUSTED), Ordering::AcqRel),
            );
            let tail = control.current.tail(old.offset);
            self.notify();
            (tail, self.events.subscribe(), control.fetch.in_store_call)
        };
        if fetching {
            let deadline = Instant::now() + self.config.max_wait;
            while self.control().fetch.in_store_call {
                if tokio::time::timeout_at(deadline, events.changed())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
        let mut control = self.control();
        control.given_back = true;
        let next = control.next.take().map(|next| next.allocated);
        Some((tail, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_every_case() {
        assert_eq!(give_back_plan(None, None), None);
        assert_eq!(give_back_plan(Some(5..10), None), Some(5..10));
        assert_eq!(give_back_plan(Some(5..10), Some(10..20)), Some(5..20));
        assert_eq!(give_back_plan(Some(5..10), Some(30..40)), Some(30..40));
        assert_eq!(give_back_plan(None, Some(10..20)), Some(10..20));
    }
}
