//! PostgreSQL: one database shared by every idmint node.
//!
//! Atomicity: a segment is taken with one `UPDATE ... SET max_id = max_id + step ... RETURNING`,
//! which PostgreSQL runs under the row's lock, so concurrent allocations on one tag queue behind
//! each other and never see the same `max_id`. When a full step no longer fits, the tag's last
//! range is taken with a compare-and-set of `max_id` from the value read. Lease writes are single statements conditioned on
//! the fencing token. A lease acquisition reads the lease table and then writes one row, so it is
//! serialized across nodes: it runs in a transaction that first takes a transaction-scoped
//! advisory lock derived from the namespace (`pg_advisory_xact_lock`), released by the commit or
//! rollback, never left behind by a dropped call. The transaction is explicitly
//! `READ COMMITTED` (whatever the server's default), so each statement after the lock sees every
//! earlier acquisition, which committed before releasing it.
//! Migrations run under the same lock, in one transaction (PostgreSQL's DDL is transactional),
//! so two nodes starting at once do not race.
//!
//! Durability: `synchronous_commit` must not be `off` and `fsync` must be `on`, checked at open.
//! Expiry is judged by the server's clock (`clock_timestamp()`).

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
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, Postgres, Row, Transaction};

use crate::bounded::{bounded, sql_error, to_i64, to_u64};
use crate::location::Location;
use crate::rows;
use crate::schema::{self, ID_SPACE_COLUMNS};
use crate::{Error, Result, StoreOptions};

/// The store's clock, in ms since the Unix epoch: the server's wall clock at the moment of
/// evaluation (`clock_timestamp()`, not the transaction's start like `now()`).
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// Connections per store: enough for the segment refills of many tags at once and a lease
/// renewal, few enough that a fleet of nodes stays far below `max_connections`.
const MAX_CONNECTIONS: u32 = 8;

/// The statements, with the namespace's table names filled in once at open.
#[derive(Debug)]
struct Statements {
    /// Takes a range: `$1` step, `$2` tag, `$3` the largest `max_id` that still fits.
    allocate: Arc<str>,
    /// A tag's `max_id`, when a full step did not fit (absent for an unknown tag).
    max_id: Arc<str>,
    /// Compare-and-set of `max_id` (`$1` new, `$2` tag, `$3` expected): gives a tail back, or
    /// takes a tag's last range.
    give_back: Arc<str>,
    /// Creates a tag unless it exists, returning the new row.
    create_tag: Arc<str>,
    /// Changes step and/or description, returning the row.
    update_tag: Arc<str>,
    /// One tag's row.
    tag_info: Arc<str>,
    /// Every tag's row, in byte order of the name.
    list_tags: Arc<str>,
    /// The store's clock.
    now: Arc<str>,
    /// The transaction-scoped advisory lock that serializes acquisitions and migrations.
    lock: Arc<str>,
    /// Holder and expiry of one worker ID.
    lease_row: Arc<str>,
    /// The asking node's expired previous worker ID.
    worker_rows: Arc<str>,
    /// Takes a worker ID with a new token, returning the token and the stored HWM.
    take_worker: Arc<str>,
    /// Extends a lease and raises its HWM, if the token holds.
    renew: Arc<str>,
    /// Frees a worker ID with its final HWM, if the token holds.
    release: Arc<str>,
    /// Every lease row.
    list_leases: Arc<str>,
    /// The schema version the database holds.
    schema_version: Arc<str>,
    /// The newest ID-space version (NULL when none).
    newest_space: Arc<str>,
    /// Every ID-space record, oldest first.
    id_spaces: Arc<str>,
    /// How many leases are live, and the highest HWM of any worker ID.
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
                "UPDATE {s} SET max_id = max_id + $1, updated_at_ms = {NOW} \
                 WHERE tag = $2 AND max_id <= $3 RETURNING max_id"
            )),
            max_id: sql(format!("SELECT max_id FROM {s} WHERE tag = $1")),
            give_back: sql(format!(
                "UPDATE {s} SET max_id = $1, updated_at_ms = {NOW} WHERE tag = $2 AND max_id = $3"
            )),
            create_tag: sql(format!(
                "INSERT INTO {s} ({tag_columns}) VALUES ($1, $2, $3, $4, {NOW}) \
                 ON CONFLICT (tag) DO NOTHING RETURNING {tag_columns}"
            )),
            update_tag: sql(format!(
                "UPDATE {s} SET step = COALESCE($1, step), description = COALESCE($2, description), \
                 updated_at_ms = {NOW} WHERE tag = $3 RETURNING {tag_columns}"
            )),
            tag_info: sql(format!("SELECT {tag_columns} FROM {s} WHERE tag = $1")),
            list_tags: sql(format!("SELECT {tag_columns} FROM {s} ORDER BY tag")),
            now: sql(format!("SELECT {NOW}")),
            lock: sql("SELECT pg_advisory_xact_lock($1)".to_owned()),
            lease_row: sql(format!(
                "SELECT node_name, expires_at_ms FROM {w} WHERE worker_id = $1"
            )),
            worker_rows: sql(format!(
                "SELECT worker_id, node_name, expires_at_ms FROM {w} WHERE worker_id < $1 \
                 ORDER BY worker_id"
            )),
            take_worker: sql(format!(
                "INSERT INTO {w} (worker_id, node_name, token, hwm_ms, expires_at_ms) \
                 VALUES ($1, $2, 1, 0, $3) ON CONFLICT (worker_id) DO UPDATE SET \
                 node_name = EXCLUDED.node_name, token = {w}.token + 1, \
                 expires_at_ms = EXCLUDED.expires_at_ms RETURNING token, hwm_ms"
            )),
            renew: sql(format!(
                "UPDATE {w} SET hwm_ms = GREATEST(hwm_ms, $1), expires_at_ms = {NOW} + $2 \
                 WHERE worker_id = $3 AND token = $4 RETURNING hwm_ms, expires_at_ms"
            )),
            release: sql(format!(
                "UPDATE {w} SET hwm_ms = $1, expires_at_ms = 0 \
                 WHERE worker_id = $2 AND token = $3"
            )),
            list_leases: sql(format!(
                "SELECT worker_id, node_name, expires_at_ms, hwm_ms, expires_at_ms > {NOW} \
                 FROM {w} ORDER BY worker_id"
            )),
            schema_version: sql(format!("SELECT version FROM {ns}_schema WHERE id = 1")),
            newest_space: sql(format!("SELECT MAX(version) FROM {ns}_id_spaces")),
            id_spaces: sql(format!(
                "SELECT {ID_SPACE_COLUMNS} FROM {ns}_id_spaces ORDER BY version"
            )),
            lease_summary: sql(format!(
                "SELECT COUNT(*) FILTER (WHERE expires_at_ms > {NOW}), \
                 COALESCE(MAX(hwm_ms), 0)::BIGINT FROM {w}"
            )),
            move_tokens_on: sql(format!("UPDATE {w} SET token = token + 1")),
            record_space: sql(format!(
                "INSERT INTO {ns}_id_spaces ({ID_SPACE_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, {NOW})"
            )),
        }
    }
}

