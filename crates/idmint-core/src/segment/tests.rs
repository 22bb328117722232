//! Unit tests of the segment buffer against the in-memory store, with tokio's clock paused
//! (bounded waits then take no real time) and a manual clock for the rate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{SegmentBuffer, SegmentConfig};
use crate::clock::ManualClock;
use crate::error::Error;
use crate::store::{MemoryStore, SegmentStore, TagSettings, MAX_SEGMENT_ID};
use crate::tag::Tag;

/// A store with tag `t` of the given step, its clock, and the tag.
async fn store_with_tag(step: u64) -> (Arc<MemoryStore>, Arc<ManualClock>, Tag) {
    let clock = ManualClock::shared(1_000_000);
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let tag = Tag::new("t").unwrap();
    let settings = TagSettings {
        step,
        ..TagSettings::default()
    };
    store.create_tag(&tag, &settings).await.unwrap();
    (store, clock, tag)
}

/// A config with fixed steps (no adaptation unless the clock moves), prefetching at `prefetch_at`.
fn fixed(step: u64, prefetch_at: f64) -> SegmentConfig {
    SegmentConfig {
        min_step: step,
        max_step: step.max(100),
        prefetch_at,
        ..SegmentConfig::default()
    }
}

fn buffer(
    store: &Arc<MemoryStore>,
    clock: &Arc<ManualClock>,
    tag: &Tag,
    config: SegmentConfig,
) -> Arc<SegmentBuffer> {
    SegmentBuffer::new(
        tag.clone(),
        store.clone(),
        clock.clone(),
        config,
        tokio::runtime::Handle::current(),
    )
}

/// Lets the background fetch run (the test runtime is single-threaded).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

async fn max_id(store: &MemoryStore, tag: &Tag) -> u64 {
    store.tag_info(tag).await.unwrap().unwrap().max_id
}

#[tokio::test(start_paused = true)]
async fn refills_in_allocation_order() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(buf.next().await.unwrap());
    }
    settle().await; // the prefetch (triggered at offset 5) takes 11..21
    assert_eq!(buf.remaining(), 4 + 10);
    let other = store.allocate(&tag, 5).await.unwrap(); // another node
    assert_eq!(other, 21..26);
    for _ in 0..15 {
        ids.push(buf.next().await.unwrap());
    }
    let expected: Vec<u64> = (1..=20).chain([26]).collect();
    assert_eq!(ids, expected);
}

#[tokio::test(start_paused = true)]
async fn prefetch_happens_before_exhaustion() {
    let (store, clock, tag) = store_with_tag(100).await;
    let buf = buffer(&store, &clock, &tag, fixed(100, 0.1));
    for expected in 1..=10 {
        assert_eq!(buf.next().await.unwrap(), expected);
    }
    settle().await;
    let calls = store.calls();
    assert_eq!(buf.remaining(), 90, "no prefetch before offset 10");
    assert_eq!(buf.next().await.unwrap(), 11); // offset 10: the prefetch point
    settle().await;
    assert_eq!(store.calls(), calls + 1);
    assert_eq!(buf.remaining(), 89 + 100);
    // The rest of the segment and the switch to the next never wait for the store.
    store.set_unavailable(true);
    for expected in 12..=150 {
        assert_eq!(buf.try_next(), Some(expected));
    }
}

