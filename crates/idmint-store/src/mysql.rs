//! MySQL and MariaDB (and engines that speak their protocol): one database shared by every
//! idmint node.
//!
//! Atomicity: a segment is taken with one autocommitted statement,
//! `UPDATE ... SET max_id = LAST_INSERT_ID(max_id + step) ... WHERE tag = ? AND max_id <= ?`.
//! InnoDB runs it under the row's lock, and the new `max_id` comes back in the statement's own
//! OK packet (its `last_insert_id`), so no second statement, transaction or connection state is
//! involved: one round trip, atomic by construction. The statement always changes `max_id`
//! (the step is at least 1), so its affected-rows count is 1 whether the server counts matched
//! or changed rows. When a full step no longer fits, the tag's last range is taken with a
//! compare-and-set of `max_id` from the value read.
//!
//! Affected rows: sqlx-mysql 0.9 asks for `CLIENT_FOUND_ROWS` (matched rows are counted), but a
//! server may not grant it, and an `UPDATE` that writes the values a row already has then counts
//! 0. So no conditional write here trusts the count unless the write always changes the row
//! (allocate, give-back): renew, release and tag updates run in a transaction that reads the
//! row back after the `UPDATE` (under the row lock the `UPDATE` took), and decides from that.
//!
//! Acquisitions are serialized across nodes by a transaction that first locks the one row of
//! the schema table (`SELECT ... FOR UPDATE`); the lock goes with the commit or rollback, so a
//! call dropped by its timeout never leaves it behind in a pooled connection (a session lock
//! such as `GET_LOCK` would). The lease rows the choice rests on are read with locking reads
//! (`FOR UPDATE`), which see the latest committed rows whatever the isolation level or the
//! engine's snapshot rules (TiDB takes its snapshot at `BEGIN`, before the lock), and the choice
//! is made from them in Rust.
//!
//! Migrations: MySQL's DDL is not transactional, so every statement is idempotent
//! (`CREATE TABLE IF NOT EXISTS`, indexes inside it), and migrations are serialized by
//! `GET_LOCK` on a connection of their own, closed afterwards (which frees the lock in any
//! case).
//!
//! Durability: `innodb_flush_log_at_trx_commit` must be 1, and when binary logging is on,
//! `sync_binlog` must be 1 too: with the binary log, a commit is only durable once it is in the
//! synced binlog (crash recovery rolls back transactions the binlog lacks). Tables are InnoDB,
//! named explicitly. Expiry is judged by the server's clock (`UTC_TIMESTAMP(6)`, independent of
//! the session's time zone, and past 2038).

use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::clock::duration_ms;
use idmint_core::id_space::{check_lease_space, check_record};
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Renewal, SegmentStore, TagInfo, TagSettings, TagUpdate,
    WorkerLeases, MAX_SEGMENT_ID,
};
use idmint_core::{IdSpaceRecord, Tag};
use sqlx::mysql::{
    MySql, MySqlConnectOptions, MySqlConnection, MySqlDatabaseError, MySqlPool, MySqlPoolOptions,
    MySqlRow,
};
use sqlx::{AssertSqlSafe, Connection, Row, Transaction};

use crate::bounded::{bounded, sql_error, to_i64, to_u64};
use crate::location::Location;
use crate::rows;
use crate::schema::{self, ID_SPACE_COLUMNS};
use crate::{Error, Result, StoreOptions};

/// The store's clock, in ms since the Unix epoch: the server's UTC wall clock, by calendar
/// arithmetic (not `UNIX_TIMESTAMP`, which depends on the session's time zone and stops at 2038
/// on older servers).
const NOW: &str =
    "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS SIGNED)";

/// Connections per store: enough for the segment refills of many tags at once and a lease
/// renewal, few enough that a fleet of nodes stays far below `max_connections`.
const MAX_CONNECTIONS: u32 = 8;

/// The longest node name the lease table holds, in bytes (host and pod names are at most 253).
const MAX_NODE_NAME: usize = 255;

