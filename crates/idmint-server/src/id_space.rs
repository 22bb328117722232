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
        refuse_unrecorded_leases(leases, given).await?;
        match leases
            .record_id_space(&IdSpaceRecord::first(given.clone()), 0)
            .await
        {
            Ok(()) => tracing::info!(space = %given, "ID space recorded in the store"),
            // Another node recorded one first: read again, and compare with that.
            Err(Error::StoreConflict(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Err(Error::StoreConflict(
        "the ID space kept changing while this node started".into(),
    ))
}

/// Refuses to record a first space over worker leases that issued IDs before any was recorded.
async fn refuse_unrecorded_leases(leases: &dyn WorkerLeases, given: &IdSpace) -> Result<()> {
    let workers = leases.list_leases().await?;
    let issued = workers.iter().filter(|w| w.hwm_ms > 0).count() as u64;
    if issued == 0 {
        return Ok(());
    }
    Err(Error::IdSpaceUnrecorded {
        given: Box::new(given.clone()),
        workers: issued,
    })
}

/// Records `space` as the first space of a namespace whose nodes issued IDs before ID spaces
/// were recorded: the operator declares the settings those nodes ran with (`idmint id-space
/// adopt`). Refused when a space is recorded already.
pub async fn adopt(leases: &dyn WorkerLeases, space: &IdSpace) -> Result<IdSpaceRecord> {
    let history = leases.id_spaces().await?;
    if let Some(current) = history.last() {
        return Err(Error::IdSpaceRefused(format!(
            "this namespace already records its ID space (version {}: {}); use \
             `idmint id-space change` to move it",
            current.version, current.space
        )));
    }
    leases
        .record_id_space(&IdSpaceRecord::first(space.clone()), 0)
        .await?;
    let history = leases.id_spaces().await?;
    history
        .first()
        .cloned()
        .ok_or_else(|| Error::StoreInvalid("the ID space just recorded is not in the store".into()))
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
}

/// Moves the namespace to `new` from now by the store's clock, if every ID `new` can issue
/// lies above every ID issued so far (see `idmint_core::id_space::plan_change`) and no node
/// holds a live lease; with `dry_run`, only judges. Refuses with the numbers otherwise.
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
    refuse_live_leases(&workers)?;
    let max_hwm_ms = workers.iter().map(|w| w.hwm_ms).max().unwrap_or(0);
    let change = plan_change(current, new, max_hwm_ms, now_ms)?;
    if !dry_run {
        leases.record_id_space(&change.record, max_hwm_ms).await?;
        tracing::info!(version = change.record.version, space = %new, "ID space changed");
    }
    Ok(ChangeReport {
        from: current.clone(),
        change,
        recorded: !dry_run,
    })
}

/// The refusal of a change in a namespace where no space is recorded yet.
pub fn nothing_recorded() -> Error {
    Error::IdSpaceRefused(
        "no ID space is recorded in this namespace yet: the first node that serves snowflakes \
         records its own settings, so start it with the new ones"
            .into(),
    )
}

/// Refuses while any node holds a live lease: it could issue above any HWM read now.
fn refuse_live_leases(workers: &[LeaseInfo]) -> Result<()> {
    let live: Vec<String> = workers
        .iter()
        .filter(|w| w.live)
        .map(|w| format!("worker {} held by `{}`", w.worker_id, w.node_name))
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    Err(Error::IdSpaceRefused(format!(
        "{} node(s) still hold worker leases ({}): stop every node of this namespace, or wait \
         for the leases of killed ones to expire, then try again",
        live.len(),
        live.join(", ")
    )))
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
                    Error::StoreInvalid(format!(
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
