//! Time sources. This is the only module of idmint that reads the system clock.
//!
//! The generators need a time that never goes backwards inside a process, follows the wall
//! clock when it moves forward (an NTP correction, a VM resumed), and is cheap enough to read
//! once per ID. Reading the OS clock costs more than the whole budget of one snowflake ID on a
//! typical VM (BENCHMARKS.md), so [`SystemClock`] reads it on a background ticker thread and
//! publishes the result in an atomic: a read on the hot path is one relaxed load.
//!
//! [`ManualClock`] is the clock for tests: it moves only when told to, may be stepped back to
//! simulate a raw wall clock, and advances itself when a caller sleeps, so bounded waits end
//! deterministically.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of the current time in milliseconds since the Unix epoch.
///
/// Implementations used in production never go backwards; the generators still defend against
/// ones that do (see [`ManualClock::step_back`]).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn now_ms(&self) -> u64;

    /// Waits about `duration`. Used by the bounded waits of the generators; a test clock
    /// advances itself instead of blocking.
    fn sleep(&self, duration: Duration);

    /// A direct view of the reading, for clocks that publish it in memory ([`SystemClock`]):
    /// the snowflake generator's hot path reads it with one inlined load instead of a call
    /// through `dyn Clock` on every ID. `None` (the default): call [`Clock::now_ms`].
    fn ticker(&self) -> Option<Ticker> {
        None
    }

    /// The wall clock minus [`Clock::now_ms`], in milliseconds: negative after the wall clock
    /// stepped back (the generator keeps its own time), zero when they agree. Exported as a
    /// metric so operators see a misbehaving NTP set-up.
    fn divergence_ms(&self) -> i64 {
        0
    }
}

/// The pure bookkeeping of [`SystemClock`]: turns readings of the monotonic and wall clocks
/// into a time that only moves forward.
///
/// Kept separate from the thread that feeds it so the step handling can be tested with
/// made-up readings.
#[derive(Debug, Clone)]
pub struct WallAnchor {
    /// Wall time (ms) that corresponds to monotonic reading 0.
    offset_ms: u64,
    /// Last published time, so the output never decreases even if the inputs misbehave.
    last_ms: u64,
}

impl WallAnchor {
    /// Anchors monotonic time `mono_ms` (ms since any fixed origin) to wall time `wall_ms`.
    pub fn new(mono_ms: u64, wall_ms: u64) -> Self {
        Self {
            offset_ms: wall_ms.saturating_sub(mono_ms),
            last_ms: wall_ms,
        }
    }

    /// Takes a new pair of readings and returns `(now_ms, divergence_ms)`.
    ///
    /// `now_ms` advances with the monotonic clock, jumps forward when the wall clock is ahead
    /// (re-anchoring on it), and never moves back: a wall clock that stepped back only shows as
    /// a negative divergence until it catches up.
    pub fn observe(&mut self, mono_ms: u64, wall_ms: u64) -> (u64, i64) {
        let anchored = self.offset_ms.saturating_add(mono_ms);
        if wall_ms > anchored {
            self.offset_ms = wall_ms.saturating_sub(mono_ms);
        }
        let now = anchored.max(wall_ms).max(self.last_ms);
        self.last_ms = now;
        let divergence = i64::try_from(i128::from(wall_ms) - i128::from(now)).unwrap_or(i64::MIN);
        (now, divergence)
    }
}

/// What [`SystemClock`] publishes, readable without going through the [`Clock`] trait. It
/// reads the same value as the clock's [`now_ms`](Clock::now_ms); keep the clock alive (its
/// thread stops when it is dropped).
#[derive(Debug, Clone)]
pub struct Ticker(Arc<Published>);

impl Ticker {
    /// Milliseconds since 1970-01-01T00:00:00Z, as last published by the clock's thread.
    #[inline]
    pub fn now_ms(&self) -> u64 {
        self.0.now_ms.load(Ordering::Relaxed)
    }
}