/// The statements, with the namespace's table names filled in once at open.
#[derive(Debug)]
struct Statements {
    /// Takes a range: step, tag, the largest `max_id` that still fits. The new `max_id` comes
    /// back as the statement's `last_insert_id`.
    allocate: Arc<str>,
    /// A tag's `max_id`, when a full step did not fit (absent for an unknown tag).
    max_id: Arc<str>,
    /// Compare-and-set of `max_id` (new, tag, expected): gives a tail back, or takes a tag's
    /// last range.
    give_back: Arc<str>,
    /// Creates a tag (a duplicate key error when it exists).
    create_tag: Arc<str>,
    /// Changes step and/or description.
    update_tag: Arc<str>,
    /// One tag's row.
    tag_info: Arc<str>,
    /// Every tag's row, in byte order of the name.
    list_tags: Arc<str>,
    /// The store's clock.
    now: Arc<str>,
    /// Locks the schema row: serializes acquisitions.
    lock: Arc<str>,
    /// Holder and expiry of one worker ID, with a locking read.
    lease_row: Arc<str>,
    /// Every lease row below the worker count, with a locking read.
    worker_rows: Arc<str>,
    /// Takes a worker ID with a new token: worker ID, node, expiry, node, expiry.
    take_worker: Arc<str>,
    /// The token and HWM of a worker ID, after taking it.
    taken_worker: Arc<str>,
    /// Extends a lease and raises its HWM, if the token holds.
    renew: Arc<str>,
    /// Frees a worker ID with its final HWM, if the token holds.
    release: Arc<str>,
    /// HWM and expiry of a worker ID, if the token holds it.
    held_lease: Arc<str>,
    /// Every lease row.
    list_leases: Arc<str>,
    /// The schema version the database holds.
    schema_version: Arc<str>,
    /// The newest ID-space version (NULL when none), with a locking read.
    newest_space: Arc<str>,
    /// Every ID-space record, oldest first.
    id_spaces: Arc<str>,
    /// Whether each lease is live, and its HWM, with a locking read.
    lease_summary: Arc<str>,
    /// Moves every worker ID's token on (an ID-space change fences every holder).
    move_tokens_on: Arc<str>,
    /// Inserts an ID-space record, stamped with the store's clock.
    record_space: Arc<str>,
}

impl Statements {
    /// Builds every statement for namespace `ns` (validated: `[a-z0-9_]{1,32}`).
    fn new(ns: &str) -> Self {
        let s = format!("{ns}_segments");
        let w = format!("{ns}_workers");
        let tag_columns = "tag, max_id, step, description, updated_at_ms";
        let sql = |text: String| Arc::<str>::from(text);
        Self {
            allocate: sql(format!(
                "UPDATE {s} SET max_id = LAST_INSERT_ID(max_id + ?), updated_at_ms = {NOW} \
                 WHERE tag = ? AND max_id <= ?"
            )),
            max_id: sql(format!("SELECT max_id FROM {s} WHERE tag = ?")),
            give_back: sql(format!(
                "UPDATE {s} SET max_id = ?, updated_at_ms = {NOW} WHERE tag = ? AND max_id = ?"
            )),
            create_tag: sql(format!(
                "INSERT INTO {s} ({tag_columns}) VALUES (?, ?, ?, ?, {NOW})"
            )),
            update_tag: sql(format!(
                "UPDATE {s} SET step = COALESCE(?, step), description = COALESCE(?, description), \
                 updated_at_ms = {NOW} WHERE tag = ?"
            )),
            tag_info: sql(format!("SELECT {tag_columns} FROM {s} WHERE tag = ?")),
            list_tags: sql(format!("SELECT {tag_columns} FROM {s} ORDER BY tag")),
            now: sql(format!("SELECT {NOW}")),
            lock: sql(format!(
                "SELECT version FROM {ns}_schema WHERE id = 1 FOR UPDATE"
            )),
            lease_row: sql(format!(
                "SELECT node_name, expires_at_ms FROM {w} WHERE worker_id = ? FOR UPDATE"
            )),
            worker_rows: sql(format!(
                "SELECT worker_id, node_name, expires_at_ms FROM {w} WHERE worker_id < ? \
                 ORDER BY worker_id FOR UPDATE"
            )),
            take_worker: sql(format!(
                "INSERT INTO {w} (worker_id, node_name, token, hwm_ms, expires_at_ms) \
                 VALUES (?, ?, 1, 0, ?) ON DUPLICATE KEY UPDATE \
                 node_name = ?, token = token + 1, expires_at_ms = ?"
            )),
            taken_worker: sql(format!(
                "SELECT token, hwm_ms FROM {w} WHERE worker_id = ? FOR UPDATE"
            )),
            renew: sql(format!(
                "UPDATE {w} SET hwm_ms = GREATEST(hwm_ms, ?), expires_at_ms = {NOW} + ? \
                 WHERE worker_id = ? AND token = ?"
            )),
            release: sql(format!(
                "UPDATE {w} SET hwm_ms = ?, expires_at_ms = 0 \
                 WHERE worker_id = ? AND token = ?"
            )),
            held_lease: sql(format!(
                "SELECT hwm_ms, expires_at_ms FROM {w} WHERE worker_id = ? AND token = ? \
                 FOR UPDATE"
            )),
            list_leases: sql(format!(
                "SELECT worker_id, node_name, expires_at_ms, hwm_ms, expires_at_ms > {NOW} \
                 FROM {w} ORDER BY worker_id"
            )),
            schema_version: sql(format!("SELECT version FROM {ns}_schema WHERE id = 1")),
            newest_space: sql(format!(
                "SELECT MAX(version) FROM {ns}_id_spaces FOR UPDATE"
            )),
            id_spaces: sql(format!(
                "SELECT {ID_SPACE_COLUMNS} FROM {ns}_id_spaces ORDER BY version"
            )),
            lease_summary: sql(format!(
                "SELECT expires_at_ms > {NOW}, hwm_ms FROM {w} FOR UPDATE"
            )),
            move_tokens_on: sql(format!("UPDATE {w} SET token = token + 1")),
            record_space: sql(format!(
                "INSERT INTO {ns}_id_spaces ({ID_SPACE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, {NOW})"
            )),
        }
    }
}

