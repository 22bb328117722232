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

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};
use sqlx::{Connection, Pool, Sqlite};

use super::group_commit::GroupCommit;
use super::{Access, Dialect, Session, SqlStore};
use crate::bounded::{is_corrupt, sql_error};
use crate::location::Location;
use crate::{Error, Result, StoreOptions};

/// How long a writer waits for another process's write lock before giving up as unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The integrity check run at open, reporting at most 5 problems.
const INTEGRITY_CHECK: &str = "PRAGMA integrity_check(5)";

/// The first row of [`INTEGRITY_CHECK`] alone. No limit argument: the table-valued form would
/// take it for a table name.
const FIRST_REPORT: &str = "SELECT * FROM pragma_integrity_check LIMIT 1";

/// SQLite's part of the SQL store: the writes of concurrent calls share transactions
/// (`group_commit`).
#[derive(Debug, Default)]
pub(crate) struct SqliteDialect {
    group: GroupCommit,
}

impl Dialect for SqliteDialect {
    type Db = Sqlite;
    // SQLite has no server: this is the machine's clock.
    const NOW: &'static str = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
    const GREATEST: &'static str = "MAX";
    const RETURNING: bool = true;
    // The write lock taken at `BEGIN IMMEDIATE` already keeps every other writer out.
    const LOCKING_READ: &'static str = "";

    fn upsert(key: &str) -> String {
        format!("ON CONFLICT ({key}) DO UPDATE SET")
    }

    fn schema_table(ns: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INTEGER PRIMARY KEY CHECK (id = 1), \
             version INTEGER NOT NULL)"
        )
    }

    fn migration(ns: &str, version: i64) -> Vec<String> {
        match version {
            1 => vec![
                format!(
                    "CREATE TABLE IF NOT EXISTS {ns}_segments (tag TEXT PRIMARY KEY NOT NULL, \
                     max_id INTEGER NOT NULL, step INTEGER NOT NULL, \
                     description TEXT NOT NULL DEFAULT '', updated_at_ms INTEGER NOT NULL)"
                ),
                format!(
                    "CREATE TABLE IF NOT EXISTS {ns}_workers (\
                     worker_id INTEGER PRIMARY KEY NOT NULL, node_name TEXT NOT NULL, \
                     token INTEGER NOT NULL, hwm_ms INTEGER NOT NULL, \
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
            3 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_store_set (id INTEGER PRIMARY KEY NOT NULL, \
                 set_id TEXT NOT NULL, member_index INTEGER NOT NULL, \
                 member_count INTEGER NOT NULL, block_size INTEGER NOT NULL, \
                 recorded_at_ms INTEGER NOT NULL)"
            )],
            4 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_id_space_keys (\
                 version INTEGER PRIMARY KEY NOT NULL, permutation TEXT NOT NULL)"
            )],
            5 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_tag_dates (\
                 tag TEXT PRIMARY KEY NOT NULL, dating TEXT NOT NULL)"
            )],
            _ => Vec::new(),
        }
    }

    fn error(what: &str, error: sqlx::Error) -> Error {
        sql_error(what, error)
    }

    fn allocated(_: &SqliteQueryResult) -> Option<i64> {
        None
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Every call that writes takes the write lock at its first statement: a migration in a
    /// transaction of its own, every other call in the shared one of its batch.
    async fn session(&self, pool: &Pool<Sqlite>, access: Access) -> Result<Session<Sqlite>> {
        let started = |e| sql_error("starting a write", e);
        if access == Access::Migrate {
            let tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(started)?;
            return Ok(Session::Tx(tx));
        }
        let part = self.group.join(pool).await.map_err(started)?;
        Ok(Session::Shared(Box::new(part)))
    }
}

