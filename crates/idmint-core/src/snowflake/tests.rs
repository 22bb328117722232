#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::{Arc, Mutex};

use super::*;
use crate::clock::{ManualClock, SystemClock, WallAnchor};
use crate::layout::parse_epoch;

const NOW: &str = "2026-11-21T12:00:00Z";

pub(super) fn now_ms() -> u64 {
    parse_epoch(NOW).unwrap()
}

fn generator(
    spec: &str,
    clock: Arc<dyn Clock>,
    config: SnowflakeConfig,
    fence: Fence,
) -> SnowflakeGenerator {
    SnowflakeGenerator::builder(Layout::parse(spec).unwrap())
        .datacenter(1)
        .worker(3)
        .clock(clock)
        .config(config)
        .fence(fence)
        .build()
        .unwrap()
}

fn twitter(clock: Arc<ManualClock>, config: SnowflakeConfig) -> SnowflakeGenerator {
    generator("twitter", clock, config, Fence::unfenced())
}

/// A clock built like [`SystemClock`] (the same [`WallAnchor`]) but fed by hand: the wall
/// reading can step while the monotonic reading keeps going.
#[derive(Debug)]
struct AnchoredClock {
    anchor: Mutex<WallAnchor>,
    mono_ms: StdAtomicU64,
    wall_ms: StdAtomicU64,
}

impl AnchoredClock {
    fn new(wall_ms: u64) -> Self {
        Self {
            anchor: Mutex::new(WallAnchor::new(0, wall_ms)),
            mono_ms: StdAtomicU64::new(0),
            wall_ms: StdAtomicU64::new(wall_ms),
        }
    }

    fn advance(&self, ms: u64) {
        self.mono_ms
            .fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
        self.wall_ms
            .fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }

    fn step_wall_back(&self, ms: u64) {
        self.wall_ms
            .fetch_sub(ms, std::sync::atomic::Ordering::SeqCst);
    }

    fn read(&self) -> (u64, i64) {
        let mono = self.mono_ms.load(std::sync::atomic::Ordering::SeqCst);
        let wall = self.wall_ms.load(std::sync::atomic::Ordering::SeqCst);
        self.anchor.lock().unwrap().observe(mono, wall)
    }
}

impl Clock for AnchoredClock {
    fn now_ms(&self) -> u64 {
        self.read().0
    }

    fn sleep(&self, duration: Duration) {
        self.advance(duration_ms(duration).max(1));
    }

    fn divergence_ms(&self) -> i64 {
        self.read().1
    }
}

/// Runs `per_thread(i)` on `threads` threads, each returning the IDs it took: each list must
/// increase, and the count of distinct IDs over all of them is returned (the total when none
/// is shared).
pub(super) fn distinct_ids_on_threads<F>(threads: usize, per_thread: F) -> usize
where
    F: Fn(usize) -> Vec<u64> + Send + Sync + 'static,
{
    let per_thread = Arc::new(per_thread);
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let per_thread = Arc::clone(&per_thread);
            std::thread::spawn(move || per_thread(i))
        })
        .collect();
    let mut all = HashSet::new();
    for handle in handles {
        let ids = handle.join().unwrap();
        assert_increasing(&ids);
        all.extend(ids);
    }
    all.len()
}

/// A generator for worker 0 with the default settings on `spec`, whose epoch lies
/// `epoch_ms_ago` ms before the tests' now, on a manual clock at that now: for tests at the
/// end of a layout.
pub(super) fn generator_since(
    spec: &str,
    epoch_ms_ago: u64,
) -> (Layout, Arc<ManualClock>, SnowflakeGenerator) {
    let layout = Layout::parse(spec)
        .unwrap()
        .with_epoch(now_ms() - epoch_ms_ago)
        .unwrap();
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig::default();
    let gen = SnowflakeGenerator::builder(layout.clone())
        .clock(clock.clone())
        .config(config)
        .build()
        .unwrap();
    (layout, clock, gen)
}

