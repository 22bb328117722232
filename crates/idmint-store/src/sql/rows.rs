//! What the SQL backends share outside their SQL: argument checks and turning row values into
//! the core's types, so every backend refuses and converts in exactly the same way.

use std::ops::Range;

use idmint_core::store::{self, FencingToken, Lease, LeaseInfo, TagInfo};
use idmint_core::{IdSpace, IdSpaceRecord, Tag};

use crate::bounded::{to_i64, to_u64};
use crate::{Error, Result};

/// Refuses a step of 0: a range must hold at least one ID.
pub(crate) fn check_step(step: u64) -> Result<()> {
    if step == 0 {
        return Err(Error::InvalidArgument {
            name: "step",
            reason: "must be at least 1".into(),
        });
    }
    Ok(())
}

/// The range a full step took, from the new `max_id` the store returned: `[end - step, end)`.
/// An `end` below `step` can only come from a damaged row, and is refused rather than wrapped.
pub(crate) fn full_step(tag: &Tag, end: u64, step: u64) -> Result<Range<u64>> {
    let start = end
        .checked_sub(step)
        .ok_or_else(|| Error::store_invalid(format!("tag `{tag}` has max_id {end}")))?;
    Ok(start..end)
}

/// The range to take from a tag whose `max_id` was read as `max_id` when a full step did not
/// fit (see [`store::range_at`]): the rest up to `MAX_SEGMENT_ID`, or a full step if a give-back
/// lowered `max_id` meanwhile; [`Error::TagExhausted`] when nothing is left.
pub(crate) fn range_from(tag: &Tag, max_id: u64, step: u64) -> Result<Range<u64>> {
    store::range_at(max_id, step).ok_or_else(|| Error::TagExhausted {
        tag: tag.to_string(),
    })
}

/// A static worker ID (`--worker-id N`), checked to be one of the layout's `count`.
pub(crate) fn static_worker_id(id: u64, count: i64) -> Result<i64> {
    to_i64("worker_id", id)
        .ok()
        .filter(|id| *id < count)
        .ok_or_else(|| Error::InvalidArgument {
            name: "worker_id",
            reason: format!("{id} is outside 0..{count}"),
        })
}

/// Refuses a static worker ID whose lease (`holder`: node name, expiry) is live and held by
/// another node. The same node may take it back: it restarted.
pub(crate) fn refuse_if_held(
    id: i64,
    holder: Option<(&[u8], i64)>,
    node: &str,
    now: i64,
) -> Result<()> {
    match holder {
        Some((holder, expires)) if expires > now && holder != node.as_bytes() => {
            Err(Error::WorkerHeld {
                worker_id: to_u64("worker_id", id)?,
                holder: String::from_utf8_lossy(holder).into_owned(),
            })
        }
        _ => Ok(()),
    }
}

