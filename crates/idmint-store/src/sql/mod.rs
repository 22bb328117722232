//! The SQL backends: both store traits written once, over a [`Dialect`] per database.
//!
//! What every SQL backend shares is the logic: a segment is one conditional `UPDATE` of the
//! tag's `max_id` (a compare-and-set takes a tag's last range), lease writes are conditioned
//! on the fencing token, and a lease acquisition reads the lease rows and writes one, under a
//! lock that serializes acquisitions (and ID-space changes) across nodes. What differs is left
//! to the dialect:
//! - the statements' SQL: the clock expression, placeholders, upserts, locking reads, and
//!   whether a write can return its row (`RETURNING`) or the row is read back in the write's
//!   transaction, under the locks the write took;
//! - how a call gets its connection ([`Access`]): SQLite runs every write in a `BEGIN
//!   IMMEDIATE` transaction, PostgreSQL takes a transaction-scoped advisory lock for
//!   acquisitions, MySQL locks the schema row;
//! - connecting, the durability checks, the schema's DDL and which driver errors mean "retry"
//!   or "damaged".
//!
//! Each dialect's module documents why its choices keep the invariants.

#[cfg(feature = "sqlite")]
mod group_commit;
mod rows;
mod statements;

#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub mod pg_function;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "postgres")]
mod quiet_parse;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::clock::duration_ms;
use idmint_core::id_space::{check_lease_space, check_record};
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Partition, Renewal, SegmentStore, SetMembership, TagInfo,
    TagSettings, TagUpdate, WorkerLeases, MAX_SEGMENT_ID,
};
use idmint_core::{IdSpaceRecord, Tag};
use sqlx::pool::PoolConnection;
use sqlx::query::Query;
use sqlx::{
    AssertSqlSafe, ColumnIndex, Connection, Database, Decode, Encode, Executor, IntoArguments,
    Pool, Row, Transaction, Type,
};

use self::statements::Statements;
use crate::bounded::{bounded, to_i64, to_u64};
use crate::schema;
use crate::{Error, Result, StoreOptions};

/// The longest node name a lease row holds, in bytes (host and pod names are at most 253).
const MAX_NODE_NAME: usize = 255;

/// What a call is about to do, which decides the connection it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// One conditional write, atomic by itself.
    Write,
    /// A write, then its row read back (where the dialect has no `RETURNING`) under the locks
    /// the write took.
    WriteThenRead,
    /// A decision from rows read, then a write: serialized across every node.
    Serialized,
    /// Creating or upgrading the schema: serialized across every node.
    Migrate,
}

/// The connection a call works on, ended by [`Session::finish`].
pub(crate) enum Session<DB: Database> {
    /// A transaction, committed at the end (rolled back if dropped).
    Tx(Transaction<'static, DB>),
    /// A pooled connection in autocommit mode.
    #[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
    Pooled(PoolConnection<DB>),
    /// A connection of its own, closed at the end (with any session state, e.g. locks).
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    Own(DB::Connection),
    /// A part of a transaction shared with other calls, committed with theirs (SQLite's
    /// `group_commit`).
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    Shared(Box<dyn SharedTx<DB>>),
}

/// A call's part of a transaction shared with other calls.
pub(crate) trait SharedTx<DB: Database>: Send {
    /// The shared connection, while the call runs.
    fn conn(&mut self) -> &mut DB::Connection;
    /// Ends the call's part; resolves once the shared transaction's commit is known.
    fn finish(
        self: Box<Self>,
    ) -> std::pin::Pin<Box<dyn Future<Output = std::result::Result<(), sqlx::Error>> + Send>>;
}

impl<DB: Database> Session<DB> {
    /// The connection to run statements on.
    fn conn(&mut self) -> &mut DB::Connection {
        match self {
            Session::Tx(tx) => tx,
            Session::Pooled(conn) => conn,
            Session::Own(conn) => conn,
            Session::Shared(part) => part.conn(),
        }
    }

