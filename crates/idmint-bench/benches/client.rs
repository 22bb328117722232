//! The per-ID cost of the Rust client against the in-process segment buffer it is built on
//! and against a plain `INCR` round trip, in one criterion run.
//!
//! - `in_process`: idmint-core's `SegmentBuffer` over the in-memory store (`try_next`), what a
//!   node does per `INCR`: the reference (target: the client within 2x of it);
//! - `client_handle`: `BlockingTagIds::next` of an `idmint-client` whose ranges come from a
//!   real node (ranges up to 1,000,000, so refills are rare and in the background);
//! - `client_by_name`: `BlockingClient::next("tag")`, the same with the lookup by name;
//! - `incr_round_trip`: `INCR tag` over one connection of the `redis` crate, one call per ID.
//!
//! Needs a running node with `--max-count 1000000`, named by `IDMINT_BENCH_RESP`
//! (`redis://127.0.0.1:PORT`); `scripts/bench sdk` starts one and runs this.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idmint_client::{BlockingClient, ClientConfig};
use idmint_core::store::TagSettings;
use idmint_core::{MemoryStore, SegmentBuffer, SegmentConfig, SegmentStore, SystemClock, Tag};

const STEP: u64 = 1_000_000;

fn client(c: &mut Criterion) {
    let Ok(node) = std::env::var("IDMINT_BENCH_RESP") else {
        eprintln!("IDMINT_BENCH_RESP is not set: run it through `scripts/bench sdk`");
        return;
    };
    let mut group = c.benchmark_group("client");
    group.throughput(Throughput::Elements(1));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(SystemClock::new());
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let tag = Tag::new("bench").unwrap();
    runtime
        .block_on(store.create_tag(&tag, &TagSettings::default()))
        .unwrap();
    let config = SegmentConfig::default().with_max_step(STEP);
    let buffer = SegmentBuffer::new(tag, store, clock, config, runtime.handle().clone());
    runtime.block_on(buffer.warm_up()).unwrap();
    group.bench_function("in_process", |b| {
        b.iter(|| match buffer.try_next() {
            Some(id) => black_box(id),
            None => runtime.block_on(buffer.next()).unwrap(),
        })
    });

    let config = ClientConfig::new([node.clone()])
        .with_steps(1_000, STEP)
        .with_target_lifetime(Duration::from_secs(10));
    let ids = BlockingClient::new(config).unwrap();
    let handle = ids.tag("bench-client").unwrap();
    handle.next().unwrap();
    group.bench_function("client_handle", |b| {
        b.iter(|| black_box(handle.next().unwrap()))
    });
    group.bench_function("client_by_name", |b| {
        b.iter(|| black_box(ids.next("bench-client").unwrap()))
    });

    let mut connection = redis::Client::open(node).unwrap().get_connection().unwrap();
    group.bench_function("incr_round_trip", |b| {
        b.iter(|| {
            let id: u64 = redis::cmd("INCR")
                .arg("bench-incr")
                .query(&mut connection)
                .unwrap();
            black_box(id)
        })
    });
    group.finish();
}

criterion_group!(benches, client);
criterion_main!(benches);
