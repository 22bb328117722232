//! Properties of `SegmentBuffer`: whatever the sequence of calls, store latencies, outages,
//! restarts and allocations by other nodes, no ID is ever issued twice and the IDs of one
//! buffer strictly increase; and the same holds with many threads on one buffer and several
//! buffers (nodes) on one store.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::store::{MemoryStore, TagSettings};
use idmint_core::{Error, ManualClock, SegmentBuffer, SegmentConfig, SegmentStore, Tag};
use proptest::prelude::*;

/// One step of a random scenario. `node` picks one of two buffers on the same store.
#[derive(Debug, Clone)]
enum Op {
    Next {
        node: usize,
    },
    TryNext {
        node: usize,
    },
    NextMany {
        node: usize,
        n: u64,
    },
    TakeContiguous {
        node: usize,
        n: u64,
    },
    /// A third node allocates straight from the store.
    OtherNode {
        step: u64,
    },
    /// Every store call takes this long from now on.
    Latency {
        ms: u64,
    },
    /// The store goes down or comes back.
    Outage {
        down: bool,
    },
    /// Time passes (tokio's and the rate clock), letting background fetches run.
    Sleep {
        ms: u64,
    },
    /// A node shuts down gracefully and a new buffer takes its place.
    Restart {
        node: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0..2_usize;
    prop_oneof![
        6 => node.clone().prop_map(|node| Op::Next { node }),
        3 => node.clone().prop_map(|node| Op::TryNext { node }),
        3 => (node.clone(), 1..120_u64).prop_map(|(node, n)| Op::NextMany { node, n }),
        3 => (node.clone(), 1..120_u64).prop_map(|(node, n)| Op::TakeContiguous { node, n }),
        2 => (1..60_u64).prop_map(|step| Op::OtherNode { step }),
        1 => (0..30_u64).prop_map(|ms| Op::Latency { ms }),
        1 => any::<bool>().prop_map(|down| Op::Outage { down }),
        2 => (0..2_000_u64).prop_map(|ms| Op::Sleep { ms }),
        1 => node.prop_map(|node| Op::Restart { node }),
    ]
}

fn config() -> impl Strategy<Value = SegmentConfig> {
    (1..40_u64, 0..100_u64, 0.0..=1.0_f64, 1..20_u64, 20..600_u64).prop_map(
        |(min_step, extra, prefetch_at, lifetime_s, wait_ms)| {
            SegmentConfig::default()
                .with_steps(min_step, min_step + extra)
                .with_target_lifetime(Duration::from_secs(lifetime_s))
                .with_prefetch_at(prefetch_at)
                .with_max_wait(Duration::from_millis(wait_ms))
        },
    )
}

/// Everything handed out so far, checked as it comes.
#[derive(Default)]
struct Ledger {
    seen: HashSet<u64>,
    other_ranges: Vec<Range<u64>>,
    last: [u64; 2],
}

impl Ledger {
    fn issue(&mut self, node: usize, id: u64) {
        assert!(id > 0, "ID 0 issued");
        assert!(self.seen.insert(id), "ID {id} issued twice");
        assert!(
            id > self.last[node],
            "node {node}: {id} after {}",
            self.last[node]
        );
        self.last[node] = id;
        assert!(
            !self.other_ranges.iter().any(|range| range.contains(&id)),
            "ID {id} belongs to another node's range"
        );
    }

