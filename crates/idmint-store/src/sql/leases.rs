//! The lease side of every SQL backend: an acquisition decided from the rows read under the
//! lock that serializes acquisitions (and ID-space changes and set records) across nodes;
//! renewals and releases conditioned on the fencing token.

use std::time::Duration;

use async_trait::async_trait;
use idmint_core::clock::duration_ms;
use idmint_core::id_space::{check_lease_space, check_record};
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Partition, Renewal, SetMembership, WorkerLeases,
};
use idmint_core::IdSpaceRecord;
use sqlx::Row;

use super::{q, rows, Access, Dialect, Session, SqlStore, Statement, MAX_NODE_NAME};
use crate::bounded::{bounded, to_i64, to_u64};
use crate::{Error, Result};

for_every_dialect! {
    impl SqlStore {
        /// Chooses and takes a worker ID in one serialized session: the ID space is checked, the
        /// choice made from the rows read under the lock, and the worker ID taken with a new
        /// token, before any other node can decide.
        async fn acquire_now(&self, request: &LeaseRequest) -> Result<Lease> {
            let err = |e| D::error("acquiring a worker ID", e);
            request.check_partition()?;
            if request.node_name.len() > MAX_NODE_NAME {
                return Err(Error::InvalidArgument {
                    name: "node_name",
                    reason: format!("longer than {MAX_NODE_NAME} bytes"),
                });
            }
            let count = to_i64("worker_count", request.worker_count)?;
            let ttl = to_i64("ttl", duration_ms(request.ttl))?;
            let static_id = request
                .worker_id
                .map(|id| rows::static_worker_id(id, count))
                .transpose()?;
            let mut session = self.dialect.session(&self.pool, Access::Serialized).await?;
            let newest: Option<i64> = sqlx::query_scalar(q(&self.sql.newest_space))
                .fetch_one(session.conn())
                .await
                .map_err(err)?;
            check_lease_space(request.id_space, rows::version(newest)?)?;
            let recorded = self.read_store_set(&mut session).await.map_err(err)?;
            let recorded = recorded.map(rows::membership).transpose()?;
            SetMembership::check_lease(recorded.as_ref(), request.partition)?;
            let now: i64 = sqlx::query_scalar(q(&self.sql.now))
                .fetch_one(session.conn())
                .await
                .map_err(err)?;
            let worker_id = match static_id {
                Some(id) => {
                    let holder: Option<(String, i64)> = sqlx::query_as(q(&self.sql.lease_row))
                        .bind(id)
                        .fetch_optional(session.conn())
                        .await
                        .map_err(err)?;
                    let holder = holder
                        .as_ref()
                        .map(|(node, expires)| (node.as_bytes(), *expires));
                    rows::refuse_if_held(id, holder, &request.node_name, now)?;
                    id
                }
                None => {
                    let rows: Vec<(i64, String, i64)> = sqlx::query_as(q(&self.sql.worker_rows))
                        .bind(count)
                        .fetch_all(session.conn())
                        .await
                        .map_err(err)?;
                    rows::pick_worker(&rows, &request.node_name, now, count, request.partition)?
                }
            };
            let expires = now.saturating_add(ttl);
            let take = sqlx::query(q(&self.sql.take_worker))
                .bind(worker_id)
                .bind(request.node_name.clone())
                .bind(expires)
                .bind(request.node_name.clone())
                .bind(expires);
            let read_back = sqlx::query(q(&self.sql.taken_worker)).bind(worker_id);
            let row = Self::written_row(&mut session, take, read_back)
                .await
                .map_err(err)?
                .ok_or_else(|| {
                    Error::store_invalid(format!("worker ID {worker_id} vanished while taken"))
                })?;
            let token: i64 = row.try_get(0).map_err(err)?;
            let hwm: i64 = row.try_get(1).map_err(err)?;
            session.finish().await.map_err(err)?;
            rows::lease(worker_id, token, hwm, expires)
        }

        /// Runs a lease write conditioned on the token (`write`: its values, then worker ID and
        /// token) and gives the row's HWM and expiry if the token still holds it, else
        /// [`Error::LeaseLost`]. Never trusts an affected-rows count, which a MySQL server may
        /// report as 0 for a write that matched but changed nothing.
        async fn fenced_write(
            &self,
            what: &str,
            lease: &Lease,
            write: Statement<D::Db>,
        ) -> Result<(u64, u64)> {
            let err = |e| D::error(what, e);
            let worker_id = to_i64("worker_id", lease.worker_id)?;
            let token = to_i64("token", lease.token.0)?;
            let mut session = self
                .dialect
                .session(&self.pool, Access::WriteThenRead)
                .await?;
            let write = write.bind(worker_id).bind(token);
            let read_back = sqlx::query(q(&self.sql.held_lease))
                .bind(worker_id)
                .bind(token);
            let row = Self::written_row(&mut session, write, read_back)
                .await
                .map_err(err)?;
            session.finish().await.map_err(err)?;
            let row = row.ok_or(Error::LeaseLost {
                worker_id: lease.worker_id,
            })?;
            let hwm: i64 = row.try_get(0).map_err(err)?;
            let expires: i64 = row.try_get(1).map_err(err)?;
            Ok((to_u64("hwm_ms", hwm)?, to_u64("expires_at_ms", expires)?))
        }

        /// Records a new ID space, serialized with every acquisition: no node can take a lease
        /// under the old space once the change is committed.
        async fn record_id_space_now(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
            let err = |e| D::error("recording the ID space", e);
            let (version, layout, epoch, datacenter, from, first) = rows::id_space_values(record)?;
            let mut session = self.dialect.session(&self.pool, Access::Serialized).await?;
            let newest: Option<i64> = sqlx::query_scalar(q(&self.sql.newest_space))
                .fetch_one(session.conn())
                .await
                .map_err(err)?;
            // Tokens first: the update waits for any renewal in flight and fences every later one,
            // so the HWMs read next can no longer rise (rolled back with the rest when the checks
            // refuse).
            if record.version > 1 {
                sqlx::query(q(&self.sql.move_tokens_on))
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
            }
            let leases: Vec<(bool, i64)> = sqlx::query_as(q(&self.sql.lease_summary))
                .fetch_all(session.conn())
                .await
                .map_err(err)?;
            let live = leases.iter().filter(|(live, _)| *live).count() as u64;
            let max_hwm = leases.iter().map(|(_, hwm)| *hwm).max().unwrap_or(0);
            check_record(
                record,
                rows::version(newest)?,
                live,
                to_u64("hwm_ms", max_hwm)?,
                hwm_bound_ms,
            )?;
            sqlx::query(q(&self.sql.record_space))
                .bind(version)
                .bind(layout.to_owned())
                .bind(epoch)
                .bind(datacenter)
                .bind(from)
                .bind(first)
                .execute(session.conn())
                .await
                .map_err(err)?;
            if let Some(fingerprint) = &record.space.permutation {
                sqlx::query(q(&self.sql.record_space_key))
                    .bind(version)
                    .bind(fingerprint.clone())
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
            }
            session.finish().await.map_err(err)
        }

        /// The store-set row, read in `session`.
        async fn read_store_set(
            &self,
            session: &mut Session<D::Db>,
        ) -> std::result::Result<Option<rows::StoreSetRow>, sqlx::Error> {
            sqlx::query_as(q(&self.sql.store_set))
                .fetch_optional(session.conn())
                .await
        }

        async fn join_store_set_now(
            &self,
            set_id: &str,
            partition: Partition,
        ) -> Result<SetMembership> {
            let err = |e| D::error("joining a store set", e);
            let mut session = self.dialect.session(&self.pool, Access::Serialized).await?;
            let existing = self.read_store_set(&mut session).await.map_err(err)?;
            let existing = existing.map(rows::membership).transpose()?;
            let data_rows: i64 = sqlx::query_scalar(q(&self.sql.data_rows))
                .fetch_one(session.conn())
                .await
                .map_err(err)?;
            if let Some(record) =
                SetMembership::join_decision(existing, set_id, partition, data_rows > 0)?
            {
                return Ok(record);
            }
            sqlx::query(q(&self.sql.record_store_set))
                .bind(set_id.to_owned())
                .bind(to_i64("member_index", partition.index)?)
                .bind(to_i64("member_count", partition.count)?)
                .bind(to_i64("block_size", partition.block)?)
                .execute(session.conn())
                .await
                .map_err(err)?;
            let recorded = self.read_store_set(&mut session).await.map_err(err)?;
            session.finish().await.map_err(err)?;
            recorded
                .map(rows::membership)
                .transpose()?
                .ok_or_else(|| Error::store_invalid("the store-set record vanished as it was written"))
        }
    }
}

