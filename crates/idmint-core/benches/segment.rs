//! Cost of the segment buffer's hot path against the floor it is built on: a bare
//! `AtomicU64::fetch_add(1)` loop. `try_next` should stay within about 1.4x of it (one atomic
//! read-modify-write plus a few uncontended loads), on one thread and on two.
//!
//! The buffer uses ranges of `MAX_SEGMENT_LEN` IDs, so the store is hit about once per 10^9
//! IDs and what is measured is the in-memory path. Results go through `black_box` as a plain
//! `u64`: a black-boxed 16-byte `Option<u64>` costs a store-forwarding stall that would dwarf
//! what is measured.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idmint_core::segment::MAX_SEGMENT_LEN;
use idmint_core::store::{MemoryStore, TagSettings};
use idmint_core::{SegmentBuffer, SegmentConfig, SegmentStore, SystemClock, Tag};

/// A warmed-up buffer with the largest step, and the runtime running its fetches.
fn buffer() -> (tokio::runtime::Runtime, Arc<SegmentBuffer>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(SystemClock::new());
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let tag = Tag::new("bench").unwrap();
    let config = SegmentConfig::default().with_steps(MAX_SEGMENT_LEN, MAX_SEGMENT_LEN);
    let buffer = runtime.block_on(async {
        let settings = TagSettings {
            step: MAX_SEGMENT_LEN,
            ..TagSettings::default()
        };
        store.create_tag(&tag, &settings).await.unwrap();
        let buffer =
            SegmentBuffer::new(tag, store, clock, config, tokio::runtime::Handle::current());
        buffer.warm_up().await.unwrap();
        buffer
    });
    (runtime, buffer)
}

/// Runs `op` `iters` times on each of `threads` threads started together; the wall time.
fn on_threads(threads: usize, iters: u64, op: &(dyn Fn() + Sync)) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                barrier.wait();
                for _ in 0..iters {
                    op();
                }
            });
        }
        barrier.wait();
        let started = Instant::now();
        // Leaving the scope joins the threads.
        started
    })
    .elapsed()
}

fn hot_path(c: &mut Criterion) {
    let (_runtime, buffer) = buffer();
    let counter = AtomicU64::new(1);

    let mut group = c.benchmark_group("segment");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    group.throughput(Throughput::Elements(1));
    group.bench_function("atomic_fetch_add/1-thread", |b| {
        b.iter(|| black_box(counter.fetch_add(1, Ordering::Relaxed)));
    });
    group.bench_function("try_next/1-thread", |b| {
        b.iter(|| black_box(buffer.try_next().unwrap_or(0)));
    });

    // Two threads: one iteration is one ID on each thread.
    group.throughput(Throughput::Elements(2));
    group.bench_function("atomic_fetch_add/2-threads", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, &|| {
                black_box(counter.fetch_add(1, Ordering::Relaxed));
            })
        });
    });
    group.bench_function("try_next/2-threads", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, &|| {
                black_box(buffer.try_next().unwrap_or(0));
            })
        });
    });
    group.finish();
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
