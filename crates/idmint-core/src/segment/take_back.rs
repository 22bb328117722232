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
//! - the generation cannot change meanwhile: that needs the mutex held here. A caller that saw
//!   the segment used up and switches after the swap merely skips what was returned (a gap).

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::state_word::Claim;
use super::SegmentBuffer;

impl SegmentBuffer {
    /// Takes `run` back if its IDs were the last claimed from the current segment and none was
    /// claimed after them; they are then handed out again. Returns whether it did.
    ///
    /// The caller must know that no ID of `run` was used: only the holder of a run may return
    /// it, and only its unused tail.
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
        self.state
            .0
            .compare_exchange(claimed_to, back_to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}
