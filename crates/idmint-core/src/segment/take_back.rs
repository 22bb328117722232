//! Taking back the last run a buffer handed out, for a server whose client returns the unused
//! tail of a range it took (`IDMINT.GIVEBACK`).
//!
//! A run can come back only while it is the last thing claimed from the current segment: the
//! state word must still read `(generation, end of the run)`. One compare-and-swap then moves
//! the offset back to the run's first returned ID. Why that never reissues an ID:
//!
//! - every claim is a read-modify-write of the word, so all claims are totally ordered; if any
//!   claim came after the run, the word moved on and the swap fails (nothing changes);
//! - so the returned IDs were claimed once, by the run, and its owner promises it used none of
//!   them (the server accepts a run back only on the connection it was handed to);
//! - every ID claimed before the run is below it, so the buffer's IDs still increase in claim
//!   order once the returned ones are left out;
//! - the generation cannot change meanwhile: that needs the mutex held here, and a caller that
//!   saw the segment used up reads the word again under the mutex before it switches, so it
//!   finds the returned IDs and takes them.
//!
//! Giving back past the prefetch point lets a later claim reach it again: the second prefetch
//! request finds the next range loaded (or a fetch running) and does nothing.

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::state_word::Claim;
use super::SegmentBuffer;

impl SegmentBuffer {
    /// Takes `run` back if its IDs were the last claimed from the current segment and none was
    /// claimed after them; they are then handed out again, first. Returns whether it did: not
    /// after shutdown, not for a run outside the current segment, not once anything was
    /// claimed after it.
    ///
    /// Safe for the buffer, not for the IDs: the buffer cannot tell whether the run's IDs were
    /// used, so a caller that returns IDs it handed out makes them be handed out twice. Only
    /// the holder of a run may return it, and only the part of it that it never used (a node
    /// accepts a run back only on the connection it handed it to).
    pub fn take_back(&self, run: Range<u64>) -> bool {
        let control = self.control();
        if control.closed || run.start >= run.end {
            return false;
        }
        let current = &control.current;
        let segment_end = current.start.saturating_add(current.len);
        if run.start < current.start || run.end > segment_end {
            return false;
        }
        let claimed_to = Claim::pack(control.gen, run.end - current.start);
        let back_to = Claim::pack(control.gen, run.start - current.start);
        let taken = self
            .state
            .0
            .compare_exchange(claimed_to, back_to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if taken {
            // Callers waiting for a range (the segment was used up) can take these now.
            self.notify();
        }
        taken
    }
}