/// The schema, per version (see [`schema`]). Every statement is idempotent: MySQL commits DDL
/// at once, so a migration cut short is simply run again. Tags are ASCII, compared and sorted
/// byte-wise (`ascii_bin`: case-sensitive); node names are bytes, compared exactly.
fn migration(ns: &str, version: i64) -> Vec<String> {
    match version {
        1 => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_segments (\
                 tag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, \
                 max_id BIGINT NOT NULL, step BIGINT NOT NULL, \
                 description TEXT CHARACTER SET utf8mb4 NOT NULL, \
                 updated_at_ms BIGINT NOT NULL) ENGINE=InnoDB"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_workers (worker_id BIGINT NOT NULL PRIMARY KEY, \
                 node_name VARBINARY({MAX_NODE_NAME}) NOT NULL, token BIGINT NOT NULL, \
                 hwm_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL, \
                 INDEX {ns}_workers_node (node_name)) ENGINE=InnoDB"
            ),
        ],
        2 => vec![format!(
            "CREATE TABLE IF NOT EXISTS {ns}_id_spaces (version BIGINT NOT NULL PRIMARY KEY, \
             layout VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
             epoch_ms BIGINT NOT NULL, datacenter BIGINT NOT NULL, \
             issues_from_ms BIGINT NOT NULL, first_id BIGINT NOT NULL, \
             recorded_at_ms BIGINT NOT NULL) ENGINE=InnoDB"
        )],
        _ => Vec::new(),
    }
}

/// The name of the `GET_LOCK` lock that serializes migrations of a namespace (server-wide, so
/// the same namespace in two databases of one server shares it: harmless, migrations are rare).
fn migration_lock(ns: &str) -> String {
    format!("idmint_{ns}_schema")
}

/// Wraps a statement built at open from the validated namespace (`[a-z0-9_]`): no input of
/// callers ever reaches SQL text, only bind parameters.
fn q(sql: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(sql))
}

/// MySQL error numbers that mean "not now" rather than "never": too many connections (1040),
/// server shutdown (1053), lock wait timeout (1205), deadlock (1213), query interrupted (1317),
/// connection killed (MariaDB 1927), statement time limits (MariaDB 1969, MySQL 3024), and a
/// client disconnected for inactivity (MySQL 4031).
const TRANSIENT_ERRORS: [u16; 9] = [1040, 1053, 1205, 1213, 1317, 1927, 1969, 3024, 4031];

