//! Segment IDs (号段): per-tag integer sequences handed out from ranges held in memory.
//!
//! A [`SegmentBuffer`] serves one tag. It takes ranges `[start, end)` from a
//! [`SegmentStore`] (one atomic store operation each, so ranges never overlap across nodes)
//! and hands their IDs out from memory. It holds at most two ranges, the current one and the
//! next: once [`SegmentConfig::prefetch_at`] of the current one is used, the next is fetched by
//! a background task, so callers normally never wait for the store. Ranges are used in the
//! order they were allocated, so the IDs of one buffer strictly increase (leaving out IDs
//! handed back with [`SegmentBuffer::take_back`], which are handed out again).
//!
//! A buffer over the in-memory store (idmint-store has the durable ones):
//!
//! ```
//! use std::sync::Arc;
//! use idmint_core::store::TagSettings;
//! use idmint_core::{MemoryStore, SegmentBuffer, SegmentConfig, SegmentStore, SystemClock, Tag};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let clock = Arc::new(SystemClock::new());
//! let store = Arc::new(MemoryStore::new(clock.clone()));
//! let orders = Tag::new("orders")?;
//! runtime.block_on(store.create_tag(&orders, &TagSettings::default()))?;
//! let buffer = SegmentBuffer::new(
//!     orders,
//!     store,
//!     clock,
//!     SegmentConfig::default(),
//!     runtime.handle().clone(),
//! );
//! let first = runtime.block_on(buffer.next())?;
//! assert_eq!(first, 1);
//! assert_eq!(buffer.try_next(), Some(2)); // from memory: no store call
//! # Ok(())
//! # }
//! ```
//!
//! # How the hot path stays lock-free
//!
//! One `AtomicU64` state word packs `(generation, offset)` (see `state_word`). Generation `g`
//! names a segment, held in slot `g & 1` (see `slot`). Taking an ID is one `fetch_add(1)` on the
//! word followed by a validated read of the slot: if the slot still holds generation `g` and the
//! offset is below the segment's length, the ID is `start + offset`. Otherwise the caller takes
//! the slow path (see `advance`), under a mutex: switch the word to the next generation if that
//! segment is loaded, or make sure a fetch runs and wait for it, bounded by
//! [`SegmentConfig::max_wait`] (see `wait`).
//!
//! # Why no ID is issued twice and IDs strictly increase
//!
//! Every successful claim is an atomic read-modify-write of the state word, so all claims are
//! totally ordered by the word's modification order (which agrees with happens-before, so with
//! each caller's own order). Along that order:
//!
//! - within one generation the offset only grows (`fetch_add`, compare-and-swap to a larger
//!   offset); the writes that lower it either move it between values at or past the segment's
//!   end, where every claim fails (clamping a runaway offset, shutdown), or take back the last
//!   run claimed, under the mutex and only from exactly `(g, end of the run)`, so only when no
//!   claim came after it (`take_back`, whose caller promises the run's IDs were not used). So
//!   each valid offset of a generation is handed out once, and later claims get larger offsets
//!   but for those taken back;
//! - the generation changes only under the mutex, by a plain store of `(g + 1, 0)` made after
//!   the word was seen used up; every update the store overwrites was a failed claim;
//! - segment `g + 1` starts at or after the end of segment `g`: ranges come from the store in
//!   allocation order, and the buffer refuses a range that starts below the previous one;
//! - a claim whose slot no longer holds its generation (a thread preempted while the buffer
//!   moved two segments on) is discarded: a gap, never a duplicate. The slot read is a seqlock
//!   (see `slot` for the memory-ordering argument), so a validated read is never torn.
//!
//! The one assumption: generations are 32 bits and wrap. A thread would have to stall between
//! its `fetch_add` and the three loads that follow it while the buffer went through 2^32
//! segments (each needing a store round trip: days at any real store latency) for a stale
//! claim to be taken for a current one.
//!
//! The offset never carries into the generation: see `state_word` (a carry would take 2^31
//! threads claiming at once).
//!
//! # The end of a tag
//!
//! A tag's IDs end below `MAX_SEGMENT_ID`: the store cuts the last range to what is left, so it
//! may be shorter than asked. Once the buffer holds that last range it fetches nothing more
//! (the store has nothing after it), and when the range is used up every call fails at once
//! with `TagExhausted`. A run that must be served whole (`take_contiguous`, `next_many`) and
//! does not fit in what is left fails the same way without taking any ID. A store that answers
//! `TagExhausted` (another node took the last range) ends the fetch like any error a retry
//! cannot fix: its waiters get it at once, and nothing is retried in the background.
//!
//! # Adaptive step
//!
//! Each fetch asks for `rate * target_lifetime` IDs, clamped to
//! `min_step..=max_step`, where the rate is a time-weighted moving average of consumption
//! (see `rate`), sampled at each prefetch point and each segment switch with
//! [`Clock::now_ms`]. The IDs buffered divided by that rate is the [outage
//! budget](SegmentBuffer::outage_budget): how long this node can serve the tag with the store
//! down.

