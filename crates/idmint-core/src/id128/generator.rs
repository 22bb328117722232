//! The lock-free generator of 128-bit IDs, UUIDv7 or ULID.
//!
//! The whole shared state is one 64-bit word, the next free `(ms, counter)` packed as
//! `(ms - base_ms) << 24 | counter`: 40 bits of milliseconds since the generator started
//! (34 years) and the 24-bit counter of the ID layout. Taking IDs is one `fetch_add` of the word
//! while its millisecond is the clock's (or within `max_lead` ahead of it); the first caller in a
//! new millisecond moves the word there with a compare-and-swap, seeding the counter with a
//! random value below 2^23. IDs are composed from the word taken, so they are strictly
//! increasing in the order the word was taken, across all threads; a counter that passes 2^24
//! carries into the millisecond, borrowing the next one, as the snowflake generator's sequence
//! does. The random bits after the counter come from each thread's CSPRNG (`entropy`).

use std::sync::Arc;
use std::time::Duration;

use super::entropy;
use super::value::{check_node_bits, Id128, Id128Fields, Id128Kind, COUNTER_BITS, MAX_MS};
use crate::clock::{duration_ms, Clock, SystemClock, Ticker};
use crate::error::{Error, Result};
use crate::layout::format_ms_rfc3339;
use crate::sync::{AtomicU64, Ordering, Padded};

/// The most IDs one call may take.
pub const MAX_ID128_BATCH: u32 = 1_000_000;

const COUNTER_MASK: u64 = (1 << COUNTER_BITS) - 1;

/// A new millisecond's counter starts below this: at least 2^23 IDs fit before it borrows.
const SEED_LIMIT: u64 = 1 << (COUNTER_BITS - 1);

/// Milliseconds since `base_ms` the word can hold (40 bits, 34.8 years).
const OFFSET_LIMIT: u64 = 1 << (64 - COUNTER_BITS);

/// Where the random bits come from: the thread's CSPRNG, or (tests only) a fixed value, to show
/// what the node field guarantees when randomness fails.
#[derive(Debug, Clone, Copy)]
enum Entropy {
    Thread,
    Fixed(u64),
}

impl Entropy {
    #[inline(always)]
    fn next_u64(self) -> u64 {
        match self {
            Entropy::Thread => entropy::next_u64(),
            Entropy::Fixed(value) => value,
        }
    }
}

/// UUIDv7s or ULIDs, strictly increasing across every thread that shares the generator.
#[derive(Debug)]
pub struct Id128Generator {
    /// Next free `(ms - base_ms, counter)`, packed.
    next_free: Padded<AtomicU64>,
    base_ms: u64,
    /// The first millisecond offset the word must not reach: 48-bit milliseconds end in 10889,
    /// the word's 40 bits 34.8 years after `base_ms`.
    end_offset: u64,
    kind: Id128Kind,
    node_bits: u32,
    node: u32,
    clock: Arc<dyn Clock>,
    /// The clock's reading without a `dyn` call, when it publishes one.
    ticker: Option<Ticker>,
    /// The latest clock reading the slow path saw (ms since the Unix epoch): the lead is
    /// measured from it, so a clock that steps back (a test clock, a custom one: the system
    /// clock never does) leaves the generator counting on from where it was, not stopped.
    /// On a line of its own: the slow path writes it, the fast path reads its neighbours.
    clock_high: Padded<AtomicU64>,
    max_lead_ms: u64,
    max_wait: Duration,
    entropy: Entropy,
}

impl Id128Generator {
    /// UUIDv7s on the system clock, without a node field:
    ///
    /// ```
    /// use idmint_core::Id128Generator;
    ///
    /// let ids = Id128Generator::uuid7()?;
    /// let (a, b) = (ids.next_id()?, ids.next_id()?);
    /// assert!(a < b && a.is_uuid7());
    /// println!("{a}"); // 01a21f69-9497-77b5-96d1-456267390727
    /// # Ok::<(), idmint_core::Error>(())
    /// ```
    pub fn uuid7() -> Result<Self> {
        Self::builder(Id128Kind::Uuid7).build()
    }

    /// ULIDs on the system clock, without a node field.
    pub fn ulid() -> Result<Self> {
        Self::builder(Id128Kind::Ulid).build()
    }

    /// A generator of `kind` to be given a node field, a clock or other bounds.
    pub fn builder(kind: Id128Kind) -> Id128Builder {
        Id128Builder {
            kind,
            node_bits: 0,
            node: 0,
            clock: None,
            max_lead: Duration::from_secs(1),
            max_wait: Duration::from_secs(1),
            entropy: Entropy::Thread,
            after: None,
            not_before_ms: 0,
        }
    }

    /// The layout of the IDs.
    pub fn kind(&self) -> Id128Kind {
        self.kind
    }

    /// The node field's width and value (`(0, 0)`: none).
    pub fn node(&self) -> (u32, u32) {
        (self.node_bits, self.node)
    }

