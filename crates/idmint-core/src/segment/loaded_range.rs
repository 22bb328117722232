//! A range from the store, checked and turned into what a slot holds.

use std::ops::Range;

use super::slot::SlotView;
use super::state_word::MAX_SEGMENT_LEN;
use crate::error::{Error, Result};
use crate::store::MAX_SEGMENT_ID;

/// A store range ready to hand out: `start..start + len` are the usable IDs, `allocated` is
/// the range exactly as the store returned it (what may be given back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadedRange {
    /// The range as allocated by the store.
    pub(crate) allocated: Range<u64>,
    /// First usable ID: `allocated.start`, or 1 if the store handed out 0 (an ID is never 0).
    pub(crate) start: u64,
    /// Usable IDs: the range's length, cut to `MAX_SEGMENT_LEN`.
    pub(crate) len: u64,
    /// Offset at which the next range is fetched.
    pub(crate) trigger: u64,
    /// The tag's last range: it ends at [`MAX_SEGMENT_ID`], so the store has nothing after it
    /// (only this buffer's own give-back could lower `max_id` again). The buffer then fetches
    /// nothing more and fails with `TagExhausted` once it is used up.
    pub(crate) last: bool,
}

impl LoadedRange {
    /// The empty segment a buffer starts with: every claim on it fails, which sends the first
    /// caller to the slow path to load a real range.
    pub(crate) fn empty() -> Self {
        Self {
            allocated: 0..0,
            start: 0,
            len: 0,
            trigger: 0,
            last: false,
        }
    }

    /// Checks a range from the store: it must be non-empty after skipping ID 0 and must not
    /// start below `floor` (the end of the previous range this buffer took), or IDs would not
    /// strictly increase. `prefetch_at` (in `0..=1`) places the prefetch trigger. The range may
    /// be shorter than the step asked for (the tag's last one is cut at [`MAX_SEGMENT_ID`]).
    #[cfg(test)]
    pub(crate) fn check(allocated: Range<u64>, floor: u64, prefetch_at: f64) -> Result<Self> {
        Self::check_with_end(allocated, floor, prefetch_at, false)
    }

    /// [`check`](Self::check) for a range its source says is the last one it has
    /// (`source_end`, see [`RangeSource::is_last`](super::RangeSource::is_last)) even below
    /// [`MAX_SEGMENT_ID`].
    pub(crate) fn check_with_end(
        allocated: Range<u64>,
        floor: u64,
        prefetch_at: f64,
        source_end: bool,
    ) -> Result<Self> {
        let start = allocated.start.max(1);
        if start >= allocated.end {
            return Err(Error::store_invalid(format!(
                "store returned the empty range {allocated:?}"
            )));
        }
        if start < floor {
            return Err(Error::store_invalid(format!(
                "store returned {allocated:?}, below the end {floor} of the previous range \
                 (was max_id lowered by hand?)"
            )));
        }
        let len = (allocated.end - start).min(MAX_SEGMENT_LEN);
        // `as` saturates; the product is at most `len`, which fits.
        let trigger = ((len as f64 * prefetch_at) as u64).min(len - 1);
        let last = source_end || allocated.end >= MAX_SEGMENT_ID;
        Ok(Self {
            allocated,
            start,
            len,
            trigger,
            last,
        })
    }

    /// The unused part from `offset` on, as the store counts it (the cut part of an overlong
    /// range included), or `None` when nothing is left.
    pub(crate) fn tail(&self, offset: u64) -> Option<Range<u64>> {
        let from = self.start.saturating_add(offset.min(self.len));
        (from < self.allocated.end).then_some(from..self.allocated.end)
    }

    /// What the hot path reads from a slot.
    pub(crate) fn view(&self) -> SlotView {
        SlotView {
            start: self.start,
            len: self.len,
            trigger: self.trigger,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_hands_out_zero() {
        let range = LoadedRange::check(0..10, 0, 0.1);
        assert_eq!(range.as_ref().map(|r| (r.start, r.len)), Ok((1, 9)));
        assert!(LoadedRange::check(0..1, 0, 0.1).is_err());
        assert!(LoadedRange::check(5..5, 0, 0.1).is_err());
    }

    #[test]
    fn refuses_a_range_below_the_previous_one() {
        assert!(matches!(
            LoadedRange::check(10..20, 21, 0.1),
            Err(Error::StoreInvalid { .. })
        ));
        assert!(LoadedRange::check(21..30, 21, 0.1).is_ok());
    }

    #[test]
    fn cuts_overlong_ranges_but_gives_back_all_of_them() {
        let end = 1 + MAX_SEGMENT_LEN + 5;
        let range = LoadedRange::check(1..end, 0, 1.0);
        assert_eq!(range.as_ref().map(|r| r.len), Ok(MAX_SEGMENT_LEN));
        assert_eq!(range.as_ref().map(|r| r.trigger), Ok(MAX_SEGMENT_LEN - 1));
        assert_eq!(
            range.map(|r| r.tail(MAX_SEGMENT_LEN + 100)),
            Ok(Some(1 + MAX_SEGMENT_LEN..end))
        );
    }

    #[test]
    fn only_a_range_ending_at_the_largest_id_is_the_last() {
        let short = LoadedRange::check(MAX_SEGMENT_ID - 3..MAX_SEGMENT_ID, 0, 0.5);
        assert_eq!(short.as_ref().map(|r| (r.len, r.last)), Ok((3, true)));
        let before = LoadedRange::check(MAX_SEGMENT_ID - 3..MAX_SEGMENT_ID - 1, 0, 0.5);
        assert_eq!(before.map(|r| r.last), Ok(false));
    }

    #[test]
    fn trigger_and_tail() {
        let range = LoadedRange::check(100..200, 0, 0.25);
        assert_eq!(range.as_ref().map(|r| r.trigger), Ok(25));
        assert_eq!(range.as_ref().map(|r| r.tail(30)), Ok(Some(130..200)));
        assert_eq!(range.as_ref().map(|r| r.tail(100)), Ok(None));
        assert_eq!(range.map(|r| r.tail(u64::MAX)), Ok(None));
        assert_eq!(LoadedRange::empty().tail(0), None);
    }
}