/// Opens (creating if needed, with its folder) the file, checks it and its durability,
/// migrates.
pub(crate) async fn open(
    location: &Location,
    options: &StoreOptions,
) -> Result<SqlStore<SqliteDialect>> {
    let path = location.sqlite_path();
    let unavailable = |e: Box<dyn std::error::Error + Send + Sync>| {
        Error::store_unavailable(format!("cannot open {}", location.display)).caused_by(e)
    };
    if let Some(folder) = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(folder).map_err(|e| unavailable(e.into()))?;
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
        // A connection sqlx still counts inside a transaction (a migration whose `COMMIT`
        // failed after SQLite rolled back by itself) would refuse every later `BEGIN`: closed
        // instead of reused. The group commit closes its own connections in doubt.
        .after_release(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
        .connect_with(connect)
        .await
        .map_err(|e| {
            // Not a database at all (a damaged header): refused like a damaged page.
            if is_corrupt(&e) {
                damaged(&location.display, &[e.to_string()])
            } else {
                unavailable(e.into())
            }
        })?;
    check_integrity(&pool, &location.display).await?;
    check_durability(&pool, &location.display, options.allow_non_durable).await?;
    SqlStore::new(pool, SqliteDialect::default(), options, &location.display).await
}

/// The refusal of a damaged file: which file, the first problems SQLite reported, and what the
/// operator does about it.
fn damaged(display: &str, problems: &[String]) -> Error {
    Error::store_corrupt(format!(
        "{display} is damaged, so idmint will not use it (SQLite: {}). Restore the file from \
         a backup (stop every node using it first), and before serving raise each tag's \
         max_id in the `<namespace>_segments` table above the largest ID your data holds: a \
         backup predates the IDs issued since. Do not delete it or start on an empty \
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

/// Refuses a damaged file, before anything is read from or written to it: a node serving from
/// it would answer some tags and fail others, or worse, miss a tag's row and create it again
/// from ID 1.
///
/// `PRAGMA integrity_check` reads every page and checks the b-trees, records and free list (all
/// `quick_check` does), and also that every index matches its table: a tag index that lost an
/// entry would make a tag look unknown. It costs a few tens of ms at start on a file with
/// 100,000 tags (BENCHMARKS.md, "Figures behind design choices").
async fn check_integrity(pool: &SqlitePool, file: &str) -> Result<()> {
    let started = std::time::Instant::now();
    let report: Vec<String> = match sqlx::query_scalar(INTEGRITY_CHECK).fetch_all(pool).await {
        Ok(report) => report,
        // The check can stop on the damage itself (a page it cannot read while scanning a
        // table), after it reported what it found: that report, then why it stopped. The first
        // row is read alone, so the check stops right after it, before the damage ends it.
        Err(e) => match sql_error("checking the file", e) {
            Error::StoreCorrupt {
                message: stopped, ..
            } => {
                let first: Option<String> = sqlx::query_scalar(FIRST_REPORT)
                    .fetch_optional(pool)
                    .await
                    .ok()
                    .flatten();
                first.into_iter().chain([stopped]).collect()
            }
            other => return Err(other),
        },
    };
    tracing::debug!(elapsed = ?started.elapsed(), file = %file, "integrity checked");
    if report.iter().all(|line| line == "ok") {
        return Ok(());
    }
    Err(damaged(file, &report))
}

/// Refuses a file that is not in WAL mode with `synchronous=FULL` (e.g. on a file system
/// without shared memory), unless allowed.
async fn check_durability(pool: &SqlitePool, display: &str, allow: bool) -> Result<()> {
    let err = |e| sql_error("checking durability", e);
    let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .map_err(err)?;
    let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(pool)
        .await
        .map_err(err)?;
    if journal.eq_ignore_ascii_case("wal") && synchronous == 2 {
        return Ok(());
    }
    let problem = format!(
        "{display} runs with journal_mode={journal}, synchronous={synchronous}; idmint needs \
         journal_mode=wal and synchronous=2 (FULL) so a crash cannot reissue IDs"
    );
    super::refuse_unless_allowed(problem, allow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::statements::Statements;

    #[test]
    fn statements_name_the_namespace_tables_only() {
        let sql = Statements::new::<SqliteDialect>("ns_1");
        assert!(sql.allocate.contains("UPDATE ns_1_segments ") && sql.allocate.contains("?"));
        assert!(sql.renew.contains("MAX(hwm_ms, ?)") && sql.renew.contains("RETURNING"));
        assert!(SqliteDialect::migration("ns_1", 1)
            .iter()
            .all(|ddl| ddl.contains("IF NOT EXISTS ns_1_")));
    }
}
