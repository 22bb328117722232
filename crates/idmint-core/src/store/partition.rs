//! How a set of N independent stores splits the IDs so that none of them is a single point of
//! failure (docs/ARCHITECTURE.md, "Store sets").
//!
//! Store `k` of `N` is partition `k`:
//! - it leases only the worker IDs `w` with `w % N == k`, so two stores never lease one worker
//!   ID, and a node may take a lease from another store while its old lease still stands;
//! - of a tag's segment IDs, it hands out only those in its blocks: the IDs are cut into blocks
//!   of `block` consecutive values and block `b` belongs to partition `b % N`. It is the
//!   remainder scheme of Flickr's ticket servers and of the Redis+Lua scheme (ID `i` belongs
//!   to `i % N`), with blocks instead of single values so that a range stays contiguous
//!   (idmint's buffers, `INCRBY` and leases hand out runs of consecutive IDs).
//!
//! A range never crosses a block boundary: it ends where its block ends, and the next range of
//! the partition starts at its next block. A request may name a floor (`at_least`): a node that
//! moves from one store to another asks for IDs above the last one it issued, so its IDs keep
//! increasing, and a store that lags behind the others catches up.
//!
//! With `N = 1` every worker ID and every ID belongs to the one store, blocks play no part, and
//! a range is exactly [`range_at`](super::range_at)'s.

use std::fmt;
use std::ops::Range;

use super::{range_at, MAX_SEGMENT_ID};
use crate::error::{Error, Result};

/// The block size of a store set unless its creator chose another: Leaf's step cap and the
/// default largest step of a segment buffer, so a range at full speed fills one block.
pub const DEFAULT_BLOCK: u64 = 1_000_000;

/// Where one store stands in a set: partition `index` of `count`, with the set's block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Partition {
    /// This store's position in the set, `0..count`.
    pub index: u64,
    /// How many stores the set has.
    pub count: u64,
    /// How many consecutive segment IDs a block holds.
    pub block: u64,
}

impl Partition {
    /// A store that is the whole set: today's single store.
    pub const WHOLE: Partition = Partition {
        index: 0,
        count: 1,
        block: DEFAULT_BLOCK,
    };

    /// Partition `index` of `count` with blocks of `block` IDs, checked: at least one store,
    /// `index` below `count`, a block of at least one ID.
    pub fn new(index: u64, count: u64, block: u64) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidArgument {
            name: "store",
            reason,
        };
        if count == 0 {
            return Err(invalid("a store set needs at least one store".into()));
        }
        if index >= count {
            return Err(invalid(format!(
                "partition {index} does not exist in a set of {count}"
            )));
        }
        if block == 0 {
            return Err(invalid("the block size must be at least 1".into()));
        }
        Ok(Self {
            index,
            count,
            block,
        })
    }

    /// Whether this store is the whole set.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Whether this partition leases `worker_id`.
    pub fn owns_worker(&self, worker_id: u64) -> bool {
        worker_id % self.count == self.index
    }

    /// How many of the worker IDs `0..worker_count` this partition leases.
    pub fn worker_slots(&self, worker_count: u64) -> u64 {
        worker_count.saturating_sub(self.index).div_ceil(self.count)
    }

    /// The worker ID of this partition's `slot`-th one (slot 0 is `index`): the stores choose
    /// among their slots with the one policy, [`choose_worker`](super::choose_worker), as a
    /// single store chooses among all worker IDs.
    pub fn worker_of_slot(&self, slot: u64) -> u64 {
        slot.saturating_mul(self.count).saturating_add(self.index)
    }

    /// The slot of `worker_id`, when this partition leases it.
    pub fn slot_of_worker(&self, worker_id: u64) -> Option<u64> {
        self.owns_worker(worker_id)
            .then_some(worker_id / self.count)
    }

    /// The partition that leases `worker_id` in a set of `count`.
    pub fn of_worker(worker_id: u64, count: u64) -> u64 {
        worker_id % count.max(1)
    }

    /// The partition that hands out segment ID `id` in a set of `count` with blocks of `block`.
    pub fn of_id(id: u64, count: u64, block: u64) -> u64 {
        (id / block.max(1)) % count.max(1)
    }

    /// Whether this partition hands out segment ID `id`.
    pub fn owns_id(&self, id: u64) -> bool {
        Self::of_id(id, self.count, self.block) == self.index
    }

    /// The range this partition hands out from a tag whose `max_id` is `max_id`, asked for
    /// `step` IDs (at least 1), none below `at_least`: from the first of its IDs at or above
    /// both, `step` long or cut where its block ends (or at [`MAX_SEGMENT_ID`]). The tag's
    /// `max_id` then becomes the range's end. `None` when the partition has no ID left below
    /// [`MAX_SEGMENT_ID`]: the tag is exhausted here.
    pub fn range(&self, max_id: u64, step: u64, at_least: u64) -> Option<Range<u64>> {
        let from = max_id.max(at_least);
        if self.is_whole() {
            return range_at(from, step);
        }
        let block = from / self.block;
        let behind = (self.index + self.count - block % self.count) % self.count;
        let start = if behind == 0 {
            from
        } else {
            block.checked_add(behind)?.checked_mul(self.block)?
        };
        let block_end = (start / self.block)
            .checked_add(1)
            .and_then(|next| next.checked_mul(self.block))
            .unwrap_or(u64::MAX);
        let end = start
            .saturating_add(step.max(1))
            .min(block_end)
            .min(MAX_SEGMENT_ID);
        (start < end).then_some(start..end)
    }

    /// The first ID of this partition at or above `first_id`: where a tag created with
    /// `first_id` starts in this store.
    pub fn first_id(&self, first_id: u64) -> Option<u64> {
        self.range(first_id, 1, 0).map(|range| range.start)
    }
}