/// MySQL error numbers that mean the stored data is damaged: a table's index file is broken
/// (`ER_NOT_KEYFILE`, 1034), a table is marked as crashed (`ER_CRASHED_ON_USAGE`, 1194;
/// `ER_CRASHED_ON_REPAIR`, 1195), an index is corrupted (`ER_INDEX_CORRUPT`, 1712). The same
/// numbers in MySQL and MariaDB.
const CORRUPTION_ERRORS: [u16; 4] = [1034, 1194, 1195, 1712];

/// Maps a driver error like [`sql_error`], also treating as retryable the MySQL errors of
/// [`TRANSIENT_ERRORS`] and as corrupt those of [`CORRUPTION_ERRORS`] (MySQL reports most of
/// them under the generic SQLSTATE `HY000`, so they are told apart by number).
fn my_error(what: &str, error: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &error {
        if let Some(my) = db.try_downcast_ref::<MySqlDatabaseError>() {
            if TRANSIENT_ERRORS.contains(&my.number()) {
                return Error::StoreUnavailable(format!("{what}: {db}"));
            }
            if CORRUPTION_ERRORS.contains(&my.number()) {
                return Error::StoreCorrupt(format!("{what}: {db}"));
            }
        }
    }
    sql_error(what, error)
}

/// Why a server with these settings cannot promise that a committed write survives a crash,
/// if it cannot.
fn durability_problem(
    flush_log_at_trx_commit: i64,
    log_bin: i64,
    sync_binlog: i64,
) -> Option<String> {
    if flush_log_at_trx_commit == 1 && (log_bin == 0 || sync_binlog == 1) {
        return None;
    }
    let binlog = if log_bin == 0 {
        "binary log off".to_owned()
    } else {
        format!("binary log on with sync_binlog={sync_binlog}")
    };
    Some(format!(
        "runs with innodb_flush_log_at_trx_commit={flush_log_at_trx_commit}, {binlog}; idmint \
         needs innodb_flush_log_at_trx_commit=1 (and sync_binlog=1 when the binary log is on) \
         so a crash cannot reissue IDs"
    ))
}

/// [`SegmentStore`] and [`WorkerLeases`] on one MySQL or MariaDB database.
#[derive(Debug)]
pub(crate) struct MysqlStore {
    /// The connection pool (reconnects by itself).
    pool: MySqlPool,
    /// The statements of this namespace.
    sql: Statements,
    /// The bound of every call.
    timeout: Duration,
    /// The URL with its password hidden.
    display: String,
}

impl MysqlStore {
    /// Connects, checks durability, creates or migrates the schema.
    pub(crate) async fn open(location: &Location, options: &StoreOptions) -> Result<Self> {
        let connect =
            MySqlConnectOptions::from_str(&location.url).map_err(|e| Error::InvalidArgument {
                name: "store",
                reason: format!("`{}`: {e}", location.display),
            })?;
        let unreachable = |e: sqlx::Error| {
            let reason = match e {
                sqlx::Error::PoolTimedOut => format!(
                    "no connection within {:?} (is the server up and reachable?)",
                    options.call_timeout
                ),
                other => other.to_string(),
            };
            Error::StoreUnavailable(format!("cannot open {}: {reason}", location.display))
        };
        let pool = MySqlPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(options.call_timeout)
            .connect_with(connect.clone())
            .await
            .map_err(unreachable)?;
        let store = Self {
            pool,
            sql: Statements::new(&options.namespace),
            timeout: options.call_timeout,
            display: location.display.clone(),
        };
        bounded(
            store.timeout,
            "checking durability",
            store.check_durability(options.allow_non_durable),
        )
        .await?;
        bounded(
            store.timeout,
            "migrating the schema",
            store.migrate(&connect, &options.namespace),
        )
        .await?;
        Ok(store)
    }

