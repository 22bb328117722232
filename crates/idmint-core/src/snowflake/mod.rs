//! The lock-free snowflake generator.
//!
//! Per worker, the whole state is one 64-bit word: the next free `(tick, seq)` pair packed as
//! `tick << seq_bits | seq`. Taking IDs is one compare-and-swap of that word to
//! `max(next_free, now << seq_bits) + n`, so any number of threads may call at once, no ID is
//! ever handed out twice, and IDs of one worker strictly increase. A sequence that overflows
//! carries into the tick: the generator borrows future time, at most `max_lead` ahead of the
//! clock. Two more gates stop it: the high-water mark the store confirmed for the worker lease
//! (`granted_tick`), and the end of the layout. Each gate ends a call either at once
//! ([`SnowflakeGenerator::try_reserve`]) or after a bounded wait.
//!
//! One ID at a time takes the common case, a value within the clock's tick or the allowed lead
//! and below every gate, with a single `fetch_add` of the word instead: it never fails and
//! never retries, so threads racing for the word cost one cache-line transfer per ID rather
//! than a read and a compare-and-swap that may lose. A `fetch_add` whose value falls outside
//! the gates (a tick change, a gate reached) is handed back or, when another thread took a
//! value meanwhile, left unused, and the compare-and-swap path decides.
//!
//! The one shared word is also the limit on many threads: its cache line moves between cores on
//! every ID. Threads that can do with order across threads only to within one tick take a
//! [`LocalSnowflakes`] handle each ([`SnowflakeGenerator::local`]), which reserves small batches
//! through the same gates and hands them out without touching the shared word.

mod batch;
mod builder;
mod config;
mod local;

use std::sync::Arc;
use std::time::Duration;

use self::batch::Composer;
pub use self::batch::SnowflakeBatch;
pub use self::builder::SnowflakeBuilder;
pub use self::config::{Fence, SnowflakeConfig};
pub use self::local::{LocalSnowflakes, MAX_LOCAL_BATCH};
use crate::clock::{duration_ms, Clock, Ticker};
use crate::error::{Error, Result};
use crate::layout::{format_ms_rfc3339, low_mask, FieldKind, Layout};
use crate::sync::{AtomicU64, Ordering, Padded};

/// The most IDs one call may reserve.
pub const MAX_BATCH: u64 = 1_000_000;

/// How often a call blocked on the granted HWM looks again.
const HWM_POLL: Duration = Duration::from_millis(5);

/// The state word of a closed generator, and every value from it up. Above every word an open
/// generator can hold: packed `(tick, seq)` values take at most 63 bits, so the word of a
/// layout that ran out is at most 2^63 plus a few single-ID `fetch_add`s left unused, and that
/// must still read as "ran out", not "closed". And far enough below `u64::MAX` that
/// `fetch_add`s after the close never wrap around (2^62 of them would be needed).
const CLOSED: u64 = 3 << 62;

// The reasoning above, checked by the compiler: every packed value (at most 63 bits) and a
// layout's end lie below `CLOSED`, and neither a batch added to an open word nor 2^61 stray
// `fetch_add`s after a close can wrap the word around.
const _: () = assert!(CLOSED > (1 << 63) && CLOSED < u64::MAX - (1 << 61));
const _: () = assert!(MAX_BATCH < (1 << 32) && (1u64 << 63) + MAX_BATCH < CLOSED);

/// Why a reservation could not be made without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// The reservation would run more than `max_lead` ahead of the clock: the sequence of the
    /// current ticks is used up, or the clock is behind the ticks already issued.
    Lead {
        /// Ticks beyond what `max_lead` allows.
        ticks_over: u64,
    },
    /// The reservation would pass the high-water mark the store has confirmed.
    Hwm {
        /// The tick needed.
        tick: u64,
        /// The highest tick granted.
        granted: u64,
    },
}

