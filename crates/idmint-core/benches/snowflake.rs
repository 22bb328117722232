//! Snowflake generator benchmarks.
//!
//! - `capacity/twitter`: IDs per second per worker when the 12-bit sequence is the limit; the
//!   ceiling is 4,096 per ms = 4.096M/s.
//! - `cost/wide`: nanoseconds per ID with a 22-bit sequence (the clock is never the limit), on
//!   one thread and shared by two threads; `local-*` the same through one `LocalSnowflakes`
//!   handle per thread. Two threads are "no slower in total" when the wall ns per ID of
//!   `*-2-threads` is at most the ns per ID of `*-1-thread`.
//! - `reference/fetch_add`: a bare `AtomicU64::fetch_add`, the floor of any shared counter.
//!
//! Run: `cargo bench -p idmint-core --bench snowflake`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idmint_core::layout::Layout;
use idmint_core::{Clock, SnowflakeConfig, SnowflakeGenerator, SystemClock};

fn generator(spec: &str, max_lead: Duration) -> Arc<SnowflakeGenerator> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = SnowflakeConfig::default()
        .with_max_lead(max_lead)
        .with_max_wait(Duration::from_secs(1))
        .with_spread_bits(0);
    let layout = Layout::parse(spec).unwrap();
    Arc::new(
        SnowflakeGenerator::builder(layout)
            .clock(clock)
            .config(config)
            .build()
            .unwrap(),
    )
}

/// Runs `per_thread` on `threads` threads for `iters` calls in total; returns the wall time.
fn on_threads(
    threads: u64,
    iters: u64,
    per_thread: impl Fn(u64) + Send + Sync + Copy + 'static,
) -> Duration {
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| thread::spawn(move || per_thread(iters / threads)))
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    start.elapsed()
}

fn capacity(c: &mut Criterion) {
    let mut group = c.benchmark_group("capacity");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    // A small lead keeps borrowing from inflating the figure: the sequence is the limit.
    let gen = generator("twitter", Duration::from_millis(2));
    group.bench_function("twitter", |b| b.iter(|| black_box(gen.next_id().unwrap())));
    group.finish();
}

fn cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("cost");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(4));
    let wide = "time:41@1ms,seq:22";
    let gen = generator(wide, Duration::from_secs(1));
    group.bench_function("wide/1-thread", |b| {
        b.iter(|| black_box(gen.next_id().unwrap()))
    });
    let shared = generator(wide, Duration::from_secs(1));
    group.bench_function("wide/2-threads", |b| {
        b.iter_custom(|iters| {
            let gen = Arc::clone(&shared);
            let start = Instant::now();
            let other = Arc::clone(&gen);
            let handle = thread::spawn(move || {
                (0..iters / 2).for_each(|_| {
                    black_box(other.next_id().unwrap_or(0));
                })
            });
            (0..iters - iters / 2).for_each(|_| {
                black_box(gen.next_id().unwrap_or(0));
            });
            handle.join().unwrap();
            start.elapsed()
        })
    });
    let local = generator(wide, Duration::from_secs(1));
    group.bench_function("wide/local-1-thread", |b| {
        let mut handle = local.local();
        b.iter(|| black_box(handle.next_id().unwrap()))
    });
    let local_shared = generator(wide, Duration::from_secs(1));
    group.bench_function("wide/local-2-threads", |b| {
        b.iter_custom(|iters| {
            let gen = Arc::clone(&local_shared);
            let start = Instant::now();
            let other = Arc::clone(&gen);
            let handle = thread::spawn(move || {
                let mut local = other.local();
                (0..iters / 2).for_each(|_| {
                    black_box(local.next_id().unwrap_or(0));
                })
            });
            let mut local = gen.local();
            (0..iters - iters / 2).for_each(|_| {
                black_box(local.next_id().unwrap_or(0));
            });
            handle.join().unwrap();
            start.elapsed()
        })
    });
    let batch = generator(wide, Duration::from_secs(1));
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("wide/batch-1000", |b| {
        b.iter(|| {
            black_box(
                batch
                    .next_batch(1_000, 0)
                    .unwrap()
                    .fold(0u64, |acc, id| acc ^ id),
            )
        })
    });
    group.finish();
}

fn reference(c: &mut Criterion) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut group = c.benchmark_group("reference");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("fetch_add/1-thread", |b| {
        b.iter(|| black_box(COUNTER.fetch_add(1, Ordering::Relaxed)))
    });
    group.bench_function("fetch_add/2-threads", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, |n| {
                (0..n).for_each(|_| {
                    black_box(COUNTER.fetch_add(1, Ordering::Relaxed));
                })
            })
        })
    });
    group.finish();
}

criterion_group!(benches, capacity, cost, reference);
criterion_main!(benches);