    fn issue_run(&mut self, node: usize, run: Range<u64>) {
        assert!(run.start < run.end, "empty run");
        for id in run {
            self.issue(node, id);
        }
    }
}

/// Errors a call may legitimately end with in these scenarios.
fn expected_failure(error: &Error) -> bool {
    matches!(
        error,
        Error::SegmentUnavailable { .. } | Error::StoreUnavailable { .. }
    )
}

/// Runs `ops` on two fresh nodes and returns how many IDs were issued.
fn run_scenario(config: SegmentConfig, ops: Vec<Op>) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let clock = ManualClock::shared(1_700_000_000_000);
        let store = Arc::new(MemoryStore::new(clock.clone()));
        let tag = Tag::new("prop").unwrap();
        let settings = TagSettings {
            step: config.min_step,
            ..TagSettings::default()
        };
        store.create_tag(&tag, &settings).await.unwrap();
        let make = || {
            SegmentBuffer::new(
                tag.clone(),
                store.clone(),
                clock.clone(),
                config.clone(),
                tokio::runtime::Handle::current(),
            )
        };
        let mut nodes = [make(), make()];
        let mut ledger = Ledger::default();
        for op in ops {
            match op {
                Op::Next { node } => match nodes[node].next().await {
                    Ok(id) => ledger.issue(node, id),
                    Err(error) => assert!(expected_failure(&error), "{error:?}"),
                },
                Op::TryNext { node } => {
                    if let Some(id) = nodes[node].try_next() {
                        ledger.issue(node, id);
                    }
                }
                Op::NextMany { node, n } => match nodes[node].next_many(n).await {
                    Ok(runs) => {
                        assert!(n <= config.max_step);
                        let total: u64 = runs.iter().map(|run| run.end - run.start).sum();
                        assert_eq!(total, n);
                        for pair in runs.windows(2) {
                            assert!(pair[0].end < pair[1].start, "runs not merged/ordered");
                        }
                        for run in runs {
                            ledger.issue_run(node, run);
                        }
                    }
                    Err(Error::InvalidArgument { .. }) => assert!(n > config.max_step),
                    Err(error) => assert!(expected_failure(&error), "{error:?}"),
                },
                Op::TakeContiguous { node, n } => match nodes[node].take_contiguous(n).await {
                    Ok(run) => {
                        assert_eq!(run.end - run.start, n);
                        ledger.issue_run(node, run);
                    }
                    Err(Error::InvalidArgument { .. }) => assert!(n > config.max_step),
                    Err(error) => assert!(expected_failure(&error), "{error:?}"),
                },
                Op::OtherNode { step } => {
                    if let Ok(range) = store.allocate(&tag, step).await {
                        assert!(
                            !ledger.seen.iter().any(|id| range.contains(id)),
                            "store handed out IDs already issued"
                        );
                        ledger.other_ranges.push(range);
                    }
                }
                Op::Latency { ms } => store.set_latency(Duration::from_millis(ms)),
                Op::Outage { down } => store.set_unavailable(down),
                Op::Sleep { ms } => {
                    clock.advance(Duration::from_millis(ms));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Op::Restart { node } => {
                    let result = nodes[node].shutdown().await;
                    if let Err(error) = &result {
                        assert!(expected_failure(error), "{error:?}");
                    }
                    assert_eq!(nodes[node].try_next(), None, "an ID after shutdown");
                    nodes[node] = make();
                }
            }
        }
        for node in &nodes {
            let _ = node.shutdown().await;
        }
        ledger.seen.len()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_duplicates_and_strictly_increasing_per_buffer(
        config in config(),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        run_scenario(config, ops);
    }
}

#[test]
fn a_scenario_with_every_kind_of_step_issues_ids() {
    use Op::*;
    let ops = vec![
        Next { node: 0 },
        NextMany { node: 1, n: 30 },
        OtherNode { step: 9 },
        TakeContiguous { node: 0, n: 25 },
        Outage { down: true },
        Next { node: 0 },
        Sleep { ms: 500 },
        Outage { down: false },
        Latency { ms: 5 },
        TryNext { node: 1 },
        Restart { node: 0 },
        Next { node: 0 },
        NextMany { node: 0, n: 40 },
        Sleep { ms: 1_000 },
        TakeContiguous { node: 1, n: 12 },
    ];
    let issued = run_scenario(SegmentConfig::with_min_step(10), ops);
    assert!(issued > 100, "{issued}");
}

/// Collects `per_task` IDs per task from `tasks` tasks on `buffer`, mixing the entry points.
async fn hammer(buffer: Arc<SegmentBuffer>, tasks: usize, per_task: usize) -> Vec<Vec<u64>> {
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let buffer = buffer.clone();
            tokio::spawn(async move {
                let mut ids = Vec::with_capacity(per_task);
                let mut round = 0_usize;
                while ids.len() < per_task {
                    round += 1;
                    match (task + round) % 7 {
                        0 => {
                            for run in buffer.next_many(5).await.unwrap() {
                                ids.extend(run);
                            }
                        }
                        1 => ids.extend(buffer.take_contiguous(3).await.unwrap()),
                        2 => {
                            if let Some(id) = buffer.try_next() {
                                ids.push(id);
                            }
                        }
                        _ => ids.push(buffer.next().await.unwrap()),
                    }
                    if round.is_multiple_of(64) {
                        tokio::task::yield_now().await;
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::new();
    for handle in handles {
        all.push(handle.await.unwrap());
    }
    all
}

fn check_unique_and_increasing(per_task: &[Vec<u64>]) -> HashSet<u64> {
    let mut seen = HashSet::new();
    for ids in per_task {
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "a task saw {} then {}", pair[0], pair[1]);
        }
        for &id in ids {
            assert!(id > 0);
            assert!(seen.insert(id), "ID {id} issued twice");
        }
    }
    seen
}

fn small_steps() -> SegmentConfig {
    SegmentConfig::default()
        .with_steps(64, 512)
        .with_prefetch_at(0.5)
        .with_max_wait(Duration::from_secs(10))
}

async fn store_with_tag() -> (Arc<MemoryStore>, Arc<ManualClock>, Tag) {
    let clock = ManualClock::shared(1_700_000_000_000);
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let tag = Tag::new("multi").unwrap();
    store
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    (store, clock, tag)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_tasks_on_one_buffer_get_unique_increasing_ids() {
    let (store, clock, tag) = store_with_tag().await;
    store.set_latency(Duration::from_micros(200));
    let buffer = SegmentBuffer::new(
        tag,
        store,
        clock,
        small_steps(),
        tokio::runtime::Handle::current(),
    );
    let per_task = hammer(buffer, 4, 10_000).await;
    let seen = check_unique_and_increasing(&per_task);
    assert!(seen.len() >= 40_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_on_one_store_never_share_an_id() {
    let (store, clock, tag) = store_with_tag().await;
    let make = || {
        SegmentBuffer::new(
            tag.clone(),
            store.clone(),
            clock.clone(),
            small_steps(),
            tokio::runtime::Handle::current(),
        )
    };
    let (a, b) = (make(), make());
    let other = {
        let store = store.clone();
        let tag = tag.clone();
        tokio::spawn(async move {
            let mut ranges = Vec::new();
            for _ in 0..200 {
                ranges.push(store.allocate(&tag, 7).await.unwrap());
                tokio::task::yield_now().await;
            }
            ranges
        })
    };
    let (ids_a, ids_b) = tokio::join!(hammer(a.clone(), 4, 10_000), hammer(b.clone(), 4, 10_000));
    let ranges = other.await.unwrap();
    let mut all = ids_a;
    all.extend(ids_b);
    let seen = check_unique_and_increasing(&all);
    for range in ranges {
        assert!(!range.clone().any(|id| seen.contains(&id)), "{range:?}");
    }
    // A graceful stop of both nodes, then a restart: still no ID issued twice.
    let _ = a.shutdown().await;
    let _ = b.shutdown().await;
    let c = make();
    let after = hammer(c, 2, 1_000).await;
    for id in after.iter().flatten() {
        assert!(!seen.contains(id), "ID {id} reissued after restart");
    }
}

#[test]
fn threads_racing_over_tiny_segments_never_share_an_id() {
    // Segments of 1 to 3 IDs make nearly every claim race a switch: stale claims, exhausted
    // claims and clamped offsets are all exercised, from threads outside the runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (store, clock, tag) = runtime.block_on(store_with_tag());
    let config = SegmentConfig::default()
        .with_steps(1, 3)
        .with_prefetch_at(0.0)
        .with_max_wait(Duration::from_secs(10));
    let buffer = SegmentBuffer::new(tag, store, clock, config, runtime.handle().clone());
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let buffer = buffer.clone();
            let handle = runtime.handle().clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                let mut round = 0_u64;
                while ids.len() < 5_000 {
                    round += 1;
                    if thread % 4 == 0 && round.is_multiple_of(5) {
                        ids.extend(handle.block_on(buffer.take_contiguous(2)).unwrap());
                    } else if let Some(id) = buffer.try_next() {
                        ids.push(id);
                    } else {
                        std::thread::yield_now();
                    }
                }
                ids
            })
        })
        .collect();
    let per_thread: Vec<Vec<u64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    check_unique_and_increasing(&per_thread);
}