/// The schema, per version (see [`schema`]). Tags compare and sort byte-wise (`COLLATE "C"`),
/// whatever the database's locale.
fn migration(ns: &str, version: i64) -> Vec<String> {
    match version {
        1 => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_segments (tag TEXT COLLATE \"C\" PRIMARY KEY, \
                 max_id BIGINT NOT NULL, step BIGINT NOT NULL, \
                 description TEXT NOT NULL DEFAULT '', updated_at_ms BIGINT NOT NULL)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_workers (worker_id BIGINT PRIMARY KEY, \
                 node_name TEXT NOT NULL, token BIGINT NOT NULL, hwm_ms BIGINT NOT NULL, \
                 expires_at_ms BIGINT NOT NULL)"
            ),
            format!("CREATE INDEX IF NOT EXISTS {ns}_workers_node ON {ns}_workers (node_name)"),
        ],
        2 => vec![format!(
            "CREATE TABLE IF NOT EXISTS {ns}_id_spaces (version BIGINT PRIMARY KEY, \
             layout TEXT NOT NULL, epoch_ms BIGINT NOT NULL, datacenter BIGINT NOT NULL, \
             issues_from_ms BIGINT NOT NULL, first_id BIGINT NOT NULL, \
             recorded_at_ms BIGINT NOT NULL)"
        )],
        _ => Vec::new(),
    }
}

/// The advisory lock key of a namespace: a 64-bit FNV-1a hash, stable across builds and
/// platforms. Another namespace (or application) hashing to the same key only shares the
/// serialization, never a decision: every statement under the lock names its own tables.
fn lock_key(ns: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "idmint-lease:".bytes().chain(ns.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_le_bytes(hash.to_le_bytes())
}

/// Wraps a statement built at open from the validated namespace (`[a-z0-9_]`): no input of
/// callers ever reaches SQL text, only bind parameters.
fn q(sql: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(sql))
}