pub(super) fn assert_increasing(ids: &[u64]) {
    for pair in ids.windows(2) {
        assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
    }
}

#[test]
fn ids_carry_their_worker_datacenter_and_time() {
    let clock = ManualClock::shared(now_ms());
    let gen = twitter(clock.clone(), SnowflakeConfig::default());
    let id = gen.next_id().unwrap();
    let decoded = gen.layout().decode(id).unwrap();
    assert_eq!(
        (decoded.dc, decoded.worker, decoded.seq),
        (Some(1), Some(3), 0)
    );
    assert_eq!(decoded.unix_ms, now_ms());
    clock.advance(Duration::from_millis(7));
    let later = gen.layout().decode(gen.next_id().unwrap()).unwrap();
    assert_eq!(later.unix_ms, now_ms() + 7);
}

#[test]
fn refuses_a_worker_or_datacenter_that_does_not_fit() {
    let clock: Arc<dyn Clock> = ManualClock::shared(now_ms());
    let layout = Layout::parse("twitter").unwrap();
    let config = SnowflakeConfig::default();
    let err = SnowflakeGenerator::builder(layout.clone())
        .worker(32)
        .clock(clock.clone())
        .config(config)
        .build();
    assert!(matches!(
        err,
        Err(Error::InvalidArgument { name: "worker", .. })
    ));
    let err = SnowflakeGenerator::builder(layout)
        .datacenter(32)
        .clock(clock)
        .config(config)
        .build();
    assert!(matches!(
        err,
        Err(Error::InvalidArgument { name: "dc", .. })
    ));
}

#[test]
fn a_raw_clock_stepping_back_5s_costs_no_stall_while_the_sequence_lasts() {
    let clock = ManualClock::shared(now_ms());
    let gen = twitter(clock.clone(), SnowflakeConfig::default());
    let mut ids: Vec<u64> = (0..100).map(|_| gen.next_id().unwrap()).collect();
    clock.step_back(Duration::from_secs(5));
    // The rest of the current tick's sequence is issued at once, with no wait.
    ids.extend((0..3_996).map(|_| gen.next_id().unwrap()));
    assert_eq!(clock.slept(), Duration::ZERO);
    // The next tick would be 5 s ahead of this clock, 4 s more than max_lead allows: waiting
    // max_wait (1 s) cannot help, so the call fails at once.
    let err = gen.next_id().unwrap_err();
    assert!(
        matches!(err, Error::ClockBehind { waited, .. } if waited.is_zero()),
        "{err:?}"
    );
    assert_eq!(clock.slept(), Duration::ZERO);
    // Once the clock is back within max_lead, IDs continue above everything issued.
    clock.advance(Duration::from_secs(4));
    ids.extend((0..10_000).map(|_| gen.next_id().unwrap()));
    assert_increasing(&ids);
}

#[test]
fn the_system_clock_logic_absorbs_a_5s_wall_step_back_without_any_stall() {
    let clock = Arc::new(AnchoredClock::new(now_ms()));
    let gen = generator(
        "twitter",
        clock.clone(),
        SnowflakeConfig::default(),
        Fence::unfenced(),
    );
    let mut ids = Vec::new();
    for round in 0..200 {
        if round == 100 {
            clock.step_wall_back(5_000);
        }
        ids.extend((0..50).map(|_| gen.next_id().unwrap()));
        clock.advance(1);
    }
    assert_increasing(&ids);
    assert_eq!(clock.divergence_ms(), -5_000);
    // Time in the IDs kept following the monotonic clock.
    let last = gen.layout().decode(*ids.last().unwrap()).unwrap();
    assert_eq!(last.unix_ms, now_ms() + 199);
}