/// State shared between a [`SystemClock`] and its ticker thread.
#[derive(Debug)]
struct Published {
    now_ms: AtomicU64,
    divergence_ms: AtomicI64,
    stopped: AtomicBool,
}

/// The production clock: wall time anchored at start and advanced by the monotonic clock,
/// refreshed by a background thread every `interval` (1 ms by default).
///
/// Dropping the clock stops its thread. Reads may lag real time by up to about one interval,
/// which only makes the time inside IDs that much older; it never makes them repeat.
pub struct SystemClock {
    published: Arc<Published>,
    interval: Duration,
}

impl fmt::Debug for SystemClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemClock")
            .field("now_ms", &self.now_ms())
            .field("divergence_ms", &self.divergence_ms())
            .field("interval", &self.interval)
            .finish()
    }
}

impl SystemClock {
    /// Starts a clock refreshed every millisecond.
    pub fn new() -> Self {
        Self::with_interval(Duration::from_millis(1))
    }

    /// Starts a clock refreshed every `interval` (clamped to 100 us .. 10 ms): shorter means
    /// fresher readings and more wake-ups.
    pub fn with_interval(interval: Duration) -> Self {
        let interval = interval.clamp(Duration::from_micros(100), Duration::from_millis(10));
        let origin = Instant::now();
        let mut anchor = WallAnchor::new(0, wall_now_ms());
        let (now, divergence) = anchor.observe(0, wall_now_ms());
        let published = Arc::new(Published {
            now_ms: AtomicU64::new(now),
            divergence_ms: AtomicI64::new(divergence),
            stopped: AtomicBool::new(false),
        });
        let shared = Arc::clone(&published);
        let spawned = thread::Builder::new()
            .name("idmint-clock".into())
            .spawn(move || run_ticker(&shared, anchor, origin, interval));
        if spawned.is_err() {
            // No thread could be started (resource limits): fall back to a clock that stands
            // still. Generators then borrow ahead and wait, bounded; they never repeat an ID.
            published.stopped.store(true, Ordering::Relaxed);
        }
        Self {
            published,
            interval,
        }
    }