/// Maps a driver error like [`sql_error`], also treating as retryable the PostgreSQL errors
/// that mean "not now" rather than "never": connection exceptions (class 08), insufficient
/// resources (class 53, e.g. too many connections), a server crashing or starting up (57P02,
/// 57P03), a cancelled statement or lock wait (57014, 55P03) and a read-only server (25006, a
/// standby during a failover).
fn pg_error(what: &str, error: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &error {
        let transient = db.code().is_some_and(|code| {
            code.starts_with("08")
                || code.starts_with("53")
                || matches!(&*code, "57P02" | "57P03" | "57014" | "55P03" | "25006")
        });
        if transient {
            return Error::StoreUnavailable(format!("{what}: {db}"));
        }
    }
    sql_error(what, error)
}

/// Why a server with these settings cannot promise that a committed write survives a crash,
/// if it cannot.
fn durability_problem(synchronous_commit: &str, fsync: &str) -> Option<String> {
    let commit_ok = !synchronous_commit.eq_ignore_ascii_case("off");
    let fsync_ok = fsync.eq_ignore_ascii_case("on");
    if commit_ok && fsync_ok {
        return None;
    }
    Some(format!(
        "runs with synchronous_commit={synchronous_commit}, fsync={fsync}; idmint needs \
         synchronous_commit on (or local, remote_write, remote_apply) and fsync=on so a crash \
         cannot reissue IDs"
    ))
}

/// [`SegmentStore`] and [`WorkerLeases`] on one PostgreSQL database.
#[derive(Debug)]
pub(crate) struct PostgresStore {
    /// The connection pool (reconnects by itself).
    pool: PgPool,
    /// The statements of this namespace.
    sql: Statements,
    /// The advisory lock key of this namespace.
    lock_key: i64,
    /// The bound of every call.
    timeout: Duration,
    /// The URL with its password hidden.
    display: String,
}

impl PostgresStore {
    /// Connects, checks durability, creates or migrates the schema.
    pub(crate) async fn open(location: &Location, options: &StoreOptions) -> Result<Self> {
        let connect = PgConnectOptions::from_str(&location.url)
            .map_err(|e| Error::InvalidArgument {
                name: "store",
                reason: format!("`{}`: {e}", location.display),
            })?
            .application_name("idmint");
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(options.call_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| {
                let reason = match e {
                    sqlx::Error::PoolTimedOut => format!(
                        "no connection within {:?} (is the server up and reachable?)",
                        options.call_timeout
                    ),
                    other => other.to_string(),
                };
                Error::StoreUnavailable(format!("cannot open {}: {reason}", location.display))
            })?;
        let store = Self {
            pool,
            sql: Statements::new(&options.namespace),
            lock_key: lock_key(&options.namespace),
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
            store.migrate(&options.namespace),
        )
        .await?;
        Ok(store)
    }

