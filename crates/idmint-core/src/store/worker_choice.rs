//! Which worker ID a store grants a node that asks for none: one policy for every store.

use super::Partition;

/// A worker lease row as [`choose_worker`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerRow<'a> {
    /// The worker ID.
    pub worker_id: u64,
    /// The node that holds or last held it.
    pub node_name: &'a [u8],
    /// When its lease ends (0 once released), ms since the Unix epoch on the store's clock.
    pub expires_at_ms: u64,
}

/// The worker ID a node that asks for none takes: the policy of every store, written once (the
/// Redis backend runs the same steps in its Lua script).
///
/// `rows` are the lease rows below `worker_count`, by worker ID; `now_ms` is the store's clock.
/// In order of preference: the node's own previous worker ID if its lease expired (the one that
/// expired last, so a restarted node gets its IDs back and its HWM continues), else the smallest
/// never-used worker ID (no HWM to start above), else the one whose lease expired longest ago
/// (ties by worker ID). `None` when every worker ID is held.
///
/// A store of a set chooses only among the worker IDs of its `partition`, by the same policy
/// over its slots (the `k`-th worker ID it owns is slot `k`); rows of other worker IDs, left
/// from before the set existed, are not candidates.
pub fn choose_worker(
    rows: &[WorkerRow<'_>],
    node: &[u8],
    now_ms: u64,
    worker_count: u64,
    partition: Partition,
) -> Option<u64> {
    if partition.is_whole() {
        return choose_among(rows, node, now_ms, worker_count);
    }
    let slots: Vec<WorkerRow<'_>> = rows
        .iter()
        .filter_map(|row| {
            let slot = partition.slot_of_worker(row.worker_id)?;
            Some(WorkerRow {
                worker_id: slot,
                ..*row
            })
        })
        .collect();
    choose_among(&slots, node, now_ms, partition.worker_slots(worker_count))
        .map(|slot| partition.worker_of_slot(slot))
}

/// [`choose_worker`]'s policy over the IDs `0..worker_count`.
fn choose_among(
    rows: &[WorkerRow<'_>],
    node: &[u8],
    now_ms: u64,
    worker_count: u64,
) -> Option<u64> {
    debug_assert!(rows.windows(2).all(|w| w[0].worker_id < w[1].worker_id));
    let expired = || {
        rows.iter()
            .filter(|row| row.worker_id < worker_count && row.expires_at_ms <= now_ms)
    };
    let previous = expired()
        .filter(|row| row.node_name == node)
        .max_by_key(|row| (row.expires_at_ms, std::cmp::Reverse(row.worker_id)))
        .map(|row| row.worker_id);
    let mut never_used = 0;
    for row in rows {
        if row.worker_id != never_used {
            break;
        }
        never_used += 1;
    }
    let never_used = Some(never_used).filter(|id| *id < worker_count);
    let longest_expired = expired()
        .min_by_key(|row| (row.expires_at_ms, row.worker_id))
        .map(|row| row.worker_id);
    previous.or(never_used).or(longest_expired)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::store::DEFAULT_BLOCK;

    #[test]
    fn the_choice_prefers_own_then_never_used_then_longest_expired() {
        const NOW: u64 = 1_000;
        let row = |worker_id: u64, node: &'static str, expires_at_ms: u64| WorkerRow {
            worker_id,
            node_name: node.as_bytes(),
            expires_at_ms,
        };
        // Nothing leased yet: 0.
        assert_eq!(choose_worker(&[], b"a", NOW, 4, Partition::WHOLE), Some(0));
        // A gap is a never-used ID.
        let rows = [row(0, "a", 2_000), row(1, "b", 2_000), row(3, "c", 2_000)];
        assert_eq!(
            choose_worker(&rows, b"d", NOW, 4, Partition::WHOLE),
            Some(2)
        );
        // The node's own expired ID first, even with never-used ones left.
        let rows = [row(0, "a", 900), row(1, "b", 500)];
        assert_eq!(
            choose_worker(&rows, b"a", NOW, 4, Partition::WHOLE),
            Some(0)
        );
        assert_eq!(
            choose_worker(&rows, b"c", NOW, 4, Partition::WHOLE),
            Some(2)
        );
        // The node's live ID is not "previous": it gets another one.
        let rows = [row(0, "a", 2_000), row(1, "b", 500)];
        assert_eq!(
            choose_worker(&rows, b"a", NOW, 2, Partition::WHOLE),
            Some(1)
        );
        // All used: the one that expired longest ago, ties by ID; none when all are live.
        let rows = [row(0, "a", 900), row(1, "b", 500), row(2, "c", 500)];
        assert_eq!(
            choose_worker(&rows, b"d", NOW, 3, Partition::WHOLE),
            Some(1)
        );
        let rows = [row(0, "a", 2_000), row(1, "b", 2_000)];
        assert_eq!(choose_worker(&rows, b"c", NOW, 2, Partition::WHOLE), None);
        // Of several own expired IDs, the one that expired last.
        let rows = [row(0, "a", 100), row(1, "a", 800), row(2, "a", 800)];
        assert_eq!(
            choose_worker(&rows, b"a", NOW, 3, Partition::WHOLE),
            Some(1)
        );
        // Rows at or above the worker count are never chosen.
        let rows = [row(0, "a", 2_000), row(5, "d", 100)];
        assert_eq!(choose_worker(&rows, b"d", NOW, 1, Partition::WHOLE), None);
    }

    #[test]
    fn a_store_of_a_set_chooses_among_its_own_worker_ids_by_the_same_policy() {
        const NOW: u64 = 1_000;
        let row = |worker_id: u64, node: &'static str, expires_at_ms: u64| WorkerRow {
            worker_id,
            node_name: node.as_bytes(),
            expires_at_ms,
        };
        let second_of_three = Partition::new(1, 3, DEFAULT_BLOCK).unwrap();
        // Nothing leased: its first worker ID. Rows of other partitions are not candidates.
        assert_eq!(choose_worker(&[], b"a", NOW, 8, second_of_three), Some(1));
        let rows = [row(0, "x", 100), row(1, "a", 2_000), row(2, "y", 100)];
        assert_eq!(choose_worker(&rows, b"b", NOW, 8, second_of_three), Some(4));
        // Its own expired worker ID first.
        let rows = [row(1, "a", 2_000), row(4, "b", 900), row(7, "c", 2_000)];
        assert_eq!(choose_worker(&rows, b"b", NOW, 8, second_of_three), Some(4));
        // All of 1, 4, 7 used: the one that expired longest ago; none when all are live.
        let rows = [row(1, "a", 800), row(4, "b", 300), row(7, "c", 2_000)];
        assert_eq!(choose_worker(&rows, b"d", NOW, 8, second_of_three), Some(4));
        let rows = [row(1, "a", 2_000), row(4, "b", 2_000), row(7, "c", 2_000)];
        assert_eq!(choose_worker(&rows, b"d", NOW, 8, second_of_three), None);
        // A worker count that leaves this store no worker ID.
        assert_eq!(choose_worker(&[], b"a", NOW, 1, second_of_three), None);
    }
}