#[tokio::test(start_paused = true)]
async fn bounded_wait_then_typed_error_when_the_store_is_down() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    store.set_unavailable(true);
    let started = Instant::now();
    let error = buf.next().await.unwrap_err();
    let elapsed = started.elapsed();
    match &error {
        Error::SegmentUnavailable { tag, waited, cause } => {
            assert_eq!(tag, "t");
            assert!(*waited >= Duration::from_secs(1), "{waited:?}");
            assert!(cause.contains("switched off"), "{cause}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(error.is_retryable());
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_millis(1_100));
    assert_eq!(buf.try_next(), None);
    assert!(store.calls() > 3, "the fetch retried within max_wait");
    // A batch fails the same way.
    assert!(matches!(
        buf.next_many(3).await,
        Err(Error::SegmentUnavailable { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn resumes_when_the_store_returns() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    store.set_unavailable(true);
    assert!(buf.next().await.is_err());
    store.set_unavailable(false);
    assert_eq!(buf.next().await.unwrap(), 1);

    // The store comes back while a caller waits: the caller gets an ID, not an error.
    for _ in 0..9 {
        buf.next().await.unwrap();
    }
    store.set_unavailable(true);
    let revive = {
        let store = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            store.set_unavailable(false);
        })
    };
    let started = Instant::now();
    assert_eq!(buf.next().await.unwrap(), 11);
    assert!(started.elapsed() < Duration::from_secs(1));
    revive.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failed_prefetch_is_retried_while_the_current_segment_lasts() {
    let (store, clock, tag) = store_with_tag(100).await;
    let buf = buffer(&store, &clock, &tag, fixed(100, 0.1));
    assert_eq!(buf.next().await.unwrap(), 1);
    store.set_unavailable(true);
    for _ in 0..20 {
        buf.next().await.unwrap(); // passes the prefetch point: the fetch fails and retries
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(buf.remaining(), 79);
    store.set_unavailable(false);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(buf.remaining(), 79 + 100);
}

#[tokio::test(start_paused = true)]
async fn an_error_a_retry_cannot_fix_is_returned_at_once() {
    let (store, clock, _) = store_with_tag(10).await;
    let missing = Tag::new("missing").unwrap();
    let buf = buffer(&store, &clock, &missing, fixed(10, 0.5));
    let started = Instant::now();
    assert_eq!(
        buf.next().await,
        Err(Error::UnknownTag {
            tag: "missing".to_owned()
        })
    );
    assert!(started.elapsed() < Duration::from_millis(100));
    // Creating the tag heals the buffer: the next call fetches again.
    store
        .create_tag(&missing, &TagSettings::default())
        .await
        .unwrap();
    assert_eq!(buf.next().await.unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn try_next_never_waits_and_starts_a_fetch() {
    let (store, clock, tag) = store_with_tag(10).await;
    store.set_latency(Duration::from_millis(50));
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    assert_eq!(buf.try_next(), None);
    assert_eq!(buf.try_next(), None);
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(buf.try_next(), Some(1));
}

#[tokio::test(start_paused = true)]
async fn warm_up_loads_the_first_range() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 1.0));
    assert_eq!(buf.remaining(), 0);
    buf.warm_up().await.unwrap();
    assert_eq!(buf.remaining(), 10);
    assert_eq!(buf.try_next(), Some(1));
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_back_the_tail_and_a_restart_continues() {
    let (store, clock, tag) = store_with_tag(100).await;
    let buf = buffer(&store, &clock, &tag, fixed(100, 1.0));
    for expected in 1..=5 {
        assert_eq!(buf.next().await.unwrap(), expected);
    }
    assert_eq!(max_id(&store, &tag).await, 101);
    assert_eq!(buf.shutdown().await, Ok(true));
    assert_eq!(max_id(&store, &tag).await, 6);
    assert!(buf.is_shut_down());
    assert!(matches!(
        buf.next().await,
        Err(Error::SegmentUnavailable { .. })
    ));
    assert_eq!(buf.try_next(), None);
    assert!(buf.take_contiguous(2).await.is_err());
    assert_eq!(buf.remaining(), 0);
    assert_eq!(
        buf.shutdown().await,
        Ok(false),
        "a second shutdown is a no-op"
    );

    let restarted = buffer(&store, &clock, &tag, fixed(100, 1.0));
    assert_eq!(restarted.next().await.unwrap(), 6);
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_back_the_tail_and_the_adjacent_next_range() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    for expected in 1..=3 {
        assert_eq!(buf.next().await.unwrap(), expected);
    }
    settle().await;
    assert_eq!(buf.remaining(), 7 + 10);
    assert_eq!(max_id(&store, &tag).await, 21);
    assert_eq!(buf.shutdown().await, Ok(true));
    assert_eq!(max_id(&store, &tag).await, 4);
    let restarted = buffer(&store, &clock, &tag, fixed(10, 0.0));
    assert_eq!(restarted.next().await.unwrap(), 4);
}

#[tokio::test(start_paused = true)]
async fn shutdown_after_another_node_allocated_gives_back_only_the_next_range() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    for _ in 0..3 {
        buf.next().await.unwrap();
    }
    assert_eq!(store.allocate(&tag, 5).await.unwrap(), 11..16);
    for _ in 0..3 {
        buf.next().await.unwrap(); // offset 5 starts the prefetch
    }
    settle().await;
    assert_eq!(max_id(&store, &tag).await, 26);
    assert_eq!(buf.shutdown().await, Ok(true));
    assert_eq!(
        max_id(&store, &tag).await,
        16,
        "7..11 is lost, 16..26 returned"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_nothing_back_when_another_node_allocated_after_us() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 1.0));
    buf.next().await.unwrap();
    store.allocate(&tag, 5).await.unwrap();
    assert_eq!(buf.shutdown().await, Ok(false));
    assert_eq!(max_id(&store, &tag).await, 16);
}

#[tokio::test(start_paused = true)]
async fn a_range_fetched_during_shutdown_is_given_back() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    buf.next().await.unwrap();
    // The prefetch started at offset 0 is now inside a slow `allocate`.
    store.set_latency(Duration::from_millis(300));
    tokio::task::yield_now().await;
    store.set_latency(Duration::ZERO);
    assert_eq!(buf.shutdown().await, Ok(true));
    assert_eq!(max_id(&store, &tag).await, 2);
}

#[tokio::test(start_paused = true)]
async fn a_range_fetched_after_shutdown_gave_back_is_given_back_by_the_fetch() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    buf.next().await.unwrap();
    // The prefetch is slower than shutdown's wait (max_wait = 1 s).
    store.set_latency(Duration::from_secs(2));
    tokio::task::yield_now().await;
    store.set_latency(Duration::ZERO);
    assert_eq!(buf.shutdown().await, Ok(true)); // the tail 2..11
    assert_eq!(max_id(&store, &tag).await, 2);
    tokio::time::sleep(Duration::from_secs(2)).await; // the fetch takes 2..12, gives it back
    assert_eq!(max_id(&store, &tag).await, 2);
    let restarted = buffer(&store, &clock, &tag, fixed(10, 0.0));
    assert_eq!(restarted.next().await.unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn take_contiguous_skips_a_straddled_tail() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 1.0));
    for expected in 1..=3 {
        assert_eq!(buf.next().await.unwrap(), expected);
    }
    assert_eq!(buf.take_contiguous(8).await.unwrap(), 11..19);
    assert_eq!(buf.next().await.unwrap(), 19);
    assert_eq!(buf.take_contiguous(1).await.unwrap(), 20..21);
    // Larger than the step but within max_step: the next fetch is sized for it.
    let run = buf.take_contiguous(60).await.unwrap();
    assert_eq!(run.end - run.start, 60);
    assert!(run.start >= 21);
    assert!(buf.next().await.unwrap() >= run.end);
}