    /// Refuses a server that acknowledges commits before they are on disk, unless allowed.
    async fn check_durability(&self, allow: bool) -> Result<()> {
        let what = format!("checking durability of {}", self.display);
        let (synchronous_commit, fsync): (String, String) = sqlx::query_as(
            "SELECT current_setting('synchronous_commit'), current_setting('fsync')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(|e| pg_error(&what, e))?;
        let Some(problem) = durability_problem(&synchronous_commit, &fsync) else {
            return Ok(());
        };
        let problem = format!("{} {problem}", self.display);
        if allow {
            tracing::warn!("{problem} (accepted: durability checks are switched off)");
            return Ok(());
        }
        Err(Error::StoreInvalid(problem))
    }

    /// Creates or upgrades the schema in one transaction, under the namespace's advisory lock
    /// (so two nodes opening a new database at once do not race).
    async fn migrate(&self, ns: &str) -> Result<()> {
        let what = format!("migrating the schema of {}", self.display);
        let err = |e| pg_error(&what, e);
        let mut tx = self.serialized().await.map_err(err)?;
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INTEGER PRIMARY KEY CHECK (id = 1), \
             version BIGINT NOT NULL)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let current: Option<i64> = sqlx::query_scalar(q(&self.sql.schema_version))
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
        for version in schema::plan(current.unwrap_or(0), &self.display)? {
            for statement in migration(ns, version) {
                sqlx::query(AssertSqlSafe(statement))
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
            }
            let record = format!(
                "INSERT INTO {ns}_schema (id, version) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version"
            );
            sqlx::query(AssertSqlSafe(record))
                .bind(version)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    /// A `READ COMMITTED` transaction holding the namespace's advisory lock: each statement
    /// after the lock sees every decision taken under it before (the isolation is explicit,
    /// since in `REPEATABLE READ` the snapshot would date from before the lock wait).
    async fn serialized(&self) -> std::result::Result<Transaction<'static, Postgres>, sqlx::Error> {
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await?;
        sqlx::query(q(&self.sql.lock))
            .bind(self.lock_key)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    /// Takes a range, in one statement.
    async fn allocate_now(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| pg_error("allocating a segment", e);
        // `max_id` lives in a signed BIGINT, so it stops at MAX_SEGMENT_ID: the last range ends
        // there (the ID MAX_SEGMENT_ID itself is never handed out) and the statement refuses a
        // range past it cleanly instead of failing on an out-of-range value.
        let limit = to_i64("limit", MAX_SEGMENT_ID.saturating_sub(step))?;
        let end: Option<i64> = sqlx::query_scalar(q(&self.sql.allocate))
            .bind(to_i64("step", step)?)
            .bind(tag.as_str())
            .bind(limit)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?;
        match end {
            Some(end) => rows::full_step(tag, to_u64("max_id", end)?, step),
            None => self.allocate_rest(tag, step).await,
        }
    }

    /// When a full step did not fit (or the tag is unknown): the tag's last range,
    /// `[max_id, MAX_SEGMENT_ID)`, taken with a compare-and-set of `max_id` from the value
    /// read, so it is ours only if nobody moved `max_id` in between (racing nodes never get
    /// overlapping ranges); read again when somebody did. Each failed round means another
    /// allocation succeeded, and the call's timeout bounds the whole.
    async fn allocate_rest(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| pg_error("allocating the end of a tag", e);
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

    async fn acquire_now(&self, request: &LeaseRequest) -> Result<Lease> {
        let err = |e| pg_error("acquiring a worker ID", e);
        let count = to_i64("worker_count", request.worker_count)?;
        let ttl = to_i64("ttl", duration_ms(request.ttl))?;
        let mut tx = self.serialized().await.map_err(err)?;
        let newest: Option<i64> = sqlx::query_scalar(q(&self.sql.newest_space))
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        check_lease_space(request.id_space, rows::version(newest)?)?;
        let now: i64 = sqlx::query_scalar(q(&self.sql.now))
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        let worker_id = match request.worker_id {
            Some(id) => {
                let id = rows::static_worker_id(id, count)?;
                let holder: Option<(String, i64)> = sqlx::query_as(q(&self.sql.lease_row))
                    .bind(id)
                    .fetch_optional(&mut *tx)
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
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(err)?;
                rows::pick_worker(&rows, &request.node_name, now, count)?
            }
        };
        let expires = now.saturating_add(ttl);
        let (token, hwm): (i64, i64) = sqlx::query_as(q(&self.sql.take_worker))
            .bind(worker_id)
            .bind(&request.node_name)
            .bind(expires)
            .fetch_one(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        rows::lease(worker_id, token, hwm, expires)
    }
}

/// A tag row as [`TagInfo`].
fn tag_info(row: &PgRow) -> Result<TagInfo> {
    let err = |e| pg_error("reading a tag", e);
    rows::tag_info(
        row.try_get(0).map_err(err)?,
        row.try_get(1).map_err(err)?,
        row.try_get(2).map_err(err)?,
        row.try_get(3).map_err(err)?,
        row.try_get(4).map_err(err)?,
    )
}

#[async_trait]
impl SegmentStore for PostgresStore {
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
            let err = |e| pg_error("giving back a segment tail", e);
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
            let row = sqlx::query(q(&self.sql.create_tag))
                .bind(tag.as_str())
                .bind(to_i64("first_id", settings.first_id.max(1))?)
                .bind(to_i64("step", settings.step)?)
                .bind(&settings.description)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| pg_error("creating a tag", e))?;
            row.as_ref()
                .map(tag_info)
                .unwrap_or_else(|| Err(Error::TagExists(tag.to_string())))
        };
        bounded(self.timeout, "creating a tag", call).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        rows::check_step(update.step.unwrap_or(1))?;
        let call = async {
            let step = update.step.map(|s| to_i64("step", s)).transpose()?;
            let row = sqlx::query(q(&self.sql.update_tag))
                .bind(step)
                .bind(update.description.as_deref())
                .bind(tag.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| pg_error("updating a tag", e))?;
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
                .map_err(|e| pg_error("reading a tag", e))?;
            row.as_ref().map(tag_info).transpose()
        };
        bounded(self.timeout, "reading a tag", call).await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let call = async {
            let rows = sqlx::query(q(&self.sql.list_tags))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| pg_error("listing tags", e))?;
            rows.iter().map(tag_info).collect()
        };
        bounded(self.timeout, "listing tags", call).await
    }
}

