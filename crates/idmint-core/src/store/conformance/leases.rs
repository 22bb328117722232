//! Worker leases: acquirers never share a worker ID, a stale token changes nothing, the HWM
//! is handed from holder to holder, a node gets its previous worker ID back.

use std::collections::HashSet;
use std::time::Duration;

use super::{request, Profile, Subject};
use crate::error::Error;

/// Concurrent acquirers never share a worker ID; when all are held, the rest are refused.
pub async fn acquirers_never_share_a_worker_id(store: Subject) {
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let leases = store.leases.clone();
            tokio::spawn(async move {
                leases
                    .acquire(&request(
                        &format!("node-{i}"),
                        None,
                        8,
                        Duration::from_secs(60),
                    ))
                    .await
            })
        })
        .collect();
    let mut held = HashSet::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(lease) => assert!(
                held.insert(lease.worker_id),
                "worker {} handed out twice",
                lease.worker_id
            ),
            Err(Error::NoWorkerFree { worker_count: 8 }) => refused += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((held.len(), refused), (8, 4));
    assert_eq!(held, (0..8).collect());
}

/// A static worker ID is registered like any other and refused while another node holds it.
/// Automatic acquirers get the others: on one store smallest first; on a set each store in
/// turn gives its own.
pub async fn a_static_worker_id_is_refused_while_held(store: Subject, profile: Profile) {
    let ttl = Duration::from_secs(60);
    let lease = store
        .leases
        .acquire(&request("a", Some(5), 8, ttl))
        .await
        .unwrap();
    assert_eq!(lease.worker_id, 5);
    let err = store
        .leases
        .acquire(&request("b", Some(5), 8, ttl))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::WorkerHeld {
            worker_id: 5,
            holder: "a".into()
        }
    );
    assert!(matches!(
        store.leases.acquire(&request("b", Some(8), 8, ttl)).await,
        Err(Error::InvalidArgument { .. })
    ));
    // An automatic acquirer skips the static one.
    let auto: Vec<u64> = {
        let mut ids = Vec::new();
        for i in 0..7 {
            ids.push(
                store
                    .leases
                    .acquire(&request(&format!("n{i}"), None, 8, ttl))
                    .await
                    .unwrap()
                    .worker_id,
            );
        }
        ids
    };
    if profile.set {
        let mut auto = auto;
        auto.sort_unstable();
        assert_eq!(auto, [0, 1, 2, 3, 4, 6, 7]);
    } else {
        assert_eq!(auto, [0, 1, 2, 3, 4, 6, 7]);
    }
}

/// A renew with a stale token fails and changes nothing; the new holder sees the old HWM;
/// release records the final HWM and frees the ID at once.
pub async fn stale_tokens_change_nothing_and_hwm_is_handed_over(store: Subject) {
    let short = Duration::from_millis(200);
    let old = store
        .leases
        .acquire(&request("old", None, 4, short))
        .await
        .unwrap();
    let renewed = store.leases.renew(&old, 1_000_000, short).await.unwrap();
    assert_eq!(renewed.hwm_ms, 1_000_000);
    // Never lowered.
    assert_eq!(
        store.leases.renew(&old, 5, short).await.unwrap().hwm_ms,
        1_000_000
    );
    // Expired by the store's clock, taken by another node: the longest expired ID.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let new = store
        .leases
        .acquire(&request("new", None, 1, Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!((new.worker_id, new.hwm_ms), (old.worker_id, 1_000_000));
    assert_ne!(new.token, old.token);
    // The old holder is fenced off.
    let stale = store.leases.renew(&old, 9_000_000, short).await;
    assert_eq!(
        stale,
        Err(Error::LeaseLost {
            worker_id: old.worker_id
        })
    );
    assert_eq!(
        store.leases.release(&old, 9_000_000).await,
        Err(Error::LeaseLost {
            worker_id: old.worker_id
        })
    );
    let rows = store.leases.list_leases().await.unwrap();
    assert_eq!(
        (rows[0].hwm_ms, rows[0].node_name.as_str(), rows[0].live),
        (1_000_000, "new", true)
    );
    // Release frees the ID at once and keeps the final HWM for the next holder.
    store.leases.release(&new, 2_000_000).await.unwrap();
    let rows = store.leases.list_leases().await.unwrap();
    assert_eq!((rows[0].hwm_ms, rows[0].live), (2_000_000, false));
    let next = store
        .leases
        .acquire(&request("third", None, 1, Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(next.hwm_ms, 2_000_000);
    // A holder raises the HWM ahead of the clock, but releases with the highest tick it
    // really issued: the stored HWM comes down to it, so the next holder need not borrow.
    let ttl = Duration::from_secs(60);
    store.leases.renew(&next, 9_000_000, ttl).await.unwrap();
    store.leases.release(&next, 2_500_000).await.unwrap();
    let fourth = store
        .leases
        .acquire(&request("fourth", None, 1, ttl))
        .await
        .unwrap();
    assert_eq!(fourth.hwm_ms, 2_500_000);
}

/// A node gets its own previous worker ID back once it is free.
pub async fn a_node_gets_its_previous_worker_id_back(store: Subject) {
    let ttl = Duration::from_secs(60);
    let mut leases = Vec::new();
    for node in ["a", "b", "c"] {
        leases.push(
            store
                .leases
                .acquire(&request(node, None, 8, ttl))
                .await
                .unwrap(),
        );
    }
    store.leases.release(&leases[1], 10).await.unwrap();
    store.leases.release(&leases[0], 10).await.unwrap();
    let again = store
        .leases
        .acquire(&request("b", None, 8, ttl))
        .await
        .unwrap();
    assert_eq!(again.worker_id, leases[1].worker_id);
}

/// An HWM is a signed 64-bit value in every store: a renewal or release past it is refused as
/// an invalid argument and changes nothing; the lease stays held, its HWM as it was.
pub async fn an_hwm_past_the_signed_range_is_refused(store: Subject) {
    let ttl = Duration::from_secs(60);
    let lease = store
        .leases
        .acquire(&request("a", None, 4, ttl))
        .await
        .unwrap();
    store.leases.renew(&lease, 5_000, ttl).await.unwrap();
    let past = u64::MAX;
    let renewed = store.leases.renew(&lease, past, ttl).await;
    assert!(
        matches!(renewed, Err(Error::InvalidArgument { .. })),
        "{renewed:?}"
    );
    let released = store.leases.release(&lease, past).await;
    assert!(
        matches!(released, Err(Error::InvalidArgument { .. })),
        "{released:?}"
    );
    let rows = store.leases.list_leases().await.unwrap();
    let row = rows
        .iter()
        .find(|r| r.worker_id == lease.worker_id)
        .unwrap();
    assert_eq!((row.hwm_ms, row.live), (5_000, true));
    assert_eq!(
        store.leases.renew(&lease, 6_000, ttl).await.unwrap().hwm_ms,
        6_000
    );
}
