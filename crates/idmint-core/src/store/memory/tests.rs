//! The in-memory store's own cases, and the conformance suite run on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::clock::ManualClock;
use crate::store::MAX_SEGMENT_ID;

const NOW: u64 = 1_790_000_000_000;

fn store() -> (MemoryStore, Arc<ManualClock>) {
    let clock = ManualClock::shared(NOW);
    (MemoryStore::new(clock.clone()), clock)
}

fn request(node: &str, worker_id: Option<u64>) -> LeaseRequest {
    LeaseRequest {
        node_name: node.into(),
        worker_count: 4,
        worker_id,
        ttl: Duration::from_secs(10),
        id_space: None,
        partition: crate::store::Partition::WHOLE,
    }
}

#[tokio::test]
async fn ranges_are_disjoint_and_give_back_is_conditional() {
    let (store, _) = store();
    let tag = Tag::new("orders").unwrap();
    let settings = TagSettings {
        step: 10,
        ..TagSettings::default()
    };
    assert_eq!(store.create_tag(&tag, &settings).await.unwrap().max_id, 1);
    assert!(matches!(
        store.create_tag(&tag, &settings).await,
        Err(Error::TagExists { .. })
    ));
    let first = store.allocate(&tag, 10).await.unwrap();
    let second = store.allocate(&tag, 5).await.unwrap();
    assert_eq!((first.clone(), second.clone()), (1..11, 11..16));
    // Not the last range: refused. The last one's tail: accepted.
    assert!(!store.give_back(&tag, 5..11).await.unwrap());
    assert!(store.give_back(&tag, 13..16).await.unwrap());
    assert_eq!(store.allocate(&tag, 1).await.unwrap(), 13..14);
    let unknown = Tag::new("nope").unwrap();
    assert!(matches!(
        store.allocate(&unknown, 1).await,
        Err(Error::UnknownTag { .. })
    ));
    assert!(matches!(
        store.allocate(&tag, 0).await,
        Err(Error::InvalidArgument { .. })
    ));
}

#[tokio::test]
async fn the_last_range_is_cut_to_what_is_left_then_the_tag_is_exhausted() {
    let (store, _) = store();
    let tag = Tag::new("end").unwrap();
    let settings = TagSettings {
        step: 10,
        first_id: MAX_SEGMENT_ID - 3,
        ..TagSettings::default()
    };
    store.create_tag(&tag, &settings).await.unwrap();
    assert_eq!(
        store.allocate(&tag, 10).await.unwrap(),
        MAX_SEGMENT_ID - 3..MAX_SEGMENT_ID
    );
    assert_eq!(
        store.allocate(&tag, 1).await,
        Err(Error::TagExhausted { tag: "end".into() })
    );
    assert_eq!(
        store.tag_info(&tag).await.unwrap().unwrap().max_id,
        MAX_SEGMENT_ID
    );
}

#[test]
fn range_at_cuts_at_the_end_and_is_none_past_it() {
    let max = MAX_SEGMENT_ID;
    assert_eq!(range_at(1, 10), Some(1..11));
    assert_eq!(range_at(max - 10, 10), Some(max - 10..max));
    assert_eq!(range_at(max - 3, 10), Some(max - 3..max));
    assert_eq!(range_at(max - 3, u64::MAX), Some(max - 3..max));
    assert_eq!(range_at(max, 1), None);
    assert_eq!(range_at(u64::MAX, 1), None);
}

#[tokio::test]
async fn an_outage_fails_every_call_and_changes_nothing() {
    let (store, _) = store();
    let tag = Tag::new("t").unwrap();
    store
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    store.set_unavailable(true);
    assert!(matches!(
        store.allocate(&tag, 5).await,
        Err(Error::StoreUnavailable { .. })
    ));
    store.set_unavailable(false);
    assert_eq!(store.allocate(&tag, 5).await.unwrap(), 1..6);
}