impl Blocked {
    /// Whether waiting up to `budget` may clear the block, `retry_after` being what the
    /// generator asked for. A clock behind the issued ticks clears at a known moment: when that
    /// is past the budget, waiting only delays the same error, so the caller fails at once
    /// (a node restarted 60 s behind answers `clock_behind` quickly instead of holding every
    /// request for `max_wait`). A missing HWM raise may come any moment, so it is worth the wait.
    pub fn may_clear_within(self, retry_after: Duration, budget: Duration) -> bool {
        match self {
            Blocked::Lead { .. } => !budget.is_zero() && retry_after <= budget,
            Blocked::Hwm { .. } => !budget.is_zero(),
        }
    }
}

/// The outcome of [`SnowflakeGenerator::try_reserve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The IDs, reserved.
    Ready(SnowflakeBatch),
    /// Nothing was reserved; retrying after the given duration may succeed.
    Blocked(Blocked, Duration),
}

/// Snowflake IDs for one worker of one layout.
#[derive(Debug)]
pub struct SnowflakeGenerator {
    /// Next free `(tick, seq)`, packed.
    next_free: Padded<AtomicU64>,
    /// Highest tick the store has confirmed for this worker's lease.
    granted_tick: AtomicU64,
    /// The highest tick of a value actually issued (not one taken and left unused): a tick
    /// the clock has fallen behind may be finished only if something was issued in it.
    started_tick: AtomicU64,
    /// The highest tick issued, recorded when the generator was closed.
    closed_at_tick: AtomicU64,
    clock: Arc<dyn Clock>,
    /// The clock's reading without a `dyn` call, when it publishes one.
    ticker: Option<Ticker>,
    composer: Composer,
    layout: Layout,
    datacenter: u64,
    worker: u64,
    seq_bits: u32,
    max_tick: u64,
    max_lead_ticks: u64,
    max_wait: Duration,
    epoch_ms: u64,
    unit_ms: u64,
    spread_mask: u64,
    shard_shift: u32,
    shard_max: u64,
}

impl SnowflakeGenerator {
    /// A generator of `layout`, to be given its worker, datacenter, clock, tuning and fence:
    ///
    /// ```
    /// use idmint_core::{Layout, SnowflakeGenerator};
    ///
    /// let layout = Layout::parse("twitter")?;
    /// let ids = SnowflakeGenerator::builder(layout).datacenter(1).worker(7).build()?;
    /// assert_eq!(ids.layout().decode(ids.next_id()?)?.worker, Some(7));
    /// # Ok::<(), idmint_core::Error>(())
    /// ```
    pub fn builder(layout: Layout) -> SnowflakeBuilder {
        SnowflakeBuilder::new(layout)
    }

