//! [`LeaseKeeper::start`] waiting for a worker lease to expire (`worker_wait`), on the
//! in-memory store judged by the real clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::store::{LeaseRequest, MemoryStore, WorkerLeases};
use idmint_core::{Clock, Error, Layout, SnowflakeConfig, SystemClock};

use crate::ids::{LeaseConfig, LeaseKeeper};

/// One worker ID: a layout without a worker field.
const ONE_WORKER: &str = "time:41@1ms,seq:12";

/// A store whose only worker ID is held by node `dead` for `ttl` (it was killed: nobody
/// renews or releases it).
async fn held_by_a_dead_node(ttl: Duration) -> (Arc<MemoryStore>, Arc<dyn Clock>) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let store = Arc::new(MemoryStore::new(Arc::clone(&clock)));
    let request = LeaseRequest {
        node_name: "dead".into(),
        worker_count: 1,
        worker_id: None,
        ttl,
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
    };
    store.acquire(&request).await.unwrap();
    (store, clock)
}

async fn start(
    store: Arc<MemoryStore>,
    clock: Arc<dyn Clock>,
    worker_id: Option<u64>,
    worker_wait: Duration,
) -> idmint_core::Result<Arc<LeaseKeeper>> {
    let config = LeaseConfig {
        node_name: "next".into(),
        worker_id,
        ttl: Duration::from_secs(3),
        renew_every: Duration::from_secs(1),
        hwm_lead: Duration::from_secs(2),
        worker_wait,
        ..LeaseConfig::default()
    };
    LeaseKeeper::start(
        store,
        Layout::parse(ONE_WORKER).unwrap(),
        0,
        clock,
        config,
        SnowflakeConfig::default(),
    )
    .await
}

#[tokio::test]
async fn start_waits_for_a_dead_nodes_lease_to_expire() {
    for worker_id in [None, Some(0)] {
        let (store, clock) = held_by_a_dead_node(Duration::from_millis(600)).await;
        let started = Instant::now();
        let keeper = start(store, clock, worker_id, Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("{worker_id:?}: {e}"));
        let took = started.elapsed();
        assert_eq!(keeper.lease().worker_id, 0);
        assert!(
            took >= Duration::from_millis(500) && took < Duration::from_secs(3),
            "{worker_id:?}: took {took:?}"
        );
        keeper.release().await.unwrap();
    }
}

#[tokio::test]
async fn start_fails_after_the_wait_naming_the_lease_it_waited_for() {
    let (store, clock) = held_by_a_dead_node(Duration::from_secs(30)).await;
    let started = Instant::now();
    let error = start(store, clock, None, Duration::from_millis(300))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    let Error::WorkerWaitRanOut {
        ref cause,
        waited,
        first_to_expire: Some(ref lease),
    } = error
    else {
        panic!("{error:?}");
    };
    assert_eq!(**cause, Error::NoWorkerFree { worker_count: 1 });
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert_eq!((lease.worker_id, lease.node_name.as_str()), (0, "dead"));
    let text = error.to_string();
    assert!(
        text.starts_with("no worker ID free: all 1 are held by live nodes; waited 0.3s"),
        "{text}"
    );
    assert!(
        text.contains("worker 0's held by `dead`, runs until 20"),
        "{text}"
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_wait_of_zero_fails_at_once_with_the_holder() {
    let (store, clock) = held_by_a_dead_node(Duration::from_secs(30)).await;
    let started = Instant::now();
    let error = start(store, clock, Some(0), Duration::ZERO)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(500));
    let text = error.to_string();
    assert!(
        text.starts_with("worker ID 0 is held by live node `dead`; waited 0.0s"),
        "{text}"
    );
    assert!(matches!(
        error,
        Error::WorkerWaitRanOut { ref cause, .. } if matches!(**cause, Error::WorkerHeld { .. })
    ));
    assert!(!error.is_retryable());
}