for_every_dialect! {
    #[async_trait]
    impl WorkerLeases for SqlStore {
        async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
            let call = self.acquire_now(request);
            bounded(self.timeout, "acquiring a worker ID", call).await
        }

        async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
            let what = "renewing a worker lease";
            let write = sqlx::query(q(&self.sql.renew))
                .bind(to_i64("hwm_ms", hwm_ms)?)
                .bind(to_i64("ttl", duration_ms(ttl))?);
            let call = self.fenced_write(what, lease, write);
            let (hwm_ms, expires_at_ms) = bounded(self.timeout, what, call).await?;
            Ok(Renewal {
                hwm_ms,
                expires_at_ms,
            })
        }

        async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
            let what = "releasing a worker lease";
            let write = sqlx::query(q(&self.sql.release)).bind(to_i64("hwm_ms", final_hwm_ms)?);
            let call = self.fenced_write(what, lease, write);
            bounded(self.timeout, what, call).await.map(|_| ())
        }

        async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
            let read = sqlx::query_as(q(&self.sql.list_leases)).fetch_all(&self.pool);
            let rows: Vec<(i64, String, i64, i64, bool)> =
                self.read("listing worker leases", read).await?;
            rows.into_iter()
                .map(|(id, node, expires, hwm, live)| rows::lease_info(id, node, expires, hwm, live))
                .collect()
        }

        async fn clock_ms(&self) -> Result<u64> {
            let read = sqlx::query_scalar(q(&self.sql.now)).fetch_one(&self.pool);
            let now: i64 = self.read("reading the store's clock", read).await?;
            to_u64("now", now)
        }

        async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
            let read = sqlx::query_as(q(&self.sql.id_spaces)).fetch_all(&self.pool);
            let rows: Vec<rows::IdSpaceRow> = self.read("reading the ID spaces", read).await?;
            rows.into_iter().map(rows::id_space).collect()
        }

        async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
            let call = self.record_id_space_now(record, hwm_bound_ms);
            bounded(self.timeout, "recording the ID space", call).await
        }

        async fn store_set(&self) -> Result<Option<SetMembership>> {
            let what = "reading the store-set record";
            let read = sqlx::query_as::<_, rows::StoreSetRow>(q(&self.sql.store_set))
                .fetch_optional(&self.pool);
            self.read(what, read)
                .await?
                .map(rows::membership)
                .transpose()
        }

        async fn join_store_set(&self, set_id: &str, partition: Partition) -> Result<SetMembership> {
            let call = self.join_store_set_now(set_id, partition);
            bounded(self.timeout, "joining a store set", call).await
        }
    }
}
