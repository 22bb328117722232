//! The ID service against a real SQLite store: several nodes, a lease lost mid-run, graceful
//! shutdown and restart. Every ID handed out is collected and checked for duplicates.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::snowflake::Fence;
use idmint_core::store::LeaseRequest;
use idmint_core::{
    Clock, Error, Layout, ManualClock, SnowflakeConfig, SnowflakeGenerator, SystemClock, Tag,
};
use idmint_server::ids::{Asker, ClockPolicy, Ids, IdsConfig};
use idmint_store::{Store, StoreOptions};

use crate::common::{ids_config, sqlite_url};

/// 41 bits of time, 10 of worker, 12 of sequence.
const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

async fn store(url: &str) -> Store {
    idmint_store::open(url, &StoreOptions::default())
        .await
        .unwrap()
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock::new())
}

async fn take_snowflakes(ids: &Ids, n: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.extend(ids.snowflakes(100, 0).await.unwrap());
    }
    out
}

fn assert_increasing(ids: &[u64]) {
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "not increasing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_store_never_share_an_id() {
    let url = sqlite_url("ids");
    let a = Ids::start(ids_config(LAYOUT, "a"), store(&url).await, clock())
        .await
        .unwrap();
    let b = Ids::start(ids_config(LAYOUT, "b"), store(&url).await, clock())
        .await
        .unwrap();
    assert_ne!(a.keeper().lease().worker_id, b.keeper().lease().worker_id);
    let tag = Tag::new("orders").unwrap();
    let mut tasks = Vec::new();
    for node in [&a, &b, &a, &b] {
        let (node, tag) = (Arc::clone(node), tag.clone());
        tasks.push(tokio::spawn(async move {
            let snowflakes = take_snowflakes(&node, 20_000).await;
            let mut segment = Vec::new();
            for _ in 0..200 {
                for run in node.segment_ids(&tag, 7, Asker::Operator).await.unwrap() {
                    segment.extend(run);
                }
            }
            (snowflakes, segment)
        }));
    }
    let (mut snowflakes, mut segments) = (HashSet::new(), HashSet::new());
    for task in tasks {
        let (s, g) = task.await.unwrap();
        assert_increasing(&s);
        assert_increasing(&g);
        let (ns, ng) = (s.len(), g.len());
        snowflakes.extend(s);
        segments.extend(g);
        assert!(ns >= 20_000);
        assert_eq!(ng, 1_400);
    }
    assert!(snowflakes.len() >= 80_000);
    assert_eq!(segments.len(), 4 * 1_400);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_is_replaced_and_no_id_repeats() {
    let url = sqlite_url("ids");
    let node = Ids::start(ids_config(LAYOUT, "a"), store(&url).await, clock())
        .await
        .unwrap();
    let before = node.keeper().lease();
    let mut issued: Vec<u64> = take_snowflakes(&node, 5_000).await;

    // Another process takes the worker ID (same node name: a restart after a partition, say)
    // and mints with it, fenced above the HWM this node had confirmed.
    let other = store(&url).await;
    let request = LeaseRequest {
        node_name: "a".into(),
        worker_count: 1024,
        worker_id: Some(before.worker_id),
        ttl: Duration::from_secs(30),
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
    };
    let stolen = other.leases.acquire(&request).await.unwrap();
    let layout = node.layout().clone();
    let fence = Fence::from_hwm_ms(&layout, stolen.hwm_ms, u64::MAX);
    let config = SnowflakeConfig::default().with_max_lead(Duration::from_secs(5));
    let thief = SnowflakeGenerator::builder(layout)
        .worker(stolen.worker_id)
        .clock(clock())
        .config(config)
        .fence(fence)
        .build()
        .unwrap();
    issued.extend(thief.next_batch(5_000, 0).unwrap());

    // The node keeps serving: up to its granted HWM with the old generator, then with a new
    // lease. It notices the loss at its next renewal.
    let mut noticed = false;
    for _ in 0..100 {
        issued.extend(take_snowflakes(&node, 200).await);
        if node.keeper().lease().worker_id != before.worker_id {
            noticed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(noticed, "the node never noticed its lease was taken");
    assert!(node.keeper().is_held());
    issued.extend(take_snowflakes(&node, 5_000).await);
    issued.extend(thief.next_batch(5_000, 0).unwrap());
    let unique: HashSet<u64> = issued.iter().copied().collect();
    assert_eq!(unique.len(), issued.len(), "an ID was issued twice");
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_gives_back_and_a_restart_continues_without_gap() {
    let url = sqlite_url("ids");
    let tag = Tag::new("invoices").unwrap();
    let first = Ids::start(ids_config(LAYOUT, "n1"), store(&url).await, clock())
        .await
        .unwrap();
    let worker = first.keeper().lease().worker_id;
    let runs = first.segment_ids(&tag, 25, Asker::Operator).await.unwrap();
    let last = runs.last().unwrap().end - 1;
    first.shutdown().await.unwrap();
    let leases = store(&url).await.leases.list_leases().await.unwrap();
    assert!(
        leases.iter().all(|l| !l.live),
        "the lease is still live after shutdown"
    );

    let second = Ids::start(ids_config(LAYOUT, "n1"), store(&url).await, clock())
        .await
        .unwrap();
    assert_eq!(
        second.keeper().lease().worker_id,
        worker,
        "the node did not get its worker ID back"
    );
    // The final HWM was the last tick issued, not the HWM raised ahead of the clock: the
    // restarted node's snowflakes carry the present time, not borrowed future time.
    let now = SystemClock::new().now_ms();
    let first_id = second.snowflakes(1, 0).await.unwrap().next().unwrap();
    let minted = second.decode(first_id).unwrap().unix_ms;
    assert!(
        minted <= now + 100,
        "minted at {minted}, now {now}: the restart borrowed time"
    );
    let next = second.segment_ids(&tag, 1, Asker::Operator).await.unwrap();
    assert_eq!(
        next[0].start,
        last + 1,
        "a gap or an overlap after a graceful restart"
    );
    second.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_are_bounded_and_unknown_tags_refused_when_asked() {
    let url = sqlite_url("ids");
    let mut cfg = ids_config(LAYOUT, "w");
    cfg.layout = Layout::parse("time:41@1ms,worker:4,seq:2").unwrap();
    cfg.snowflake = SnowflakeConfig::default()
        .with_max_lead(Duration::ZERO)
        .with_max_wait(Duration::from_millis(20))
        .with_spread_bits(0);
    cfg.segments.auto_create_tags = false;
    let ids = Ids::start(cfg, store(&url).await, clock()).await.unwrap();
    // 1,000 IDs at 4 per ms with no borrowing: far more than 20 ms of waiting can give.
    let started = std::time::Instant::now();
    let err = ids.snowflakes(1_000, 0).await.unwrap_err();
    assert!(matches!(err, Error::ClockBehind { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    let err = ids
        .segment_ids(&Tag::new("nope").unwrap(), 1, Asker::Operator)
        .await
        .unwrap_err();
    assert_eq!(err, Error::UnknownTag { tag: "nope".into() });
    ids.shutdown().await.unwrap();
}

/// Node "a" mints and stops gracefully; its worker ID's HWM is then about `now`. It returns
/// the IDs it issued, the worker ID, and that HWM.
async fn a_first_run(url: &str) -> (Vec<u64>, u64, u64) {
    let first = Ids::start(ids_config(LAYOUT, "a"), store(url).await, clock())
        .await
        .unwrap();
    let worker = first.keeper().lease().worker_id;
    let issued = take_snowflakes(&first, 2_000).await;
    first.shutdown().await.unwrap();
    let hwm = lease_row(url, worker).await.hwm_ms;
    (issued, worker, hwm)
}

async fn lease_row(url: &str, worker: u64) -> idmint_core::store::LeaseInfo {
    let leases = store(url).await.leases.list_leases().await.unwrap();
    leases.into_iter().find(|l| l.worker_id == worker).unwrap()
}

fn with_policy(node: &str, policy: ClockPolicy) -> IdsConfig {
    let mut config = ids_config(LAYOUT, node);
    config.lease.clock_policy = policy;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_fail_refuses_a_worker_whose_hwm_is_ahead_of_the_clock() {
    let url = sqlite_url("ids");
    let (_, worker, hwm) = a_first_run(&url).await;
    // The same node restarts with its clock 60 s behind its last run.
    let behind: Arc<dyn Clock> = ManualClock::shared(hwm - 60_000);
    let err = Ids::start(
        with_policy("a", ClockPolicy::Fail),
        store(&url).await,
        behind,
    )
    .await
    .unwrap_err();
    match err {
        Error::ClockBehindHwm {
            worker_id,
            behind_ms,
        } => {
            assert_eq!(worker_id, worker);
            assert!((58_000..=60_001).contains(&behind_ms), "{behind_ms}");
        }
        other => panic!("expected ClockBehindHwm, got {other:?}"),
    }
    // The worker ID is free again, its HWM untouched.
    let row = lease_row(&url, worker).await;
    assert!(!row.live);
    assert_eq!(row.hwm_ms, hwm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_wait_keeps_the_worker_and_fails_fast_until_the_clock_catches_up() {
    let url = sqlite_url("ids");
    let (issued, worker, hwm) = a_first_run(&url).await;
    let clock = ManualClock::shared(hwm - 60_000);
    let node = Ids::start(
        with_policy("a", ClockPolicy::Wait),
        store(&url).await,
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .await
    .unwrap();
    assert_eq!(node.keeper().lease().worker_id, worker);
    assert!(node.snowflake_clock_behind_ms() > 58_000);
    // Waiting max_wait cannot help a clock 60 s behind: the call fails at once.
    match node.snowflakes(1, 0).await.unwrap_err() {
        Error::ClockBehind { waited, .. } => assert!(waited.is_zero()),
        other => panic!("expected ClockBehind, got {other:?}"),
    }
    // Segment IDs do not depend on the clock.
    let tag = Tag::new("during-wait").unwrap();
    assert_eq!(
        node.segment_ids(&tag, 3, Asker::Operator).await.unwrap(),
        vec![1..4]
    );
    // Once the clock passes the HWM, snowflakes continue above everything issued.
    clock.advance(Duration::from_secs(60));
    assert_eq!(node.snowflake_clock_behind_ms(), 0);
    let after = take_snowflakes(&node, 1_000).await;
    assert!(after[0] > *issued.last().unwrap());
    assert_increasing(&after);
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_switch_takes_another_worker_and_frees_the_refused_one() {
    let url = sqlite_url("ids");
    let (issued, worker, hwm) = a_first_run(&url).await;
    let clock: Arc<dyn Clock> = ManualClock::shared(hwm - 60_000);
    let node = Ids::start(
        with_policy("a", ClockPolicy::Switch),
        store(&url).await,
        clock,
    )
    .await
    .unwrap();
    let switched = node.keeper().lease().worker_id;
    assert_ne!(switched, worker);
    assert_eq!(node.snowflake_clock_behind_ms(), 0);
    // Snowflakes flow at once, from the new worker; none equals an earlier one.
    let after = take_snowflakes(&node, 2_000).await;
    let layout = node.layout().clone();
    assert!(after
        .iter()
        .all(|&id| layout.decode(id).unwrap().worker == Some(switched)));
    let earlier: HashSet<u64> = issued.into_iter().collect();
    assert!(after.iter().all(|id| !earlier.contains(id)));
    // The refused worker ID is free again with its HWM untouched.
    let row = lease_row(&url, worker).await;
    assert!(!row.live);
    assert_eq!(row.hwm_ms, hwm);
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_switch_with_a_static_worker_id_waits_instead() {
    let url = sqlite_url("ids");
    let (_, worker, hwm) = a_first_run(&url).await;
    let mut config = with_policy("a", ClockPolicy::Switch);
    config.lease.worker_id = Some(worker);
    let clock: Arc<dyn Clock> = ManualClock::shared(hwm - 60_000);
    let node = Ids::start(config, store(&url).await, clock).await.unwrap();
    assert_eq!(node.keeper().lease().worker_id, worker);
    assert!(node.snowflake_clock_behind_ms() > 58_000);
    assert!(matches!(
        node.snowflakes(1, 0).await,
        Err(Error::ClockBehind { .. })
    ));
    node.shutdown().await.unwrap();
}

/// A clock behind the start of a changed ID space (not behind any worker's HWM): `switch` does
/// not try other worker IDs, which all share that start; it waits like `wait`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_behind_the_space_start_waits_without_switching() {
    let url = sqlite_url("ids");
    a_first_run(&url).await;
    let opened = store(&url).await;
    let Ok(earlier) = Layout::parse_with_epoch("time:41@1ms,worker:10,seq:12", Some("2024-01-01"))
    else {
        panic!("the layout parses");
    };
    let space = idmint_core::IdSpace::of(&earlier, 0);
    let report = idmint_server::id_space::change(opened.leases.as_ref(), &space, false)
        .await
        .unwrap();
    let starts = report.change.record.issues_from_ms;
    let rows_before = opened.leases.list_leases().await.unwrap().len();

    let clock: Arc<dyn Clock> = ManualClock::shared(starts - 60_000);
    let mut config = with_policy("a", ClockPolicy::Switch);
    config.layout = earlier;
    let node = Ids::start(config, store(&url).await, clock).await.unwrap();
    assert!(node.snowflake_clock_behind_ms() > 50_000);
    // No worker ID was taken and given back for nothing.
    assert_eq!(
        opened.leases.list_leases().await.unwrap().len(),
        rows_before
    );
    node.shutdown().await.unwrap();
}

/// Tags made in a store before any ID space was recorded (an idmint from before ID spaces)
/// handed out plain IDs: a node with a permutation key is refused there, and records nothing,
/// so a plain node still starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_refused_over_tags_that_handed_out_plain_ids() {
    let url = sqlite_url("plain-tags");
    let old = store(&url).await;
    let tag = Tag::new("orders").unwrap();
    old.segments
        .create_tag(&tag, &idmint_core::store::TagSettings::default())
        .await
        .unwrap();
    old.segments.allocate(&tag, 100).await.unwrap();
    let mut permuted = ids_config(LAYOUT, "a");
    permuted.permutation = Some(idmint_core::Permutation::from_bytes(*b"sixteen byte key"));
    let refused = Ids::start(permuted, store(&url).await, clock()).await;
    let Err(Error::InvalidArgument { reason, .. }) = refused else {
        panic!("a key over plain tags must be refused: {refused:?}");
    };
    assert!(
        reason.contains("`orders`") && reason.contains("new namespace"),
        "{reason}"
    );
    assert!(old.leases.id_spaces().await.unwrap().is_empty());
    let plain = Ids::start(ids_config(LAYOUT, "a"), store(&url).await, clock()).await;
    assert!(plain.is_ok(), "{plain:?}");
}