    /// Refuses a server that acknowledges commits before they are on disk, unless allowed.
    async fn check_durability(&self, allow: bool) -> Result<()> {
        let what = format!("checking durability of {}", self.display);
        let (flush, log_bin, sync_binlog): (i64, i64, i64) = sqlx::query_as(
            "SELECT CAST(@@innodb_flush_log_at_trx_commit AS SIGNED), \
             CAST(@@log_bin AS SIGNED), CAST(@@sync_binlog AS SIGNED)",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(|e| my_error(&what, e))?;
        let Some(problem) = durability_problem(flush, log_bin, sync_binlog) else {
            return Ok(());
        };
        let problem = format!("{} {problem}", self.display);
        if allow {
            tracing::warn!("{problem} (accepted: durability checks are switched off)");
            return Ok(());
        }
        Err(Error::StoreInvalid(problem))
    }

    /// Creates or upgrades the schema under a `GET_LOCK` lock held by a connection of its own
    /// (so two nodes opening a new database at once do not race), closed at the end: even a
    /// migration cut short by the timeout frees the lock with its connection.
    async fn migrate(&self, connect: &MySqlConnectOptions, ns: &str) -> Result<()> {
        let what = format!("migrating the schema of {}", self.display);
        let err = |e| my_error(&what, e);
        let mut conn = MySqlConnection::connect_with(connect)
            .await
            .map_err(|e| Error::StoreUnavailable(format!("cannot open {}: {e}", self.display)))?;
        let wait_s = i64::try_from(self.timeout.as_secs().saturating_add(1)).unwrap_or(i64::MAX);
        let locked: Option<i64> = sqlx::query_scalar("SELECT CAST(GET_LOCK(?, ?) AS SIGNED)")
            .bind(migration_lock(ns))
            .bind(wait_s)
            .fetch_one(&mut conn)
            .await
            .map_err(err)?;
        if locked != Some(1) {
            return Err(Error::StoreUnavailable(format!(
                "{what}: another node holds the migration lock"
            )));
        }
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INT NOT NULL PRIMARY KEY, \
             version BIGINT NOT NULL) ENGINE=InnoDB"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(&mut conn)
            .await
            .map_err(err)?;
        let current: Option<i64> = sqlx::query_scalar(q(&self.sql.schema_version))
            .fetch_optional(&mut conn)
            .await
            .map_err(err)?;
        for version in schema::plan(current.unwrap_or(0), &self.display)? {
            for statement in migration(ns, version) {
                sqlx::query(AssertSqlSafe(statement))
                    .execute(&mut conn)
                    .await
                    .map_err(err)?;
            }
            let record = format!(
                "INSERT INTO {ns}_schema (id, version) VALUES (1, ?) \
                 ON DUPLICATE KEY UPDATE version = ?"
            );
            sqlx::query(AssertSqlSafe(record))
                .bind(version)
                .bind(version)
                .execute(&mut conn)
                .await
                .map_err(err)?;
        }
        sqlx::query("SELECT RELEASE_LOCK(?)")
            .bind(migration_lock(ns))
            .execute(&mut conn)
            .await
            .map_err(err)?;
        conn.close().await.map_err(err)
    }

