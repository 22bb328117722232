//! MySQL and MariaDB (and engines that speak their protocol): one database shared by every
//! idmint node.
//!
//! Atomicity: a segment is taken with one autocommitted statement,
//! `UPDATE ... SET max_id = LAST_INSERT_ID(max_id + step) ... WHERE tag = ? AND max_id <= ?`.
//! InnoDB runs it under the row's lock, and the new `max_id` comes back in the statement's own
//! OK packet (its `last_insert_id`), so no second statement, transaction or connection state is
//! involved: one round trip, atomic by construction. The statement always changes `max_id`
//! (the step is at least 1), so its affected-rows count is 1 whether the server counts matched
//! or changed rows.
//!
//! Affected rows: sqlx-mysql asks for `CLIENT_FOUND_ROWS` (matched rows are counted), but a
//! server may not grant it, and an `UPDATE` that writes the values a row already has then counts
//! 0. So no conditional write here trusts the count unless the write always changes the row
//! (allocate, give-back): there is no `RETURNING`, and renew, release, tag changes and lease
//! acquisitions run in a transaction that reads the row back after the write (under the row lock
//! the write took), and decide from that.
//!
//! Acquisitions (and ID-space changes) are serialized across nodes by a transaction that first
//! locks the one row of the schema table (`SELECT ... FOR UPDATE`); the lock goes with the
//! commit or rollback, so a call dropped by its timeout never leaves it behind in a pooled
//! connection (a session lock such as `GET_LOCK` would). The rows the choice rests on are read
//! with locking reads (`FOR UPDATE`), which see the latest committed rows whatever the isolation
//! level or the engine's snapshot rules (TiDB takes its snapshot at `BEGIN`, before the lock).
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
//! the session's time zone, and past 2038). Node names are stored as bytes (`VARBINARY`,
//! compared exactly) and read as UTF-8 text, which every name idmint writes is.

use std::str::FromStr;
use std::sync::Arc;

use sqlx::mysql::{
    MySql, MySqlConnectOptions, MySqlConnection, MySqlDatabaseError, MySqlPool, MySqlPoolOptions,
    MySqlQueryResult,
};
use sqlx::{AssertSqlSafe, Connection, Pool};

use super::{Access, Dialect, Session, SqlStore, MAX_NODE_NAME};
use crate::bounded::{bounded, sql_error};
use crate::location::Location;
use crate::{Error, Result, StoreOptions};

/// Connections per store: enough for the segment refills of many tags at once and a lease
/// renewal, few enough that a fleet of nodes stays far below `max_connections`.
const MAX_CONNECTIONS: u32 = 8;

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

/// MySQL's part of the SQL store.
#[derive(Debug)]
pub(crate) struct MysqlDialect {
    /// Locks the schema row: serializes acquisitions and ID-space changes.
    lock: Arc<str>,
    /// The name of the `GET_LOCK` lock that serializes migrations of the namespace.
    migration_lock: String,
    /// For the migration's connection of its own.
    connect: MySqlConnectOptions,
    /// How long a migration waits for another node's, in seconds.
    lock_wait_s: i64,
    /// The URL with its password hidden.
    display: String,
}