    /// Commits the transaction, or gives the connection back, or closes it.
    async fn finish(self) -> std::result::Result<(), sqlx::Error> {
        match self {
            Session::Tx(tx) => tx.commit().await,
            Session::Pooled(_) => Ok(()),
            Session::Own(conn) => conn.close().await,
            Session::Shared(part) => part.finish().await,
        }
    }
}

/// What one database does its own way (see the module's doc). Statement parts are SQL text
/// with `?` placeholders, in the order the shared code binds them.
pub(crate) trait Dialect: std::fmt::Debug + Send + Sync + Sized + 'static {
    /// The sqlx driver.
    type Db: Database;
    /// The store's clock in ms since the Unix epoch, as an SQL expression.
    const NOW: &'static str;
    /// The larger of two values (`MAX` in SQLite, `GREATEST` elsewhere).
    const GREATEST: &'static str;
    /// Whether a write can return the row it wrote (`RETURNING`).
    const RETURNING: bool;
    /// Appended to the reads a serialized decision rests on (` FOR UPDATE` where a plain read
    /// could see an older snapshot than the lock).
    const LOCKING_READ: &'static str;
    /// The node name as selected, read as text.
    const NODE_NAME: &'static str = "node_name";
    /// The new `max_id` an allocation writes, with the step's placeholder.
    const NEXT_MAX_ID: &'static str = "max_id + ?";

    /// The clause that turns an `INSERT` into an upsert on the unique column `key`, followed
    /// by the assignments.
    fn upsert(key: &str) -> String;

    /// The statement with its `?` placeholders in the driver's form.
    fn placeholders(sql: String) -> String {
        sql
    }

    /// The table holding the schema's version (one row, `id` 1).
    fn schema_table(ns: &str) -> String;

    /// The statements that bring the schema from `version - 1` to `version`.
    fn migration(ns: &str, version: i64) -> Vec<String>;

    /// A driver error as a store error: unavailable, corrupt or invalid.
    fn error(what: &str, error: sqlx::Error) -> Error;

    /// The new `max_id` of an allocation without `RETURNING`, from its result: `None` when no
    /// row changed (the step does not fit, or the tag is unknown).
    fn allocated(result: &<Self::Db as Database>::QueryResult) -> Option<i64>;

    /// How many rows a write changed (trusted only for writes that always change the row).
    fn rows_affected(result: &<Self::Db as Database>::QueryResult) -> u64;

    /// The connection for `access`.
    fn session(
        &self,
        pool: &Pool<Self::Db>,
        access: Access,
    ) -> impl Future<Output = Result<Session<Self::Db>>> + Send;
}

/// [`SegmentStore`] and [`WorkerLeases`] on a SQL database.
#[derive(Debug)]
pub(crate) struct SqlStore<D: Dialect> {
    /// The connection pool (reconnects by itself).
    pool: Pool<D::Db>,
    /// What this database does its own way.
    dialect: D,
    /// The statements of this namespace.
    sql: Statements,
    /// The bound of every call.
    timeout: Duration,
    /// The URL with its password hidden.
    display: String,
}

/// Wraps a statement built at open from the validated namespace (`[a-z0-9_]`): no input of
/// callers ever reaches SQL text, only bind parameters.
fn q(sql: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(sql))
}

/// A statement with its bind values.
type Statement<DB> = Query<'static, DB, <DB as Database>::Arguments>;