    /// A transaction on a pooled connection.
    async fn begin(&self, what: &str) -> Result<Transaction<'static, MySql>> {
        self.pool.begin().await.map_err(|e| my_error(what, e))
    }

    /// Takes a range, in one statement whose OK packet carries the new `max_id`.
    async fn allocate_now(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| my_error("allocating a segment", e);
        // `max_id` lives in a signed BIGINT, so it stops at MAX_SEGMENT_ID: the last range ends
        // there (the ID MAX_SEGMENT_ID itself is never handed out) and the statement refuses a
        // range past it cleanly instead of failing on an out-of-range value.
        let limit = to_i64("limit", MAX_SEGMENT_ID.saturating_sub(step))?;
        let done = sqlx::query(q(&self.sql.allocate))
            .bind(to_i64("step", step)?)
            .bind(tag.as_str())
            .bind(limit)
            .execute(&self.pool)
            .await
            .map_err(err)?;
        if done.rows_affected() != 1 {
            return self.allocate_rest(tag, step).await;
        }
        let end = done.last_insert_id();
        let start = end
            .checked_sub(step)
            .filter(|start| *start > 0)
            .ok_or_else(|| {
                Error::StoreInvalid(format!(
                    "allocating from tag `{tag}`: the server reported max_id {end}"
                ))
            })?;
        Ok(start..end)
    }

    /// When a full step did not fit (or the tag is unknown): the tag's last range,
    /// `[max_id, MAX_SEGMENT_ID)`, taken with a compare-and-set of `max_id` from the value
    /// read, so it is ours only if nobody moved `max_id` in between (racing nodes never get
    /// overlapping ranges); read again when somebody did. Each failed round means another
    /// allocation succeeded, and the call's timeout bounds the whole. The compare-and-set
    /// always changes the row (the range is never empty), so its affected-rows count is
    /// trustworthy.
    async fn allocate_rest(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| my_error("allocating the end of a tag", e);
        loop {
            let max_id: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
                .bind(tag.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(err)?;
            let max_id = max_id.ok_or_else(|| Error::UnknownTag(tag.to_string()))?;
            let range = rows::range_from(tag, to_u64("max_id", max_id)?, step)?;
            // The give-back statement is a compare-and-set of `max_id`; here it moves it up.
            let moved = sqlx::query(q(&self.sql.give_back))
                .bind(to_i64("end", range.end)?)
                .bind(tag.as_str())
                .bind(max_id)
                .execute(&self.pool)
                .await
                .map_err(err)?
                .rows_affected();
            if moved == 1 {
                return Ok(range);
            }
        }
    }

    /// Chooses and takes a worker ID in one transaction that holds the schema row's lock.
    /// Every row the choice rests on is read with a locking read, so the choice sees the
    /// latest committed rows whatever the isolation level or the engine's snapshot rules, and
    /// nobody changes them (renewals included) until the commit.
    async fn acquire_now(&self, request: &LeaseRequest) -> Result<Lease> {
        let what = "acquiring a worker ID";
        let err = |e| my_error(what, e);
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
        let mut tx = self.begin(what).await?;
        let locked: Option<i64> = sqlx::query_scalar(q(&self.sql.lock))
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
        if locked.is_none() {
            return Err(Error::StoreInvalid(format!(
                "{what}: the schema table of {} has no version row",
                self.display
            )));
        }
        let newest: Option<i64> = sqlx::query_scalar(q(&self.sql.newest_space))
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        check_lease_space(request.id_space, rows::version(newest)?)?;
        let now: i64 = sqlx::query_scalar(q(&self.sql.now))
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        let worker_id = match static_id {
            Some(id) => {
                let holder: Option<(Vec<u8>, i64)> = sqlx::query_as(q(&self.sql.lease_row))
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err)?;
                let holder = holder
                    .as_ref()
                    .map(|(node, expires)| (node.as_slice(), *expires));
                rows::refuse_if_held(id, holder, &request.node_name, now)?;
                id
            }
            None => {
                let rows: Vec<(i64, Vec<u8>, i64)> = sqlx::query_as(q(&self.sql.worker_rows))
                    .bind(count)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(err)?;
                rows::pick_worker(&rows, &request.node_name, now, count)?
            }
        };
        let expires = now.saturating_add(ttl);
        sqlx::query(q(&self.sql.take_worker))
            .bind(worker_id)
            .bind(&request.node_name)
            .bind(expires)
            .bind(&request.node_name)
            .bind(expires)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let (token, hwm): (i64, i64) = sqlx::query_as(q(&self.sql.taken_worker))
            .bind(worker_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        rows::lease(worker_id, token, hwm, expires)
    }

    /// Runs a lease write conditioned on the token, then reads the row back in the same
    /// transaction: the row's HWM and expiry if the token still holds it, else
    /// [`Error::LeaseLost`]. Never trusts the affected-rows count (see the module's doc).
    async fn fenced_write(
        &self,
        what: &str,
        lease: &Lease,
        statement: &Arc<str>,
        hwm_ms: u64,
        ttl_ms: Option<u64>,
    ) -> Result<(u64, u64)> {
        let err = |e| my_error(what, e);
        let worker_id = to_i64("worker_id", lease.worker_id)?;
        let token = to_i64("token", lease.token.0)?;
        let mut tx = self.begin(what).await?;
        let mut write = sqlx::query(q(statement)).bind(to_i64("hwm_ms", hwm_ms)?);
        if let Some(ttl_ms) = ttl_ms {
            write = write.bind(to_i64("ttl", ttl_ms)?);
        }
        write
            .bind(worker_id)
            .bind(token)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let row: Option<(i64, i64)> = sqlx::query_as(q(&self.sql.held_lease))
            .bind(worker_id)
            .bind(token)
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        let (hwm, expires) = row.ok_or(Error::LeaseLost {
            worker_id: lease.worker_id,
        })?;
        Ok((to_u64("hwm_ms", hwm)?, to_u64("expires_at_ms", expires)?))
    }
}