    /// True while the ticker thread is running.
    pub fn is_ticking(&self) -> bool {
        !self.published.stopped.load(Ordering::Relaxed)
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SystemClock {
    fn drop(&mut self) {
        self.published.stopped.store(true, Ordering::Relaxed);
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.published.now_ms.load(Ordering::Relaxed)
    }

    fn sleep(&self, duration: Duration) {
        thread::sleep(duration);
    }

    fn ticker(&self) -> Option<Ticker> {
        Some(Ticker(Arc::clone(&self.published)))
    }

    fn divergence_ms(&self) -> i64 {
        self.published.divergence_ms.load(Ordering::Relaxed)
    }
}

/// Body of the ticker thread: read both OS clocks, publish, sleep, until the clock is dropped.
fn run_ticker(published: &Published, mut anchor: WallAnchor, origin: Instant, interval: Duration) {
    while !published.stopped.load(Ordering::Relaxed) {
        let mono_ms = u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (now, divergence) = anchor.observe(mono_ms, wall_now_ms());
        published.now_ms.store(now, Ordering::Relaxed);
        published.divergence_ms.store(divergence, Ordering::Relaxed);
        thread::sleep(interval);
    }
}

/// The wall clock in ms since the Unix epoch; 0 if it reads before 1970.
fn wall_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Measures how long something took (store calls, for latency metrics) with the monotonic
/// clock, so code outside this module never reads the OS clock itself.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(Instant);

impl Stopwatch {
    /// Starts measuring.
    pub fn start() -> Self {
        Self(Instant::now())
    }

    /// Time since [`Stopwatch::start`].
    pub fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Reads the wall clock once, for code that needs "now" outside a generator (validating that
/// an epoch is not in the future, printing when a layout runs out).
pub fn wall_clock_ms() -> u64 {
    wall_now_ms()
}

/// A clock for tests: it moves only when told to, or when someone sleeps on it.
///
/// It may be stepped back, which the production clock never does, to prove the generators
/// survive a raw clock that misbehaves.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
    divergence_ms: AtomicI64,
    slept_ms: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now_ms: AtomicU64::new(now_ms),
            ..Self::default()
        }
    }

    /// A shared clock standing at `now_ms`, ready to hand to a generator.
    pub fn shared(now_ms: u64) -> Arc<Self> {
        Arc::new(Self::new(now_ms))
    }

    /// Sets the time, forwards or backwards.
    pub fn set_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance(&self, by: Duration) {
        self.now_ms.fetch_add(duration_ms(by), Ordering::SeqCst);
    }

    /// Moves the time backward (saturating at 0), as a raw wall clock does after an NTP step.
    pub fn step_back(&self, by: Duration) {
        let by = duration_ms(by);
        let _ = self
            .now_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_sub(by))
            });
    }

    /// Sets the divergence this clock reports.
    pub fn set_divergence_ms(&self, divergence_ms: i64) {
        self.divergence_ms.store(divergence_ms, Ordering::SeqCst);
    }

    /// Total time callers have slept on this clock: a test's measure of how long a generator
    /// stalled.
    pub fn slept(&self) -> Duration {
        Duration::from_millis(self.slept_ms.load(Ordering::SeqCst))
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    /// Advances the clock by `duration`, rounded up to a whole millisecond so waits progress.
    fn sleep(&self, duration: Duration) {
        let ms = duration_ms(duration).max(1);
        self.slept_ms.fetch_add(ms, Ordering::SeqCst);
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    fn divergence_ms(&self) -> i64 {
        self.divergence_ms.load(Ordering::SeqCst)
    }
}

/// Whole milliseconds in `duration`, rounded up (a wait or a lease is never cut short),
/// saturating.
pub fn duration_ms(duration: Duration) -> u64 {
    let ms = duration.as_millis() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchor_follows_monotonic_time_through_a_wall_step_back() {
        let mut anchor = WallAnchor::new(0, 1_000_000);
        assert_eq!(anchor.observe(10, 1_000_010), (1_000_010, 0));
        // The wall clock steps back 5 s; our time keeps advancing with the monotonic clock.
        assert_eq!(anchor.observe(20, 995_020), (1_000_020, -5_000));
        assert_eq!(anchor.observe(30, 995_030), (1_000_030, -5_000));
        // The wall clock catches up again: divergence back to zero.
        assert_eq!(anchor.observe(5_040, 1_005_040), (1_005_040, 0));
    }

    #[test]
    fn anchor_follows_a_forward_step_and_stays_there() {
        let mut anchor = WallAnchor::new(0, 1_000_000);
        assert_eq!(anchor.observe(10, 4_600_010), (4_600_010, 0));
        // Re-anchored: monotonic progress now counts from the new wall time.
        assert_eq!(anchor.observe(20, 4_600_015), (4_600_020, -5));
    }

    #[test]
    fn anchor_never_goes_back_even_if_monotonic_input_does() {
        let mut anchor = WallAnchor::new(100, 1_000_000);
        let (first, _) = anchor.observe(200, 1_000_100);
        let (second, _) = anchor.observe(150, 900_000);
        assert!(second >= first);
    }

    #[test]
    fn system_clock_is_close_to_wall_time_and_monotone() {
        let clock = SystemClock::new();
        assert!(clock.is_ticking());
        let wall = wall_clock_ms();
        let mut last = clock.now_ms();
        assert!(last.abs_diff(wall) < 1_000, "clock {last} vs wall {wall}");
        for _ in 0..20 {
            clock.sleep(Duration::from_millis(1));
            let now = clock.now_ms();
            assert!(now >= last);
            last = now;
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        clock.advance(Duration::from_millis(5));
        assert_eq!(clock.now_ms(), 1_005);
        clock.step_back(Duration::from_secs(1));
        assert_eq!(clock.now_ms(), 5);
        clock.sleep(Duration::from_micros(10));
        assert_eq!(clock.now_ms(), 6);
        assert_eq!(clock.slept(), Duration::from_millis(1));
    }
}