#[tokio::test(start_paused = true)]
async fn a_run_comes_back_only_while_nothing_was_claimed_after_it() {
    let (store, clock, tag) = store_with_tag(100).await;
    let buf = buffer(&store, &clock, &tag, fixed(100, 1.0));
    assert_eq!(buf.next().await.unwrap(), 1);
    let run = buf.take_contiguous(10).await.unwrap();
    assert_eq!(run, 2..12);
    // Not the run's tail, or not a run of the current segment: refused, nothing changes.
    assert!(!buf.take_back(5..11));
    assert!(!buf.take_back(0..12));
    assert!(!buf.take_back(12..12));
    // Its tail comes back and is handed out again, in order.
    assert!(buf.take_back(7..12));
    assert_eq!(buf.next().await.unwrap(), 7);
    // Something was claimed after the run: the rest of it cannot come back.
    assert!(!buf.take_back(2..7));
    let second = buf.take_contiguous(5).await.unwrap();
    assert_eq!(second, 8..13);
    assert_eq!(buf.next().await.unwrap(), 13);
    assert!(!buf.take_back(8..13));
    buf.shutdown().await.unwrap();
    assert!(!buf.take_back(13..14));
}

#[tokio::test(start_paused = true)]
async fn take_contiguous_and_next_many_refuse_bad_counts() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 1.0));
    for n in [0, 101] {
        assert!(matches!(
            buf.take_contiguous(n).await,
            Err(Error::InvalidArgument { name: "n", .. })
        ));
        assert!(matches!(
            buf.next_many(n).await,
            Err(Error::InvalidArgument { name: "n", .. })
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn next_many_spans_segments_in_ascending_runs() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 1.0));
    assert_eq!(buf.next_many(5).await.unwrap(), vec![1..6]);
    assert_eq!(store.allocate(&tag, 5).await.unwrap(), 11..16); // another node
    assert_eq!(buf.next_many(10).await.unwrap(), vec![6..11, 16..21]);
    // Adjacent segments make one run; the fetch is sized for what the batch still needs.
    assert_eq!(buf.next_many(25).await.unwrap(), vec![21..46]);
    assert_eq!(buf.next().await.unwrap(), 46);
}

