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

/// Refuses a value the real stores cannot hold: they keep `max_id` and HWMs in signed 64-bit
/// columns (Redis' integers too), and refuse a larger one as an invalid argument.
fn signed(name: &'static str, value: u64) -> Result<u64> {
    if value > super::MAX_SEGMENT_ID {
        return Err(Error::argument(
            name,
            format!("{value} does not fit a signed 64-bit value"),
        ));
    }
    Ok(value)
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
        // An empty tail is nothing to give back, whatever the tag: the real stores answer
        // before they look.
        if unused.start >= unused.end {
            return Ok(false);
        }
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        if row.max_id != unused.end {
            return Ok(false);
        }
        row.max_id = unused.start;
        row.updated_at_ms = now;
        Ok(true)
    }

    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
        signed("new", new)?;
        let now = self.clock.now_ms();
        let mut state = self.enter().await?;
        let row = state.tags.get_mut(tag).ok_or_else(|| unknown(tag))?;
        if row.max_id != expected {
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
        let first_id = signed("first_id", settings.first_id.max(1))?;
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
        signed("hwm_ms", hwm_ms)?;
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
        signed("hwm_ms", final_hwm_ms)?;
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
mod tests;
