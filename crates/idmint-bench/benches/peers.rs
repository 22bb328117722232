//! Cost per ID of idmint's snowflake generator beside other Rust ID generators, all in one
//! criterion run so their ratios hold on a noisy machine. Every figure is read against
//! `fetch_add`, a bare `AtomicU64::fetch_add(1)`: the floor of any shared counter.
//!
//! - `1-thread/*`: ns per ID on one thread, with each crate's fastest correct API.
//! - `2-threads/*`: wall ns per ID with two threads sharing one generator, for the generators
//!   that can be shared (`ulid`'s and the single-threaded ones take `&mut self`, or are `!Sync`).
//!   A figure at or below the same generator's `1-thread` one means two threads are no slower
//!   in total than one.
//!
//! Who is measured, and how:
//!
//! - `idmint`: [`SnowflakeGenerator::next_id`], layout `time:41@1ms,seq:22` (as the `cost/wide`
//!   bench of idmint-core); `idmint-local`: one [`idmint_core::LocalSnowflakes`] per thread.
//! - `ferroid-atomic`: ferroid's lock-free `AtomicSnowflakeGenerator`, with the same layout
//!   declared through its `define_snowflake_id!` (1 reserved bit, 41 bits of ms, no machine
//!   bits, 22 bits of sequence) and the same epoch, on its `MonotonicClock` (a ticker thread,
//!   like idmint's). `next_id` loops on `Pending` itself and calls the given backoff: here a
//!   spin on `yield_for == 0` (a lost compare-and-swap: retry at once, as ferroid's own bench
//!   does) and a thread yield otherwise (the ms's sequence is used up, never with 22 bits at
//!   these rates; or another thread already issued in a later ms than this thread's clock
//!   reading, a few times per 10 million IDs). `ferroid-atomic-yield` is the backoff of
//!   ferroid's README, `|_| std::thread::yield_now()`, on every `Pending`. `ferroid-basic` is
//!   its `Cell`-based single-threaded generator.
//! - `snowflaked` (`Generator`, `&mut self`) and `snowflaked-sync` (`sync::Generator`, one
//!   atomic): fixed layout, 42 bits of ms, 10 of instance, 12 of sequence, time read from
//!   `SystemTime` on every call. At 4,096 IDs per ms the sequence is the limit: when it is used
//!   up they spin until the next ms, so their figure is that ceiling (~244 ns) rather than
//!   their cost.
//! - `tsid-factory` (`TsidFactory::create`, `&mut self`, 8 node bits, the crate's default) and
//!   `tsid-shared` (`create_tsid()`, the crate's global factory behind a `Mutex`): reads
//!   `SystemTime` on every call and carries a full counter into the next ms without bound.
//! - `ulid-monotonic`: `ulid::Generator::generate` (`&mut self`; on overflow of the random
//!   part, `commit_overflow_increment`, as its docs show). 128-bit IDs.
//! - `uuid-v7`: `Uuid::now_v7()` (a global context behind a `Mutex`, `SystemTime` per call,
//!   random bits from a thread-local RNG with the `fast-rng` feature). 128-bit IDs.
//!
//! 128-bit IDs are folded to a `u64` before `black_box`, so every ID is computed whole and
//! all results leave the loop the same way. Before measuring, the bench checks that every
//! generator issues increasing IDs, and prints how often ferroid's shared generator returns
//! `Pending` on two threads, and why.
//!
//! Run: `cargo bench -p idmint-bench --bench peers` (about 1.5 minutes).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod shared;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ferroid::generator::{AtomicSnowflakeGenerator, BasicSnowflakeGenerator};
use ferroid::time::MonotonicClock;
use idmint_core::layout::Layout;
use idmint_core::{Clock, SnowflakeConfig, SnowflakeGenerator, SystemClock};

use self::shared::{configure, fold, two_threads};

/// The wide layout of idmint-core's `cost/wide` bench.
const WIDE: &str = "time:41@1ms,seq:22";

ferroid::define_snowflake_id!(
    /// idmint's `time:41@1ms,seq:22` in ferroid's terms.
    WideId, u64,
    reserved: 1,
    timestamp: 41,
    machine_id: 0,
    sequence: 22
);

fn idmint() -> Arc<SnowflakeGenerator> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = SnowflakeConfig::default().with_max_lead(Duration::from_secs(1));
    let layout = Layout::parse(WIDE).unwrap();
    Arc::new(
        SnowflakeGenerator::builder(layout)
            .clock(clock)
            .config(config)
            .build()
            .unwrap(),
    )
}

/// ferroid's clock on idmint's epoch, so both put the same time in the same bits.
fn ferroid_clock() -> MonotonicClock {
    let epoch_ms = Layout::parse(WIDE).unwrap().epoch_ms();
    MonotonicClock::with_epoch(Duration::from_millis(epoch_ms))
}

