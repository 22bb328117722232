//! The namespace's pinned ID space, seen from a node and from the operator's commands.
//!
//! The rules live in `idmint_core::id_space`; this module runs them against a store: [`pin`] at
//! every start (record the space if none is, else refuse a node whose layout, epoch or
//! datacenter differ), [`change`] for `idmint id-space change`, and [`SpaceLayouts`] to decode
//! an ID with the space that issued it.

use idmint_core::id_space::{check_pinned, plan_change, space_of, SpaceChange};
use idmint_core::store::{LeaseInfo, WorkerLeases};
use idmint_core::{DecodedId, Error, IdSpace, IdSpaceRecord, Layout, Result};

/// How often [`pin`] reads again after another node recorded the first space at the same time.
const PIN_TRIES: usize = 3;

/// Checks that `given` is the space in force in the store, recording it as the first one when
/// none is. Returns the whole history, oldest first (its last record is `given`'s).
///
/// Fails with [`Error::IdSpaceMismatch`] when another space is in force: the node must not
/// start, since its ticks would become other values than those the HWMs fence. Fails with
/// [`Error::IdSpaceUnrecorded`] when none is recorded but worker IDs were leased before (a
/// store of an idmint from before ID spaces): see [`adopt`].
pub async fn pin(leases: &dyn WorkerLeases, given: &IdSpace) -> Result<Vec<IdSpaceRecord>> {
    for _ in 0..PIN_TRIES {
        let history = leases.id_spaces().await?;
        if check_pinned(&history, given)?.is_some() {
            return Ok(history);
        }
        if !may_record_first(leases, given).await? {
            // Another node recorded a space meanwhile (and leased under it): compare with it.
            continue;
        }
        match leases
            .record_id_space(&IdSpaceRecord::first(given.clone()), 0)
            .await
        {
            Ok(()) => tracing::info!(space = %given, "ID space recorded in the store"),
            // Another node recorded one first: read again, and compare with that.
            Err(Error::StoreConflict { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Err(Error::store_conflict(
        "the ID space kept changing while this node started",
    ))
}

/// Whether a first space may be recorded: refuses over worker leases that issued IDs before any
/// space was recorded ([`Error::IdSpaceUnrecorded`]); false when a space was recorded since the
/// caller read none.
///
/// The leases are read before the spaces: a node of this version records a space before it
/// leases, so leases with an HWM and still no space afterwards can only be older ones, while a
/// space recorded by a node starting at the same moment shows up here and is compared with.
async fn may_record_first(leases: &dyn WorkerLeases, given: &IdSpace) -> Result<bool> {
    let workers = leases.list_leases().await?;
    let issued = workers.iter().filter(|w| w.hwm_ms > 0).count() as u64;
    if issued == 0 {
        return Ok(true);
    }
    if !leases.id_spaces().await?.is_empty() {
        return Ok(false);
    }
    Err(Error::IdSpaceUnrecorded {
        given: given.to_string(),
        workers: issued,
    })
}

/// Records `space` as the first space of a namespace whose nodes issued IDs before ID spaces
/// were recorded: the operator declares the settings those nodes ran with (`idmint id-space
/// adopt`). Refused when a space is recorded already.
pub async fn adopt(leases: &dyn WorkerLeases, space: &IdSpace) -> Result<IdSpaceRecord> {
    let history = leases.id_spaces().await?;
    if let Some(current) = history.last() {
        return Err(Error::IdSpaceRefused {
            reason: format!(
                "this namespace already records its ID space (version {}: {}); use \
             `idmint id-space change` to move it",
                current.version, current.space
            ),
        });
    }
    leases
        .record_id_space(&IdSpaceRecord::first(space.clone()), 0)
        .await?;
    let history = leases.id_spaces().await?;
    history
        .first()
        .cloned()
        .ok_or_else(|| Error::store_invalid("the ID space just recorded is not in the store"))
}

/// What [`change`] did, or would do with `dry_run`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChangeReport {
    /// The space in force before.
    pub from: IdSpaceRecord,
    /// The accepted change.
    pub change: SpaceChange,
    /// Whether it was written (false for a dry run).
    pub recorded: bool,
    /// The worker leases live when it was judged: a dry run judges whatever the leases (on
    /// the high-water marks as they are: those of live nodes still rise), and the change
    /// itself passes only once they have ended. Always empty when `recorded`.
    pub live_leases: Vec<LeaseInfo>,
}

/// Moves the namespace to `new` from now by the store's clock, if every ID `new` can issue
/// lies above every ID issued so far (see `idmint_core::id_space::plan_change`) and no node
/// holds a live lease; with `dry_run`, only judges, whatever the leases (an operator plans a
/// change before stopping the nodes), and reports the live ones. Refuses with the numbers
/// otherwise.
///
/// The moment is the store's, like lease expiry: an operator's machine whose clock ran hours
/// ahead would otherwise start the new space hours ahead, and every node would wait for it.
pub async fn change(
    leases: &dyn WorkerLeases,
    new: &IdSpace,
    dry_run: bool,
) -> Result<ChangeReport> {
    let now_ms = leases.clock_ms().await?;
    let history = leases.id_spaces().await?;
    let Some(current) = history.last() else {
        return Err(nothing_recorded());
    };
    let workers = leases.list_leases().await?;
    if !dry_run {
        refuse_live_leases(&workers)?;
    }
    let live_leases: Vec<LeaseInfo> = workers.iter().filter(|w| w.live).cloned().collect();
    let max_hwm_ms = workers.iter().map(|w| w.hwm_ms).max().unwrap_or(0);
    let change = plan_change(current, new, max_hwm_ms, now_ms).map_err(|error| {
        match (error, live_leases.is_empty()) {
            (Error::IdSpaceRefused { reason }, false) => Error::IdSpaceRefused {
                reason: format!("{reason}; and {}", leases_held(&live_leases)),
            },
            (error, _) => error,
        }
    })?;
    if !dry_run {
        leases.record_id_space(&change.record, max_hwm_ms).await?;
        tracing::info!(version = change.record.version, space = %new, "ID space changed");
    }
    Ok(ChangeReport {
        from: current.clone(),
        change,
        recorded: !dry_run,
        live_leases,
    })
}

/// `N node(s) still hold worker leases (worker 3 held by `a`, ...)`.
pub fn leases_held(live: &[LeaseInfo]) -> String {
    let held: Vec<String> = live
        .iter()
        .map(|w| format!("worker {} held by `{}`", w.worker_id, w.node_name))
        .collect();
    format!(
        "{} node(s) still hold worker leases ({})",
        live.len(),
        held.join(", ")
    )
}

/// The refusal of a change in a namespace where no space is recorded yet.
pub fn nothing_recorded() -> Error {
    Error::IdSpaceRefused {
        reason:
            "no ID space is recorded in this namespace yet: the first node that serves snowflakes \
         records its own settings, so start it with the new ones"
                .into(),
    }
}

/// Refuses while any node holds a live lease: it could issue above any HWM read now.
fn refuse_live_leases(workers: &[LeaseInfo]) -> Result<()> {
    let live: Vec<LeaseInfo> = workers.iter().filter(|w| w.live).cloned().collect();
    if live.is_empty() {
        return Ok(());
    }
    Err(Error::IdSpaceRefused {
        reason: format!(
            "{}: stop every node of this namespace, or wait for the leases of killed ones to \
         expire, then try again (--dry-run shows the plan meanwhile)",
            leases_held(&live)
        ),
    })
}

/// The layout of every recorded space, to decode an ID with the space whose range of values
/// holds it.
#[derive(Debug, Clone)]
pub struct SpaceLayouts {
    history: Vec<IdSpaceRecord>,
    layouts: Vec<Layout>,
}

impl SpaceLayouts {
    /// The layouts of `history` (oldest first). A record whose layout no longer parses is an
    /// invalid store.
    pub fn new(history: Vec<IdSpaceRecord>) -> Result<Self> {
        let layouts = history
            .iter()
            .map(|record| {
                record.space.to_layout().map_err(|e| {
                    Error::store_invalid(format!(
                        "ID space version {} holds an unusable layout: {e}",
                        record.version
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { history, layouts })
    }

    /// The recorded spaces, oldest first.
    pub fn history(&self) -> &[IdSpaceRecord] {
        &self.history
    }

    /// The space whose range of values holds `id`, and its layout; `None` when no space is
    /// recorded.
    pub fn space_of(&self, id: u64) -> Option<(&IdSpaceRecord, &Layout)> {
        let index = space_of(&self.history, id)?;
        Some((self.history.get(index)?, self.layouts.get(index)?))
    }

    /// Takes `id` apart with the space that issued it, naming its version; `None` when no
    /// space is recorded.
    pub fn decode(&self, id: u64) -> Option<Result<DecodedId>> {
        let (record, layout) = self.space_of(id)?;
        Some(layout.decode(id).map(|decoded| DecodedId {
            id_space: Some(record.version),
            ..decoded
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use idmint_core::store::{LeaseRequest, MemoryStore};
    use idmint_core::ManualClock;

    use super::*;

    fn space() -> IdSpace {
        IdSpace {
            layout: "time:41@1ms,worker:10,seq:12".into(),
            epoch_ms: 1_735_689_600_000,
            datacenter: 0,
            permutation: None,
        }
    }

    /// A store with one worker lease that issued up to an HWM, and `recorded` spaces.
    async fn leased(recorded: bool) -> MemoryStore {
        let store = MemoryStore::new(ManualClock::shared(1_800_000_000_000));
        if recorded {
            let first = IdSpaceRecord::first(space());
            let Ok(()) = store.record_id_space(&first, 0).await else {
                panic!("the first space records");
            };
        }
        let request = LeaseRequest {
            node_name: "a".into(),
            worker_count: 4,
            worker_id: None,
            ttl: Duration::from_secs(10),
            id_space: None,
            partition: idmint_core::store::Partition::WHOLE,
        };
        let Ok(lease) = store.acquire(&request).await else {
            panic!("a worker ID is free");
        };
        let Ok(_) = store.renew(&lease, 1_800_000_001_000, request.ttl).await else {
            panic!("the lease renews");
        };
        store
    }

    /// Leases and a space recorded since the caller read none (a node starting at the same
    /// moment): compare with that space, never take its lease for an older version's.
    #[tokio::test]
    async fn leases_of_a_node_that_recorded_meanwhile_are_not_taken_for_old_ones() {
        let store = leased(true).await;
        assert!(matches!(
            may_record_first(&store, &space()).await,
            Ok(false)
        ));
        let store: Arc<dyn WorkerLeases> = Arc::new(leased(true).await);
        assert!(pin(store.as_ref(), &space()).await.is_ok());
    }

    /// Leases with an HWM and no space at all: an older idmint's, refused until adopted.
    #[tokio::test]
    async fn leases_with_no_space_are_refused_until_adopted() {
        let store = leased(false).await;
        assert!(matches!(
            pin(&store, &space()).await,
            Err(Error::IdSpaceUnrecorded { workers: 1, .. })
        ));
        assert!(adopt(&store, &space()).await.is_ok());
        assert!(pin(&store, &space()).await.is_ok());
    }
}