mod advance;
mod claim;
mod config;
mod control;
mod dated;
mod fetch;
mod gauges;
mod loaded_range;
mod rate;
mod shutdown;
mod slot;
mod source;
mod state_word;
mod take_back;
mod wait;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;

use self::claim::NoRun;
pub use self::config::SegmentConfig;
use self::control::Control;
pub use self::dated::{DatedBuffer, DatedRanges};
pub use self::gauges::Holdings;
use self::loaded_range::LoadedRange;
use self::slot::Slot;
pub use self::source::RangeSource;
use self::source::StoreRanges;
use self::state_word::Claim;
pub use self::state_word::MAX_SEGMENT_LEN;
use self::wait::Waiter;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::store::SegmentStore;
use crate::sync::Padded;
use crate::tag::Tag;

/// A per-tag double buffer of ID ranges over a [`SegmentStore`].
///
/// Cheap to call from many threads: [`try_next`](Self::try_next) and the fast path of
/// [`next`](Self::next) are lock-free and cost one atomic read-modify-write. Built with
/// [`SegmentBuffer::new`], which does no I/O: the first call loads the first range (or call
/// [`warm_up`](Self::warm_up) at start).
///
/// The runtime handle given to `new` runs the background fetches; it needs tokio's time driver
/// (retry backoff), and so do the async methods (their waits are bounded with tokio timers).
pub struct SegmentBuffer {
    /// `(generation, offset)`, see the module documentation.
    state: Padded<AtomicU64>,
    /// Slot `g & 1` holds the segment of generation `g`.
    slots: Padded<[Slot; 2]>,
    /// Slow-path bookkeeping.
    control: Mutex<Control>,
    /// Bumped on every change a waiter may care about (range loaded, fetch failed, shutdown).
    events: watch::Sender<u64>,
    tag: Tag,
    store: Arc<dyn RangeSource>,
    clock: Arc<dyn Clock>,
    /// Normalized at construction.
    config: SegmentConfig,
    /// The tag's step: the smallest range fetched. Starts at `config.min_step`; an operator's
    /// change of the tag's step reaches a running buffer through
    /// [`set_min_step`](SegmentBuffer::set_min_step).
    min_step: AtomicU64,
    runtime: Handle,
    /// This buffer, for the fetch tasks it spawns.
    this: Weak<SegmentBuffer>,
}