/// The fastest correct backoff for ferroid's `next_id`: retry a lost compare-and-swap at once,
/// yield the thread when the ms's sequence is used up or the clock is behind.
fn ferroid_backoff(yield_for: u64) {
    if yield_for == 0 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

fn one_thread(c: &mut Criterion) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut group = c.benchmark_group("1-thread");
    configure(&mut group);

    group.bench_function("fetch_add", |b| {
        b.iter(|| black_box(COUNTER.fetch_add(1, Ordering::Relaxed)))
    });

    let gen = idmint();
    group.bench_function("idmint", |b| b.iter(|| black_box(gen.next_id().unwrap())));

    let gen = idmint();
    group.bench_function("idmint-local", |b| {
        let mut local = gen.local();
        b.iter(|| black_box(local.next_id().unwrap()))
    });

    let gen = AtomicSnowflakeGenerator::<WideId, _>::new(0, ferroid_clock());
    group.bench_function("ferroid-atomic", |b| {
        b.iter(|| black_box(gen.next_id(ferroid_backoff).to_raw()))
    });

    let gen = BasicSnowflakeGenerator::<WideId, _>::new(0, ferroid_clock());
    group.bench_function("ferroid-basic", |b| {
        b.iter(|| black_box(gen.next_id(ferroid_backoff).to_raw()))
    });

    let mut gen = snowflaked::Generator::new(0);
    group.bench_function("snowflaked", |b| {
        b.iter(|| black_box(gen.generate::<u64>()))
    });

    let gen = snowflaked::sync::Generator::new(0);
    group.bench_function("snowflaked-sync", |b| {
        b.iter(|| black_box(gen.generate::<u64>()))
    });

    let mut factory = tsid::TsidFactory::with_node_bits(8, 1);
    group.bench_function("tsid-factory", |b| {
        b.iter(|| black_box(factory.create().number()))
    });
    group.bench_function("tsid-shared", |b| {
        b.iter(|| black_box(tsid::create_tsid().number()))
    });

    let mut gen = ulid::Generator::new();
    group.bench_function("ulid-monotonic", |b| {
        b.iter(|| {
            let id = match gen.generate() {
                Ok(id) => id,
                Err(overflow) => overflow.commit_overflow_increment(),
            };
            black_box(fold(id.0))
        })
    });

    group.bench_function("uuid-v7", |b| {
        b.iter(|| black_box(fold(uuid::Uuid::now_v7().as_u128())))
    });
    group.finish();
}

fn shared_by_two(c: &mut Criterion) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut group = c.benchmark_group("2-threads");
    configure(&mut group);

    group.bench_function("fetch_add", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(COUNTER.fetch_add(1, Ordering::Relaxed));
                }
            })
        })
    });

    let gen = idmint();
    group.bench_function("idmint", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(gen.next_id().unwrap());
                }
            })
        })
    });

    let gen = idmint();
    group.bench_function("idmint-local", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                let mut local = gen.local();
                for _ in 0..n {
                    black_box(local.next_id().unwrap());
                }
            })
        })
    });

    let gen = AtomicSnowflakeGenerator::<WideId, _>::new(0, ferroid_clock());
    group.bench_function("ferroid-atomic", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(gen.next_id(ferroid_backoff).to_raw());
                }
            })
        })
    });
    group.bench_function("ferroid-atomic-yield", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(gen.next_id(|_| std::thread::yield_now()).to_raw());
                }
            })
        })
    });

    let gen = snowflaked::sync::Generator::new(0);
    group.bench_function("snowflaked-sync", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(gen.generate::<u64>());
                }
            })
        })
    });

    group.bench_function("tsid-shared", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(tsid::create_tsid().number());
                }
            })
        })
    });

    group.bench_function("uuid-v7", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(fold(uuid::Uuid::now_v7().as_u128()));
                }
            })
        })
    });
    group.finish();
}

/// Checks, outside the timed loops, that every generator measured issues increasing IDs on one
/// thread, so no figure comes from a generator used wrongly.
fn sanity(_: &mut Criterion) {
    fn increasing(mut next: impl FnMut() -> u128) {
        let mut last = next();
        for _ in 0..100_000 {
            let id = next();
            assert!(id > last, "{id} after {last}");
            last = id;
        }
    }
    let gen = idmint();
    increasing(|| u128::from(gen.next_id().unwrap()));
    let mut local = gen.local();
    increasing(|| u128::from(local.next_id().unwrap()));
    let gen = AtomicSnowflakeGenerator::<WideId, _>::new(0, ferroid_clock());
    increasing(|| u128::from(gen.next_id(ferroid_backoff).to_raw()));
    let mut gen = snowflaked::Generator::new(0);
    increasing(|| u128::from(gen.generate::<u64>()));
    let gen = Mutex::new(tsid::TsidFactory::with_node_bits(8, 1));
    increasing(|| u128::from(gen.lock().unwrap().create().number()));
    let mut gen = ulid::Generator::new();
    increasing(|| gen.generate().unwrap().0);
    increasing(|| uuid::Uuid::now_v7().as_u128());
}

/// How often ferroid's shared generator asks its caller to back off, and why, on two threads:
/// printed, because it explains its `2-threads` figures.
fn ferroid_pending(_: &mut Criterion) {
    let gen = AtomicSnowflakeGenerator::<WideId, _>::new(0, ferroid_clock());
    let lost_cas = AtomicU64::new(0);
    let must_wait = AtomicU64::new(0);
    let per_thread = 5_000_000;
    let wall = two_threads(2 * per_thread, &|n| {
        for _ in 0..n {
            black_box(gen.next_id(|yield_for| {
                if yield_for == 0 {
                    lost_cas.fetch_add(1, Ordering::Relaxed);
                } else {
                    must_wait.fetch_add(1, Ordering::Relaxed);
                }
                ferroid_backoff(yield_for);
            }));
        }
    });
    println!(
        "ferroid-atomic, 2 threads, {} IDs in {wall:?}: Pending with yield_for 0 (lost CAS) {}, \
         with yield_for > 0 (clock behind the state, or sequence used up) {}",
        2 * per_thread,
        lost_cas.load(Ordering::Relaxed),
        must_wait.load(Ordering::Relaxed),
    );
}

criterion_group!(benches, sanity, ferroid_pending, one_thread, shared_by_two);
criterion_main!(benches);