/// A tag row as [`TagInfo`].
fn tag_info(row: &MySqlRow) -> Result<TagInfo> {
    let err = |e| my_error("reading a tag", e);
    rows::tag_info(
        row.try_get(0).map_err(err)?,
        row.try_get(1).map_err(err)?,
        row.try_get(2).map_err(err)?,
        row.try_get(3).map_err(err)?,
        row.try_get(4).map_err(err)?,
    )
}

#[async_trait]
impl SegmentStore for MysqlStore {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        rows::check_step(step)?;
        bounded(
            self.timeout,
            "allocating a segment",
            self.allocate_now(tag, step),
        )
        .await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        if unused.start >= unused.end {
            return Ok(false);
        }
        let call = async {
            let err = |e| my_error("giving back a segment tail", e);
            // The write always changes max_id (start < end), so changed rows = matched rows.
            let given = sqlx::query(q(&self.sql.give_back))
                .bind(to_i64("start", unused.start)?)
                .bind(tag.as_str())
                .bind(to_i64("end", unused.end)?)
                .execute(&self.pool)
                .await
                .map_err(err)?
                .rows_affected();
            if given == 1 {
                return Ok(true);
            }
            let exists: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
                .bind(tag.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(err)?;
            match exists {
                None => Err(Error::UnknownTag(tag.to_string())),
                Some(_) => Ok(false),
            }
        };
        bounded(self.timeout, "giving back a segment tail", call).await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        rows::check_step(settings.step)?;
        let call = async {
            let what = "creating a tag";
            let err = |e| my_error(what, e);
            let mut tx = self.begin(what).await?;
            let inserted = sqlx::query(q(&self.sql.create_tag))
                .bind(tag.as_str())
                .bind(to_i64("first_id", settings.first_id.max(1))?)
                .bind(to_i64("step", settings.step)?)
                .bind(&settings.description)
                .execute(&mut *tx)
                .await;
            match inserted {
                Ok(_) => {}
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                    return Err(Error::TagExists(tag.to_string()));
                }
                Err(e) => return Err(err(e)),
            }
            let row = sqlx::query(q(&self.sql.tag_info))
                .bind(tag.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)?;
            tag_info(&row)
        };
        bounded(self.timeout, "creating a tag", call).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        rows::check_step(update.step.unwrap_or(1))?;
        let call = async {
            let what = "updating a tag";
            let err = |e| my_error(what, e);
            let step = update.step.map(|s| to_i64("step", s)).transpose()?;
            let mut tx = self.begin(what).await?;
            sqlx::query(q(&self.sql.update_tag))
                .bind(step)
                .bind(update.description.as_deref())
                .bind(tag.as_str())
                .execute(&mut *tx)
                .await
                .map_err(err)?;
            // Read back rather than trust the affected-rows count (0 when nothing changed).
            let row = sqlx::query(q(&self.sql.tag_info))
                .bind(tag.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)?;
            row.as_ref()
                .map(tag_info)
                .unwrap_or_else(|| Err(Error::UnknownTag(tag.to_string())))
        };
        bounded(self.timeout, "updating a tag", call).await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let call = async {
            let row = sqlx::query(q(&self.sql.tag_info))
                .bind(tag.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| my_error("reading a tag", e))?;
            row.as_ref().map(tag_info).transpose()
        };
        bounded(self.timeout, "reading a tag", call).await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let call = async {
            let rows = sqlx::query(q(&self.sql.list_tags))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| my_error("listing tags", e))?;
            rows.iter().map(tag_info).collect()
        };
        bounded(self.timeout, "listing tags", call).await
    }
}