#[test]
fn sequence_exhaustion_borrows_up_to_max_lead_then_waits_for_the_clock() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        max_lead: Duration::from_millis(2),
        ..SnowflakeConfig::default()
    };
    let gen = twitter(clock.clone(), config);
    // Three ticks' worth: the current one and two borrowed, all without waiting.
    let mut ids: Vec<u64> = (0..3 * 4096).map(|_| gen.next_id().unwrap()).collect();
    assert_eq!(clock.slept(), Duration::ZERO);
    assert_eq!(gen.lead_ms(), 3);
    // The next one waits for the clock (the manual clock advances while we sleep on it).
    ids.push(gen.next_id().unwrap());
    assert_eq!(clock.slept(), Duration::from_millis(1));
    assert_increasing(&ids);
    let last = gen.layout().decode(*ids.last().unwrap()).unwrap();
    assert_eq!((last.unix_ms, last.seq), (now_ms() + 3, 0));
}

#[test]
fn a_wait_never_exceeds_max_wait() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        max_lead: Duration::ZERO,
        max_wait: Duration::from_millis(30),
        ..SnowflakeConfig::default()
    };
    let gen = twitter(clock.clone(), config);
    for _ in 0..4096 {
        gen.next_id().unwrap();
    }
    // The sequence of the current tick is used up and the clock is 20 ms short of the next:
    // a 30 ms budget covers it, so the call waits exactly that long and succeeds.
    clock.step_back(Duration::from_millis(20));
    gen.next_id().unwrap();
    assert_eq!(clock.slept(), Duration::from_millis(21));
    for _ in 1..4096 {
        gen.next_id().unwrap();
    }
    // 60 s behind cannot clear within 30 ms: the call fails at once instead of holding the
    // caller for max_wait.
    clock.step_back(Duration::from_secs(60));
    let err = gen.next_id().unwrap_err();
    assert_eq!(
        err,
        Error::ClockBehind {
            behind_ms: 60_001,
            waited: Duration::ZERO
        }
    );
    assert_eq!(clock.slept(), Duration::from_millis(21));
    assert!(err.is_retryable());
}

#[test]
fn granted_hwm_is_never_passed() {
    let clock = ManualClock::shared(now_ms());
    let now_tick = Layout::parse("twitter").unwrap().tick_at(now_ms()).unwrap();
    let config = SnowflakeConfig {
        max_wait: Duration::from_millis(50),
        ..SnowflakeConfig::default()
    };
    let fence = Fence {
        after_tick: None,
        granted_tick: now_tick + 1,
    };
    let gen = generator("twitter", clock.clone(), config, fence);
    let ids: Vec<u64> = (0..2 * 4096).map(|_| gen.next_id().unwrap()).collect();
    assert_increasing(&ids);
    // Tick now+2 is not granted: a bounded wait (the clock moves 50 ms meanwhile), then a
    // typed error.
    let err = gen.next_id().unwrap_err();
    assert_eq!(
        err,
        Error::HwmNotGranted {
            tick: now_tick + 50,
            granted: now_tick + 1
        }
    );
    assert_eq!(clock.slept(), Duration::from_millis(50));
    // Even when the clock is far past it.
    clock.advance(Duration::from_secs(10));
    assert!(matches!(gen.next_id(), Err(Error::HwmNotGranted { .. })));
    // Once the store confirms a higher HWM, IDs flow again.
    gen.raise_granted_tick(now_tick + 100_000);
    assert!(gen.next_id().unwrap() > *ids.last().unwrap());
    gen.raise_granted_tick(5);
    assert_eq!(gen.granted_tick(), now_tick + 100_000);
}

#[test]
fn a_new_holder_starts_strictly_above_the_stored_hwm() {
    let clock = ManualClock::shared(now_ms());
    let layout = Layout::parse("twitter").unwrap();
    let now_tick = layout.tick_at(now_ms()).unwrap();
    // The previous holder's clock ran 300 ms ahead of ours.
    let fence = Fence::from_hwm_ms(&layout, now_ms() + 300, u64::MAX);
    assert_eq!(fence.after_tick, Some(now_tick + 300));
    let gen = generator("twitter", clock, SnowflakeConfig::default(), fence);
    let first = layout.decode(gen.next_id().unwrap()).unwrap();
    assert_eq!(first.tick, now_tick + 301);
}