#[tokio::test(start_paused = true)]
async fn adaptive_step_grows_under_high_rate_and_is_clamped() {
    let (store, clock, tag) = store_with_tag(10).await;
    let config = SegmentConfig {
        min_step: 10,
        max_step: 1_000,
        target_lifetime: Duration::from_secs(1),
        prefetch_at: 0.5,
        ..SegmentConfig::default()
    };
    let buf = buffer(&store, &clock, &tag, config);
    assert_eq!(buf.step(), 10);
    let mut steps = Vec::new();
    let mut last = 0;
    for i in 0..30_000_u64 {
        let id = buf.next().await.unwrap();
        assert!(id > last);
        last = id;
        if i % 10 == 9 {
            clock.advance(Duration::from_millis(1)); // 10,000 IDs/s
            settle().await;
            steps.push(buf.step());
        }
    }
    assert!(steps.iter().all(|step| (10..=1_000).contains(step)));
    assert_eq!(buf.step(), 1_000, "clamped at max_step: {steps:?}");
    let rate = buf.rate_per_sec();
    assert!(rate > 5_000.0 && rate < 20_000.0, "{rate}");
}

#[tokio::test(start_paused = true)]
async fn adaptive_step_stays_at_min_step_under_low_rate() {
    let (store, clock, tag) = store_with_tag(10).await;
    let config = SegmentConfig {
        min_step: 10,
        max_step: 1_000,
        target_lifetime: Duration::from_secs(1),
        prefetch_at: 0.5,
        ..SegmentConfig::default()
    };
    let buf = buffer(&store, &clock, &tag, config);
    for _ in 0..100 {
        buf.next().await.unwrap();
        clock.advance(Duration::from_millis(500)); // 2 IDs/s
        settle().await;
    }
    assert_eq!(buf.step(), 10);
}

#[tokio::test(start_paused = true)]
async fn outage_budget_is_the_buffer_at_the_observed_rate() {
    let (store, clock, tag) = store_with_tag(1_000).await;
    let buf = buffer(&store, &clock, &tag, fixed(1_000, 0.1));
    assert_eq!(buf.outage_budget(), None);
    assert_eq!(buf.rate_per_sec(), 0.0);
    for i in 0..500 {
        buf.next().await.unwrap();
        if i % 10 == 9 {
            clock.advance(Duration::from_millis(100)); // 100 IDs/s
        }
    }
    settle().await;
    let rate = buf.rate_per_sec();
    assert!((rate - 100.0).abs() < 1.0, "{rate}");
    let budget = buf.outage_budget().unwrap().as_secs_f64();
    let expected = buf.remaining() as f64 / rate;
    assert!((budget - expected).abs() < 0.1, "{budget} vs {expected}");
    assert_eq!(buf.remaining(), 500 + 1_000);
}

#[tokio::test(start_paused = true)]
async fn never_returns_an_id_of_zero_and_never_an_empty_batch() {
    let (store, clock, tag) = store_with_tag(1).await;
    let buf = buffer(&store, &clock, &tag, fixed(1, 0.5));
    for expected in 1..=20 {
        assert_eq!(buf.next().await.unwrap(), expected);
    }
    let runs = buf.next_many(5).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.end - r.start).sum::<u64>(), 5);
    assert!(runs.iter().all(|r| r.start > 0 && r.start < r.end));
}

#[test]
fn a_runtime_that_is_gone_makes_calls_fail_instead_of_hanging() {
    let dead = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = dead.handle().clone();
    drop(dead);
    let test_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    test_runtime.block_on(async {
        let (store, clock, tag) = store_with_tag(10).await;
        let buf = SegmentBuffer::new(tag, store, clock, fixed(10, 0.5), handle);
        assert_eq!(buf.try_next(), None);
        let started = Instant::now();
        let result = buf.next().await;
        assert!(
            matches!(result, Err(Error::StoreUnavailable { .. })),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_millis(100));
    });
}

#[test]
fn try_next_works_from_threads_outside_the_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (store, clock, tag) = runtime.block_on(store_with_tag(10));
    let buf = SegmentBuffer::new(tag, store, clock, fixed(10, 0.5), runtime.handle().clone());
    let mut ids = Vec::new();
    while ids.len() < 100 {
        match buf.try_next() {
            Some(id) => ids.push(id),
            None => std::thread::yield_now(),
        }
    }
    assert_eq!(ids, (1..=100).collect::<Vec<_>>());
}

#[test]
fn async_methods_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = ManualClock::shared(0);
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let buf = SegmentBuffer::new(
        Tag::new("t").unwrap(),
        store,
        clock,
        SegmentConfig::default(),
        runtime.handle().clone(),
    );
    assert_send(&buf.next());
    assert_send(&buf.next_many(2));
    assert_send(&buf.take_contiguous(2));
    assert_send(&buf.warm_up());
    assert_send(&buf.shutdown());
    fn assert_sync<T: Send + Sync>(_: &T) {}
    assert_sync(&buf);
}

