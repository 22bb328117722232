//! The store traits: what idmint needs from a database to keep IDs unique across processes.
//!
//! Two invariants live here (docs/ARCHITECTURE.md, "Uniqueness"):
//! - [`SegmentStore::allocate`] hands out `[max_id, max_id + step)` (cut at [`MAX_SEGMENT_ID`])
//!   and advances `max_id` in one atomic operation, so two ranges never overlap, whatever
//!   crashes in between;
//! - [`WorkerLeases`] fences every holder of a worker ID with a token and a high-water mark
//!   (HWM): a holder may only issue ticks up to the HWM the store has confirmed for its token,
//!   and a new holder starts strictly above the stored HWM.
//!
//! The implementations (SQLite, PostgreSQL, MySQL, Redis) live in `idmint-store`;
//! `MemoryStore` (feature `async`) is here for unit tests of the generators. The conformance
//! suite every implementation runs, [`conformance`], is exported with the feature
//! `conformance`.

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;
#[cfg(feature = "async")]
mod memory;
mod partition;
mod worker_choice;

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use self::memory::MemoryStore;
pub use self::partition::{Partition, SetMembership, DEFAULT_BLOCK};
pub use self::worker_choice::{choose_worker, WorkerRow};
use crate::dating::Dating;
use crate::error::{ExpiringLease, Result};
use crate::id_space::IdSpaceRecord;
use crate::layout::format_ms_rfc3339;
use crate::tag::Tag;

/// The largest `max_id` a tag may reach: it is stored in a signed 64-bit column, so the last ID
/// ever handed out is `MAX_SEGMENT_ID - 1`.
pub const MAX_SEGMENT_ID: u64 = i64::MAX as u64;

/// The range [`SegmentStore::allocate`] takes from a tag whose `max_id` is `max_id`, asked for
/// `step` (at least 1): `[max_id, max_id + step)`, cut at [`MAX_SEGMENT_ID`] when a full step
/// no longer fits, so the last IDs of a tag are served too. `None` when nothing is left
/// (`max_id >= MAX_SEGMENT_ID`): the tag is exhausted.
///
/// Every backend follows this one rule, deciding from the `max_id` its write is conditioned on
/// (in one statement, a compare-and-set, a write lock or a script), so all of them cut the
/// last range identically and racing nodes never overlap.
pub fn range_at(max_id: u64, step: u64) -> Option<Range<u64>> {
    (max_id < MAX_SEGMENT_ID).then(|| max_id..max_id.saturating_add(step).min(MAX_SEGMENT_ID))
}

/// What a tag is created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagSettings {
    /// The smallest range handed to a node at once; the adaptive step never goes below it.
    pub step: u64,
    /// Free text for operators.
    pub description: String,
    /// The first ID the tag will hand out (at least 1: an ID is never 0). Not used by a
    /// dated tag, whose counter starts at 1 in every period.
    pub first_id: u64,
    /// Makes the tag a dated sequence (see [`crate::dating`]): IDs composed of the period and a
    /// counter that starts again each period. Fixed once the tag exists.
    pub dating: Option<Dating>,
}

impl Default for TagSettings {
    fn default() -> Self {
        Self {
            step: 1_000,
            description: String::new(),
            first_id: 1,
            dating: None,
        }
    }
}

/// A change to a tag; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagUpdate {
    /// New minimum step.
    pub step: Option<u64>,
    /// New description.
    pub description: Option<String>,
}

/// A tag's row as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TagInfo {
    /// The tag.
    pub tag: Tag,
    /// The next ID the store will hand out: every ID below it has been allocated to a node.
    pub max_id: u64,
    /// The tag's minimum step.
    pub step: u64,
    /// Free text for operators.
    pub description: String,
    /// When the row last changed, in ms since the Unix epoch (store's clock).
    pub updated_at_ms: u64,
    /// The tag's dating, when it is a dated sequence; its `max_id` is then a composed value.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub dating: Option<Dating>,
}