    /// The generator [`SnowflakeBuilder::build`] makes.
    fn from_parts(
        layout: Layout,
        datacenter: u64,
        worker: u64,
        clock: Arc<dyn Clock>,
        config: &SnowflakeConfig,
        fence: Fence,
    ) -> Result<Self> {
        layout.check_fits(FieldKind::Dc, datacenter)?;
        layout.check_fits(FieldKind::Worker, worker)?;
        let now_ms = clock.now_ms();
        layout.check_epoch_not_future(now_ms)?;
        let seq_bits = layout.seq_bits();
        if config.spread_bits >= seq_bits && config.spread_bits > 0 {
            return Err(Error::argument(
                "spread_bits",
                format!(
                    "{} must be below the sequence width {seq_bits}",
                    config.spread_bits
                ),
            ));
        }
        let now_tick = layout.tick_at(now_ms).unwrap_or(0);
        let start_tick = match fence.after_tick {
            Some(after) => now_tick.max(after.saturating_add(1)),
            None => now_tick,
        };
        let exhausted = layout_exhausted(&layout);
        if start_tick > layout.max_tick() {
            return Err(exhausted);
        }
        let shard = layout.field(FieldKind::Shard);
        let unit_ms = layout.unit().millis();
        Ok(Self {
            next_free: Padded(AtomicU64::new(start_tick << seq_bits)),
            granted_tick: AtomicU64::new(fence.granted_tick),
            started_tick: AtomicU64::new(start_tick.saturating_sub(1)),
            closed_at_tick: AtomicU64::new(0),
            composer: Composer::new(&layout, layout.compose_fixed(datacenter, worker)),
            ticker: clock.ticker(),
            clock,
            datacenter,
            worker,
            seq_bits,
            max_tick: layout.max_tick(),
            max_lead_ticks: duration_ms(config.max_lead) / unit_ms,
            max_wait: config.max_wait,
            epoch_ms: layout.epoch_ms(),
            unit_ms,
            spread_mask: low_mask(config.spread_bits),
            shard_shift: shard.map_or(0, |f| f.shift),
            shard_max: shard.map_or(0, |f| f.max_value()),
            layout,
        })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The worker ID in every ID.
    pub fn worker(&self) -> u64 {
        self.worker
    }

    /// The datacenter in every ID.
    pub fn datacenter(&self) -> u64 {
        self.datacenter
    }

    /// One ID (shard 0), waiting at most `max_wait`.
    #[inline(always)]
    pub fn next_id(&self) -> Result<u64> {
        self.next_id_for_shard(0)
    }

    /// One ID for `shard`, waiting at most `max_wait`.
    #[inline(always)]
    pub fn next_id_for_shard(&self, shard: u64) -> Result<u64> {
        match self.reserve(1, shard)? {
            Ok(packed) => Ok(self.compose(packed, shard)),
            Err((blocked, retry_after)) => self
                .wait_then_reserve(1, shard, blocked, retry_after)
                .map(|packed| self.compose(packed, shard)),
        }
    }

    /// `count` IDs for `shard` with one compare-and-swap, waiting at most `max_wait` in total.
    pub fn next_batch(&self, count: u64, shard: u64) -> Result<SnowflakeBatch> {
        let first = match self.reserve(count, shard)? {
            Ok(first) => first,
            Err((blocked, retry_after)) => {
                self.wait_then_reserve(count, shard, blocked, retry_after)?
            }
        };
        Ok(self.batch(first, count, shard))
    }

    /// Reserves `count` IDs for `shard` if that needs no wait; otherwise says why and how long
    /// to wait before trying again. An async caller sleeps on its own timer and retries, so no
    /// executor thread is ever blocked.
    ///
    /// Errors (never retryable) when `count` is 0 or above [`MAX_BATCH`], `shard` does not fit,
    /// the clock is before the epoch, or the layout has run out.
    pub fn try_reserve(&self, count: u64, shard: u64) -> Result<Reservation> {
        Ok(match self.reserve(count, shard)? {
            Ok(first) => Reservation::Ready(self.batch(first, count, shard)),
            Err((blocked, retry_after)) => Reservation::Blocked(blocked, retry_after),
        })
    }

    /// The bounded wait: sleeps on the clock and retries until the reservation succeeds, or
    /// `max_wait` is spent, or waiting out the rest of it cannot help
    /// ([`Blocked::may_clear_within`]). Out of line, so the hot path stays small.
    #[cold]
    #[inline(never)]
    fn wait_then_reserve(
        &self,
        count: u64,
        shard: u64,
        mut blocked: Blocked,
        mut retry_after: Duration,
    ) -> Result<u64> {
        // Waited time is read off the clock, not summed from the pauses: a sleep may overrun.
        let start_ms = self.clock.now_ms();
        loop {
            let waited = Duration::from_millis(self.clock.now_ms().saturating_sub(start_ms));
            let budget = self.max_wait.saturating_sub(waited);
            if !blocked.may_clear_within(retry_after, budget) {
                return Err(self.blocked_error(blocked, waited));
            }
            self.clock.sleep(retry_after.min(budget));
            match self.reserve(count, shard)? {
                Ok(first) => return Ok(first),
                Err((now_blocked, now_retry_after)) => {
                    blocked = now_blocked;
                    retry_after = now_retry_after;
                }
            }
        }
    }

    /// The compare-and-swap loop: takes `count` packed `(tick, seq)` values and returns the
    /// first, or why it would have to wait.
    ///
    /// Always inlined, with every error built out of line: a call for one ID then compiles to
    /// a few loads, compares and the compare-and-swap in the caller, with no call frame and no
    /// result written through memory (as a function of its own it cost twice as much).
    #[inline(always)]
    fn reserve(&self, count: u64, shard: u64) -> Result<Result<u64, (Blocked, Duration)>> {
        if count == 0 || count > MAX_BATCH {
            return Err(bad_count(count));
        }
        if shard > self.shard_max {
            return Err(self.bad_shard(shard));
        }
        if count == 1 {
            if let Some(taken) = self.take_one() {
                return Ok(Ok(taken));
            }
        }
        let sb = self.seq_bits;
        let mut current = self.next_free.0.load(Ordering::Relaxed);
        loop {
            if current >= CLOSED {
                return Err(closed());
            }
            let now_tick = self.now_tick()?;
            let floor = now_tick.min(self.max_tick + 1) << sb;
            let first = if floor > current {
                floor | (spread(now_tick) & self.spread_mask)
            } else {
                current
            };
            let last_tick = (first + (count - 1)) >> sb;
            if last_tick > self.max_tick {
                return Err(layout_exhausted(&self.layout));
            }
            let granted = self.granted_tick.load(Ordering::Relaxed);
            if last_tick > granted {
                let blocked = Blocked::Hwm {
                    tick: last_tick,
                    granted,
                };
                // Raises come with lease renewals, seconds apart: no need to poll every ms.
                return Ok(Err((blocked, HWM_POLL)));
            }
            // A tick in which an ID was issued may be finished even if the clock fell behind
            // it; a new tick may only be borrowed up to `max_lead` ahead of the clock. The
            // common case, the clock's own tick, skips the test.
            if last_tick > now_tick {
                let started_tick = self.started_tick.load(Ordering::Relaxed);
                let lead_limit = now_tick.saturating_add(self.max_lead_ticks);
                if last_tick > lead_limit && last_tick > started_tick {
                    let ticks_over = last_tick - lead_limit;
                    let retry_after =
                        Duration::from_millis(ticks_over.saturating_mul(self.unit_ms));
                    return Ok(Err((Blocked::Lead { ticks_over }, retry_after)));
                }
            }
            match self.next_free.0.compare_exchange_weak(
                current,
                first + count,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    debug_assert!(first >= current, "the word never moves back");
                    debug_assert!(last_tick <= granted, "issued above the granted HWM");
                    debug_assert!(last_tick <= self.max_tick, "issued past the layout's end");
                    self.mark_started(last_tick);
                    return Ok(Ok(first));
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// One packed value by `fetch_add`, or `None` when the compare-and-swap path must decide.
    ///
    /// The value is kept only when it passes every test of that path with nothing to wait
    /// for: its tick is the clock's or ahead of it within `max_lead` (so the word was not
    /// behind the clock and needed no jump), at or below the granted HWM and the layout's end,
    /// and the generator is open (closed words are above every layout's end). Otherwise it is
    /// handed back if no thread took a value since, and left unused if one did: an unused value
    /// is never issued, so uniqueness and order hold either way, and a later `issued_tick`
    /// merely counts it (on the safe side: the HWM written is never too low). Nor does it count
    /// as issued for the lead test: that reads `started_tick`, which only values kept raise,
    /// so racing refusals cannot carry the word past `max_lead` (a loom model,
    /// `single_ids_refused_at_the_lead_bound_never_pass_it`, races them).
    ///
    /// Close to the granted HWM the path is skipped before taking anything, so callers held at
    /// that gate during a store outage do not push the word forward by one value each.
    #[inline(always)]
    fn take_one(&self) -> Option<u64> {
        let now_tick = self.now_tick().ok()?;
        let granted = self.granted_tick.load(Ordering::Relaxed);
        if now_tick >= granted {
            return None;
        }
        let taken = self.next_free.0.fetch_add(1, Ordering::Relaxed);
        let tick = taken >> self.seq_bits;
        if tick == now_tick && tick <= self.max_tick {
            debug_assert!(tick < granted, "issued above the granted HWM");
            self.mark_started(tick);
            return Some(taken);
        }
        self.take_one_off_the_clock(taken, tick, now_tick, granted)
    }

    /// Records that a value of `tick` was issued. One write per tick: the test first reads.
    #[inline(always)]
    fn mark_started(&self, tick: u64) {
        if tick > self.started_tick.load(Ordering::Relaxed) {
            self.started_tick.fetch_max(tick, Ordering::Relaxed);
        }
    }

    /// [`take_one`](Self::take_one) when the value is not in the clock's tick: borrowed within
    /// the lead, or to be handed back.
    #[cold]
    #[inline(never)]
    fn take_one_off_the_clock(
        &self,
        taken: u64,
        tick: u64,
        now_tick: u64,
        granted: u64,
    ) -> Option<u64> {
        let within_gates = tick > now_tick
            && tick <= granted
            && tick <= self.max_tick
            && tick <= now_tick.saturating_add(self.max_lead_ticks);
        if within_gates {
            self.mark_started(tick);
            return Some(taken);
        }
        // Behind the clock, the word needs a jump; past a gate, a wait or an error. Hand the
        // value back when nobody took one since, so no value is wasted.
        if tick >= now_tick {
            let _ = self.next_free.0.compare_exchange(
                taken + 1,
                taken,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        None
    }

    /// Why `shard` was refused: it does not fit the layout's shard field.
    #[cold]
    #[inline(never)]
    fn bad_shard(&self, shard: u64) -> Error {
        match self.layout.check_fits(FieldKind::Shard, shard) {
            Err(error) => error,
            Ok(()) => Error::argument("shard", format!("{shard} is above {}", self.shard_max)),
        }
    }

    /// The ID of packed value `packed` for `shard` (already checked to fit).
    #[inline]
    fn compose(&self, packed: u64, shard: u64) -> u64 {
        self.composer.compose(packed) | (shard << self.shard_shift)
    }

    fn batch(&self, first: u64, count: u64, shard: u64) -> SnowflakeBatch {
        let composer = self.composer.with_fixed(shard << self.shard_shift);
        SnowflakeBatch::new(composer, first, count)
    }

    /// Raises the highest tick the generator may issue: called after the store confirmed a
    /// higher HWM for this worker's lease. Never lowers it.
    pub fn raise_granted_tick(&self, tick: u64) {
        self.granted_tick.fetch_max(tick, Ordering::Relaxed);
    }

    /// The highest tick the generator may issue.
    pub fn granted_tick(&self) -> u64 {
        self.granted_tick.load(Ordering::Relaxed)
    }

    /// How far the granted high-water mark is ahead of the clock, in ms: how long snowflakes
    /// keep flowing if the store stops confirming the lease now. Negative when the clock has
    /// passed it (the generator then waits for the store).
    pub fn granted_lead_ms(&self) -> i64 {
        let now = self.now_tick().unwrap_or(0);
        let granted = self.granted_tick();
        let ahead =
            i64::try_from(granted.abs_diff(now).saturating_mul(self.unit_ms)).unwrap_or(i64::MAX);
        if granted >= now {
            ahead
        } else {
            -ahead
        }
    }

    /// The highest tick issued so far (or, before the first ID, the tick below the start); a
    /// tick above it when single IDs were taken and left unused at a gate, the safe side for
    /// an HWM written from it.
    pub fn issued_tick(&self) -> u64 {
        match self.next_free.0.load(Ordering::Relaxed) {
            CLOSED.. => self.closed_at_tick.load(Ordering::Relaxed),
            next_free => next_free.saturating_sub(1) >> self.seq_bits,
        }
    }

    /// Stops the generator for good and returns the highest tick it issued: what a graceful
    /// shutdown writes as the worker's final HWM.
    ///
    /// The state word is swapped for a sentinel in one atomic step, so the returned tick is
    /// exact: a reservation racing with the close either completed before it (and is counted)
    /// or fails its compare-and-swap and then finds the generator closed
    /// ([`Error::GeneratorClosed`]). Closing again returns the same tick.
    pub fn close(&self) -> u64 {
        match self.next_free.0.swap(CLOSED, Ordering::Relaxed) {
            CLOSED.. => self.closed_at_tick.load(Ordering::Relaxed),
            next_free => {
                let tick = next_free.saturating_sub(1) >> self.seq_bits;
                self.closed_at_tick.store(tick, Ordering::Relaxed);
                tick
            }
        }
    }

    /// How far the next tick is ahead of the clock, in ms: 0 in normal running, positive while
    /// borrowing or after a restart above an HWM in the future.
    pub fn lead_ms(&self) -> u64 {
        let next_free = self.next_free.0.load(Ordering::Relaxed);
        if next_free >= CLOSED {
            return 0;
        }
        let next_tick = next_free >> self.seq_bits;
        let now_tick = self.now_tick().unwrap_or(0);
        next_tick.saturating_sub(now_tick) * self.unit_ms
    }

    /// The clock's reading, through its ticker when it has one.
    #[inline]
    pub(crate) fn now_ms(&self) -> u64 {
        match &self.ticker {
            Some(ticker) => ticker.now_ms(),
            None => self.clock.now_ms(),
        }
    }

    /// The clock's current tick, or an error before the epoch.
    #[inline]
    fn now_tick(&self) -> Result<u64> {
        let now_ms = self.now_ms();
        let Some(since_epoch) = now_ms.checked_sub(self.epoch_ms) else {
            return Err(before_epoch(now_ms, self.epoch_ms));
        };
        Ok(match self.unit_ms {
            1 => since_epoch,
            unit_ms => since_epoch / unit_ms,
        })
    }

    /// The typed error a caller reports after waiting `waited` for `blocked` to clear: an async
    /// caller of [`try_reserve`](Self::try_reserve) that gave up ends exactly like
    /// [`next_batch`](Self::next_batch).
    pub fn blocked_error(&self, blocked: Blocked, waited: Duration) -> Error {
        match blocked {
            Blocked::Lead { ticks_over } => Error::ClockBehind {
                behind_ms: ticks_over * self.unit_ms,
                waited,
            },
            Blocked::Hwm { tick, granted } => Error::HwmNotGranted { tick, granted },
        }
    }
}

#[cold]
#[inline(never)]
fn layout_exhausted(layout: &Layout) -> Error {
    Error::LayoutExhausted {
        ends_at: format_ms_rfc3339(layout.ends_at_ms()),
    }
}

#[cold]
#[inline(never)]
fn bad_count(count: u64) -> Error {
    Error::argument("count", format!("must be 1 to {MAX_BATCH}, got {count}"))
}

#[cold]
#[inline(never)]
fn closed() -> Error {
    Error::GeneratorClosed
}

#[cold]
#[inline(never)]
fn before_epoch(now_ms: u64, epoch_ms: u64) -> Error {
    Error::ClockBeforeEpoch { now_ms, epoch_ms }
}

/// A well-mixed function of the tick (the finaliser of SplitMix64), for sequence spreading:
/// deterministic, so it needs no random state, yet uniform in its low bits.
#[inline]
fn spread(tick: u64) -> u64 {
    let mut x = tick.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests;
