//! PostgreSQL: one database shared by every idmint node.
//!
//! Atomicity: a segment is taken with one `UPDATE ... SET max_id = max_id + step ... RETURNING`,
//! which PostgreSQL runs under the row's lock, so concurrent allocations on one tag queue behind
//! each other and never see the same `max_id`. Other writes are single statements too,
//! conditioned on the fencing token or on `max_id`, returning the row they wrote.
//!
//! A lease acquisition reads the lease table and then writes one row, so it is serialized
//! across nodes: it runs in a transaction that first takes a transaction-scoped advisory lock
//! derived from the namespace (`pg_advisory_xact_lock`), released by the commit or rollback,
//! never left behind by a dropped call. The transaction is explicitly `READ COMMITTED`
//! (whatever the server's default), so each statement after the lock sees every earlier
//! acquisition, which committed before releasing it. Migrations and ID-space changes run under
//! the same lock, in one transaction (PostgreSQL's DDL is transactional), so two nodes starting
//! at once do not race.
//!
//! Durability: `synchronous_commit` must not be `off` and `fsync` must be `on`, checked at open.
//! Expiry is judged by the server's clock (`clock_timestamp()`).

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgQueryResult};
use sqlx::{Pool, Postgres};

use super::{Access, Dialect, Session, SqlStore};
use crate::bounded::sql_error;
use crate::location::Location;
use crate::{Error, Result, StoreOptions};

/// Connections per store: enough for the segment refills of many tags at once and a lease
/// renewal, few enough that a fleet of nodes stays far below `max_connections`.
const MAX_CONNECTIONS: u32 = 8;

/// PostgreSQL's part of the SQL store.
#[derive(Debug)]
pub(crate) struct PostgresDialect {
    /// The advisory lock key of the namespace.
    lock_key: i64,
}

impl Dialect for PostgresDialect {
    type Db = Postgres;
    // The server's wall clock at the moment of evaluation (`clock_timestamp()`, not the
    // transaction's start like `now()`).
    const NOW: &'static str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";
    const GREATEST: &'static str = "GREATEST";
    const RETURNING: bool = true;
    // READ COMMITTED: each statement after the lock sees every decision committed before it.
    const LOCKING_READ: &'static str = "";

    fn upsert(key: &str) -> String {
        format!("ON CONFLICT ({key}) DO UPDATE SET")
    }

    /// `?` as `$1`, `$2`, ... in order (no statement holds a `?` of its own).
    fn placeholders(sql: String) -> String {
        let mut numbered = String::with_capacity(sql.len() + 16);
        let mut next = 0;
        for c in sql.chars() {
            if c == '?' {
                next += 1;
                numbered.push_str(&format!("${next}"));
            } else {
                numbered.push(c);
            }
        }
        numbered
    }

