//! loom model of the generator's compare-and-swap path: every interleaving of 2 and 3 threads
//! reserving IDs (single and batched, across a tick boundary) yields distinct IDs, increasing
//! per thread, with claims racing jumps to a new tick (2 threads exhaustively, 3 threads up to
//! 3 preemptions), and per-thread handles (`LocalSnowflakes`, whose batches grow from 1 to 2)
//! racing the shared path. Run with `RUSTFLAGS="--cfg idmint_loom" cargo test -p idmint-core
//! --test loom_generator --release`.
#![cfg(idmint_loom)]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::layout::Layout;
use idmint_core::snowflake::Reservation;
use idmint_core::{ManualClock, SnowflakeConfig, SnowflakeGenerator};

fn generator() -> Arc<SnowflakeGenerator> {
    generator_on(ManualClock::shared(1_790_000_000_000))
}

fn generator_on(clock: Arc<ManualClock>) -> Arc<SnowflakeGenerator> {
    // 2 sequence bits: 4 IDs per tick, so a handful of calls crosses a tick boundary.
    generator_of("time:41@1ms,worker:4,seq:2", clock)
}

fn generator_of(spec: &str, clock: Arc<ManualClock>) -> Arc<SnowflakeGenerator> {
    let layout = Layout::parse(spec).unwrap();
    let config = SnowflakeConfig::default()
        .with_max_lead(Duration::from_millis(3))
        .with_max_wait(Duration::ZERO)
        .with_spread_bits(0);
    Arc::new(
        SnowflakeGenerator::builder(layout)
            .worker(1)
            .clock(clock)
            .config(config)
            .build()
            .unwrap(),
    )
}

fn take(gen: &SnowflakeGenerator, count: u64) -> Vec<u64> {
    match gen.try_reserve(count, 0).unwrap() {
        Reservation::Ready(batch) => batch.collect(),
        Reservation::Blocked(..) => Vec::new(),
    }
}

fn check(per_thread: Vec<Vec<u64>>, expected: usize) {
    let mut all = HashSet::new();
    for ids in per_thread {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        all.extend(ids);
    }
    assert_eq!(all.len(), expected);
}

#[test]
fn two_threads_never_share_an_id() {
    loom::model(|| {
        let gen = generator();
        let other = Arc::clone(&gen);
        let handle = loom::thread::spawn(move || [take(&other, 1), take(&other, 2)].concat());
        let mine = [take(&gen, 2), take(&gen, 1)].concat();
        check(vec![mine, handle.join().unwrap()], 6);
    });
}

#[test]
fn claims_racing_a_jump_to_a_new_tick_never_overlap() {
    loom::model(|| {
        let clock = ManualClock::shared(1_790_000_000_000);
        let gen = generator_on(Arc::clone(&clock));
        let other = Arc::clone(&gen);
        // This thread moves the clock on between its calls, so its second call jumps the word
        // to a new tick while the other thread claims in the old one.
        let handle = loom::thread::spawn(move || {
            let first = take(&other, 1);
            clock.advance(Duration::from_millis(1));
            [first, take(&other, 1)].concat()
        });
        let mine = [take(&gen, 1), take(&gen, 2)].concat();
        let theirs = handle.join().unwrap();
        check(vec![mine, theirs], 5);
    });
}

#[test]
fn three_threads_never_share_an_id() {
    // Bounded to 3 preemptions (loom's documented practice for larger models): exhaustive for
    // 3 threads takes minutes; bugs in a CAS loop show within two or three preemptions.
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let gen = generator();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let gen = Arc::clone(&gen);
                loom::thread::spawn(move || [take(&gen, 1), take(&gen, 1)].concat())
            })
            .collect();
        let mine = [take(&gen, 3)].concat();
        let mut all = vec![mine];
        all.extend(handles.into_iter().map(|h| h.join().unwrap()));
        check(all, 7);
    });
}

#[test]
fn local_handles_racing_the_shared_path_never_share_an_id() {
    loom::model(|| {
        // 7 sequence bits: handle batches may grow to 2 (a handle takes at most 1/64 of a tick).
        let gen = generator_of(
            "time:41@1ms,worker:4,seq:7",
            ManualClock::shared(1_790_000_000_000),
        );
        let other = Arc::clone(&gen);
        // A batch of 1, then one of 2 (the first was used up within its tick): two
        // reservations racing the other thread's two.
        let handle = loom::thread::spawn(move || {
            let mut local = other.local();
            (0..3)
                .map(|_| local.next_id().unwrap())
                .collect::<Vec<u64>>()
        });
        let mine = [take(&gen, 2), take(&gen, 1)].concat();
        check(vec![mine, handle.join().unwrap()], 6);
    });
}

/// Single IDs refused at the lead bound, racing, two calls each: each `fetch_add`ed value past
/// the bound is handed back, or left unused when the other thread took one meanwhile. An
/// unused value must not count as issued: if it did, the next call could finish its tick, the
/// next race open another, and the word walk past `max_lead` one tick per race (a reviewer's
/// model found exactly that). Nothing past the bound is ever issued.
#[test]
fn single_ids_refused_at_the_lead_bound_never_pass_it() {
    loom::model(|| {
        let clock = ManualClock::shared(1_790_000_000_000);
        let gen = generator_on(Arc::clone(&clock));
        // The clock's tick and the 3 ms of lead, 4 IDs each: all taken.
        let filled = take(&gen, 16);
        assert_eq!(filled.len(), 16);
        let other = Arc::clone(&gen);
        let handle = loom::thread::spawn(move || [take(&other, 1), take(&other, 1)].concat());
        let mine = [take(&gen, 1), take(&gen, 1)].concat();
        let theirs = handle.join().unwrap();
        let after = take(&gen, 1);
        assert!(
            mine.is_empty() && theirs.is_empty() && after.is_empty(),
            "issued past the lead bound: {mine:?} {theirs:?} {after:?}"
        );
    });
}