/// A store's record of its place in a set, written into the store once, when the set is
/// created, and checked by every node at start and by the store at every lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SetMembership {
    /// The same in every store of the set, random: a store of another set, or one wiped and
    /// recreated, is never taken for a member.
    pub set_id: String,
    /// The store's place in the set.
    pub partition: Partition,
    /// When the store recorded it, ms since the Unix epoch (the store's clock).
    pub recorded_at_ms: u64,
}

impl SetMembership {
    /// What a store asked to join set `set_id` as `partition` does, given its record
    /// (`existing`) and whether it holds any tag or lease row (`has_data`), as
    /// `WorkerLeases::join_store_set` describes: `Ok(Some(record))` when it already is that
    /// member, `Ok(None)` when it must record it now, an error when it must refuse.
    pub fn join_decision(
        existing: Option<SetMembership>,
        set_id: &str,
        partition: Partition,
        has_data: bool,
    ) -> Result<Option<SetMembership>> {
        match existing {
            Some(record) if record.set_id == set_id && record.partition == partition => {
                Ok(Some(record))
            }
            Some(record) => Err(Error::store_conflict(format!(
                "this store is already {} of set {}; asked to be {partition} of set {set_id}",
                record.partition, record.set_id
            ))),
            None if has_data => Err(Error::store_invalid(format!(
                "this store already holds tags or worker leases, so it cannot become {partition} \
                 of set {set_id}: IDs it issued alone may lie in another store's partition"
            ))),
            None => Ok(None),
        }
    }

