//! An in-memory store with the exact semantics of the real ones, for unit tests.
//!
//! It is not durable, so it never backs a server; it exists so the generators' tests can run
//! without a database, and so those tests can inject the store behaviours that matter to the
//! generators: latency and outages.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::{
    choose_worker, range_at, FencingToken, Lease, LeaseInfo, LeaseRequest, Partition, Renewal,
    SegmentStore, SetMembership, TagInfo, TagSettings, TagUpdate, WorkerLeases, WorkerRow,
};
use crate::clock::{duration_ms, Clock};
use crate::error::{Error, Result};
use crate::id_space::{check_lease_space, check_record, IdSpaceRecord};
use crate::tag::Tag;

/// A worker lease row.
#[derive(Debug, Clone)]
struct LeaseRow {
    node_name: String,
    token: u64,
    hwm_ms: u64,
    expires_at_ms: u64,
}

#[derive(Debug, Default)]
struct State {
    tags: BTreeMap<Tag, TagInfo>,
    leases: BTreeMap<u64, LeaseRow>,
    next_token: u64,
    id_spaces: Vec<IdSpaceRecord>,
    store_set: Option<SetMembership>,
}

/// In-memory [`SegmentStore`] and [`WorkerLeases`], judged by the given clock.
#[derive(Debug)]
pub struct MemoryStore {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
    unavailable: AtomicBool,
    latency_us: AtomicU64,
    calls: AtomicU64,
}

impl MemoryStore {
    /// An empty store whose expiry decisions use `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            clock,
            unavailable: AtomicBool::new(false),
            latency_us: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// Makes every following call fail with [`Error::StoreUnavailable`] (or work again).
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::SeqCst);
    }

    /// Makes every following call take `latency` (a tokio sleep) before it answers.
    pub fn set_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_us.store(micros, Ordering::SeqCst);
    }

    /// How many calls reached the store (including failed ones).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Applies the injected latency and outage, then locks the state.
    async fn enter(&self) -> Result<MutexGuard<'_, State>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let micros = self.latency_us.load(Ordering::SeqCst);
        if micros > 0 {
            tokio::time::sleep(Duration::from_micros(micros)).await;
        }
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(Error::store_unavailable("memory store is switched off"));
        }
        Ok(self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

/// The lease row of `lease`, if its token still holds it: the fence every lease write checks.
fn held_row<'a>(state: &'a mut State, lease: &Lease) -> Result<&'a mut LeaseRow> {
    state
        .leases
        .get_mut(&lease.worker_id)
        .filter(|row| row.token == lease.token.0)
        .ok_or(Error::LeaseLost {
            worker_id: lease.worker_id,
        })
}

fn unknown(tag: &Tag) -> Error {
    Error::UnknownTag {
        tag: tag.to_string(),
    }
}

#[async_trait]
impl SegmentStore for MemoryStore {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        if step == 0 {
            return Err(Error::argument("step", "must be at least 1"));
        }
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        let range = range_at(row.max_id, step).ok_or_else(|| Error::TagExhausted {
            tag: tag.to_string(),
        })?;
        row.max_id = range.end;
        row.updated_at_ms = now;
        Ok(range)
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        if unused.start >= unused.end || row.max_id != unused.end {
            return Ok(false);
        }
        row.max_id = unused.start;
        row.updated_at_ms = now;
        Ok(true)
    }

    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        if row.max_id != expected || new > super::MAX_SEGMENT_ID {
            return Ok(false);
        }
        row.max_id = new;
        row.updated_at_ms = now;
        Ok(true)
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        if settings.step == 0 {
            return Err(Error::argument("step", "must be at least 1"));
        }
        let first_id = settings.first_id.max(1);
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        if state.tags.contains_key(tag) {
            return Err(Error::TagExists {
                tag: tag.to_string(),
            });
        }
        let info = TagInfo {
            tag: tag.clone(),
            max_id: first_id,
            step: settings.step,
            description: settings.description.clone(),
            updated_at_ms: now,
            dating: settings.dating,
        };
        state.tags.insert(tag.clone(), info.clone());
        Ok(info)
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        if update.step == Some(0) {
            return Err(Error::argument("step", "must be at least 1"));
        }
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        if let Some(step) = update.step {
            row.step = step;
        }
        if let Some(description) = &update.description {
            row.description.clone_from(description);
        }
        row.updated_at_ms = now;
        Ok(row.clone())
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        Ok(self.enter().await?.tags.get(tag).cloned())
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        Ok(self.enter().await?.tags.values().cloned().collect())
    }
}

