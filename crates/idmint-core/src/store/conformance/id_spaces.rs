//! The ID space: recorded once per version, a change refused while a lease is live and
//! fencing every token of the old space.

use std::time::Duration;

use super::{request, Profile, Subject};
use crate::error::Error;
use crate::id_space::{IdSpace, IdSpaceRecord};

/// A record of `version`; versions from 2 on are permuted, so the key's fingerprint is
/// round-tripped beside records without one.
fn space_record(version: u64, epoch_ms: u64) -> IdSpaceRecord {
    IdSpaceRecord {
        version,
        space: IdSpace {
            layout: "time:41@1ms,worker:10,seq:12".into(),
            epoch_ms,
            datacenter: 3,
            permutation: (version > 1).then(|| format!("feistel63x8-siphash24:{version:016x}")),
        },
        issues_from_ms: 1_700_000_000_000 + version,
        first_id: version << 40,
        recorded_at_ms: 0,
    }
}

/// The ID space: recorded once per version, round-tripped, and a change is refused while
/// a lease is live or above an HWM it was not judged by; it fences every old token, and
/// leases are granted only under the space in force.
///
/// With [`Profile::machine_clock`], the store's clock is also checked against this machine's.
pub async fn id_spaces_are_recorded_and_fence_leases(store: Subject, profile: Profile) {
    let leases = &store.leases;
    assert_eq!(leases.id_spaces().await.unwrap(), []);
    // The store's clock, which a change takes its moment from: this machine's, give or take.
    let clock_ms = leases.clock_ms().await.unwrap();
    if profile.machine_clock {
        let local = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(clock_ms.abs_diff(local) < 5_000);
    }
    let mut ask = request("a", None, 4, Duration::from_secs(30));
    ask.id_space = Some(1);
    assert!(matches!(
        leases.acquire(&ask).await,
        Err(Error::IdSpaceChanged { held: 1, stored: 0 })
    ));
    leases
        .record_id_space(&space_record(1, 1_000), 0)
        .await
        .unwrap();
    assert!(matches!(
        leases.record_id_space(&space_record(1, 2_000), 0).await,
        Err(Error::StoreConflict { .. })
    ));
    let history = leases.id_spaces().await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].space, space_record(1, 1_000).space);
    assert_eq!(history[0].first_id, 1 << 40);
    // Recorded with the store's clock, not the time the caller gave (0).
    assert!(history[0].recorded_at_ms.abs_diff(clock_ms) < 5_000);

    let lease = leases.acquire(&ask).await.unwrap();
    let hwm = 1_800_000_000_000;
    leases
        .renew(&lease, hwm, Duration::from_secs(30))
        .await
        .unwrap();
    let v2 = space_record(2, 900);
    assert!(matches!(
        leases.record_id_space(&v2, hwm).await,
        Err(Error::IdSpaceRefused { .. })
    ));
    leases.release(&lease, hwm).await.unwrap();
    // Released, the old token still renews (nothing else took the worker ID)...
    leases
        .renew(&lease, hwm, Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(matches!(
        leases.record_id_space(&v2, hwm - 1).await,
        Err(Error::StoreConflict { .. })
    ));
    assert!(matches!(
        leases.record_id_space(&space_record(3, 900), hwm).await,
        Err(Error::StoreConflict { .. })
    ));
    leases.record_id_space(&v2, hwm).await.unwrap();
    // ...but not after the change: every token moved on.
    assert!(matches!(
        leases.renew(&lease, hwm + 1, Duration::from_secs(30)).await,
        Err(Error::LeaseLost { .. })
    ));
    assert!(matches!(
        leases.acquire(&ask).await,
        Err(Error::IdSpaceChanged { held: 1, stored: 2 })
    ));
    ask.id_space = Some(2);
    let next = leases.acquire(&ask).await.unwrap();
    assert_eq!(next.worker_id, lease.worker_id);
    assert_eq!(next.hwm_ms, hwm);
    assert!(next.token > lease.token);
    let history = leases.id_spaces().await.unwrap();
    let versions: Vec<u64> = history.iter().map(|r| r.version).collect();
    assert_eq!(versions, [1, 2]);
    assert_eq!(history[1].space, v2.space);
    assert_eq!(history[1].issues_from_ms, v2.issues_from_ms);
    assert_eq!(history[1].first_id, v2.first_id);
}

/// Nodes recording the first space at once: exactly one wins, the others are told.
pub async fn one_first_space_wins(store: Subject) {
    let tries: Vec<_> = (0..6u64)
        .map(|i| {
            let leases = store.leases.clone();
            tokio::spawn(
                async move { leases.record_id_space(&space_record(1, 1_000 + i), 0).await },
            )
        })
        .collect();
    let mut won = 0;
    for attempt in tries {
        match attempt.await.unwrap() {
            Ok(()) => won += 1,
            Err(Error::StoreConflict { .. }) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(store.leases.id_spaces().await.unwrap().len(), 1);
}