/// Atomic range allocation per tag.
#[async_trait]
pub trait SegmentStore: Send + Sync + fmt::Debug {
    /// Takes `[max_id, max_id + step)` for `tag` and advances `max_id` past it, atomically.
    ///
    /// `step` is the caller's adaptive step; it must be at least 1. When a full step no longer
    /// fits below [`MAX_SEGMENT_ID`], the range is cut to what is left,
    /// `[max_id, MAX_SEGMENT_ID)` (see [`range_at`]), decided in the same atomic operation as
    /// the write, so two nodes racing at the end never get overlapping ranges: the range may
    /// be shorter than `step`, never empty. Errors with
    /// [`Error::UnknownTag`](crate::Error::UnknownTag) when the tag does not exist, and with
    /// [`Error::TagExhausted`](crate::Error::TagExhausted) when nothing is left
    /// (`max_id == MAX_SEGMENT_ID`); nothing changes then.
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>>;

    /// Returns the unused tail `unused` of the last range taken, if nobody allocated after it
    /// (`max_id == unused.end`): `max_id` becomes `unused.start`. Returns whether it did;
    /// [`Error::UnknownTag`](crate::Error::UnknownTag) when the tag does not exist.
    /// Called on graceful shutdown so a single node's restart leaves no gap.
    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool>;

    /// Creates a tag. Errors with [`Error::TagExists`](crate::Error::TagExists) if it exists.
    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo>;

    /// Changes a tag's step or description.
    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo>;

    /// One tag's row, if it exists.
    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>>;

    /// Every tag, sorted by name.
    async fn list_tags(&self) -> Result<Vec<TagInfo>>;

    /// Sets the tag's `max_id` to `new` if it is `expected`, atomically; returns whether it
    /// did. [`Error::UnknownTag`](crate::Error::UnknownTag) when the tag does not exist. The
    /// primitive behind [`allocate_in`](Self::allocate_in); `new` may be above or below
    /// `expected`.
    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool>;

    /// Takes a range as a store of a set: [`RangeRequest::partition`]'s IDs only, none below
    /// [`RangeRequest::at_least`] (see [`Partition::range`]), and advances `max_id` past it.
    ///
    /// A single store asked for no floor takes the one-statement path,
    /// [`allocate`](Self::allocate). Otherwise the range is decided from the `max_id` read
    /// and taken with [`compare_and_set_max_id`](Self::compare_and_set_max_id), so it is ours
    /// only if nobody allocated in between; a lost race reads again (each lost round is
    /// another node's success), at most [`ALLOCATE_ROUNDS`] times.
    async fn allocate_in(&self, tag: &Tag, request: RangeRequest) -> Result<Range<u64>> {
        if request.step == 0 {
            // Refused as `allocate` refuses it: a range holds at least one ID.
            return Err(crate::Error::InvalidArgument {
                name: "step",
                reason: "must be at least 1".into(),
            });
        }
        if request.partition.is_whole() && request.at_least == 0 {
            return self.allocate(tag, request.step).await;
        }
        for _ in 0..ALLOCATE_ROUNDS {
            let info = self
                .tag_info(tag)
                .await?
                .ok_or_else(|| crate::Error::UnknownTag {
                    tag: tag.to_string(),
                })?;
            let range = request
                .partition
                .range(info.max_id, request.step, request.at_least)
                .ok_or_else(|| crate::Error::TagExhausted {
                    tag: tag.to_string(),
                })?;
            if self
                .compare_and_set_max_id(tag, info.max_id, range.end)
                .await?
            {
                return Ok(range);
            }
        }
        Err(crate::Error::store_conflict(format!(
            "allocating a range of `{tag}`: {ALLOCATE_ROUNDS} rounds lost to other nodes"
        )))
    }
}

/// Most rounds [`SegmentStore::allocate_in`] reads and retries before it gives up.
pub const ALLOCATE_ROUNDS: usize = 64;

/// What a store of a set is asked for by [`SegmentStore::allocate_in`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeRequest {
    /// How many IDs (at least 1); fewer come back at a block's end or the tag's end.
    pub step: u64,
    /// No ID below this: the end of the asking node's last range of the tag, so its IDs keep
    /// increasing when it moves between stores. 0 for none.
    pub at_least: u64,
    /// The store's place in its set.
    pub partition: Partition,
}

