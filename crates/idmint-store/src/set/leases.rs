//! [`WorkerLeases`] over a store set: a lease from the first store that answers and has a free
//! worker ID; renewals and releases to the store that owns the worker ID; the ID space on every
//! store.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Partition, Renewal, SetMembership, WorkerLeases,
};
use idmint_core::IdSpaceRecord;

use super::members::{none_answers, Member, Members};
use crate::{Error, Result, Store};

/// The lease side of a set.
#[derive(Debug)]
pub(super) struct SetLeases {
    members: Arc<Members>,
}

impl SetLeases {
    pub(super) fn new(members: Arc<Members>) -> Self {
        Self { members }
    }

    /// The store that owns `worker_id`, if it is open.
    fn owner(&self, worker_id: u64) -> Result<(&Member, Store)> {
        let member = self.members.owner_of_worker(worker_id);
        let store = self.members.store_now(member).ok_or_else(|| {
            Error::store_unavailable(format!(
                "{}, which leases worker ID {worker_id}, is not open",
                member.display
            ))
        })?;
        Ok((member, store))
    }
}

#[async_trait]
impl WorkerLeases for SetLeases {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        if let Some(worker_id) = request.worker_id {
            // A static worker ID: only its store may lease it.
            let (member, store) = self.owner(worker_id)?;
            let request = LeaseRequest {
                partition: member.partition,
                ..request.clone()
            };
            return self
                .members
                .answered(member, store.leases.acquire(&request).await);
        }
        let mut refusal = None;
        let asking = |member: &Member, store: Store| {
            let request = LeaseRequest {
                partition: member.partition,
                ..request.clone()
            };
            async move { store.leases.acquire(&request).await }
        };
        let lease = self
            .members
            .ask_each(asking, |_, result| match result {
                // This store's worker IDs are all held, or it is down: the next one may have one.
                Err(error @ (Error::NoWorkerFree { .. } | Error::StoreUnavailable { .. })) => {
                    if refusal.is_none() || matches!(error, Error::NoWorkerFree { .. }) {
                        refusal = Some(error);
                    }
                    ControlFlow::Continue(())
                }
                answer => ControlFlow::Break(answer),
            })
            .await;
        lease.unwrap_or_else(|| {
            Err(refusal.unwrap_or_else(|| none_answers("acquiring a worker ID")))
        })
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let (member, store) = self.owner(lease.worker_id)?;
        self.members
            .answered(member, store.leases.renew(lease, hwm_ms, ttl).await)
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let (member, store) = self.owner(lease.worker_id)?;
        self.members
            .answered(member, store.leases.release(lease, final_hwm_ms).await)
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let mut all = Vec::new();
        let asking = |_: &Member, store: Store| async move { store.leases.list_leases().await };
        self.members
            .every_answer(
                "listing leases",
                asking,
                |member, leases: Vec<LeaseInfo>| {
                    // Rows of other partitions (from before the set) belong to their owners.
                    all.extend(
                        leases
                            .into_iter()
                            .filter(|l| member.partition.owns_worker(l.worker_id)),
                    );
                },
            )
            .await?;
        all.sort_by_key(|l| l.worker_id);
        Ok(all)
    }

    async fn clock_ms(&self) -> Result<u64> {
        self.members
            .first_answer("reading the store's clock", |_, store| async move {
                store.leases.clock_ms().await
            })
            .await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        self.members
            .first_answer("reading the ID spaces", |_, store| async move {
                store.leases.id_spaces().await
            })
            .await
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        if record.version > 1 {
            // A change is judged by the highest HWM of any worker ID: of every store.
            if let Some(closed) = self
                .members
                .list
                .iter()
                .find(|m| self.members.store_now(m).is_none())
            {
                return Err(Error::store_unavailable(format!(
                    "changing the ID space needs every store of the set; {} is not open",
                    closed.display
                )));
            }
        }
        let asking = |_: &Member, store: Store| async move {
            store.leases.record_id_space(record, hwm_bound_ms).await
        };
        self.members
            .every_answer("recording the ID space", asking, |_, ()| {})
            .await
    }

    fn stores(&self) -> usize {
        self.members.list.len()
    }

    async fn store_set(&self) -> Result<Option<SetMembership>> {
        self.members
            .first_answer("reading the store-set record", |_, store| async move {
                store.leases.store_set().await
            })
            .await
    }

    async fn join_store_set(&self, _: &str, _: Partition) -> Result<SetMembership> {
        Err(Error::InvalidArgument {
            name: "store",
            reason: "a store set joins no other set".into(),
        })
    }
}