impl fmt::Debug for SegmentBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claim = Claim::unpack(self.state.0.load(Ordering::Relaxed));
        f.debug_struct("SegmentBuffer")
            .field("tag", &self.tag)
            .field("generation", &claim.gen)
            .field("offset", &claim.offset)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SegmentBuffer {
    /// A buffer for `tag` over `store`. No I/O happens here; `config` is
    /// [normalized](SegmentConfig::normalized). Background fetches run on `runtime`, so the
    /// buffer may be used from threads outside any runtime (`try_next` then never blocks on
    /// one).
    pub fn new(
        tag: Tag,
        store: Arc<dyn SegmentStore>,
        clock: Arc<dyn Clock>,
        config: SegmentConfig,
        runtime: Handle,
    ) -> Arc<Self> {
        Self::with_source(tag, Arc::new(StoreRanges(store)), clock, config, runtime)
    }

    /// A buffer for `tag` over any [`RangeSource`], such as the nodes a remote client takes
    /// its ranges from; otherwise as [`new`](Self::new).
    pub fn with_source(
        tag: Tag,
        store: Arc<dyn RangeSource>,
        clock: Arc<dyn Clock>,
        config: SegmentConfig,
        runtime: Handle,
    ) -> Arc<Self> {
        let config = config.normalized();
        let slots = [Slot::empty(), Slot::empty()];
        // Generation 0 is an empty segment: the first claim fails and loads a real range.
        slots[0].publish(0, LoadedRange::empty().view());
        Arc::new_cyclic(|this| Self {
            state: Padded(AtomicU64::new(Claim::pack(0, 0))),
            slots: Padded(slots),
            control: Mutex::new(Control::new(config.min_step)),
            min_step: AtomicU64::new(config.min_step),
            events: watch::Sender::new(0),
            tag,
            store,
            clock,
            config,
            runtime,
            this: this.clone(),
        })
    }

    /// The tag this buffer serves.
    pub fn tag(&self) -> &Tag {
        &self.tag
    }

    /// The configuration in use (normalized).
    pub fn config(&self) -> &SegmentConfig {
        &self.config
    }

    /// Loads the first range now instead of on the first call, so a server can report ready
    /// only once it can serve. Waits at most `max_wait`.
    pub async fn warm_up(&self) -> Result<()> {
        let mut waiter = Waiter::new(self, 1);
        loop {
            let claim = Claim::unpack(self.state.0.load(Ordering::Acquire));
            let usable = self
                .slot(claim.gen)
                .read(claim.gen)
                .is_some_and(|view| claim.offset < view.len);
            if usable {
                return Ok(());
            }
            waiter.advance(claim.gen).await?;
        }
    }

    /// The next ID if one is in memory, without ever waiting: `None` when both buffers are
    /// empty (a fetch is then started) or after shutdown. The hot path of a server that
    /// falls back to [`next`](Self::next) only when this returns `None`.
    #[inline]
    pub fn try_next(&self) -> Option<u64> {
        match self.claim_one() {
            Ok(id) => Some(id),
            Err(gen) => self.try_next_slow(gen),
        }
    }

    /// [`try_next`](Self::try_next) after a failed claim: switch segments or start a fetch,
    /// never wait. Out of line so the fast path inlines into callers.
    #[cold]
    #[inline(never)]
    fn try_next_slow(&self, mut gen: u32) -> Option<u64> {
        loop {
            match self.advance(gen, None, 1) {
                advance::Advance::Retry => {}
                _ => return None,
            }
            match self.claim_one() {
                Ok(id) => return Some(id),
                Err(failed) => gen = failed,
            }
        }
    }

    /// The next ID, waiting for the store (at most `max_wait`) when both buffers are empty.
    ///
    /// Errors: [`Error::SegmentUnavailable`] when the wait ran out (its `cause` is the last
    /// store error, or a timeout) or after shutdown; the store's own error when a retry cannot
    /// help (e.g. [`Error::UnknownTag`]), at once; [`Error::TagExhausted`] at once when the
    /// tag's last range is used up (no store call is made for it).
    pub async fn next(&self) -> Result<u64> {
        let mut waiter = Waiter::new(self, 1);
        loop {
            match self.claim_one() {
                Ok(id) => return Ok(id),
                Err(gen) => waiter.advance(gen).await?,
            }
        }
    }

    /// `n` IDs (`1..=max_step`) as ascending runs of consecutive IDs, adjacent runs merged.
    ///
    /// Takes what the current segment has, then continues in the next one, so a batch may span
    /// segments (and, between two runs, another caller's ID may fall). The whole call waits at
    /// most `max_wait`; if it fails midway, the IDs already taken are dropped (a gap).
    ///
    /// At the tag's end the call is all or nothing, never a short batch (a caller asking for
    /// `n` IDs gets `n`): when the tag's last segment has fewer than the IDs still needed, it
    /// fails with [`Error::TagExhausted`] without taking any of them, so they remain for
    /// smaller requests.
    pub async fn next_many(&self, n: u64) -> Result<Vec<Range<u64>>> {
        self.check_count("n", n)?;
        let mut runs: Vec<Range<u64>> = Vec::with_capacity(2);
        let mut left = n;
        let mut waiter = Waiter::new(self, n);
        while left > 0 {
            match self.claim_run(left, false) {
                Ok(run) => {
                    left -= run.end - run.start;
                    match runs.last_mut() {
                        Some(last) if last.end == run.start => last.end = run.end,
                        _ => runs.push(run),
                    }
                }
                Err(NoRun::TagEnd) => return Err(self.exhausted()),
                Err(NoRun::Advance(gen)) => {
                    waiter.wanted = left;
                    waiter.advance(gen).await?;
                }
            }
        }
        Ok(runs)
    }

    /// `n` consecutive IDs (`1..=max_step`) in one claim, for Redis `INCRBY` and leases.
    ///
    /// If the current segment has fewer than `n` left, its tail is skipped (a gap) and the run
    /// is taken from the next segment; the next fetch asks for at least `n`, so a run longer
    /// than the adaptive step costs at most one wasted segment. Errors with
    /// [`Error::InvalidArgument`] for `n` outside `1..=max_step`, with
    /// [`Error::TagExhausted`] when the tag's last segment has fewer than `n` IDs left (none of
    /// them is taken: they remain for smaller requests), otherwise like [`next`](Self::next).
    pub async fn take_contiguous(&self, n: u64) -> Result<Range<u64>> {
        self.check_count("n", n)?;
        let mut waiter = Waiter::new(self, n);
        loop {
            match self.claim_run(n, true) {
                Ok(run) => return Ok(run),
                Err(NoRun::TagEnd) => return Err(self.exhausted()),
                Err(NoRun::Advance(gen)) => waiter.advance(gen).await?,
            }
        }
    }

    /// IDs held in memory: what is left of the current segment plus the loaded next one.
    pub fn remaining(&self) -> u64 {
        let control = self.control();
        self.buffered(&control)
    }

    /// The observed consumption rate in IDs per second (a time-weighted moving average), 0
    /// before anything was observed.
    pub fn rate_per_sec(&self) -> f64 {
        let mut control = self.control();
        self.refreshed_rate(&mut control).unwrap_or(0.0)
    }

    /// How long the IDs in memory last at the observed rate: how long this node can serve the
    /// tag if the store goes down now. `None` while no consumption has been observed. Exported
    /// as a metric.
    pub fn outage_budget(&self) -> Option<Duration> {
        self.budget()
    }

    /// The adaptive step: the size of the last range requested (`min_step` before the first).
    pub fn step(&self) -> u64 {
        self.control().step
    }

    /// Changes the smallest range the next fetches ask for (the tag's step, changed by an
    /// operator), clamped to `1..=MAX_SEGMENT_LEN`. Ranges already held are kept.
    pub fn set_min_step(&self, step: u64) {
        self.min_step
            .store(step.clamp(1, MAX_SEGMENT_LEN), Ordering::Relaxed);
    }

    /// The smallest range a fetch asks for.
    pub fn min_step(&self) -> u64 {
        self.min_step.load(Ordering::Relaxed)
    }

    /// True once [`shutdown`](Self::shutdown) has been called.
    pub fn is_shut_down(&self) -> bool {
        self.control().closed
    }

    /// Stops handing out IDs and prefetching, and gives the unused tail of the last allocated
    /// range back to the store, so that a restart of this node alone leaves no gap. Returns
    /// whether the store took a range back (it refuses when another node allocated after
    /// this one; the tail is then a gap, never reissued).
    ///
    /// With the next range loaded and unused, the current segment's tail and the next range are
    /// given back together when they are adjacent in the store; otherwise only the next range
    /// is (the current tail is lost). After shutdown every call fails with
    /// [`Error::SegmentUnavailable`]; no ID from the returned tail is ever handed out. A second
    /// call returns `Ok(false)`.
    pub async fn shutdown(&self) -> Result<bool> {
        self.shut_down().await
    }

    /// Stops handing out IDs and prefetching, as [`shutdown`](Self::shutdown), but gives
    /// nothing back: returns the next range if one was loaded and unused (a fetch in flight is
    /// waited for, up to `max_wait`), for the caller to hand out or give back; the current
    /// segment's tail is left unused. For a dated tag's buffer replaced at a period's end: the
    /// next range it fetched may be the new period's first, which the fresh buffer hands out.
    /// `None` also when it was shut down or retired already.
    pub async fn retire(&self) -> Option<Range<u64>> {
        self.retire_keeping_next().await
    }

    /// The slot of generation `gen`.
    #[inline]
    fn slot(&self, gen: u32) -> &Slot {
        &self.slots.0[(gen & 1) as usize]
    }

    /// The slow-path state. A panic while it was held (none is expected: nothing in it
    /// panics) does not poison the buffer for good.
    fn control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every waiter.
    fn notify(&self) {
        self.events
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    /// Checks a batch size against `1..=max_step`.
    fn check_count(&self, name: &'static str, n: u64) -> Result<()> {
        if n == 0 || n > self.config.max_step {
            return Err(Error::argument(
                name,
                format!(
                    "must be in 1..={} (max_step), got {n}",
                    self.config.max_step
                ),
            ));
        }
        Ok(())
    }
}