#[test]
fn the_end_of_the_layout_is_an_error_never_a_wrapped_id() {
    // 8 bits of seconds: the layout ends 256 s after its epoch.
    let (layout, clock, gen) = generator_since("time:8@1s,seq:4", 255_000);
    let config = SnowflakeConfig::default();
    let ids: Vec<u64> = (0..16).map(|_| gen.next_id().unwrap()).collect();
    assert_increasing(&ids);
    assert_eq!(*ids.last().unwrap(), (1 << 12) - 1);
    let err = gen.next_id().unwrap_err();
    assert!(matches!(err, Error::LayoutExhausted { .. }));
    assert!(!err.is_retryable());
    clock.advance(Duration::from_secs(3_600));
    assert!(matches!(gen.next_id(), Err(Error::LayoutExhausted { .. })));
    assert!(matches!(
        gen.next_batch(1, 0),
        Err(Error::LayoutExhausted { .. })
    ));
    // A generator started after the end refuses at once.
    let late = SnowflakeGenerator::builder(layout)
        .clock(clock)
        .config(config)
        .build();
    assert!(matches!(late, Err(Error::LayoutExhausted { .. })));
}

/// A layout whose time and sequence fill all 63 bits: after its very last ID the word is
/// 2^63, one past every packed value. That is still "ran out", not "closed", and a close
/// there reports the last tick.
#[test]
fn the_end_of_a_63_bit_layout_is_not_mistaken_for_a_close() {
    // 30 bits of seconds: the layout's last tick is the current second.
    let (layout, _, gen) = generator_since("time:30@1s,seq:33", ((1 << 30) - 1) * 1_000);
    let per_tick: u64 = 1 << 33;
    for _ in 0..per_tick / MAX_BATCH {
        gen.next_batch(MAX_BATCH, 0).unwrap();
    }
    let last = gen.next_batch(per_tick % MAX_BATCH, 0).unwrap();
    assert_eq!(last.last_id(), Some(u64::MAX >> 1));
    for _ in 0..3 {
        assert!(matches!(gen.next_id(), Err(Error::LayoutExhausted { .. })));
        assert!(matches!(
            gen.next_batch(2, 0),
            Err(Error::LayoutExhausted { .. })
        ));
    }
    assert_eq!(gen.close(), layout.max_tick());
    assert_eq!(gen.next_id(), Err(Error::GeneratorClosed));
}

