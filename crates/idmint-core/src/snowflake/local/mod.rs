//! Per-thread handles on a shared generator, for callers that need throughput on many threads
//! more than strict order across them.
//!
//! Every ID of [`SnowflakeGenerator::next_id`] passes through one shared state word, so two
//! threads on one generator pay for that word's cache line moving between their cores on every
//! ID: together they are slower than one thread alone (BENCHMARKS.md). A [`LocalSnowflakes`]
//! handle instead reserves a small batch with one compare-and-swap through the generator's own
//! reservation path (every gate applies there) and hands the batch out from plain fields,
//! touching the shared word once per batch.
//!
//! The price is order across handles: a handle still holding part of an earlier batch issues
//! IDs below those another handle issued a moment before. To keep that bounded, and to keep the
//! time inside IDs honest, a batch is dropped as soon as the clock's tick moves past it.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Deref;

use super::batch::Composer;
use super::SnowflakeGenerator;
use crate::error::Result;

/// The largest batch a handle reserves at once. A reservation on a word another core just
/// wrote costs far more than an ID handed out locally (its cache line moves, twice: for the
/// load and for the compare-and-swap), so batches must be large enough to spread that cost,
/// and small because a handle drops what is left of its batch at a tick change (layouts with a
/// narrow sequence are capped lower, see `SEQ_SHARE_SHIFT`). 256 was where larger batches
/// stopped paying, measured with `examples/hot_loop` (BENCHMARKS.md, "Two threads no slower in
/// total than one").
pub const MAX_LOCAL_BATCH: u64 = 256;

/// A batch may be at most this fraction (as a power of two) of a tick's sequence, so the IDs a
/// handle drops at each tick change cost at most 1/64 of the layout's capacity per handle (a
/// 12-bit sequence gets batches of at most 64, a 10-bit one at most 16, 14 bits and more
/// [`MAX_LOCAL_BATCH`]).
const SEQ_SHARE_SHIFT: u32 = 6;

/// A per-thread handle on a [`SnowflakeGenerator`]: the same IDs (same layout, worker and
/// gates), much cheaper on many threads, with weaker order across handles. Opt-in: the
/// generator's own [`next_id`](SnowflakeGenerator::next_id) keeps strict order.
///
/// Make one per thread with [`SnowflakeGenerator::local`] (borrowing the generator) or
/// [`LocalSnowflakes::new`] (owning, e.g., an `Arc` of it). The handle is `Send` but not `Sync`:
/// it belongs to one thread at a time.
///
/// ```
/// # fn main() -> idmint_core::Result<()> {
/// use idmint_core::{Layout, SnowflakeGenerator};
///
/// let generator = SnowflakeGenerator::builder(Layout::parse("time:41@1ms,seq:22")?).build()?;
/// std::thread::scope(|scope| {
///     for _ in 0..2 {
///         scope.spawn(|| -> idmint_core::Result<()> {
///             let mut ids = generator.local();
///             let (first, second) = (ids.next_id()?, ids.next_id()?);
///             assert!(first < second);
///             Ok(())
///         });
///     }
/// });
/// # Ok(())
/// # }
/// ```
///
/// A handle cannot be shared between threads:
///
/// ```compile_fail
/// fn shared<T: Sync>() {}
/// shared::<idmint_core::LocalSnowflakes<&idmint_core::SnowflakeGenerator>>();
/// ```
///
/// # How it works
///
/// The handle reserves a batch of IDs with one compare-and-swap through the generator's
/// reservation path, so every gate applies at reservation exactly as for `next_id`: `max_lead`,
/// the granted high-water mark, the end of the layout, and a closed generator. It then hands the
/// batch out locally. Before each ID it reads the clock the same way the generator does (one
/// relaxed load for [`SystemClock`](crate::SystemClock)) and drops what is left of the batch
/// once the clock's tick has moved past the tick of the batch's first ID. The batch size adapts:
/// it doubles (up to [`MAX_LOCAL_BATCH`], and at most 1/64 of a tick's sequence) when a batch is
/// used up within its tick, and halves when a batch is dropped unused, so a slow thread reserves
/// one ID at a time and wastes nothing.
///
/// # Guarantees
///
/// - **Unique, always.** Every ID comes from a reservation on the generator's one state word;
///   handles, the generator's own calls and other handles never share an ID, and every ID is at
///   or below the tick [`close`](SnowflakeGenerator::close) returns, so the final high-water
///   mark a shutdown writes covers them.
/// - **Strictly increasing per handle.** Batches of one handle are reserved one after another
///   on a word that only grows, and each is handed out in order.
/// - **Never stale.** Every ID carries a tick at or after the clock's tick at the moment it is
///   handed out, as with `next_id`.
/// - **Across handles of one worker, ordered only to within one tick.** An ID handed out after
///   another (by any handle or by the generator itself) may be smaller, but never in an earlier
///   tick than the clock's tick when the first was handed out (the clock never goes back, as
///   [`SystemClock`](crate::SystemClock) does not). While the generator does not borrow future
///   ticks (no tick's sequence is used up; always so with a wide sequence at any real rate)
///   that means: never in an earlier tick than the first ID. While it borrows, the inversion is
///   at most `max_lead`. The generator's own calls stay strictly increasing among themselves.
///
/// # Waits and errors
///
/// When a reservation cannot be made at once the handle asks for a single ID and waits exactly
/// as [`next_id`](SnowflakeGenerator::next_id) does: at most `max_wait`, ending in the same
/// errors. Closing the generator stops a handle at its next reservation; until then it may
/// finish the batch it holds, within the current tick (those IDs are below the tick `close`
/// returned). IDs of a dropped batch, or left in a handle that is dropped, are skipped: a gap,
/// never a duplicate.
#[derive(Debug)]
pub struct LocalSnowflakes<G: Deref<Target = SnowflakeGenerator>> {
    generator: G,
    /// The generator's composer (shard 0), copied so the hot path needs no indirection.
    composer: Composer,
    /// The next packed `(tick, seq)` of the batch held.
    next: u64,
    /// End (exclusive) of the batch held: `next == end` when nothing is held.
    end: u64,
    /// The first clock reading (ms) at which the batch is stale: the start of the tick after
    /// the batch's first ID.
    stale_at_ms: u64,
    /// The size of the next reservation.
    size: u64,
    /// The largest batch for this layout.
    max_size: u64,
    /// Not `Sync`: a handle is one thread's.
    _not_sync: PhantomData<Cell<()>>,
}

