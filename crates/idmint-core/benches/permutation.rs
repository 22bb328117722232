//! The ID permutation's cost per ID (`permutation/permute`, `permutation/restore`), beside a
//! snowflake from a generator (`permutation/snowflake`), what a permuted node adds it to.
//!
//! Run: `cargo bench -p idmint-core --bench permutation`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idmint_core::layout::Layout;
use idmint_core::{Clock, Permutation, SnowflakeConfig, SnowflakeGenerator, SystemClock};

fn permutation(c: &mut Criterion) {
    let key = Permutation::from_bytes(*b"benchmark key 16");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = SnowflakeConfig::default()
        .with_max_lead(Duration::from_secs(3_600))
        .with_max_wait(Duration::from_secs(1))
        .with_spread_bits(0);
    let generator =
        SnowflakeGenerator::builder(Layout::parse("time:41@1ms,worker:1,seq:21").unwrap())
            .clock(clock)
            .config(config)
            .build()
            .unwrap();
    let mut group = c.benchmark_group("permutation");
    group.throughput(Throughput::Elements(1));
    // Consecutive snowflakes, as a node permutes them.
    let mut id = generator.next_id().unwrap();
    group.bench_function("permute", |b| {
        b.iter(|| {
            id += 1;
            black_box(key.permute(black_box(id)))
        })
    });
    let mut public = key.permute(id);
    group.bench_function("restore", |b| {
        b.iter(|| {
            public = public % ((1 << 63) - 1) + 1;
            black_box(key.restore(black_box(public)))
        })
    });
    group.bench_function("snowflake", |b| {
        b.iter(|| black_box(generator.next_id().unwrap()))
    });
    group.finish();
}

criterion_group!(benches, permutation);
criterion_main!(benches);