impl<D: Dialect> SqlStore<D>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
    i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    Option<i64>: for<'q> Encode<'q, D::Db>,
    Option<String>: for<'q> Encode<'q, D::Db>,
    bool: for<'r> Decode<'r, D::Db> + Type<D::Db>,
{
    /// Wraps a connected and checked pool, creating or migrating the schema.
    pub(crate) async fn new(
        pool: Pool<D::Db>,
        dialect: D,
        options: &StoreOptions,
        display: &str,
    ) -> Result<Self> {
        let store = Self {
            pool,
            dialect,
            sql: Statements::new::<D>(&options.namespace),
            timeout: options.call_timeout,
            display: display.to_owned(),
        };
        let what = "migrating the schema";
        bounded(store.timeout, what, store.migrate(&options.namespace)).await?;
        Ok(store)
    }

    /// Creates or upgrades the schema, serialized with every other node doing the same.
    async fn migrate(&self, ns: &str) -> Result<()> {
        let what = format!("migrating the schema of {}", self.display);
        let err = |e| D::error(&what, e);
        let mut session = self.dialect.session(&self.pool, Access::Migrate).await?;
        sqlx::query(AssertSqlSafe(D::schema_table(ns)))
            .execute(session.conn())
            .await
            .map_err(err)?;
        let current: Option<i64> = sqlx::query_scalar(q(&self.sql.schema_version))
            .fetch_optional(session.conn())
            .await
            .map_err(err)?;
        for version in schema::plan(current.unwrap_or(0), &self.display)? {
            for statement in D::migration(ns, version) {
                sqlx::query(AssertSqlSafe(statement))
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
            }
            sqlx::query(q(&self.sql.record_version))
                .bind(version)
                .bind(version)
                .execute(session.conn())
                .await
                .map_err(err)?;
        }
        session.finish().await.map_err(err)
    }

    /// Runs `write` and gives the row it wrote: from its `RETURNING` clause, or read back with
    /// `read_back` on the same session (so under the locks the write took, when the session is
    /// a transaction). `None` when the write matched no row.
    async fn written_row(
        session: &mut Session<D::Db>,
        write: Statement<D::Db>,
        read_back: Statement<D::Db>,
    ) -> std::result::Result<Option<<D::Db as Database>::Row>, sqlx::Error> {
        let row = write.fetch_optional(session.conn()).await?;
        if D::RETURNING {
            return Ok(row);
        }
        read_back.fetch_optional(session.conn()).await
    }

    /// Takes a range: a full step with one `UPDATE`, else (the tag is near its end, or
    /// unknown) the rest.
    async fn allocate_now(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| D::error("allocating a segment", e);
        // `max_id` lives in a signed 64-bit column, so it stops at MAX_SEGMENT_ID: the last
        // range ends there (the ID MAX_SEGMENT_ID itself is never handed out), and the
        // statement refuses a range past it cleanly instead of overflowing (SQLite would turn
        // the overflow into a float).
        let limit = to_i64("limit", MAX_SEGMENT_ID.saturating_sub(step))?;
        let mut session = self.dialect.session(&self.pool, Access::Write).await?;
        let allocate = sqlx::query(q(&self.sql.allocate))
            .bind(to_i64("step", step)?)
            .bind(tag.as_str().to_owned())
            .bind(limit);
        let end = if D::RETURNING {
            let row = allocate.fetch_optional(session.conn()).await.map_err(err)?;
            row.map(|row| row.try_get::<i64, _>(0))
                .transpose()
                .map_err(err)?
        } else {
            D::allocated(&allocate.execute(session.conn()).await.map_err(err)?)
        };
        let range = match end {
            Some(end) => rows::full_step(tag, to_u64("max_id", end)?, step)?,
            None => self.allocate_rest(&mut session, tag, step).await?,
        };
        session.finish().await.map_err(err)?;
        Ok(range)
    }

    /// When a full step did not fit (or the tag is unknown): the tag's last range,
    /// `[max_id, MAX_SEGMENT_ID)`, taken with a compare-and-set of `max_id` from the value
    /// read, so it is ours only if nobody moved `max_id` in between (racing nodes never get
    /// overlapping ranges); read again when somebody did. Each failed round means another
    /// allocation succeeded, and the call's timeout bounds the whole. The compare-and-set
    /// always changes the row (the range is never empty), so its affected-rows count holds.
    async fn allocate_rest(
        &self,
        session: &mut Session<D::Db>,
        tag: &Tag,
        step: u64,
    ) -> Result<Range<u64>> {
        let err = |e| D::error("allocating the end of a tag", e);
        loop {
            let max_id: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
                .bind(tag.as_str().to_owned())
                .fetch_optional(session.conn())
                .await
                .map_err(err)?;
            let max_id = max_id.ok_or_else(|| Error::UnknownTag {
                tag: tag.to_string(),
            })?;
            let range = rows::range_from(tag, to_u64("max_id", max_id)?, step)?;
            let moved = sqlx::query(q(&self.sql.move_max_id))
                .bind(to_i64("end", range.end)?)
                .bind(tag.as_str().to_owned())
                .bind(max_id)
                .execute(session.conn())
                .await
                .map_err(err)?;
            if D::rows_affected(&moved) == 1 {
                return Ok(range);
            }
        }
    }

    /// Sets `max_id` to `new` if it is `expected` (a tail given back, or a range taken by
    /// [`SegmentStore::allocate_in`]): one conditional update. `what` names the call in errors.
    async fn compare_and_set_now(
        &self,
        tag: &Tag,
        expected: u64,
        new: u64,
        what: &'static str,
    ) -> Result<bool> {
        let err = |e| D::error(what, e);
        let mut session = self.dialect.session(&self.pool, Access::Write).await?;
        let read_max_id = async |session: &mut Session<D::Db>| {
            sqlx::query_scalar::<_, i64>(q(&self.sql.max_id))
                .bind(tag.as_str().to_owned())
                .fetch_optional(session.conn())
                .await
                .map_err(err)?
                .ok_or_else(|| Error::UnknownTag {
                    tag: tag.to_string(),
                })
        };
        let set = if expected == new {
            // Nothing to write (and MySQL would count no changed row): only compare.
            read_max_id(&mut session).await? == to_i64("expected", expected)?
        } else {
            let moved = sqlx::query(q(&self.sql.move_max_id))
                .bind(to_i64("new", new)?)
                .bind(tag.as_str().to_owned())
                .bind(to_i64("expected", expected)?)
                .execute(session.conn())
                .await
                .map_err(err)?;
            // The write changes max_id whenever it matches, so changed rows = matched rows.
            let set = D::rows_affected(&moved) == 1;
            if !set {
                read_max_id(&mut session).await?; // an unknown tag is an error, not a "no"
            }
            set
        };
        session.finish().await.map_err(err)?;
        Ok(set)
    }

    /// Inserts a tag's row, refusing a tag that exists.
    async fn create_tag_now(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        let err = |e| D::error("creating a tag", e);
        let mut session = self
            .dialect
            .session(&self.pool, Access::WriteThenRead)
            .await?;
        let insert = sqlx::query(q(&self.sql.create_tag))
            .bind(tag.as_str().to_owned())
            .bind(to_i64("first_id", settings.first_id.max(1))?)
            .bind(to_i64("step", settings.step)?)
            .bind(settings.description.clone());
        match insert.execute(session.conn()).await {
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                return Err(Error::TagExists {
                    tag: tag.to_string(),
                })
            }
            other => other.map_err(err)?,
        };
        if let Some(dating) = &settings.dating {
            sqlx::query(q(&self.sql.create_tag_dating))
                .bind(tag.as_str().to_owned())
                .bind(dating.spec())
                .execute(session.conn())
                .await
                .map_err(err)?;
        }
        // Read back with the join, in the same session, so the row has its dating.
        let row = sqlx::query(q(&self.sql.tag_info))
            .bind(tag.as_str().to_owned())
            .fetch_optional(session.conn())
            .await
            .map_err(err)?;
        session.finish().await.map_err(err)?;
        let row = row.ok_or_else(|| Error::UnknownTag {
            tag: tag.to_string(),
        })?;
        tag_info(&row, err)
    }

    /// Changes a tag's step and/or description.
    async fn update_tag_now(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        let err = |e| D::error("updating a tag", e);
        let step = update.step.map(|s| to_i64("step", s)).transpose()?;
        let mut session = self
            .dialect
            .session(&self.pool, Access::WriteThenRead)
            .await?;
        let write = sqlx::query(q(&self.sql.update_tag))
            .bind(step)
            .bind(update.description.clone())
            .bind(tag.as_str().to_owned());
        write.execute(session.conn()).await.map_err(err)?;
        let row = sqlx::query(q(&self.sql.tag_info))
            .bind(tag.as_str().to_owned())
            .fetch_optional(session.conn())
            .await
            .map_err(err)?;
        session.finish().await.map_err(err)?;
        let row = row.ok_or_else(|| Error::UnknownTag {
            tag: tag.to_string(),
        })?;
        tag_info(&row, err)
    }

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

    /// Runs a read on the pool, mapping its error.
    async fn read<T>(
        &self,
        what: &str,
        read: impl Future<Output = std::result::Result<T, sqlx::Error>>,
    ) -> Result<T> {
        bounded(self.timeout, what, async {
            read.await.map_err(|e| D::error(what, e))
        })
        .await
    }
}