#[async_trait]
impl WorkerLeases for MemoryStore {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        request.check_partition()?;
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        SetMembership::check_lease(state.store_set.as_ref(), request.partition)?;
        check_lease_space(request.id_space, state.id_spaces.last().map(|r| r.version))?;
        let live = |row: &LeaseRow| row.expires_at_ms > now;
        let worker_id = match request.worker_id {
            Some(id) if id >= request.worker_count => {
                return Err(Error::argument(
                    "worker_id",
                    format!("{id} is outside 0..{}", request.worker_count),
                ))
            }
            Some(id) => match state.leases.get(&id) {
                Some(row) if live(row) && row.node_name != request.node_name => {
                    return Err(Error::WorkerHeld {
                        worker_id: id,
                        holder: row.node_name.clone(),
                    })
                }
                _ => id,
            },
            None => {
                let rows: Vec<WorkerRow<'_>> = state
                    .leases
                    .range(..request.worker_count)
                    .map(|(id, row)| WorkerRow {
                        worker_id: *id,
                        node_name: row.node_name.as_bytes(),
                        expires_at_ms: row.expires_at_ms,
                    })
                    .collect();
                choose_worker(
                    &rows,
                    request.node_name.as_bytes(),
                    now,
                    request.worker_count,
                    request.partition,
                )
                .ok_or(Error::NoWorkerFree {
                    worker_count: request.worker_count,
                })?
            }
        };
        state.next_token += 1;
        let token = state.next_token;
        let expires_at_ms = now.saturating_add(duration_ms(request.ttl));
        let row = state.leases.entry(worker_id).or_insert(LeaseRow {
            node_name: String::new(),
            token,
            hwm_ms: 0,
            expires_at_ms,
        });
        row.node_name.clone_from(&request.node_name);
        row.token = token;
        row.expires_at_ms = expires_at_ms;
        Ok(Lease {
            worker_id,
            token: FencingToken(token),
            hwm_ms: row.hwm_ms,
            expires_at_ms,
        })
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = held_row(&mut state, lease)?;
        row.hwm_ms = row.hwm_ms.max(hwm_ms);
        row.expires_at_ms = now.saturating_add(duration_ms(ttl));
        Ok(Renewal {
            hwm_ms: row.hwm_ms,
            expires_at_ms: row.expires_at_ms,
        })
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let mut state = self.enter().await?;
        let row = held_row(&mut state, lease)?;
        row.hwm_ms = final_hwm_ms;
        row.expires_at_ms = 0;
        Ok(())
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let now = self.clock.now_ms();
        let state = self.enter().await?;
        Ok(state
            .leases
            .iter()
            .map(|(id, row)| LeaseInfo {
                worker_id: *id,
                node_name: row.node_name.clone(),
                expires_at_ms: row.expires_at_ms,
                hwm_ms: row.hwm_ms,
                live: row.expires_at_ms > now,
            })
            .collect())
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        Ok(self.enter().await?.id_spaces.clone())
    }

    async fn clock_ms(&self) -> Result<u64> {
        drop(self.enter().await?);
        Ok(self.clock.now_ms())
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let newest = state.id_spaces.last().map(|r| r.version);
        let live = state.leases.values().filter(|row| row.expires_at_ms > now);
        let max_hwm = state.leases.values().map(|row| row.hwm_ms).max();
        check_record(
            record,
            newest,
            live.count() as u64,
            max_hwm.unwrap_or(0),
            hwm_bound_ms,
        )?;
        if record.version > 1 {
            state.next_token += 1;
            let token = state.next_token;
            for row in state.leases.values_mut() {
                row.token = token;
            }
        }
        state.id_spaces.push(IdSpaceRecord {
            recorded_at_ms: now,
            ..record.clone()
        });
        Ok(())
    }

    async fn store_set(&self) -> Result<Option<SetMembership>> {
        Ok(self.enter().await?.store_set.clone())
    }

    async fn join_store_set(&self, set_id: &str, partition: Partition) -> Result<SetMembership> {
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let has_data = !state.tags.is_empty() || !state.leases.is_empty();
        let existing = state.store_set.clone();
        if let Some(record) = SetMembership::join_decision(existing, set_id, partition, has_data)? {
            return Ok(record);
        }
        let record = SetMembership {
            set_id: set_id.to_owned(),
            partition,
            recorded_at_ms: now,
        };
        state.store_set = Some(record.clone());
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
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
}
