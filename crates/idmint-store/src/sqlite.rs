//! SQLite: the embedded default. One file, no server, safe for several processes at once.
//!
//! Durability: WAL journal and `synchronous=FULL`, checked at open. Concurrency: every write is
//! a `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock up front (other processes
//! wait up to the busy timeout), so a read-then-write such as a lease acquisition is one
//! serialized decision, and a writer never fails on a stale WAL snapshot.
//!
//! Damage: a file that fails `PRAGMA integrity_check` at open is refused (`StoreCorrupt`, with
//! the file, the problems and what to do), and a damaged page met later (`SQLITE_CORRUPT`,
//! `SQLITE_NOTADB`) is reported as `StoreCorrupt` too, never as an ordinary refusal.

use std::ops::Range;
use std::path::Path;
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
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row, Sqlite, Transaction};

use crate::bounded::{bounded, is_corrupt, sql_error, to_i64, to_u64};
use crate::location::Location;
use crate::rows;
use crate::schema::{self, ID_SPACE_COLUMNS};
use crate::{Error, Result, StoreOptions};

/// The store's clock, in ms since the Unix epoch (SQLite has no server: this is the machine's).
const NOW: &str = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

/// How long a writer waits for another process's write lock before giving up as unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The statements, with the namespace's table names filled in once at open.
#[derive(Debug)]
struct Statements {
    allocate: Arc<str>,
    max_id: Arc<str>,
    give_back: Arc<str>,
    create_tag: Arc<str>,
    update_tag: Arc<str>,
    tag_info: Arc<str>,
    list_tags: Arc<str>,
    now: Arc<str>,
    lease_row: Arc<str>,
    worker_rows: Arc<str>,
    take_worker: Arc<str>,
    renew: Arc<str>,
    release: Arc<str>,
    list_leases: Arc<str>,
    schema_version: Arc<str>,
    newest_space: Arc<str>,
    id_spaces: Arc<str>,
    lease_summary: Arc<str>,
    move_tokens_on: Arc<str>,
    record_space: Arc<str>,
}

impl Statements {
    fn new(ns: &str) -> Self {
        let s = format!("{ns}_segments");
        let w = format!("{ns}_workers");
        let tag_columns = "tag, max_id, step, description, updated_at_ms";
        let sql = |text: String| Arc::<str>::from(text);
        Self {
            allocate: sql(format!(
                "UPDATE {s} SET max_id = max_id + ?1, updated_at_ms = {NOW} \
                 WHERE tag = ?2 AND max_id <= ?3 RETURNING max_id"
            )),
            max_id: sql(format!("SELECT max_id FROM {s} WHERE tag = ?1")),
            give_back: sql(format!(
                "UPDATE {s} SET max_id = ?1, updated_at_ms = {NOW} WHERE tag = ?2 AND max_id = ?3"
            )),
            create_tag: sql(format!(
                "INSERT INTO {s} ({tag_columns}) VALUES (?1, ?2, ?3, ?4, {NOW}) \
                 ON CONFLICT (tag) DO NOTHING RETURNING {tag_columns}"
            )),
            update_tag: sql(format!(
                "UPDATE {s} SET step = COALESCE(?1, step), description = COALESCE(?2, description), \
                 updated_at_ms = {NOW} WHERE tag = ?3 RETURNING {tag_columns}"
            )),
            tag_info: sql(format!("SELECT {tag_columns} FROM {s} WHERE tag = ?1")),
            list_tags: sql(format!("SELECT {tag_columns} FROM {s} ORDER BY tag")),
            now: sql(format!("SELECT {NOW}")),
            lease_row: sql(format!(
                "SELECT node_name, expires_at_ms FROM {w} WHERE worker_id = ?1"
            )),
            worker_rows: sql(format!(
                "SELECT worker_id, node_name, expires_at_ms FROM {w} WHERE worker_id < ?1 \
                 ORDER BY worker_id"
            )),
            take_worker: sql(format!(
                "INSERT INTO {w} (worker_id, node_name, token, hwm_ms, expires_at_ms) \
                 VALUES (?1, ?2, 1, 0, ?3) ON CONFLICT (worker_id) DO UPDATE SET \
                 node_name = excluded.node_name, token = {w}.token + 1, \
                 expires_at_ms = excluded.expires_at_ms RETURNING token, hwm_ms"
            )),
            renew: sql(format!(
                "UPDATE {w} SET hwm_ms = MAX(hwm_ms, ?1), expires_at_ms = {NOW} + ?2 \
                 WHERE worker_id = ?3 AND token = ?4 RETURNING hwm_ms, expires_at_ms"
            )),
            release: sql(format!(
                "UPDATE {w} SET hwm_ms = ?1, expires_at_ms = 0 \
                 WHERE worker_id = ?2 AND token = ?3"
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
                "SELECT COUNT(CASE WHEN expires_at_ms > {NOW} THEN 1 END), \
                 COALESCE(MAX(hwm_ms), 0) FROM {w}"
            )),
            move_tokens_on: sql(format!("UPDATE {w} SET token = token + 1")),
            record_space: sql(format!(
                "INSERT INTO {ns}_id_spaces ({ID_SPACE_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW})"
            )),
        }
    }
}