    /// The next ID: greater than every ID this generator gave before, on any thread.
    ///
    /// Fails only when the generator would run more than `max_lead` ahead of its clock for
    /// longer than `max_wait` (2^23 IDs or more in each millisecond of a whole `max_lead`), or
    /// 34.8 years after it was built (its word counts milliseconds from then in 40 bits: build
    /// a new one), or past the year 10889.
    #[inline]
    pub fn next_id(&self) -> Result<Id128> {
        let word = self.reserve(1)?;
        Ok(self.compose(word))
    }

    /// `count` IDs taken at once (one compare-and-swap when no other thread races for the
    /// word), in increasing order. Their random bits are drawn as the batch is read.
    pub fn next_ids(&self, count: u32) -> Result<Id128Batch<'_>> {
        if count == 0 || count > MAX_ID128_BATCH {
            return Err(Error::argument(
                "count",
                format!("{count} is not between 1 and {MAX_ID128_BATCH}"),
            ));
        }
        let first = self.reserve(u64::from(count))?;
        Ok(Id128Batch {
            generator: self,
            next: first,
            end: first + u64::from(count),
        })
    }

    #[inline]
    fn now_ms(&self) -> u64 {
        match &self.ticker {
            Some(ticker) => ticker.now_ms(),
            None => self.clock.now_ms(),
        }
    }

    /// Takes `n` consecutive words; returns the first.
    #[inline(always)]
    fn reserve(&self, n: u64) -> Result<u64> {
        // Batches take the compare-and-swap path: a `fetch_add` of many words that the checks
        // then refuse would push the word ahead for every thread (only the last taker can hand
        // its words back).
        if n > 1 {
            return self.reserve_slow(n);
        }
        let now = self.now_ms().saturating_sub(self.base_ms);
        let first = self.next_free.0.fetch_add(1, Ordering::Relaxed);
        let first_ms = first >> COUNTER_BITS;
        if first_ms >= now
            && first_ms <= now.saturating_add(self.max_lead_ms)
            && first_ms < self.end_offset
        {
            return Ok(first);
        }
        // The word is in an earlier millisecond (the first call in a new one), or too far
        // ahead: the word `fetch_add` took is handed back when no other thread took one since,
        // else left unused, and the compare-and-swap path decides.
        let _ = self.next_free.0.compare_exchange(
            first.saturating_add(1),
            first,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        self.reserve_slow(1)
    }

    /// The error of a generator past its end: 48-bit milliseconds end in 10889, the word's 40
    /// bits 34.8 years after `base_ms`.
    #[cold]
    fn ended(&self) -> Error {
        Error::LayoutExhausted {
            ends_at: format_ms_rfc3339(self.base_ms + self.end_offset),
        }
    }

    #[cold]
    fn reserve_slow(&self, n: u64) -> Result<u64> {
        let mut waited = Duration::ZERO;
        loop {
            let read = self.now_ms();
            let mut high = self.clock_high.0.load(Ordering::Relaxed);
            if read > high {
                high = self
                    .clock_high
                    .0
                    .fetch_max(read, Ordering::Relaxed)
                    .max(read);
            }
            let now = high.saturating_sub(self.base_ms);
            // A clock past the word's range (34.8 years after the generator started, or a clock
            // that jumped that far) cannot be written into it: an error, not a wrapped word.
            if now >= self.end_offset {
                return Err(self.ended());
            }
            let current = self.next_free.0.load(Ordering::Relaxed);
            let first = if current >> COUNTER_BITS < now {
                now << COUNTER_BITS | (self.entropy.next_u64() % SEED_LIMIT)
            } else {
                current
            };
            let last_ms = first.saturating_add(n - 1) >> COUNTER_BITS;
            if last_ms >= self.end_offset {
                return Err(self.ended());
            }
            let ahead = last_ms.saturating_sub(now);
            if ahead > self.max_lead_ms {
                let behind_ms = ahead - self.max_lead_ms;
                if waited >= self.max_wait {
                    return Err(Error::ClockBehind { behind_ms, waited });
                }
                let pause = Duration::from_millis(behind_ms).min(self.max_wait - waited);
                self.clock.sleep(pause);
                waited += pause;
                continue;
            }
            if self
                .next_free
                .0
                .compare_exchange_weak(current, first + n, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(first);
            }
        }
    }

    /// The ID of a word taken.
    #[inline(always)]
    fn compose(&self, word: u64) -> Id128 {
        Id128::compose(
            self.kind,
            &Id128Fields {
                ms: self.base_ms + (word >> COUNTER_BITS),
                counter: (word & COUNTER_MASK) as u32,
                node_bits: self.node_bits,
                node: self.node,
                random: self.entropy.next_u64(),
            },
        )
    }
}

/// IDs taken together by [`Id128Generator::next_ids`], in increasing order.
#[derive(Debug)]
pub struct Id128Batch<'a> {
    generator: &'a Id128Generator,
    next: u64,
    end: u64,
}