impl<G: Deref<Target = SnowflakeGenerator>> LocalSnowflakes<G> {
    /// A handle on `generator` (anything that derefs to one: `&SnowflakeGenerator`,
    /// `Arc<SnowflakeGenerator>`). Reserves nothing until the first ID is asked for.
    pub fn new(generator: G) -> Self {
        let seq_capacity = 1u64 << generator.seq_bits.min(63);
        let max_size = (seq_capacity >> SEQ_SHARE_SHIFT).clamp(1, MAX_LOCAL_BATCH);
        Self {
            composer: generator.composer,
            generator,
            next: 0,
            end: 0,
            stale_at_ms: 0,
            size: 1,
            max_size,
            _not_sync: PhantomData,
        }
    }

    /// The generator this handle draws from.
    pub fn generator(&self) -> &SnowflakeGenerator {
        &self.generator
    }

    /// One ID (shard 0), from the batch held if it is still current, otherwise from a new
    /// reservation, waiting at most `max_wait` like
    /// [`SnowflakeGenerator::next_id`](SnowflakeGenerator::next_id).
    #[inline]
    pub fn next_id(&mut self) -> Result<u64> {
        if self.next < self.end && self.generator.now_ms() < self.stale_at_ms {
            let packed = self.next;
            self.next += 1;
            return Ok(self.composer.compose(packed));
        }
        self.refill()
    }

    /// Drops what is left of the batch, adapts the batch size, reserves a new batch and returns
    /// its first ID. Out of line, so the hot path inlines into callers.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Result<u64> {
        let generator = &*self.generator;
        if self.end != 0 {
            let within_tick = generator.now_ms() < self.stale_at_ms;
            if within_tick {
                // Used up before its tick ended: the thread wants more per tick.
                self.size = (self.size * 2).min(self.max_size);
            } else if self.next < self.end {
                // Dropped unused: the thread wants fewer per tick.
                self.size = (self.size / 2).max(1);
            }
        }
        self.next = self.end;
        let (first, count) = match generator.reserve(self.size, 0)? {
            Ok(first) => (first, self.size),
            Err(blocked) => {
                // As `next_id` does: one ID, waiting (bounded) if even that cannot be had now.
                let one = if self.size > 1 {
                    generator.reserve(1, 0)?
                } else {
                    Err(blocked)
                };
                self.size = 1;
                let first = match one {
                    Ok(first) => first,
                    Err((blocked, retry_after)) => {
                        generator.wait_then_reserve(1, 0, blocked, retry_after)?
                    }
                };
                (first, 1)
            }
        };
        self.next = first + 1;
        self.end = first + count;
        self.stale_at_ms = generator.tick_end_ms(first >> generator.seq_bits);
        Ok(self.composer.compose(first))
    }

    /// The size of the next reservation, for tests.
    #[cfg(test)]
    pub(crate) fn batch_size(&self) -> u64 {
        self.size
    }
}

impl SnowflakeGenerator {
    /// A per-thread handle on this generator: much cheaper than [`next_id`](Self::next_id) when
    /// several threads issue IDs at once, at the cost of strict order across threads. See
    /// [`LocalSnowflakes`] for exactly what it guarantees. Take one per thread.
    pub fn local(&self) -> LocalSnowflakes<&Self> {
        LocalSnowflakes::new(self)
    }

    /// The clock reading (ms) at which tick `tick` is over: the start of the next tick.
    pub(super) fn tick_end_ms(&self, tick: u64) -> u64 {
        tick.saturating_add(1)
            .saturating_mul(self.unit_ms)
            .saturating_add(self.epoch_ms)
    }
}

#[cfg(test)]
mod tests;