/// The schema, per version (see [`schema`]).
fn migration(ns: &str, version: i64) -> Vec<String> {
    match version {
        1 => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_segments (tag TEXT PRIMARY KEY NOT NULL, \
                 max_id INTEGER NOT NULL, step INTEGER NOT NULL, \
                 description TEXT NOT NULL DEFAULT '', updated_at_ms INTEGER NOT NULL)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {ns}_workers (worker_id INTEGER PRIMARY KEY NOT NULL, \
                 node_name TEXT NOT NULL, token INTEGER NOT NULL, hwm_ms INTEGER NOT NULL, \
                 expires_at_ms INTEGER NOT NULL)"
            ),
            format!("CREATE INDEX IF NOT EXISTS {ns}_workers_node ON {ns}_workers (node_name)"),
        ],
        2 => vec![format!(
            "CREATE TABLE IF NOT EXISTS {ns}_id_spaces (version INTEGER PRIMARY KEY NOT NULL, \
             layout TEXT NOT NULL, epoch_ms INTEGER NOT NULL, datacenter INTEGER NOT NULL, \
             issues_from_ms INTEGER NOT NULL, first_id INTEGER NOT NULL, \
             recorded_at_ms INTEGER NOT NULL)"
        )],
        _ => Vec::new(),
    }
}

/// The integrity check run at open, reporting at most 5 problems.
const INTEGRITY_CHECK: &str = "PRAGMA integrity_check(5)";

/// The first row of [`INTEGRITY_CHECK`] alone. No limit argument: the table-valued form would
/// take it for a table name.
const FIRST_REPORT: &str = "SELECT * FROM pragma_integrity_check LIMIT 1";