#[tokio::test]
async fn acquire_prefers_own_then_never_used_then_longest_expired() {
    let (store, clock) = store();
    let a = store.acquire(&request("a", None)).await.unwrap();
    let b = store.acquire(&request("b", None)).await.unwrap();
    assert_eq!((a.worker_id, b.worker_id), (0, 1));
    store.release(&a, NOW).await.unwrap();
    // Node a gets its own ID back, not a never-used one.
    assert_eq!(
        store.acquire(&request("a", None)).await.unwrap().worker_id,
        0
    );
    // A new node takes a never-used ID while there is one.
    assert_eq!(
        store.acquire(&request("c", None)).await.unwrap().worker_id,
        2
    );
    assert_eq!(
        store.acquire(&request("d", None)).await.unwrap().worker_id,
        3
    );
    assert!(matches!(
        store.acquire(&request("e", None)).await,
        Err(Error::NoWorkerFree { worker_count: 4 })
    ));
    // Once leases expire, the one that expired longest ago goes first.
    clock.advance(Duration::from_secs(11));
    let b_again = store.acquire(&request("b", None)).await.unwrap();
    assert_eq!(b_again.worker_id, 1);
    assert_eq!(
        store.acquire(&request("e", None)).await.unwrap().worker_id,
        0
    );
}

#[tokio::test]
async fn a_static_worker_id_is_refused_while_another_live_node_holds_it() {
    let (store, clock) = store();
    store.acquire(&request("a", Some(2))).await.unwrap();
    let err = store.acquire(&request("b", Some(2))).await.unwrap_err();
    assert_eq!(
        err,
        Error::WorkerHeld {
            worker_id: 2,
            holder: "a".into()
        }
    );
    assert!(matches!(
        store.acquire(&request("b", Some(4))).await,
        Err(Error::InvalidArgument { .. })
    ));
    clock.advance(Duration::from_secs(11));
    assert_eq!(
        store
            .acquire(&request("b", Some(2)))
            .await
            .unwrap()
            .worker_id,
        2
    );
}

#[tokio::test]
async fn a_stale_token_changes_nothing_and_the_next_holder_sees_the_hwm() {
    let (store, clock) = store();
    let old = store.acquire(&request("a", Some(1))).await.unwrap();
    let renewed = store
        .renew(&old, NOW + 5_000, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(renewed.hwm_ms, NOW + 5_000);
    // The HWM is only ever raised.
    let lower = store
        .renew(&old, NOW, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(lower.hwm_ms, NOW + 5_000);
    clock.advance(Duration::from_secs(11));
    let new = store.acquire(&request("b", Some(1))).await.unwrap();
    assert_eq!(new.hwm_ms, NOW + 5_000);
    assert!(new.token > old.token);
    // The old holder's writes are fenced off and leave the HWM as it was.
    let stale = store
        .renew(&old, NOW + 60_000, Duration::from_secs(10))
        .await;
    assert_eq!(stale, Err(Error::LeaseLost { worker_id: 1 }));
    assert_eq!(
        store.release(&old, NOW + 60_000).await,
        Err(Error::LeaseLost { worker_id: 1 })
    );
    let leases = store.list_leases().await.unwrap();
    assert_eq!(
        (
            leases[0].hwm_ms,
            leases[0].node_name.as_str(),
            leases[0].live
        ),
        (NOW + 5_000, "b", true)
    );
    // Release sets the final HWM (the highest tick issued, here below what was raised) and
    // frees the ID at once.
    store.release(&new, NOW + 1_000).await.unwrap();
    let leases = store.list_leases().await.unwrap();
    assert_eq!((leases[0].hwm_ms, leases[0].live), (NOW + 1_000, false));
}

/// The conformance suite every store runs (`store::conformance`), on a store judged by this
/// machine's clock (lease expiry needs one that moves with real time).
#[cfg(feature = "conformance")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_store_conforms() {
    use crate::clock::SystemClock;
    use crate::store::conformance::{run_all, Profile, Subject};

    run_all(Profile::SINGLE, || async {
        Subject::of(Arc::new(MemoryStore::new(Arc::new(SystemClock::new()))))
    })
    .await;
}