impl Iterator for Id128Batch<'_> {
    type Item = Id128;

    #[inline]
    fn next(&mut self) -> Option<Id128> {
        if self.next == self.end {
            return None;
        }
        let id = self.generator.compose(self.next);
        self.next += 1;
        Some(id)
    }

    /// The last ID without drawing random bits for the others.
    fn last(self) -> Option<Id128> {
        (self.next < self.end).then(|| self.generator.compose(self.end - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.end - self.next) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Id128Batch<'_> {}

impl Id128Batch<'_> {
    /// The millisecond of the batch's last ID (its greatest), without drawing random bits:
    /// what a fence checks before the IDs are handed out. `None` once the batch is read.
    pub fn last_ms(&self) -> Option<u64> {
        (self.next < self.end).then(|| self.generator.base_ms + ((self.end - 1) >> COUNTER_BITS))
    }
}

/// Settings of an [`Id128Generator`], with defaults for the common case.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Id128Builder {
    kind: Id128Kind,
    node_bits: u32,
    node: u32,
    clock: Option<Arc<dyn Clock>>,
    max_lead: Duration,
    max_wait: Duration,
    entropy: Entropy,
    after: Option<(u64, u32)>,
    not_before_ms: u64,
}

impl Id128Builder {
    /// A node field of `bits` bits (at most 24) holding `node`, right after the counter: IDs of
    /// generators with different nodes never collide, whatever their random bits; each bit
    /// taken is one random bit less (50 per UUIDv7 and 56 per ULID without one).
    pub fn node(mut self, bits: u32, node: u32) -> Self {
        self.node_bits = bits;
        self.node = node;
        self
    }

    /// The clock to read instead of a [`SystemClock`] of the generator's own.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// How far ahead of the clock a generator whose counters ran out may run (1 s).
    pub fn max_lead(mut self, max_lead: Duration) -> Self {
        self.max_lead = max_lead;
        self
    }

    /// The longest a call waits for the clock before it fails (1 s).
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Starts above `previous`'s IDs: a generator that replaces another (a node field that
    /// changed with a new worker lease) goes on in the same order, even in the same
    /// millisecond, even if the clock went back.
    pub fn after(mut self, previous: &Id128Generator) -> Self {
        let word = previous.next_free.0.load(Ordering::Relaxed);
        self.after = Some((
            previous.base_ms + (word >> COUNTER_BITS),
            (word & COUNTER_MASK) as u32,
        ));
        self
    }

    /// No ID in a millisecond before `ms`: a generator whose node field is a leased worker ID
    /// starts above the previous holder's high-water mark, as the snowflake generator of the
    /// lease does, so the two holders' IDs never share a millisecond. Until the clock is within
    /// `max_lead` of `ms`, calls wait (at most `max_wait`) and then fail with `clock_behind`.
    pub fn not_before_ms(mut self, ms: u64) -> Self {
        self.not_before_ms = ms;
        self
    }

    /// Random bits fixed to `value`, as a broken RNG would give: for tests of what the node
    /// field and the counter guarantee without randomness. Never use it to make IDs.
    #[doc(hidden)]
    pub fn fixed_randomness_for_tests(mut self, value: u64) -> Self {
        self.entropy = Entropy::Fixed(value);
        self
    }

    /// The generator, starting at the clock's millisecond.
    pub fn build(self) -> Result<Id128Generator> {
        entropy::watch_forks();
        check_node_bits(self.node_bits)?;
        if self.node_bits < 32 && u64::from(self.node) >= 1u64 << self.node_bits {
            return Err(Error::argument(
                "node",
                format!(
                    "{} does not fit a node field of {} bits",
                    self.node, self.node_bits
                ),
            ));
        }
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(SystemClock::new()) as Arc<dyn Clock>);
        let now_ms = clock.now_ms();
        // Counted from the earlier of now and the generator replaced, so both fit the word.
        let base_ms = self.after.map_or(now_ms, |(ms, _)| now_ms.min(ms));
        if base_ms > MAX_MS {
            return Err(Error::LayoutExhausted {
                ends_at: format_ms_rfc3339(MAX_MS + 1),
            });
        }
        // The first millisecond's counter is seeded like every later one's.
        let seed = ((now_ms - base_ms) << COUNTER_BITS) | (self.entropy.next_u64() % SEED_LIMIT);
        let after = match self.after {
            Some((ms, counter)) => (ms - base_ms) << COUNTER_BITS | u64::from(counter),
            None => 0,
        };
        let not_before = self
            .not_before_ms
            .saturating_sub(base_ms)
            .min(OFFSET_LIMIT - 1);
        let first = seed.max(after).max(not_before << COUNTER_BITS);
        Ok(Id128Generator {
            next_free: Padded(AtomicU64::new(first)),
            base_ms,
            kind: self.kind,
            node_bits: self.node_bits,
            node: self.node,
            ticker: clock.ticker(),
            clock_high: Padded(AtomicU64::new(
                self.after.map_or(now_ms, |(ms, _)| now_ms.max(ms)),
            )),
            end_offset: OFFSET_LIMIT.min(MAX_MS + 1 - base_ms),
            clock,
            max_lead_ms: duration_ms(self.max_lead),
            max_wait: self.max_wait,
            entropy: self.entropy,
        })
    }
}