/// The refusal of a damaged file: which file, the first problems SQLite reported, and what the
/// operator does about it.
fn damaged(display: &str, problems: &[String]) -> Error {
    Error::StoreCorrupt(format!(
        "{display} is damaged, so idmint will not use it (SQLite: {}). Restore the file from \
         a backup (stop every node using it first). Do not delete it or start on an empty \
         file: it holds each tag's max_id and each worker's high-water mark, and without them \
         IDs already issued would be issued again",
        problems
            .iter()
            .flat_map(|problem| problem.lines())
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// Wraps a statement built at open from the validated namespace (`[a-z0-9_]`): no input of
/// callers ever reaches SQL text, only bind parameters.
fn q(sql: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(sql))
}

/// [`SegmentStore`] and [`WorkerLeases`] on one SQLite file.
#[derive(Debug)]
pub(crate) struct SqliteStore {
    pool: SqlitePool,
    sql: Statements,
    timeout: Duration,
    display: String,
}

impl SqliteStore {
    /// Opens (creating if needed, with its folder) the file, checks durability, migrates.
    pub(crate) async fn open(location: &Location, options: &StoreOptions) -> Result<Self> {
        let path = location.sqlite_path();
        let unavailable = |e: &dyn std::fmt::Display| {
            Error::StoreUnavailable(format!("cannot open {}: {e}", location.display))
        };
        if let Some(folder) = Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(folder).map_err(|e| unavailable(&e))?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(options.call_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| {
                // Not a database at all (a damaged header): refused like a damaged page.
                if is_corrupt(&e) {
                    damaged(&location.display, &[e.to_string()])
                } else {
                    unavailable(&e)
                }
            })?;
        let store = Self {
            pool,
            sql: Statements::new(&options.namespace),
            timeout: options.call_timeout,
            display: location.display.clone(),
        };
        store.check_integrity().await?;
        store.check_durability(options.allow_non_durable).await?;
        store.migrate(&options.namespace).await?;
        Ok(store)
    }

    /// Refuses a damaged file, before anything is read from or written to it: a node serving
    /// from it would answer some tags and fail others, or worse, miss a tag's row and create it
    /// again from ID 1.
    ///
    /// `PRAGMA integrity_check` reads every page and checks the b-trees, records and free list
    /// (all `quick_check` does), and also that every index matches its table: a tag index that
    /// lost an entry would make a tag look unknown. Measured on a file with 100,000 tags
    /// (5.6 MB, in the page cache, release build): `quick_check` 17 ms, `integrity_check` 50 ms
    /// (open as a whole: 25 ms with `quick_check`, 55 ms with `integrity_check`), so the full
    /// check is worth its cost at start.
    async fn check_integrity(&self) -> Result<()> {
        let started = std::time::Instant::now();
        let report: Vec<String> = match sqlx::query_scalar(INTEGRITY_CHECK)
            .fetch_all(&self.pool)
            .await
        {
            Ok(report) => report,
            // The check can stop on the damage itself (a page it cannot read while scanning a
            // table), after it reported what it found: that report, then why it stopped.
            Err(e) => match sql_error("checking the file", e) {
                Error::StoreCorrupt(stopped) => {
                    let mut report: Vec<String> = self.first_report().await.into_iter().collect();
                    report.push(stopped);
                    report
                }
                other => return Err(other),
            },
        };
        tracing::debug!(elapsed = ?started.elapsed(), file = %self.display, "integrity checked");
        if report.iter().all(|line| line == "ok") {
            return Ok(());
        }
        Err(damaged(&self.display, &report))
    }

    /// The first row of the integrity check, read alone so the check stops right after it,
    /// before it reaches damage that ends it with an error: SQLite reports the problems its
    /// b-tree walk found in that row.
    async fn first_report(&self) -> Option<String> {
        sqlx::query_scalar(FIRST_REPORT)
            .fetch_optional(&self.pool)
            .await
            .ok()
            .flatten()
    }

    /// Refuses a file that is not in WAL mode with `synchronous=FULL` (e.g. on a file system
    /// without shared memory), unless allowed.
    async fn check_durability(&self, allow: bool) -> Result<()> {
        let what = "checking durability";
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sql_error(what, e))?;
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sql_error(what, e))?;
        if journal.eq_ignore_ascii_case("wal") && synchronous == 2 {
            return Ok(());
        }
        let problem = format!(
            "{} runs with journal_mode={journal}, synchronous={synchronous}; idmint needs \
             journal_mode=wal and synchronous=2 (FULL) so a crash cannot reissue IDs",
            self.display
        );
        if allow {
            tracing::warn!("{problem} (accepted: durability checks are switched off)");
            return Ok(());
        }
        Err(Error::StoreInvalid(problem))
    }

    /// Creates or upgrades the schema, in one write transaction (so two processes opening the
    /// same new file at once do not race).
    async fn migrate(&self, ns: &str) -> Result<()> {
        let what = "migrating the schema";
        let err = |e| sql_error(what, e);
        let mut tx = self.write().await?;
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INTEGER PRIMARY KEY CHECK (id = 1), \
             version INTEGER NOT NULL)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let current: Option<i64> = sqlx::query_scalar(q(&self.sql.schema_version))
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
        let current = current.unwrap_or(0);
        for version in schema::plan(current, &self.display)? {
            for statement in migration(ns, version) {
                sqlx::query(AssertSqlSafe(statement))
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
            }
            let record = format!(
                "INSERT INTO {ns}_schema (id, version) VALUES (1, ?1) \
                 ON CONFLICT (id) DO UPDATE SET version = excluded.version"
            );
            sqlx::query(AssertSqlSafe(record))
                .bind(version)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    /// A write transaction holding SQLite's write lock from its first statement.
    async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| sql_error("starting a write", e))
    }

    /// Takes a range in one write transaction: a full step with one `UPDATE`, else (the tag is
    /// near its end, or unknown) the rest, decided under the same write lock.
    async fn allocate_now(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let err = |e| sql_error("allocating a segment", e);
        // `max_id` (the next ID) never passes MAX_SEGMENT_ID: SQLite would turn an integer
        // overflow into a float rather than fail.
        let limit = to_i64("limit", MAX_SEGMENT_ID.saturating_sub(step))?;
        let mut tx = self.write().await?;
        let end: Option<i64> = sqlx::query_scalar(q(&self.sql.allocate))
            .bind(to_i64("step", step)?)
            .bind(tag.as_str())
            .bind(limit)
            .fetch_optional(&mut *tx)
            .await
            .map_err(err)?;
        let range = match end {
            Some(end) => rows::full_step(tag, to_u64("max_id", end)?, step)?,
            None => self.allocate_rest(&mut tx, tag, step).await?,
        };
        tx.commit().await.map_err(err)?;
        Ok(range)
    }

    /// The tag's last range, `[max_id, MAX_SEGMENT_ID)`, when a full step no longer fits:
    /// read and written inside the caller's write transaction, whose lock (taken at `BEGIN
    /// IMMEDIATE`) keeps every other process out between the two, so racing nodes never get
    /// overlapping ranges.
    async fn allocate_rest(
        &self,
        tx: &mut Transaction<'static, Sqlite>,
        tag: &Tag,
        step: u64,
    ) -> Result<Range<u64>> {
        let err = |e| sql_error("allocating the end of a tag", e);
        let max_id: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
            .bind(tag.as_str())
            .fetch_optional(&mut **tx)
            .await
            .map_err(err)?;
        let max_id = max_id.ok_or_else(|| Error::UnknownTag(tag.to_string()))?;
        let range = rows::range_from(tag, to_u64("max_id", max_id)?, step)?;
        // The give-back statement is a compare-and-set of `max_id`; here it moves it up.
        let moved = sqlx::query(q(&self.sql.give_back))
            .bind(to_i64("end", range.end)?)
            .bind(tag.as_str())
            .bind(max_id)
            .execute(&mut **tx)
            .await
            .map_err(err)?
            .rows_affected();
        if moved != 1 {
            return Err(Error::StoreConflict(format!(
                "tag `{tag}` changed while its end was allocated"
            )));
        }
        Ok(range)
    }

    async fn acquire_now(&self, request: &LeaseRequest) -> Result<Lease> {
        let err = |e| sql_error("acquiring a worker ID", e);
        let count = to_i64("worker_count", request.worker_count)?;
        let ttl = to_i64("ttl", duration_ms(request.ttl))?;
        let mut tx = self.write().await?;
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
fn tag_info(row: &SqliteRow) -> Result<TagInfo> {
    let err = |e| sql_error("reading a tag", e);
    rows::tag_info(
        row.try_get(0).map_err(err)?,
        row.try_get(1).map_err(err)?,
        row.try_get(2).map_err(err)?,
        row.try_get(3).map_err(err)?,
        row.try_get(4).map_err(err)?,
    )
}

#[async_trait]
impl SegmentStore for SqliteStore {
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
            let err = |e| sql_error("giving back a segment tail", e);
            let mut tx = self.write().await?;
            let done = sqlx::query(q(&self.sql.give_back))
                .bind(to_i64("start", unused.start)?)
                .bind(tag.as_str())
                .bind(to_i64("end", unused.end)?)
                .execute(&mut *tx)
                .await
                .map_err(err)?
                .rows_affected()
                == 1;
            if !done {
                let exists: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
                    .bind(tag.as_str())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err)?;
                if exists.is_none() {
                    return Err(Error::UnknownTag(tag.to_string()));
                }
            }
            tx.commit().await.map_err(err)?;
            Ok(done)
        };
        bounded(self.timeout, "giving back a segment tail", call).await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        rows::check_step(settings.step)?;
        let call = async {
            let err = |e| sql_error("creating a tag", e);
            let mut tx = self.write().await?;
            let row = sqlx::query(q(&self.sql.create_tag))
                .bind(tag.as_str())
                .bind(to_i64("first_id", settings.first_id.max(1))?)
                .bind(to_i64("step", settings.step)?)
                .bind(&settings.description)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)?;
            row.as_ref()
                .map(tag_info)
                .unwrap_or_else(|| Err(Error::TagExists(tag.to_string())))
        };
        bounded(self.timeout, "creating a tag", call).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        rows::check_step(update.step.unwrap_or(1))?;
        let call = async {
            let err = |e| sql_error("updating a tag", e);
            let step = update.step.map(|s| to_i64("step", s)).transpose()?;
            let mut tx = self.write().await?;
            let row = sqlx::query(q(&self.sql.update_tag))
                .bind(step)
                .bind(update.description.as_deref())
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
                .map_err(|e| sql_error("reading a tag", e))?;
            row.as_ref().map(tag_info).transpose()
        };
        bounded(self.timeout, "reading a tag", call).await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let call = async {
            let rows = sqlx::query(q(&self.sql.list_tags))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| sql_error("listing tags", e))?;
            rows.iter().map(tag_info).collect()
        };
        bounded(self.timeout, "listing tags", call).await
    }
}