impl Dialect for MysqlDialect {
    type Db = MySql;
    // Calendar arithmetic, not `UNIX_TIMESTAMP`, which depends on the session's time zone and
    // stops at 2038 on older servers.
    const NOW: &'static str = "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', \
                               UTC_TIMESTAMP(6)) DIV 1000 AS SIGNED)";
    const GREATEST: &'static str = "GREATEST";
    const RETURNING: bool = false;
    const LOCKING_READ: &'static str = " FOR UPDATE";
    const NODE_NAME: &'static str = "CONVERT(node_name USING utf8mb4)";
    const NEXT_MAX_ID: &'static str = "LAST_INSERT_ID(max_id + ?)";

    fn upsert(_key: &str) -> String {
        "ON DUPLICATE KEY UPDATE".to_owned()
    }

    fn schema_table(ns: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {ns}_schema (id INT NOT NULL PRIMARY KEY, \
             version BIGINT NOT NULL) ENGINE=InnoDB"
        )
    }

    /// Every statement is idempotent: MySQL commits DDL at once, so a migration cut short is
    /// simply run again. Tags are ASCII, compared and sorted byte-wise (`ascii_bin`:
    /// case-sensitive).
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
                    "CREATE TABLE IF NOT EXISTS {ns}_workers (\
                     worker_id BIGINT NOT NULL PRIMARY KEY, \
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
            3 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_store_set (id BIGINT NOT NULL PRIMARY KEY, \
                 set_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
                 member_index BIGINT NOT NULL, member_count BIGINT NOT NULL, \
                 block_size BIGINT NOT NULL, recorded_at_ms BIGINT NOT NULL) ENGINE=InnoDB"
            )],
            4 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_id_space_keys (\
                 version BIGINT NOT NULL PRIMARY KEY, \
                 permutation VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL) \
                 ENGINE=InnoDB"
            )],
            5 => vec![format!(
                "CREATE TABLE IF NOT EXISTS {ns}_tag_dates (\
                 tag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, \
                 dating VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL) \
                 ENGINE=InnoDB"
            )],
            // Tags of any UTF-8 text, compared byte for byte. `MODIFY` can run twice (MySQL
            // commits DDL at once, so a migration must be safe to repeat). `utf8mb4_bin` pads
            // with spaces when comparing, which `Tag` allows for by refusing a trailing space.
            6 => ["segments", "tag_dates"]
                .iter()
                .map(|table| {
                    format!(
                        "ALTER TABLE {ns}_{table} MODIFY tag VARCHAR(128) CHARACTER SET utf8mb4 \
                         COLLATE utf8mb4_bin NOT NULL"
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Like [`sql_error`], also treating as retryable the errors of [`TRANSIENT_ERRORS`] and as
    /// corrupt those of [`CORRUPTION_ERRORS`] (MySQL reports most of them under the generic
    /// SQLSTATE `HY000`, so they are told apart by number).
    fn error(what: &str, error: sqlx::Error) -> Error {
        let number = match &error {
            sqlx::Error::Database(db) => db
                .try_downcast_ref::<MySqlDatabaseError>()
                .map(MySqlDatabaseError::number),
            _ => None,
        };
        match number {
            Some(n) if TRANSIENT_ERRORS.contains(&n) => {
                Error::store_unavailable(what).caused_by(error)
            }
            Some(n) if CORRUPTION_ERRORS.contains(&n) => {
                Error::store_corrupt(what).caused_by(error)
            }
            _ => sql_error(what, error),
        }
    }

    /// The new `max_id`, from the OK packet's `last_insert_id`, when the one row changed.
    fn allocated(result: &MySqlQueryResult) -> Option<i64> {
        if result.rows_affected() != 1 {
            return None;
        }
        // A value above i64::MAX cannot come from a BIGINT: refused by the range checks after.
        Some(i64::try_from(result.last_insert_id()).unwrap_or(-1))
    }

    fn rows_affected(result: &MySqlQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Single writes on a pooled connection; writes read back in a transaction; serialized
    /// calls in a transaction holding the schema row's lock; migrations on a connection of
    /// their own holding the `GET_LOCK` lock.
    async fn session(&self, pool: &Pool<MySql>, access: Access) -> Result<Session<MySql>> {
        let err = |e| Self::error("starting a store call", e);
        match access {
            Access::Write => Ok(Session::Pooled(pool.acquire().await.map_err(err)?)),
            Access::WriteThenRead => Ok(Session::Tx(pool.begin().await.map_err(err)?)),
            Access::Serialized => {
                let mut tx = pool.begin().await.map_err(err)?;
                let locked: Option<i64> = sqlx::query_scalar(AssertSqlSafe(Arc::clone(&self.lock)))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err)?;
                if locked.is_none() {
                    return Err(Error::store_invalid(format!(
                        "the schema table of {} has no version row",
                        self.display
                    )));
                }
                Ok(Session::Tx(tx))
            }
            Access::Migrate => {
                let mut conn = MySqlConnection::connect_with(&self.connect)
                    .await
                    .map_err(|e| {
                        Error::store_unavailable(format!("cannot open {}", self.display))
                            .caused_by(e)
                    })?;
                let locked: Option<i64> =
                    sqlx::query_scalar("SELECT CAST(GET_LOCK(?, ?) AS SIGNED)")
                        .bind(&self.migration_lock)
                        .bind(self.lock_wait_s)
                        .fetch_one(&mut conn)
                        .await
                        .map_err(err)?;
                if locked != Some(1) {
                    return Err(Error::store_unavailable(format!(
                        "migrating the schema of {}: another node holds the migration lock",
                        self.display
                    )));
                }
                Ok(Session::Own(conn))
            }
        }
    }
}

/// Connects, checks durability, creates or migrates the schema.
pub(crate) async fn open(
    location: &Location,
    options: &StoreOptions,
) -> Result<SqlStore<MysqlDialect>> {
    let connect =
        MySqlConnectOptions::from_str(&location.url).map_err(|e| Error::InvalidArgument {
            name: "store",
            reason: format!("`{}`: {e}", location.display),
        })?;
    let pool = MySqlPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(options.call_timeout)
        .connect_with(connect.clone())
        .await
        .map_err(|e| super::unreachable(location, options, e))?;
    let check = check_durability(&pool, &location.display, options.allow_non_durable);
    bounded(options.call_timeout, "checking durability", check).await?;
    let ns = &options.namespace;
    let dialect = MysqlDialect {
        lock: Arc::from(format!(
            "SELECT version FROM {ns}_schema WHERE id = 1 FOR UPDATE"
        )),
        migration_lock: migration_lock(ns),
        connect,
        lock_wait_s: i64::try_from(options.call_timeout.as_secs().saturating_add(1))
            .unwrap_or(i64::MAX),
        display: location.display.clone(),
    };
    SqlStore::new(pool, dialect, options, &location.display).await
}

/// The name of the `GET_LOCK` lock that serializes migrations of a namespace (server-wide, so
/// the same namespace in two databases of one server shares it: harmless, migrations are rare).
fn migration_lock(ns: &str) -> String {
    format!("idmint_{ns}_schema")
}

/// Refuses a server that acknowledges commits before they are on disk, unless allowed.
async fn check_durability(pool: &MySqlPool, display: &str, allow: bool) -> Result<()> {
    let (flush, log_bin, sync_binlog): (i64, i64, i64) = sqlx::query_as(
        "SELECT CAST(@@innodb_flush_log_at_trx_commit AS SIGNED), \
         CAST(@@log_bin AS SIGNED), CAST(@@sync_binlog AS SIGNED)",
    )
    .fetch_one(pool)
    .await
    .map_err(|e| MysqlDialect::error(&format!("checking durability of {display}"), e))?;
    match durability_problem(flush, log_bin, sync_binlog) {
        None => Ok(()),
        Some(problem) => super::refuse_unless_allowed(format!("{display} {problem}"), allow),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;
    use crate::sql::statements::Statements;

    #[test]
    fn statements_name_the_namespace_tables_only() {
        let sql = Statements::new::<MysqlDialect>("ns_1");
        assert!(sql.allocate.contains("UPDATE ns_1_segments "));
        assert!(sql.allocate.contains("LAST_INSERT_ID(max_id + ?)"));
        assert!(sql.renew.contains("UPDATE ns_1_workers ") && !sql.renew.contains("RETURNING"));
        assert!(sql.worker_rows.ends_with("FOR UPDATE"));
        assert!(MysqlDialect::migration("ns_1", 1).iter().all(|ddl| {
            ddl.starts_with("CREATE TABLE IF NOT EXISTS ns_1_") && ddl.ends_with("ENGINE=InnoDB")
        }));
        assert!(MysqlDialect::migration("ns_1", schema::LATEST + 1).is_empty());
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