/// Proof of holding a worker lease: every write conditioned on it fails once another holder
/// took the worker ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FencingToken(pub u64);

/// A request for a worker ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    /// The asking node's stable name (host name, pod name): it gets its previous worker ID back
    /// when that one is free.
    pub node_name: String,
    /// How many worker IDs the layout has (`2^worker_bits`, 1 for a layout without a worker
    /// field). IDs `0..worker_count` are candidates.
    pub worker_count: u64,
    /// A static worker ID (`--worker-id N`): only this one is acceptable.
    pub worker_id: Option<u64>,
    /// How long the lease lasts unless renewed.
    pub ttl: Duration,
    /// The version of the namespace's ID space the node mints in: the store refuses the lease
    /// with [`Error::IdSpaceChanged`](crate::Error::IdSpaceChanged) unless it is the one in
    /// force, in the same atomic decision, so a node started before a change never issues
    /// under the old space after it. `None` skips the check (tests and tools that issue no
    /// IDs).
    pub id_space: Option<u64>,
    /// The store's place in its set: only worker IDs of this partition are chosen, and a
    /// static `worker_id` outside it is refused. [`Partition::WHOLE`] for a single store.
    pub partition: Partition,
}

impl LeaseRequest {
    /// Refuses a static worker ID that another store of the set leases: the store that owns a
    /// worker ID is the only one that may fence it.
    pub fn check_partition(&self) -> Result<()> {
        match self.worker_id {
            Some(id) if !self.partition.owns_worker(id) => Err(crate::Error::InvalidArgument {
                name: "worker_id",
                reason: format!(
                    "worker ID {id} is leased by store {} of the set, not by store {}",
                    Partition::of_worker(id, self.partition.count),
                    self.partition.index
                ),
            }),
            _ => Ok(()),
        }
    }
}

/// A held worker lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The worker ID held.
    pub worker_id: u64,
    /// The fencing token of this holding.
    pub token: FencingToken,
    /// The stored HWM at acquisition, in ms since the Unix epoch: the highest tick start any
    /// earlier holder may have used. The new holder starts strictly above it.
    pub hwm_ms: u64,
    /// When the lease expires unless renewed (store's clock), ms since the Unix epoch.
    pub expires_at_ms: u64,
}

/// The outcome of a successful renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal {
    /// The HWM the store now holds and confirms for this token.
    pub hwm_ms: u64,
    /// The new expiry.
    pub expires_at_ms: u64,
}

/// One row of the lease table, for `GET /v1/workers`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LeaseInfo {
    /// The worker ID.
    pub worker_id: u64,
    /// The node that holds or last held it.
    pub node_name: String,
    /// Expiry, ms since the Unix epoch; in the past when free.
    pub expires_at_ms: u64,
    /// The stored HWM, ms since the Unix epoch.
    pub hwm_ms: u64,
    /// Whether the lease is live (not expired, not released) by the store's clock.
    pub live: bool,
}

impl From<&LeaseInfo> for ExpiringLease {
    /// The lease as [`Error::WorkerWaitRanOut`](crate::Error::WorkerWaitRanOut) names it.
    fn from(lease: &LeaseInfo) -> Self {
        ExpiringLease {
            worker_id: lease.worker_id,
            node_name: lease.node_name.clone(),
            expires_at: format_ms_rfc3339(lease.expires_at_ms),
        }
    }
}

/// Worker IDs leased from the store, fenced by token and high-water mark.
#[async_trait]
pub trait WorkerLeases: Send + Sync + fmt::Debug {
    /// Takes a worker ID: the node's previous one if free, else a never-used one, else the one
    /// that expired longest ago. A new token is issued, so the previous holder's writes fail.
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease>;