#[async_trait]
impl WorkerLeases for MysqlStore {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        bounded(
            self.timeout,
            "acquiring a worker ID",
            self.acquire_now(request),
        )
        .await
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let what = "renewing a worker lease";
        let call = self.fenced_write(what, lease, &self.sql.renew, hwm_ms, Some(duration_ms(ttl)));
        let (hwm_ms, expires_at_ms) = bounded(self.timeout, what, call).await?;
        Ok(Renewal {
            hwm_ms,
            expires_at_ms,
        })
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let what = "releasing a worker lease";
        let call = self.fenced_write(what, lease, &self.sql.release, final_hwm_ms, None);
        bounded(self.timeout, what, call).await.map(|_| ())
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let call = async {
            let rows: Vec<(i64, Vec<u8>, i64, i64, bool)> =
                sqlx::query_as(q(&self.sql.list_leases))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| my_error("listing worker leases", e))?;
            rows.into_iter()
                .map(|(id, node_name, expires, hwm, live)| {
                    rows::lease_info(
                        id,
                        String::from_utf8_lossy(&node_name).into_owned(),
                        expires,
                        hwm,
                        live,
                    )
                })
                .collect()
        };
        bounded(self.timeout, "listing worker leases", call).await
    }

    async fn clock_ms(&self) -> Result<u64> {
        let call = async {
            let now: i64 = sqlx::query_scalar(q(&self.sql.now))
                .fetch_one(&self.pool)
                .await
                .map_err(|e| my_error("reading the store's clock", e))?;
            to_u64("now", now)
        };
        bounded(self.timeout, "reading the store's clock", call).await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        let call = async {
            let rows: Vec<rows::IdSpaceRow> = sqlx::query_as(q(&self.sql.id_spaces))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| my_error("reading the ID spaces", e))?;
            rows.into_iter().map(rows::id_space).collect()
        };
        bounded(self.timeout, "reading the ID spaces", call).await
    }

    /// In a transaction holding the schema row's lock, like every acquisition, so no node
    /// takes a lease under the old space once the change is committed.
    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let what = "recording the ID space";
        let call = async {
            let err = |e| my_error(what, e);
            let (version, layout, epoch, datacenter, from, first) = rows::id_space_values(record)?;
            let mut tx = self.begin(what).await?;
            sqlx::query(q(&self.sql.lock))
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            let newest: Option<i64> = sqlx::query_scalar(q(&self.sql.newest_space))
                .fetch_one(&mut *tx)
                .await
                .map_err(err)?;
            // Tokens first: the update waits for any renewal in flight and fences every later
            // one, so the HWMs read next can no longer rise (rolled back with the rest when
            // the checks refuse).
            if record.version > 1 {
                sqlx::query(q(&self.sql.move_tokens_on))
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
            }
            let leases: Vec<(bool, i64)> = sqlx::query_as(q(&self.sql.lease_summary))
                .fetch_all(&mut *tx)
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
                .bind(layout)
                .bind(epoch)
                .bind(datacenter)
                .bind(from)
                .bind(first)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)
        };
        bounded(self.timeout, what, call).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn statements_name_the_namespace_tables_only() {
        let sql = Statements::new("ns_1");
        assert!(sql.allocate.contains("UPDATE ns_1_segments "));
        assert!(sql.allocate.contains("LAST_INSERT_ID(max_id + ?)"));
        assert!(sql.renew.contains("UPDATE ns_1_workers "));
        assert!(sql.lock.contains("FROM ns_1_schema ") && sql.lock.ends_with("FOR UPDATE"));
        assert!(migration("ns_1", 1).iter().all(|ddl| {
            ddl.starts_with("CREATE TABLE IF NOT EXISTS ns_1_") && ddl.ends_with("ENGINE=InnoDB")
        }));
        assert!(migration("ns_1", schema::LATEST + 1).is_empty());
        // GET_LOCK names are at most 64 characters; namespaces at most 32.
        assert!(migration_lock(&"x".repeat(32)).len() <= 64);
    }

    #[test]
    fn only_durable_settings_pass() {
        assert_eq!(durability_problem(1, 0, 0), None);
        assert_eq!(durability_problem(1, 1, 1), None);
        assert!(durability_problem(2, 0, 0)
            .is_some_and(|p| p.contains("innodb_flush_log_at_trx_commit=2")));
        assert!(durability_problem(0, 0, 1).is_some());
        assert!(durability_problem(1, 1, 0).is_some_and(|p| p.contains("sync_binlog=0")));
    }
}