#[async_trait]
impl WorkerLeases for PostgresStore {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        bounded(
            self.timeout,
            "acquiring a worker ID",
            self.acquire_now(request),
        )
        .await
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let call = async {
            let row: Option<(i64, i64)> = sqlx::query_as(q(&self.sql.renew))
                .bind(to_i64("hwm_ms", hwm_ms)?)
                .bind(to_i64("ttl", duration_ms(ttl))?)
                .bind(to_i64("worker_id", lease.worker_id)?)
                .bind(to_i64("token", lease.token.0)?)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| pg_error("renewing a worker lease", e))?;
            let (hwm, expires) = row.ok_or(Error::LeaseLost {
                worker_id: lease.worker_id,
            })?;
            Ok(Renewal {
                hwm_ms: to_u64("hwm_ms", hwm)?,
                expires_at_ms: to_u64("expires_at_ms", expires)?,
            })
        };
        bounded(self.timeout, "renewing a worker lease", call).await
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let call = async {
            let released = sqlx::query(q(&self.sql.release))
                .bind(to_i64("hwm_ms", final_hwm_ms)?)
                .bind(to_i64("worker_id", lease.worker_id)?)
                .bind(to_i64("token", lease.token.0)?)
                .execute(&self.pool)
                .await
                .map_err(|e| pg_error("releasing a worker lease", e))?
                .rows_affected();
            if released == 1 {
                Ok(())
            } else {
                Err(Error::LeaseLost {
                    worker_id: lease.worker_id,
                })
            }
        };
        bounded(self.timeout, "releasing a worker lease", call).await
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let call = async {
            let rows: Vec<(i64, String, i64, i64, bool)> = sqlx::query_as(q(&self.sql.list_leases))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| pg_error("listing worker leases", e))?;
            rows.into_iter()
                .map(|(id, node_name, expires, hwm, live)| {
                    rows::lease_info(id, node_name, expires, hwm, live)
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
                .map_err(|e| pg_error("reading the store's clock", e))?;
            to_u64("now", now)
        };
        bounded(self.timeout, "reading the store's clock", call).await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        let call = async {
            let rows: Vec<rows::IdSpaceRow> = sqlx::query_as(q(&self.sql.id_spaces))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| pg_error("reading the ID spaces", e))?;
            rows.into_iter().map(rows::id_space).collect()
        };
        bounded(self.timeout, "reading the ID spaces", call).await
    }

    /// Under the namespace's advisory lock, so it is serialized with every acquisition: no
    /// node can take a lease under the old space once the change is committed.
    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let call = async {
            let err = |e| pg_error("recording the ID space", e);
            let (version, layout, epoch, datacenter, from, first) = rows::id_space_values(record)?;
            let mut tx = self.serialized().await.map_err(err)?;
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
            let (live, max_hwm): (i64, i64) = sqlx::query_as(q(&self.sql.lease_summary))
                .fetch_one(&mut *tx)
                .await
                .map_err(err)?;
            check_record(
                record,
                rows::version(newest)?,
                to_u64("live", live)?,
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
        bounded(self.timeout, "recording the ID space", call).await
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
        assert!(sql.renew.contains("UPDATE ns_1_workers "));
        assert!(sql.schema_version.contains("FROM ns_1_schema "));
        assert!(migration("ns_1", 1)
            .iter()
            .all(|ddl| ddl.contains("IF NOT EXISTS ns_1_")));
        assert!(migration("ns_1", schema::LATEST + 1).is_empty());
    }

    #[test]
    fn lock_keys_are_stable_and_differ_per_namespace() {
        assert_eq!(lock_key("idmint"), lock_key("idmint"));
        assert_ne!(lock_key("idmint"), lock_key("idmint2"));
        assert_ne!(lock_key("a"), lock_key("b"));
    }

    #[test]
    fn only_durable_settings_pass() {
        assert_eq!(durability_problem("on", "on"), None);
        assert_eq!(durability_problem("local", "on"), None);
        assert_eq!(durability_problem("remote_apply", "on"), None);
        assert!(
            durability_problem("off", "on").is_some_and(|p| p.contains("synchronous_commit=off"))
        );
        assert!(durability_problem("on", "off").is_some_and(|p| p.contains("fsync=off")));
    }
}