#[async_trait]
impl WorkerLeases for SqliteStore {
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
            let err = |e| sql_error("renewing a worker lease", e);
            let mut tx = self.write().await?;
            let row: Option<(i64, i64)> = sqlx::query_as(q(&self.sql.renew))
                .bind(to_i64("hwm_ms", hwm_ms)?)
                .bind(to_i64("ttl", duration_ms(ttl))?)
                .bind(to_i64("worker_id", lease.worker_id)?)
                .bind(to_i64("token", lease.token.0)?)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)?;
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
            let err = |e| sql_error("releasing a worker lease", e);
            let mut tx = self.write().await?;
            let released = sqlx::query(q(&self.sql.release))
                .bind(to_i64("hwm_ms", final_hwm_ms)?)
                .bind(to_i64("worker_id", lease.worker_id)?)
                .bind(to_i64("token", lease.token.0)?)
                .execute(&mut *tx)
                .await
                .map_err(err)?
                .rows_affected();
            tx.commit().await.map_err(err)?;
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
            let err = |e| sql_error("listing worker leases", e);
            let rows: Vec<(i64, String, i64, i64, bool)> = sqlx::query_as(q(&self.sql.list_leases))
                .fetch_all(&self.pool)
                .await
                .map_err(err)?;
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
                .map_err(|e| sql_error("reading the store's clock", e))?;
            to_u64("now", now)
        };
        bounded(self.timeout, "reading the store's clock", call).await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        let call = async {
            let rows: Vec<rows::IdSpaceRow> = sqlx::query_as(q(&self.sql.id_spaces))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| sql_error("reading the ID spaces", e))?;
            rows.into_iter().map(rows::id_space).collect()
        };
        bounded(self.timeout, "reading the ID spaces", call).await
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let call = async {
            let err = |e| sql_error("recording the ID space", e);
            let (version, layout, epoch, datacenter, from, first) = rows::id_space_values(record)?;
            let mut tx = self.write().await?;
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
