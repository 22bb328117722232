//! The lock-free hot path: claiming IDs from the current segment.
//!
//! A single ID costs one `fetch_add` on the state word plus a validated read of a slot that
//! sits on its own cache line (shared, so it stays in every core's cache). A run of IDs uses a
//! compare-and-swap instead, so it never claims past the segment's end and never overshoots
//! the offset field. Any failure returns the generation the caller saw, for the slow path, except
//! a run the tag's last segment cannot hold (see [`NoRun::TagEnd`]).

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::state_word::{Claim, CLAMP_AT, EXHAUSTED, MAX_SEGMENT_LEN};
use super::SegmentBuffer;

/// Why [`SegmentBuffer::claim_run`] claimed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoRun {
    /// The segment of this generation cannot serve the run (used up, stale, or its tail was
    /// just skipped): advance from it.
    Advance(u32),
    /// The tag's last segment has fewer IDs left than the run needs. Nothing was claimed, so
    /// the IDs left stay for smaller requests; no later range can serve the run.
    TagEnd,
}

impl SegmentBuffer {
    /// Claims one ID, or returns the generation whose segment could not serve it.
    ///
    /// Ordering: `Acquire` on the `fetch_add` synchronizes with the `Release` store that
    /// switched the word to this generation (later `fetch_add`s continue its release
    /// sequence), which happens after the slot was published, so the slot read below sees
    /// this generation or a later one, never an older one.
    #[inline]
    pub(super) fn claim_one(&self) -> Result<u64, u32> {
        let claim = Claim::unpack(self.state.0.fetch_add(1, Ordering::Acquire));
        if let Some(view) = self.slot(claim.gen).read(claim.gen) {
            if claim.offset < view.len {
                if claim.offset == view.trigger {
                    self.reached_prefetch_point(claim.gen, view.trigger);
                }
                debug_assert!(
                    claim.offset < MAX_SEGMENT_LEN,
                    "an offset past every segment"
                );
                return Ok(view.start + claim.offset);
            }
        }
        Err(self.failed_claim(claim))
    }

    /// Claims up to `n` IDs of the current segment as one run (exactly `n` if `whole`).
    ///
    /// With `whole`, a segment that has fewer than `n` IDs left is marked used up (its tail
    /// becomes a gap) so the caller moves on to the next one. On the tag's last segment a run
    /// is all or nothing, `whole` or not: with fewer than `n` IDs left nothing is claimed
    /// ([`NoRun::TagEnd`]), since no later segment could complete it. Otherwise returns the
    /// generation to advance from when nothing could be claimed.
    pub(super) fn claim_run(&self, n: u64, whole: bool) -> Result<Range<u64>, NoRun> {
        let mut word = self.state.0.load(Ordering::Acquire);
        loop {
            let claim = Claim::unpack(word);
            let Some(view) = self.slot(claim.gen).read(claim.gen) else {
                return Err(NoRun::Advance(claim.gen));
            };
            if claim.offset >= view.len {
                return Err(NoRun::Advance(self.failed_claim(claim)));
            }
            let left = view.len - claim.offset;
            if left < n && self.is_last_segment(claim.gen) {
                return Err(NoRun::TagEnd);
            }
            let take = if left >= n {
                n
            } else if whole {
                0
            } else {
                left
            };
            let new_offset = if take == 0 {
                view.len
            } else {
                claim.offset + take
            };
            match self.state.0.compare_exchange_weak(
                word,
                Claim::pack(claim.gen, new_offset),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if take == 0 => return Err(NoRun::Advance(claim.gen)),
                Ok(_) => {
                    if (claim.offset..new_offset).contains(&view.trigger) {
                        self.reached_prefetch_point(claim.gen, view.trigger);
                    }
                    debug_assert!(new_offset <= view.len, "a run past the segment's end");
                    let first = view.start + claim.offset;
                    return Ok(first..first + take);
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether generation `gen` is the current segment and the tag's last. Takes the lock: only
    /// called when a run does not fit in what the segment has left, at a segment boundary.
    #[cold]
    fn is_last_segment(&self, gen: u32) -> bool {
        let control = self.control();
        control.gen == gen && control.current.last
    }

    /// Bookkeeping of a failed claim: keeps the offset far from overflowing into the
    /// generation bits. Returns the claim's generation.
    ///
    /// Lowering the offset is safe: every offset at or above `EXHAUSTED` is past the end of
    /// any segment, so a claim there fails whatever its value.
    #[cold]
    #[inline(never)]
    pub(super) fn failed_claim(&self, claim: Claim) -> u32 {
        if claim.offset >= CLAMP_AT {
            let mut word = self.state.0.load(Ordering::Relaxed);
            loop {
                let now = Claim::unpack(word);
                if now.gen != claim.gen || now.offset < CLAMP_AT {
                    break;
                }
                match self.state.0.compare_exchange_weak(
                    word,
                    Claim::pack(claim.gen, EXHAUSTED),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(actual) => word = actual,
                }
            }
        }
        claim.gen
    }

    /// The claim of offset `trigger` in generation `gen` happened: sample the rate and start
    /// fetching the next segment. Runs once per segment (again only after a `take_back` across
    /// the trigger, when the fetch it asks for is already done or running: nothing happens).
    #[cold]
    #[inline(never)]
    pub(super) fn reached_prefetch_point(&self, gen: u32, trigger: u64) {
        let spawn = {
            let mut control = self.control();
            if control.gen == gen {
                let consumed = control.consumed_at(trigger);
                control.rate.observe(consumed, self.clock.now_ms());
            }
            control.begin_fetch_if_idle()
        };
        if let Some(seq) = spawn {
            self.spawn_fetch(seq);
        }
    }
}
