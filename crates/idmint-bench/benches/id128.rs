//! Cost per 128-bit ID of idmint's generator beside the `uuid` and `ulid` crates, in one
//! criterion run so their ratios hold on a noisy machine. The floor is what any generator of
//! monotonic random IDs must at least do: a bare `AtomicU64::fetch_add(1)` plus 64 bits from a
//! thread-local CSPRNG (rand's `ThreadRng`, the one idmint and both crates draw from).
//!
//! - `id128-1-thread/*`: ns per ID on one thread.
//! - `id128-2-threads/*`: wall ns per ID with two threads sharing one generator: idmint's is shared
//!   as it is (lock-free); `Uuid::now_v7()` shares its global context (a `Mutex`); a
//!   `ulid::Generator` takes `&mut self`, so two threads share it behind a `Mutex`, as a program
//!   that wants one monotonic sequence must.
//!
//! Who is measured:
//! - `idmint-uuid7`, `idmint-ulid`: [`Id128Generator::next_id`] on a system clock (a ticker
//!   thread); `idmint-uuid7-batch`: [`Id128Generator::next_ids`] of 100, per ID.
//! - `uuid-now_v7`: `uuid::Uuid::now_v7()` (features `v7`, `fast-rng`: `SystemTime` per call,
//!   a 42-bit counter behind a global `Mutex`, random bits from `rand`'s thread RNG).
//! - `ulid-generator`: `ulid::Generator::generate` (`SystemTime` per call; monotonic within
//!   one generator, an error when its 80 random bits overflow, never seen here).
//!
//! IDs are folded to a `u64` before `black_box`, so each is computed whole. Before measuring,
//! the bench checks every generator issues increasing IDs.
//!
//! Run: `cargo bench -p idmint-bench --bench id128` (about a minute).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod shared;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use idmint_core::{Id128Generator, Id128Kind};
use rand::Rng;

use self::shared::{configure, fold, two_threads};

/// The floor: one shared `fetch_add` and 64 random bits.
#[inline]
fn floor(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed) ^ rand::rng().next_u64()
}

fn one_thread(c: &mut Criterion) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut group = c.benchmark_group("id128-1-thread");
    configure(&mut group);
    group.bench_function("floor", |b| b.iter(|| black_box(floor(&COUNTER))));
    let uuid7 = Id128Generator::uuid7().unwrap();
    group.bench_function("idmint-uuid7", |b| {
        b.iter(|| black_box(fold(uuid7.next_id().unwrap().as_u128())))
    });
    group.bench_function("idmint-uuid7-batch", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let mut left = iters;
            while left > 0 {
                let n = left.min(100) as u32;
                for id in uuid7.next_ids(n).unwrap() {
                    black_box(fold(id.as_u128()));
                }
                left -= u64::from(n);
            }
            start.elapsed()
        })
    });
    let ulid = Id128Generator::ulid().unwrap();
    group.bench_function("idmint-ulid", |b| {
        b.iter(|| black_box(fold(ulid.next_id().unwrap().as_u128())))
    });
    group.bench_function("uuid-now_v7", |b| {
        b.iter(|| black_box(fold(uuid::Uuid::now_v7().as_u128())))
    });
    let mut gen = ulid::Generator::new();
    group.bench_function("ulid-generator", |b| {
        b.iter(|| black_box(fold(u128::from(gen.generate().unwrap()))))
    });
    group.finish();
}

fn shared_by_two(c: &mut Criterion) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut group = c.benchmark_group("id128-2-threads");
    configure(&mut group);
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(floor(&COUNTER));
                }
            })
        })
    });
    for (name, kind) in [
        ("idmint-uuid7", Id128Kind::Uuid7),
        ("idmint-ulid", Id128Kind::Ulid),
    ] {
        let ids = Id128Generator::builder(kind).build().unwrap();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                two_threads(iters, &|n| {
                    for _ in 0..n {
                        black_box(fold(ids.next_id().unwrap().as_u128()));
                    }
                })
            })
        });
    }
    group.bench_function("uuid-now_v7", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    black_box(fold(uuid::Uuid::now_v7().as_u128()));
                }
            })
        })
    });
    let shared = Mutex::new(ulid::Generator::new());
    group.bench_function("ulid-generator", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|n| {
                for _ in 0..n {
                    let id = shared.lock().unwrap().generate().unwrap();
                    black_box(fold(u128::from(id)));
                }
            })
        })
    });
    group.finish();
}

/// Every generator measured issues increasing IDs (on one thread).
fn sanity(_: &mut Criterion) {
    fn increasing(name: &str, mut next: impl FnMut() -> u128) {
        let mut last = next();
        for _ in 0..100_000 {
            let id = next();
            assert!(id > last, "{name} went down or repeated");
            last = id;
        }
    }
    let (uuid7, ulid) = (
        Id128Generator::uuid7().unwrap(),
        Id128Generator::ulid().unwrap(),
    );
    increasing("idmint-uuid7", || uuid7.next_id().unwrap().as_u128());
    increasing("idmint-ulid", || ulid.next_id().unwrap().as_u128());
    increasing("uuid-now_v7", || uuid::Uuid::now_v7().as_u128());
    let mut gen = ulid::Generator::new();
    increasing("ulid-generator", || u128::from(gen.generate().unwrap()));
}

criterion_group!(benches, sanity, one_thread, shared_by_two);
criterion_main!(benches);