    /// Extends the lease by `ttl` and raises the stored HWM to `max(stored, hwm_ms)`, only if
    /// `lease.token` still holds the worker ID; otherwise fails with
    /// [`Error::LeaseLost`](crate::Error::LeaseLost) and changes nothing.
    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal>;

    /// Frees the worker ID and sets the stored HWM to `final_hwm_ms`, if the token still holds
    /// it.
    ///
    /// `final_hwm_ms` is the highest tick this holder issued, after it stopped issuing (see
    /// `SnowflakeGenerator::close`). It may be below the HWM the holder had raised ahead of the
    /// clock: nothing above it was issued, so the next holder may start right above it and
    /// need not borrow future time. It is never below the HWM found at acquisition, since the
    /// holder started above that.
    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()>;

    /// Every worker ID ever leased, by worker ID.
    async fn list_leases(&self) -> Result<Vec<LeaseInfo>>;

    /// The store's clock, ms since the Unix epoch: the clock lease expiry is judged by, and the
    /// one an ID-space change takes its moment from (not the operator's machine's).
    async fn clock_ms(&self) -> Result<u64>;

    /// The namespace's recorded ID spaces, oldest first; empty before any node served.
    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>>;

    /// Records `record` as the namespace's ID space in force, with the store's clock as its
    /// `recorded_at_ms`, in one atomic decision that checks:
    /// - the newest stored version is `record.version - 1` (none for version 1), else
    ///   [`Error::StoreConflict`](crate::Error::StoreConflict) (someone else recorded first);
    /// - for a change (version 2 on): no lease is live, else
    ///   [`Error::IdSpaceRefused`](crate::Error::IdSpaceRefused), and no worker ID's HWM is
    ///   above `hwm_bound_ms`, the bound the change was judged by, else `StoreConflict`.
    ///
    /// A change also moves every worker ID's token on, so a holder of the old space that was
    /// frozen past its lease cannot renew it when it wakes.
    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()>;

    /// How many stores lease worker IDs behind this handle: more than one for a store set,
    /// where a node whose store stops answering may take a lease from another one at once
    /// (their worker IDs are disjoint) instead of waiting for its store to return.
    fn stores(&self) -> usize {
        1
    }

    /// This store's record of its place in a store set; `None` for a store that was never
    /// part of one (a single store).
    async fn store_set(&self) -> Result<Option<SetMembership>>;

    /// Records this store as `partition` of the set `set_id`, with the store's clock as
    /// `recorded_at_ms`, in one decision that checks:
    /// - no record yet; the same record again is accepted (a creator that retries), any other
    ///   one refused with [`Error::StoreConflict`](crate::Error::StoreConflict);
    /// - the store holds no tag and no lease row: IDs it issued as a single store could lie in
    ///   another store's partition, so it is refused with
    ///   [`Error::StoreInvalid`](crate::Error::StoreInvalid).
    ///
    /// Once recorded, [`acquire`](Self::acquire) grants leases only to requests naming this
    /// partition ([`SetMembership::check_lease`]).
    async fn join_store_set(&self, set_id: &str, partition: Partition) -> Result<SetMembership>;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_exhausted_message_names_the_last_id_there_is() {
        // `error.rs` writes the last ID out rather than reading `MAX_SEGMENT_ID`.
        let text = crate::Error::TagExhausted { tag: "t".into() }.to_string();
        assert!(
            text.contains(&format!("the last ID is {})", MAX_SEGMENT_ID - 1)),
            "{text}"
        );
    }

    #[test]
    fn a_lease_waited_for_is_named_with_its_expiry_as_a_date() {
        let lease = LeaseInfo {
            worker_id: 3,
            node_name: "n".into(),
            expires_at_ms: 1_767_225_600_000,
            hwm_ms: 0,
            live: true,
        };
        let expiring = ExpiringLease::from(&lease);
        assert_eq!((expiring.worker_id, expiring.node_name.as_str()), (3, "n"));
        assert_eq!(expiring.expires_at, format_ms_rfc3339(lease.expires_at_ms));
        assert!(
            expiring.expires_at.starts_with("2026-01-01T00:00:00"),
            "{expiring:?}"
        );
    }
}