    fn schema_table(ns: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INTEGER PRIMARY KEY CHECK (id = 1), \
             version BIGINT NOT NULL)"
        )
    }

    /// Tags compare and sort byte-wise (`COLLATE "C"`), whatever the database's locale.
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
            3 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_store_set (id BIGINT PRIMARY KEY, \
                 set_id TEXT NOT NULL, member_index BIGINT NOT NULL, \
                 member_count BIGINT NOT NULL, block_size BIGINT NOT NULL, \
                 recorded_at_ms BIGINT NOT NULL)"
            )],
            4 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_id_space_keys (version BIGINT PRIMARY KEY, \
                 permutation TEXT NOT NULL)"
            )],
            5 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_tag_dates (tag TEXT COLLATE \"C\" PRIMARY KEY, \
                 dating TEXT NOT NULL)"
            )],
            _ => Vec::new(),
        }
    }

    /// Like [`sql_error`], also treating as retryable the errors that mean "not now" rather
    /// than "never": connection exceptions (class 08), insufficient resources (class 53, e.g.
    /// too many connections), a session ended by the server (57P01: `pg_terminate_backend` or a
    /// fast shutdown; 57P05: `idle_session_timeout`), a server crashing or starting up (57P02,
    /// 57P03), a cancelled
    /// statement or lock wait (57014, 55P03) and a read-only server (25006, a standby during a
    /// failover).
    fn error(what: &str, error: sqlx::Error) -> Error {
        let transient = matches!(&error, sqlx::Error::Database(db) if db.code().is_some_and(|code| {
            code.starts_with("08")
                || code.starts_with("53")
                || matches!(
                    &*code,
                    "57P01" | "57P02" | "57P03" | "57P05" | "57014" | "55P03" | "25006"
                )
        }));
        if transient {
            return Error::store_unavailable(what).caused_by(error);
        }
        sql_error(what, error)
    }

    fn allocated(_: &PgQueryResult) -> Option<i64> {
        None
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Single statements on a pooled connection; acquisitions and migrations in a
    /// `READ COMMITTED` transaction holding the namespace's advisory lock (the isolation is
    /// explicit, since in `REPEATABLE READ` the snapshot would date from before the lock wait).
    async fn session(&self, pool: &Pool<Postgres>, access: Access) -> Result<Session<Postgres>> {
        let err = |e| Self::error("starting a store call", e);
        if matches!(access, Access::Write | Access::WriteThenRead) {
            return Ok(Session::Pooled(pool.acquire().await.map_err(err)?));
        }
        let mut tx = pool
            .begin_with("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await
            .map_err(err)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(self.lock_key)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        Ok(Session::Tx(tx))
    }
}

/// The advisory lock key of a namespace: a 64-bit FNV-1a hash, stable across builds and
/// platforms. Another namespace (or application) hashing to the same key only shares the
/// serialization, never a decision: every statement under the lock names its own tables.
pub(crate) fn lock_key(ns: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "idmint-lease:".bytes().chain(ns.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_le_bytes(hash.to_le_bytes())
}

/// Connects, checks durability, creates or migrates the schema.
pub(crate) async fn open(
    location: &Location,
    options: &StoreOptions,
) -> Result<SqlStore<PostgresDialect>> {
    let connect = connect_options(location, "idmint")?.options([(
        "statement_timeout",
        statement_timeout_ms(options.call_timeout).to_string(),
    )]);
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(options.call_timeout)
        .connect_with(connect)
        .await
        .map_err(|e| super::unreachable(location, options, e))?;
    let check = check_durability(&pool, &location.display, options.allow_non_durable);
    crate::bounded::bounded(options.call_timeout, "checking durability", check).await?;
    let dialect = PostgresDialect {
        lock_key: lock_key(&options.namespace),
    };
    SqlStore::new(pool, dialect, options, &location.display).await
}

/// The `statement_timeout` of the store's sessions, in ms: its call timeout (at least 1 ms; 0
/// would mean none). Set by the session itself at connection, it is the node's own bound on
/// every statement, on the server too, whatever the role or database carries: a statement the
/// node gave up on stops there as well, and a tiny `statement_timeout` set on the role or the
/// database (for people's sessions, or by mistake) neither fails the node's statements nor
/// stays in the sessions opened while it was set, after it is reset (such a session keeps the
/// setting it started with for as long as it lives).
fn statement_timeout_ms(call_timeout: std::time::Duration) -> u128 {
    call_timeout.as_millis().max(1)
}

/// The connection settings of `location`'s URL, naming the connections `application` (what
/// `pg_stat_activity` shows). The parameters the driver ignores are logged by name only: the
/// driver's own warning would print their values, passwords among them.
pub(crate) fn connect_options(location: &Location, application: &str) -> Result<PgConnectOptions> {
    let (parsed, ignored) =
        super::quiet_parse::without_driver_log(|| PgConnectOptions::from_str(&location.url));
    if !ignored.is_empty() {
        tracing::warn!(
            store = %location.display,
            parameters = %ignored.join(", "),
            "ignoring connection parameters the PostgreSQL driver does not know"
        );
    }
    Ok(parsed
        .map_err(|e| Error::InvalidArgument {
            name: "store",
            reason: format!("`{}`: {e}", location.display),
        })?
        .application_name(application))
}

/// Refuses a server that acknowledges commits before they are on disk, unless allowed.
async fn check_durability(pool: &PgPool, display: &str, allow: bool) -> Result<()> {
    let (synchronous_commit, fsync): (String, String) =
        sqlx::query_as("SELECT current_setting('synchronous_commit'), current_setting('fsync')")
            .fetch_one(pool)
            .await
            .map_err(|e| PostgresDialect::error(&format!("checking durability of {display}"), e))?;
    match durability_problem(&synchronous_commit, &fsync) {
        None => Ok(()),
        Some(problem) => super::refuse_unless_allowed(format!("{display} {problem}"), allow),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::statements::Statements;

    #[test]
    fn statements_number_their_placeholders_in_order() {
        let sql = Statements::new::<PostgresDialect>("ns_1");
        assert!(sql.allocate.contains("UPDATE ns_1_segments "));
        assert!(sql.renew.contains("GREATEST(hwm_ms, $1)") && sql.renew.contains("token = $4"));
        assert!(sql.take_worker.contains("node_name = $4") && !sql.take_worker.contains('?'));
        assert!(PostgresDialect::migration("ns_1", 1)
            .iter()
            .all(|ddl| ddl.contains("IF NOT EXISTS ns_1_")));
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