    /// Checks that a lease asked for `partition` fits a store whose record is `recorded`
    /// (`None`: a single store, never part of a set): a node configured for another set, or
    /// for a single store, must not lease here, since it would choose worker IDs another store
    /// of the set also leases.
    pub fn check_lease(recorded: Option<&SetMembership>, partition: Partition) -> Result<()> {
        let recorded_partition = recorded.map_or(Partition::WHOLE, |m| m.partition);
        let same = recorded_partition.index == partition.index
            && recorded_partition.count == partition.count;
        if same {
            return Ok(());
        }
        Err(Error::store_invalid(match recorded {
            None => format!(
                "this store is not part of a store set, but the node asked for a lease as store                  {} of {}",
                partition.index, partition.count
            ),
            Some(m) => format!(
                "this store is store {} of {} in set {}, but the node asked for a lease as store                  {} of {}: check the order and number of --store",
                m.partition.index, m.partition.count, m.set_id, partition.index, partition.count
            ),
        }))
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "partition {} of {} (blocks of {} IDs)",
            self.index, self.count, self.block
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;

    use super::*;

    fn part(index: u64, count: u64, block: u64) -> Partition {
        Partition::new(index, count, block).unwrap()
    }

    #[test]
    fn the_whole_set_is_todays_single_store() {
        let whole = Partition::WHOLE;
        assert!(whole.owns_worker(0) && whole.owns_worker(1023));
        assert!(whole.owns_id(1) && whole.owns_id(5_000_000));
        assert_eq!(whole.range(1, 1000, 0), Some(1..1001));
        assert_eq!(whole.range(1, 1000, 4000), Some(4000..5000));
        assert_eq!(
            whole.range(MAX_SEGMENT_ID - 10, 1000, 0),
            Some(MAX_SEGMENT_ID - 10..MAX_SEGMENT_ID)
        );
        assert_eq!(whole.range(MAX_SEGMENT_ID, 1000, 0), None);
    }

    #[test]
    fn ranges_stay_in_their_blocks() {
        // Two stores, blocks of 100: store 0 has 0..100, 200..300...; store 1 100..200, 300..400...
        let (zero, one) = (part(0, 2, 100), part(1, 2, 100));
        assert_eq!(zero.range(1, 30, 0), Some(1..31));
        assert_eq!(
            zero.range(90, 30, 0),
            Some(90..100),
            "cut at the block's end"
        );
        assert_eq!(
            zero.range(100, 30, 0),
            Some(200..230),
            "on to its next block"
        );
        assert_eq!(one.range(1, 30, 0), Some(100..130));
        assert_eq!(one.range(150, 500, 0), Some(150..200));
        // A floor: catching up past another store's IDs.
        assert_eq!(one.range(130, 30, 250), Some(300..330));
        assert_eq!(zero.range(5, 30, 250), Some(250..280));
        assert_eq!(zero.first_id(1), Some(1));
        assert_eq!(one.first_id(1), Some(100));
        assert_eq!(part(2, 3, 10).first_id(45), Some(50));
    }

    #[test]
    fn the_end_of_the_id_space_is_refused_not_wrapped() {
        let last = part(1, 2, 1 << 62);
        // Block 1 is [2^62, 2^63), cut at MAX_SEGMENT_ID = 2^63 - 1.
        assert_eq!(last.range(1, 10, 0), Some(1 << 62..(1 << 62) + 10));
        assert_eq!(
            last.range(MAX_SEGMENT_ID - 3, 10, 0),
            Some(MAX_SEGMENT_ID - 3..MAX_SEGMENT_ID)
        );
        assert_eq!(last.range(MAX_SEGMENT_ID, 10, 0), None);
        // Store 0's next block would start at 2^63, past the end.
        assert_eq!(part(0, 2, 1 << 62).range(1 << 62, 10, 0), None);
        assert_eq!(part(0, 3, u64::MAX).range(5, 10, 0), Some(5..15));
        assert_eq!(part(1, 3, u64::MAX).range(5, 10, 0), None);
    }

    #[test]
    fn a_lease_must_name_the_recorded_place() {
        let member = SetMembership {
            set_id: "s".into(),
            partition: part(1, 3, 100),
            recorded_at_ms: 0,
        };
        assert!(SetMembership::check_lease(Some(&member), part(1, 3, 100)).is_ok());
        assert!(SetMembership::check_lease(Some(&member), part(0, 3, 100)).is_err());
        assert!(SetMembership::check_lease(Some(&member), Partition::WHOLE).is_err());
        assert!(SetMembership::check_lease(None, Partition::WHOLE).is_ok());
        assert!(SetMembership::check_lease(None, part(0, 2, 100)).is_err());
    }

    #[test]
    fn bad_sets_are_refused() {
        assert!(Partition::new(0, 0, 100).is_err());
        assert!(Partition::new(2, 2, 100).is_err());
        assert!(Partition::new(0, 2, 0).is_err());
    }

    proptest! {
        /// Whatever each store's `max_id`, step and floor, the ranges of different partitions
        /// never share an ID, every ID of a range belongs to its partition, a range is never
        /// empty, and it starts at or above both `max_id` and the floor.
        #[test]
        fn partitions_never_overlap(
            count in 1u64..5,
            block in prop_oneof![1u64..10, 10u64..1_000, Just(DEFAULT_BLOCK)],
            calls in proptest::collection::vec((0u64..5, 1u64..3_000, 0u64..20_000), 1..60),
        ) {
            let mut max_ids = vec![1u64; count as usize];
            let mut taken: Vec<(u64, Range<u64>)> = Vec::new();
            for (store, step, at_least) in calls {
                let index = store % count;
                let partition = part(index, count, block);
                let max_id = max_ids[index as usize];
                let range = partition.range(max_id, step, at_least).unwrap();
                prop_assert!(range.start < range.end);
                prop_assert!(range.start >= max_id && range.start >= at_least);
                prop_assert!(range.end - range.start <= step);
                prop_assert!(partition.owns_id(range.start) && partition.owns_id(range.end - 1));
                if count > 1 {
                    prop_assert_eq!(range.start / block, (range.end - 1) / block, "one block");
                }
                for (other, earlier) in &taken {
                    prop_assert!(
                        range.end <= earlier.start || earlier.end <= range.start,
                        "{:?} of {} overlaps {:?} of {}", range, index, earlier, other
                    );
                }
                max_ids[index as usize] = range.end;
                taken.push((index, range));
            }
        }

        /// Worker IDs: each belongs to exactly one partition, as one of its slots, and the
        /// slots of all partitions together are the layout's worker IDs.
        #[test]
        fn every_worker_id_has_one_owner(count in 1u64..8, worker in 0u64..4096, worker_count in 1u64..70) {
            let owners: Vec<Partition> =
                (0..count).map(|k| part(k, count, 10)).filter(|p| p.owns_worker(worker)).collect();
            prop_assert_eq!(owners.len(), 1);
            prop_assert_eq!(Partition::of_worker(worker, count), worker % count);
            let slot = owners[0].slot_of_worker(worker).unwrap();
            prop_assert_eq!(owners[0].worker_of_slot(slot), worker);
            let slots: u64 = (0..count).map(|k| part(k, count, 10).worker_slots(worker_count)).sum();
            prop_assert_eq!(slots, worker_count);
            for k in 0..count {
                let p = part(k, count, 10);
                for slot in 0..p.worker_slots(worker_count) {
                    prop_assert!(p.worker_of_slot(slot) < worker_count);
                }
            }
        }
    }
}
