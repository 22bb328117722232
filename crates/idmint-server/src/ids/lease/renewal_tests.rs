//! [`LeaseKeeper::run`] renewing again soon after the store comes back: a failed renewal is
//! retried within moments (not a renewal period later), and a renewal that took longer than
//! the renewal period is followed by another at once, its target having been set before the
//! wait. On the in-memory store judged by the real clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::store::{MemoryStore, WorkerLeases};
use idmint_core::{Clock, Layout, SnowflakeConfig, SystemClock};

use crate::ids::{LeaseConfig, LeaseKeeper};

/// A keeper on a fresh in-memory store, its renewal loop running.
async fn running(
    renew_every: Duration,
    hwm_lead: Duration,
) -> (Arc<MemoryStore>, Arc<LeaseKeeper>) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let store = Arc::new(MemoryStore::new(Arc::clone(&clock)));
    let config = LeaseConfig {
        renew_every,
        hwm_lead,
        ttl: Duration::from_secs(10),
        ..LeaseConfig::default()
    };
    let keeper = LeaseKeeper::start(
        Arc::clone(&store) as Arc<dyn WorkerLeases>,
        Layout::parse("time:41@1ms,worker:10,seq:12").unwrap(),
        0,
        clock,
        config,
        SnowflakeConfig::default(),
    )
    .await
    .unwrap();
    tokio::spawn(Arc::clone(&keeper).run());
    (store, keeper)
}

/// The HWM the store holds for the (only) lease.
async fn stored_hwm(store: &MemoryStore) -> u64 {
    store.list_leases().await.unwrap()[0].hwm_ms
}

/// Polls every 5 ms until the stored HWM moves above `from`; returns the new HWM.
async fn next_renewal(store: &MemoryStore, from: u64, within: Duration) -> u64 {
    let started = Instant::now();
    loop {
        let hwm = stored_hwm(store).await;
        if hwm > from {
            return hwm;
        }
        assert!(started.elapsed() < within, "no renewal within {within:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_renewal_is_retried_within_moments_of_the_stores_return() {
    // The default renewal period: before, the next try came up to 2 s after the store's return.
    let (store, keeper) = running(Duration::from_secs(2), Duration::from_secs(10)).await;
    let before = stored_hwm(&store).await;
    store.set_unavailable(true);
    // The renewal at 2 s fails, and its retries.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    store.set_unavailable(false);
    let back = Instant::now();
    next_renewal(&store, before, Duration::from_secs(5)).await;
    let took = back.elapsed();
    assert!(
        took < Duration::from_millis(800),
        "renewed {took:?} after the store's return"
    );
    keeper.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_slower_than_the_period_is_followed_by_another_at_once() {
    let lead = Duration::from_secs(2);
    let (store, keeper) = running(Duration::from_secs(1), lead).await;
    let clock = SystemClock::new();
    let before = stored_hwm(&store).await;
    // The renewal at 1 s waits 1.5 s (a store busy, then free): its target, set when it began,
    // is only 0.5 s ahead of the clock when it lands.
    store.set_latency(Duration::from_millis(1_500));
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    store.set_latency(Duration::ZERO);
    next_renewal(&store, before, Duration::from_secs(5)).await;
    let landed = Instant::now();
    // Another renewal follows at once: the stored HWM is soon a whole lead ahead again (it
    // stayed 0.5 s ahead, and the snowflakes dry, until the next period before).
    loop {
        let ahead_ms = stored_hwm(&store).await.saturating_sub(clock.now_ms());
        if ahead_ms + 300 >= idmint_core::clock::duration_ms(lead) {
            break;
        }
        assert!(
            landed.elapsed() < Duration::from_millis(400),
            "the HWM stayed {ahead_ms} ms ahead after a slow renewal"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    keeper.release().await.unwrap();
}