#[test]
fn a_batch_is_one_reservation_across_ticks() {
    let clock = ManualClock::shared(now_ms());
    let gen = twitter(clock.clone(), SnowflakeConfig::default());
    let batch = gen.next_batch(10_000, 0).unwrap();
    assert_eq!(batch.len(), 10_000);
    let last = batch.last_id().unwrap();
    let ids: Vec<u64> = batch.collect();
    assert_increasing(&ids);
    assert_eq!(*ids.last().unwrap(), last);
    assert_eq!(
        gen.layout().decode(last).unwrap().tick,
        gen.layout().tick_at(now_ms()).unwrap() + 2
    );
    assert!(gen.next_id().unwrap() > last);
    assert!(matches!(
        gen.next_batch(0, 0),
        Err(Error::InvalidArgument { name: "count", .. })
    ));
    assert!(matches!(
        gen.next_batch(MAX_BATCH + 1, 0),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn shards_are_placed_and_checked() {
    let clock = ManualClock::shared(now_ms());
    let layout = Layout::parse("instagram").unwrap();
    let gen = SnowflakeGenerator::builder(layout)
        .clock(clock)
        .build()
        .unwrap();
    let id = gen.next_id_for_shard(1_234).unwrap();
    assert_eq!(gen.layout().decode(id).unwrap().shard, Some(1_234));
    assert!(matches!(
        gen.next_id_for_shard(8_192),
        Err(Error::InvalidArgument { name: "shard", .. })
    ));
    let plain = twitter(ManualClock::shared(now_ms()), SnowflakeConfig::default());
    assert!(matches!(
        plain.next_id_for_shard(1),
        Err(Error::InvalidArgument { name: "shard", .. })
    ));
}

#[test]
fn spreading_makes_low_digits_uniform_at_one_id_per_tick() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        spread_bits: 6,
        ..SnowflakeConfig::default()
    };
    let gen = twitter(clock.clone(), config);
    let mut buckets = [0u32; 16];
    for _ in 0..16_000 {
        let id = gen.next_id().unwrap();
        buckets[usize::try_from(id % 16).unwrap()] += 1;
        clock.advance(Duration::from_millis(1));
    }
    // 1,000 expected per bucket; without spreading every ID would land in bucket 0.
    assert!(
        buckets.iter().all(|&n| (800..1_200).contains(&n)),
        "{buckets:?}"
    );
    let bad = SnowflakeConfig {
        spread_bits: 12,
        ..SnowflakeConfig::default()
    };
    let layout = Layout::parse("twitter").unwrap();
    let err = SnowflakeGenerator::builder(layout)
        .clock(clock)
        .config(bad)
        .build();
    assert!(matches!(
        err,
        Err(Error::InvalidArgument {
            name: "spread_bits",
            ..
        })
    ));
}

#[test]
fn an_epoch_in_the_future_or_a_clock_before_it_is_refused() {
    let layout = Layout::parse_with_epoch("twitter", Some("2030-01-01")).unwrap();
    let clock: Arc<dyn Clock> = ManualClock::shared(now_ms());
    let err = SnowflakeGenerator::builder(layout).clock(clock).build();
    assert!(matches!(err, Err(Error::InvalidEpoch { .. })));
}

/// Worker 7 of a twitter-shaped layout on the system clock, for tests with real threads.
pub(super) fn shared_on_system_clock() -> Arc<SnowflakeGenerator> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let layout = Layout::parse("time:41@1ms,worker:10,seq:12").unwrap();
    let config = SnowflakeConfig::default();
    Arc::new(
        SnowflakeGenerator::builder(layout)
            .worker(7)
            .clock(clock)
            .config(config)
            .build()
            .unwrap(),
    )
}

#[test]
fn threads_on_the_system_clock_never_share_an_id() {
    let gen = shared_on_system_clock();
    let distinct = distinct_ids_on_threads(4, move |_| {
        (0..50_000).map(|_| gen.next_id().unwrap()).collect()
    });
    assert_eq!(distinct, 200_000);
}

#[test]
fn close_returns_the_exact_last_tick_and_nothing_is_issued_after() {
    let clock = ManualClock::shared(now_ms());
    let gen = twitter(clock.clone(), SnowflakeConfig::default());
    let last = (0..5_000).map(|_| gen.next_id().unwrap()).last().unwrap();
    let last_tick = gen.layout().decode(last).unwrap().tick;
    assert_eq!(gen.close(), last_tick);
    assert_eq!(gen.issued_tick(), last_tick);
    assert_eq!(gen.next_id(), Err(Error::GeneratorClosed));
    assert!(matches!(
        gen.try_reserve(10, 0),
        Err(Error::GeneratorClosed)
    ));
    clock.advance(Duration::from_secs(5));
    assert_eq!(gen.next_batch(3, 0), Err(Error::GeneratorClosed));
    assert_eq!(gen.close(), last_tick);
    assert_eq!(gen.lead_ms(), 0);
}

