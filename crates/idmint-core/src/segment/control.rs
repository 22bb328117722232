//! The slow-path bookkeeping of a buffer, kept under its mutex.
//!
//! Everything here changes at most a few times per segment (a prefetch, a switch, a store
//! error), so a mutex costs nothing measurable; it also makes the rules simple: the generation
//! in the state word and the slot contents only change while this lock is held.

use super::loaded_range::LoadedRange;
use super::rate::RateMeter;
use crate::error::Error;

/// State of the background fetch of the next range. At most one runs per buffer.
#[derive(Debug, Default)]
pub(crate) struct FetchState {
    /// Number of the last fetch started; each fetch has its own, so a waiter can tell whether
    /// the failure it sees is the one it waited for.
    pub(crate) seq: u64,
    /// The fetch running now, if any.
    pub(crate) in_flight: Option<u64>,
    /// True while the running fetch is inside `store.allocate` (not sleeping between retries):
    /// shutdown waits for such a call, since it may take a range that should be given back.
    pub(crate) in_store_call: bool,
    /// The last store error, cleared by a successful fetch. Becomes the `cause` of
    /// `SegmentUnavailable`.
    pub(crate) last_error: Option<Error>,
    /// A fetch that ended without retrying (an error a retry cannot fix, or a cancelled task),
    /// with its number: its waiters get this error at once.
    pub(crate) fatal: Option<(u64, Error)>,
}

impl FetchState {
    /// Marks a new fetch as running and returns its number.
    pub(crate) fn begin(&mut self) -> u64 {
        self.seq = self.seq.wrapping_add(1);
        self.in_flight = Some(self.seq);
        self.in_store_call = false;
        self.seq
    }

    /// Marks fetch `seq` as ended, if it is the running one.
    pub(crate) fn end(&mut self, seq: u64) {
        if self.in_flight == Some(seq) {
            self.in_flight = None;
            self.in_store_call = false;
        }
    }
}

/// Mutex-protected state of a `SegmentBuffer`.
#[derive(Debug)]
pub(crate) struct Control {
    /// Generation currently in the state word (the only writer of the word's generation holds
    /// this lock, so the two always agree).
    pub(crate) gen: u32,
    /// The segment of `gen`.
    pub(crate) current: LoadedRange,
    /// The segment of `gen + 1` when loaded (published in its slot unless the buffer is
    /// closed).
    pub(crate) next: Option<LoadedRange>,
    /// End of the last range taken from the store: a new range may not start below it.
    pub(crate) floor: u64,
    /// IDs in all segments before the current one (wasted parts included): with the current
    /// offset, the counter the rate is measured on.
    pub(crate) consumed_before: u64,
    /// The averaged consumption rate.
    pub(crate) rate: RateMeter,
    /// The step of the last fetch (or `min_step` before the first).
    pub(crate) step: u64,
    /// The largest contiguous run a waiting caller needs: the next fetch asks at least this
    /// much (capped at `max_step`), so `take_contiguous(n)` for `n` above the adaptive step
    /// terminates.
    pub(crate) wanted: u64,
    /// The background fetch.
    pub(crate) fetch: FetchState,
    /// Set by shutdown: no more IDs, no more prefetch.
    pub(crate) closed: bool,
    /// Set once shutdown decided what to give back: a range that arrives later is given back
    /// by the fetch task itself.
    pub(crate) given_back: bool,
}

impl Control {
    /// The state of a new buffer: an empty current segment in generation 0.
    pub(crate) fn new(min_step: u64) -> Self {
        Self {
            gen: 0,
            current: LoadedRange::empty(),
            next: None,
            floor: 0,
            consumed_before: 0,
            rate: RateMeter::default(),
            step: min_step,
            wanted: 0,
            fetch: FetchState::default(),
            closed: false,
            given_back: false,
        }
    }

    /// Starts a fetch unless one runs, the next range is loaded, the buffer is closed, or the
    /// current segment is the tag's last (the store has nothing after it: a fetch could only
    /// fail). Returns the number of the fetch to spawn (outside the lock).
    pub(crate) fn begin_fetch_if_idle(&mut self) -> Option<u64> {
        if self.closed || self.next.is_some() || self.fetch.in_flight.is_some() || self.current.last
        {
            return None;
        }
        Some(self.fetch.begin())
    }

    /// The consumption counter for offset `offset` of the current segment.
    pub(crate) fn consumed_at(&self, offset: u64) -> u64 {
        self.consumed_before
            .saturating_add(offset.min(self.current.len))
    }
}