#[tokio::test(start_paused = true)]
async fn a_new_min_step_reaches_the_next_fetches_of_a_running_buffer() {
    let (store, clock, tag) = store_with_tag(10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    assert_eq!(buf.next().await.unwrap(), 1);
    settle().await; // the prefetch at offset 0 took 11..21 with the old step
    buf.set_min_step(40);
    assert_eq!(buf.min_step(), 40);
    // Use up 1..21; the next fetch asks for the new step.
    for _ in 1..20 {
        buf.next().await.unwrap();
    }
    settle().await;
    let before = max_id(&store, &tag).await;
    assert_eq!(buf.next().await.unwrap(), 21);
    settle().await;
    assert_eq!(
        max_id(&store, &tag).await - before,
        40,
        "the fetch did not use the new step"
    );
    buf.set_min_step(0);
    assert_eq!(buf.min_step(), 1);
}

/// A store whose tag `end` starts `left` IDs below the end of the ID space, with step `step`.
async fn store_near_the_end(left: u64, step: u64) -> (Arc<MemoryStore>, Arc<ManualClock>, Tag) {
    let clock = ManualClock::shared(1_000_000);
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let tag = Tag::new("end").unwrap();
    let settings = TagSettings {
        step,
        first_id: MAX_SEGMENT_ID - left,
        ..TagSettings::default()
    };
    store.create_tag(&tag, &settings).await.unwrap();
    (store, clock, tag)
}

#[tokio::test(start_paused = true)]
async fn the_last_range_is_served_to_its_end_then_exhausted_at_once() {
    let (store, clock, tag) = store_near_the_end(5, 10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(buf.next().await.unwrap());
    }
    assert_eq!(
        ids,
        (MAX_SEGMENT_ID - 5..MAX_SEGMENT_ID).collect::<Vec<_>>()
    );
    assert_eq!(ids.last(), Some(&9_223_372_036_854_775_806));
    // The short range was the tag's last: no prefetch (at offset 0) asked the store again.
    settle().await;
    assert_eq!(store.calls(), 2, "create_tag and one allocate");
    let started = Instant::now();
    let exhausted = Error::TagExhausted { tag: "end".into() };
    assert!(!exhausted.is_retryable());
    assert_eq!(buf.next().await, Err(exhausted.clone()));
    assert_eq!(buf.next_many(1).await, Err(exhausted.clone()));
    assert_eq!(buf.take_contiguous(1).await, Err(exhausted));
    assert_eq!(buf.try_next(), None);
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait, no backoff");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(store.calls(), 2, "nothing retried in the background");
}

#[tokio::test(start_paused = true)]
async fn a_run_the_tag_end_cannot_hold_takes_nothing() {
    let (store, clock, tag) = store_near_the_end(5, 10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.0));
    let exhausted = || Error::TagExhausted { tag: "end".into() };
    assert_eq!(buf.take_contiguous(6).await, Err(exhausted()));
    assert_eq!(buf.next_many(6).await, Err(exhausted()));
    assert_eq!(buf.remaining(), 5, "the failed calls took nothing");
    let max = MAX_SEGMENT_ID;
    assert_eq!(buf.take_contiguous(2).await.unwrap(), max - 5..max - 3);
    assert_eq!(buf.next_many(4).await, Err(exhausted()));
    assert_eq!(buf.next_many(3).await.unwrap(), vec![max - 3..max]);
    assert_eq!(buf.next().await, Err(exhausted()));
}

#[tokio::test(start_paused = true)]
async fn an_exhausted_answer_from_the_store_is_returned_at_once_and_not_retried() {
    let (store, clock, tag) = store_near_the_end(30, 10).await;
    let buf = buffer(&store, &clock, &tag, fixed(10, 0.5));
    assert_eq!(buf.next().await.unwrap(), MAX_SEGMENT_ID - 30);
    // Another node takes the rest: the prefetch (at offset 5) finds the tag exhausted.
    let other = store.allocate(&tag, 100).await.unwrap();
    assert_eq!(other, MAX_SEGMENT_ID - 20..MAX_SEGMENT_ID);
    for _ in 0..9 {
        buf.next().await.unwrap();
    }
    settle().await;
    let calls = store.calls();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(store.calls(), calls, "the failed prefetch is not retried");
    let started = Instant::now();
    assert_eq!(
        buf.next().await,
        Err(Error::TagExhausted { tag: "end".into() })
    );
    assert!(started.elapsed() < Duration::from_millis(100));
    // The holder of the last range gives its tail back: this buffer serves it.
    assert!(store
        .give_back(&tag, MAX_SEGMENT_ID - 3..MAX_SEGMENT_ID)
        .await
        .unwrap());
    assert_eq!(buf.next().await.unwrap(), MAX_SEGMENT_ID - 3);
}