#[test]
fn close_racing_with_threads_counts_every_id_issued() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let layout = Layout::parse("time:41@1ms,worker:10,seq:12").unwrap();
    let gen = Arc::new(
        SnowflakeGenerator::builder(layout)
            .worker(1)
            .clock(clock)
            .build()
            .unwrap(),
    );
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let gen = Arc::clone(&gen);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                while let Ok(id) = gen.next_id() {
                    ids.push(id);
                }
                ids
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    let closed_at = gen.close();
    let highest = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .max()
        .unwrap();
    // Every ID issued is at or below the tick close reported: a release writing that tick
    // as the HWM covers all of them.
    assert!(gen.layout().decode(highest).unwrap().tick <= closed_at);
}

/// A single ID refused at the lead bound takes nothing: the value its `fetch_add` took is
/// handed back, so the word is exact and the next ID is the very next value.
#[test]
fn refused_single_ids_at_the_lead_bound_leave_the_word_as_it_was() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        max_lead: Duration::from_millis(2),
        max_wait: Duration::ZERO,
        ..SnowflakeConfig::default()
    };
    let gen = twitter(clock.clone(), config);
    let now_tick = gen.layout().tick_at(now_ms()).unwrap();
    for _ in 0..3 * 4096 {
        gen.next_id().unwrap();
    }
    let issued = gen.issued_tick();
    for _ in 0..10_000 {
        assert!(matches!(gen.next_id(), Err(Error::ClockBehind { .. })));
    }
    assert_eq!((gen.issued_tick(), gen.lead_ms()), (issued, 3));
    clock.advance(Duration::from_millis(1));
    let next = gen.layout().decode(gen.next_id().unwrap()).unwrap();
    assert_eq!((next.tick, next.seq), (now_tick + 3, 0));
}

/// The same at the granted HWM, both while the clock is below it (the value is handed back)
/// and once it reached it (nothing is taken at all).
#[test]
fn refused_single_ids_at_the_granted_hwm_leave_the_word_as_it_was() {
    let clock = ManualClock::shared(now_ms());
    let now_tick = Layout::parse("twitter").unwrap().tick_at(now_ms()).unwrap();
    let config = SnowflakeConfig {
        max_wait: Duration::ZERO,
        ..SnowflakeConfig::default()
    };
    let fence = Fence {
        after_tick: None,
        granted_tick: now_tick + 1,
    };
    let gen = generator("twitter", clock.clone(), config, fence);
    for _ in 0..2 * 4096 {
        gen.next_id().unwrap();
    }
    let issued = gen.issued_tick();
    for _ in 0..10_000 {
        assert!(matches!(gen.next_id(), Err(Error::HwmNotGranted { .. })));
    }
    clock.advance(Duration::from_millis(5));
    for _ in 0..10_000 {
        assert!(matches!(gen.next_id(), Err(Error::HwmNotGranted { .. })));
    }
    assert_eq!(gen.issued_tick(), issued);
    gen.raise_granted_tick(now_tick + 10);
    let next = gen.layout().decode(gen.next_id().unwrap()).unwrap();
    assert_eq!((next.tick, next.seq), (now_tick + 5, 0));
}

/// After `close`, single IDs keep failing however many are asked for: the `fetch_add`s they
/// make on the closed word never wrap it back into a valid value.
#[test]
fn a_closed_generator_stays_closed_under_any_number_of_single_ids() {
    let clock = ManualClock::shared(now_ms());
    let gen = twitter(clock.clone(), SnowflakeConfig::default());
    gen.next_id().unwrap();
    let last = gen.close();
    for _ in 0..100_000 {
        assert_eq!(gen.next_id(), Err(Error::GeneratorClosed));
    }
    clock.advance(Duration::from_secs(1));
    assert_eq!(gen.next_id(), Err(Error::GeneratorClosed));
    assert_eq!(
        (gen.issued_tick(), gen.close(), gen.lead_ms()),
        (last, last, 0)
    );
}