/// A tag row, joined with its dating (the `tag_info` statement's columns), as [`TagInfo`].
fn tag_info<R: Row>(row: &R, err: impl Fn(sqlx::Error) -> Error) -> Result<TagInfo>
where
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let mut info = rows::tag_info(
        row.try_get(0).map_err(&err)?,
        row.try_get(1).map_err(&err)?,
        row.try_get(2).map_err(&err)?,
        row.try_get(3).map_err(&err)?,
        row.try_get(4).map_err(&err)?,
    )?;
    let dating: Option<String> = row.try_get(5).map_err(&err)?;
    info.dating = dating.as_deref().map(rows::dating).transpose()?;
    Ok(info)
}

#[async_trait]
impl<D: Dialect> SegmentStore for SqlStore<D>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
    i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    Option<i64>: for<'q> Encode<'q, D::Db>,
    Option<String>: for<'q> Encode<'q, D::Db>,
    bool: for<'r> Decode<'r, D::Db> + Type<D::Db>,
{
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        rows::check_step(step)?;
        let call = self.allocate_now(tag, step);
        bounded(self.timeout, "allocating a segment", call).await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        if unused.start >= unused.end {
            return Ok(false);
        }
        let what = "giving back a segment tail";
        let call = self.compare_and_set_now(tag, unused.end, unused.start, what);
        bounded(self.timeout, what, call).await
    }

    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
        let what = "moving a tag's max_id";
        let call = self.compare_and_set_now(tag, expected, new, what);
        bounded(self.timeout, what, call).await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        rows::check_step(settings.step)?;
        let call = self.create_tag_now(tag, settings);
        bounded(self.timeout, "creating a tag", call).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        rows::check_step(update.step.unwrap_or(1))?;
        let call = self.update_tag_now(tag, update);
        bounded(self.timeout, "updating a tag", call).await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let what = "reading a tag";
        let read = sqlx::query(q(&self.sql.tag_info))
            .bind(tag.as_str().to_owned())
            .fetch_optional(&self.pool);
        let row = self.read(what, read).await?;
        row.as_ref()
            .map(|row| tag_info(row, |e| D::error(what, e)))
            .transpose()
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let what = "listing tags";
        let read = sqlx::query(q(&self.sql.list_tags)).fetch_all(&self.pool);
        let rows = self.read(what, read).await?;
        rows.iter()
            .map(|row| tag_info(row, |e| D::error(what, e)))
            .collect()
    }
}

#[async_trait]
impl<D: Dialect> WorkerLeases for SqlStore<D>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
    i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    Option<i64>: for<'q> Encode<'q, D::Db>,
    Option<String>: for<'q> Encode<'q, D::Db>,
    bool: for<'r> Decode<'r, D::Db> + Type<D::Db>,
{
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

/// Refuses a store that cannot promise durability (`problem` says why), unless the operator
/// allowed it: then a warning, since a crash may reissue IDs.
fn refuse_unless_allowed(problem: String, allow: bool) -> Result<()> {
    if allow {
        tracing::warn!("{problem} (accepted: durability checks are switched off)");
        return Ok(());
    }
    Err(Error::store_invalid(problem))
}

/// The refusal of a database server that could not be reached at open.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn unreachable(location: &crate::Location, options: &StoreOptions, error: sqlx::Error) -> Error {
    let cannot_open = format!("cannot open {}", location.display);
    match error {
        sqlx::Error::PoolTimedOut => Error::store_unavailable(format!(
            "{cannot_open}: no connection within {:?} (is the server up and reachable?)",
            options.call_timeout
        )),
        other => Error::store_unavailable(cannot_open).caused_by(other),
    }
}