/// The worker ID to take, by the one policy ([`store::choose_worker`]), from the lease rows
/// below `count` as the SQL backends read them: `(worker_id, node_name, expires_at_ms)`, by
/// worker ID, under the lock that serializes acquisitions.
pub(crate) fn pick_worker<N: AsRef<[u8]>>(
    rows: &[(i64, N, i64)],
    node: &str,
    now: i64,
    count: i64,
    partition: store::Partition,
) -> Result<i64> {
    let rows = rows
        .iter()
        .map(|(id, name, expires)| {
            Ok(store::WorkerRow {
                worker_id: to_u64("worker_id", *id)?,
                node_name: name.as_ref(),
                expires_at_ms: to_u64("expires_at_ms", *expires)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let count_u64 = to_u64("worker_count", count)?;
    let now = to_u64("now", now)?;
    let chosen = store::choose_worker(&rows, node.as_bytes(), now, count_u64, partition).ok_or(
        Error::NoWorkerFree {
            worker_count: count_u64,
        },
    )?;
    to_i64("worker_id", chosen)
}

/// A lease from its row values.
pub(crate) fn lease(worker_id: i64, token: i64, hwm: i64, expires: i64) -> Result<Lease> {
    Ok(Lease {
        worker_id: to_u64("worker_id", worker_id)?,
        token: FencingToken(to_u64("token", token)?),
        hwm_ms: to_u64("hwm_ms", hwm)?,
        expires_at_ms: to_u64("expires_at_ms", expires)?,
    })
}

/// A row of the lease table, for listing.
pub(crate) fn lease_info(
    id: i64,
    node_name: String,
    expires: i64,
    hwm: i64,
    live: bool,
) -> Result<LeaseInfo> {
    Ok(LeaseInfo {
        worker_id: to_u64("worker_id", id)?,
        node_name,
        expires_at_ms: to_u64("expires_at_ms", expires)?,
        hwm_ms: to_u64("hwm_ms", hwm)?,
        live,
    })
}

/// A row of the ID-space table with its key fingerprint, in [`crate::schema::ID_SPACE_READ`]
/// order.
pub(crate) type IdSpaceRow = (i64, String, i64, i64, i64, i64, i64, Option<String>);

/// The newest ID-space version as read (`MAX(version)`, NULL when none is recorded).
pub(crate) fn version(newest: Option<i64>) -> Result<Option<u64>> {
    newest.map(|v| to_u64("version", v)).transpose()
}

/// An ID-space record from its row.
pub(crate) fn id_space(row: IdSpaceRow) -> Result<IdSpaceRecord> {
    let (version, layout, epoch, datacenter, from, first, at, permutation) = row;
    Ok(IdSpaceRecord {
        version: to_u64("version", version)?,
        space: IdSpace {
            layout,
            epoch_ms: to_u64("epoch_ms", epoch)?,
            datacenter: to_u64("datacenter", datacenter)?,
            permutation,
        },
        issues_from_ms: to_u64("issues_from_ms", from)?,
        first_id: to_u64("first_id", first)?,
        recorded_at_ms: to_u64("recorded_at_ms", at)?,
    })
}

/// The bind values of an ID-space record, but its `recorded_at_ms` (the store's clock fills
/// it): version, layout, epoch, datacenter, issues from, first ID.
pub(crate) fn id_space_values(record: &IdSpaceRecord) -> Result<(i64, &str, i64, i64, i64, i64)> {
    Ok((
        to_i64("version", record.version)?,
        record.space.layout.as_str(),
        to_i64("epoch_ms", record.space.epoch_ms)?,
        to_i64("datacenter", record.space.datacenter)?,
        to_i64("issues_from_ms", record.issues_from_ms)?,
        to_i64("first_id", record.first_id)?,
    ))
}

/// A tag row, checking that its name is still a valid tag.
pub(crate) fn tag_info(
    name: String,
    max_id: i64,
    step: i64,
    description: String,
    updated_at_ms: i64,
) -> Result<TagInfo> {
    Ok(TagInfo {
        tag: Tag::new(&name)
            .map_err(|_| Error::store_invalid(format!("bad tag name `{name}` in the store")))?,
        max_id: to_u64("max_id", max_id)?,
        step: to_u64("step", step)?,
        description,
        updated_at_ms: to_u64("updated_at_ms", updated_at_ms)?,
        dating: None,
    })
}

/// A dated tag's stored dating (`day:6:text:UTC`); damaged when it does not read back.
pub(crate) fn dating(spec: &str) -> Result<idmint_core::Dating> {
    idmint_core::Dating::parse(spec)
        .map_err(|e| Error::store_corrupt(format!("a tag's dating in the store is damaged: {e}")))
}

/// A store-set row, in [`crate::schema::STORE_SET_COLUMNS`] order.
pub(crate) type StoreSetRow = (String, i64, i64, i64, i64);

/// A set membership from its row.
pub(crate) fn membership(row: StoreSetRow) -> Result<store::SetMembership> {
    let (set_id, index, count, block, recorded) = row;
    Ok(store::SetMembership {
        set_id,
        partition: store::Partition::new(
            to_u64("member_index", index)?,
            to_u64("member_count", count)?,
            to_u64("block_size", block)?,
        )
        .map_err(|e| Error::store_corrupt(format!("the store-set record is damaged: {e}")))?,
        recorded_at_ms: to_u64("recorded_at_ms", recorded)?,
    })
}
