//! In-database generation: snowflake IDs made inside PostgreSQL by a PL/pgSQL function
//! `<namespace>_next_id(shard)` that a column default can call (Instagram's scheme), minting in the namespace's ID space on worker
//! IDs leased for it in the store, so the IDs it makes and the IDs idmint nodes make decode
//! alike and never collide.
//!
//! # How it stays unique
//!
//! - **Worker IDs of its own.** `install` takes `n` worker IDs that no lease holds, in the
//!   namespace's lease table, for good: their rows are marked live until the end of time (so no
//!   node takes them, and `idmint id-space change` waits for `uninstall`), under a new fencing
//!   token. Nodes and the function therefore never share a worker ID.
//! - **One session per worker ID at a time.** A session claims one of those worker IDs with a
//!   session-level advisory lock, and takes the lock again (re-entrantly) at every call before
//!   it touches that worker's state, so no two sessions ever use one worker ID at once, even
//!   after `pg_advisory_unlock_all()` or `DISCARD ALL`. The lock is the session's until it ends.
//! - **The state is a sequence per worker ID, and it is the high-water mark.** Its value packs
//!   `tick << seq_bits | seq`. A call takes `nextval`; when that tick is behind the database's
//!   clock it moves the sequence forward to the clock's tick (`setval`; only the claiming session
//!   touches it, so it only ever moves forward). A sequence never goes back: not on rollback (it
//!   is outside transactions), not on a crash (PostgreSQL logs it ahead of the values it hands
//!   out), not when the clock steps back (the values simply run ahead of the clock, borrowing at
//!   most `max_lead`, then the call waits, at most `max_wait`, and fails). No tick is ever issued
//!   above what the sequence stores.
//! - **Durable when the caller commits.** Each call takes a transaction ID
//!   (`pg_current_xact_id()`, which an `INSERT` takes anyway), so the commit of the transaction
//!   that drew an ID flushes the sequence's log record first. A transaction that never commits
//!   may have its IDs drawn again after a crash, but nothing it wrote survives either.
//! - **Fenced at both ends.** A worker ID's sequence starts above its stored high-water mark
//!   (the ticks its earlier holders may have used) and not before the ID space's first moment;
//!   `uninstall` waits for every transaction that drew from the sequences, writes the last
//!   tick each issued as its worker's high-water mark, and frees the worker IDs, so the next
//!   node to hold one starts above it.
//!
//! The feature has this one name in the code, `in_database`; its operator's command is
//! `idmint sql install` and `idmint sql uninstall`. [`install`] and [`uninstall`] are here;
//! the function itself, the constants and SQL text it is made of, is planned in `plan`.
//!
//! `idmint sql install --uuid` puts a second kind beside it, `<namespace>_uuidv7()`, which
//! needs no worker IDs: [`install_uuidv7`] and [`uninstall_uuidv7`], in `uuidv7`.

use std::time::Duration;

use idmint_core::{IdSpaceRecord, Layout};
use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, PgPool, Postgres, Row, Transaction};

use self::plan::Plan;
use crate::location::{Backend, Location};
use crate::{Error, Result, StoreOptions};

mod plan;
mod uuidv7;

pub use self::uuidv7::{
    install_uuidv7, uninstall_uuidv7, UuidInstalled, BUILT_IN_SERVER_VERSION, MIN_SERVER_VERSION,
};

/// What `install` is asked for.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// The ID space in force in the namespace (the function mints in it).
    pub space: IdSpaceRecord,
    /// How many worker IDs to lease for the function: as many sessions can draw IDs at once.
    pub workers: u64,
    /// How far ahead of the database's clock the function may run (after a step back, or past
    /// `2^seq_bits` IDs per tick) before a call waits.
    pub max_lead: Duration,
    /// The longest a call waits for the clock before it fails.
    pub max_wait: Duration,
    /// Roles allowed to call the function (besides its owner, the installing role).
    pub grant_to: Vec<String>,
}

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The function, schema-qualified: `public.idmint_next_id(shard bigint)`.
    pub function: String,
    /// The worker IDs leased for it.
    pub workers: Vec<u64>,
    /// The ID space version it mints in.
    pub space_version: u64,
}

/// One worker ID `uninstall` freed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freed {
    /// The worker ID.
    pub worker_id: u64,
    /// Its high-water mark now: the start of the last tick the function issued on it (or the
    /// earlier mark, if higher), ms since the Unix epoch.
    pub hwm_ms: u64,
}

/// The function's worker IDs as the store lists them: `node_name` of their lease rows.
pub fn node_name(namespace: &str) -> String {
    format!("sql:{namespace}_next_id")
}

/// Installs `<namespace>_next_id(shard bigint)` and `<namespace>_next_id()` (shard 0) in the
/// store's schema, leasing `request.workers` worker IDs for them. Refused when they are
/// installed already, when the store is not PostgreSQL, or when fewer worker IDs are free.
pub async fn install(
    location: &Location,
    options: &StoreOptions,
    request: &InstallRequest,
) -> Result<Installed> {
    let layout = request.space.space.to_layout()?;
    let plan = Plan::new(&layout, &request.space, request)?;
    let pool = connect(location, options).await?;
    let ns = &options.namespace;
    let mut tx = locked(&pool, ns).await?;
    if installed_workers(&mut tx, ns).await?.is_some() {
        return Err(invalid(format!(
            "{ns}_next_id is installed already; `idmint sql uninstall` first"
        )));
    }
    let newest: Option<i64> =
        sqlx::query_scalar(sql(format!("SELECT max(version) FROM {ns}_id_spaces")))
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| failed("reading the ID space", e))?;
    if newest != Some(to_i64(request.space.version)) {
        return Err(Error::store_conflict(
            "the ID space changed while the function was being installed; run it again",
        ));
    }
    let schema: String = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| failed("reading the schema", e))?;
    let shown = format!("{schema}.{ns}_next_id(shard bigint)");
    let schema = quote_ident(&schema);
    let taken = take_workers(&mut tx, ns, &plan).await?;
    sqlx::query(sql(format!(
        "CREATE TABLE {ns}_sql_function (worker_id BIGINT PRIMARY KEY, sequence OID NOT NULL, \
         space_version BIGINT NOT NULL, installed_at_ms BIGINT NOT NULL)"
    )))
    .execute(&mut *tx)
    .await
    .map_err(|e| failed("creating the function's table", e))?;
    let mut sequences = Vec::with_capacity(taken.len());
    for (worker, hwm_ms) in &taken {
        let start = plan.first_value(*hwm_ms);
        let name = format!("{schema}.{ns}_sql_w{worker}");
        sqlx::query(sql(format!(
            "CREATE SEQUENCE {name} AS BIGINT MINVALUE 0 START WITH {start} CACHE 1 NO CYCLE"
        )))
        .execute(&mut *tx)
        .await
        .map_err(|e| failed("creating a worker's sequence", e))?;
        let oid: sqlx::postgres::types::Oid = sqlx::query_scalar("SELECT $1::regclass::oid")
            .bind(&name)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| failed("reading a sequence", e))?;
        sqlx::query(sql(format!(
            "INSERT INTO {ns}_sql_function VALUES ($1, $2, $3, \
             (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)"
        )))
        .bind(to_i64(*worker))
        .bind(oid)
        .bind(to_i64(request.space.version))
        .execute(&mut *tx)
        .await
        .map_err(|e| failed("recording the function's worker", e))?;
        sequences.push((*worker, oid.0));
    }
    for statement in plan.function_sql(&schema, ns, &sequences) {
        sqlx::query(sql(statement))
            .execute(&mut *tx)
            .await
            .map_err(|e| failed("creating the function", e))?;
    }
    for role in &request.grant_to {
        sqlx::query(sql(format!(
            "GRANT EXECUTE ON FUNCTION {schema}.{ns}_next_id(bigint), {schema}.{ns}_next_id() \
             TO {}",
            quote_ident(role)
        )))
        .execute(&mut *tx)
        .await
        .map_err(|e| failed(&format!("granting the function to `{role}`"), e))?;
    }
    tx.commit()
        .await
        .map_err(|e| failed("committing the install", e))?;
    Ok(Installed {
        function: shown,
        workers: taken.iter().map(|(w, _)| *w).collect(),
        space_version: request.space.version,
    })
}

/// Removes the function, once every transaction that drew an ID from it has ended, writing the
/// last tick it issued on each worker ID as that worker's high-water mark, and frees the
/// worker IDs. Refused while a column default (or anything else) still uses the function.
/// `layout` is the namespace's ID space in force (`WorkerLeases::id_spaces`), the function's.
pub async fn uninstall(
    location: &Location,
    options: &StoreOptions,
    layout: &Layout,
) -> Result<Vec<Freed>> {
    let pool = connect(location, options).await?;
    let ns = &options.namespace;
    let mut tx = locked(&pool, ns).await?;
    let Some(rows) = installed_workers(&mut tx, ns).await? else {
        return Err(invalid(format!("{ns}_next_id is not installed")));
    };
    let users = users_of(&mut tx, &format!("{ns}_next_id")).await?;
    if !users.is_empty() {
        return Err(invalid(format!(
            "{ns}_next_id is still used by {}; drop those defaults first (ALTER TABLE ... \
             ALTER COLUMN ... DROP DEFAULT)",
            users.join(", ")
        )));
    }
    // No new call from here on; then wait for every transaction that drew from a sequence.
    for statement in [
        format!("DROP FUNCTION {ns}_next_id()"),
        format!("DROP FUNCTION {ns}_next_id(bigint)"),
    ] {
        sqlx::query(sql(statement))
            .execute(&mut *tx)
            .await
            .map_err(|e| failed("dropping the function", e))?;
    }
    let mut freed = Vec::with_capacity(rows.len());
    for (worker, sequence) in rows {
        let name: String = sqlx::query_scalar("SELECT $1::oid::regclass::text")
            .bind(sqlx::postgres::types::Oid(sequence))
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| failed("finding a worker's sequence", e))?;
        // A sequence cannot be locked with LOCK TABLE; ALTER SEQUENCE takes a lock that waits
        // for every transaction that drew from it (nextval's lock lasts to their end) and keeps
        // new draws out until this transaction ends. NO CYCLE is what it is already.
        sqlx::query(sql(format!("ALTER SEQUENCE {name} NO CYCLE")))
            .execute(&mut *tx)
            .await
            .map_err(|e| failed("waiting for the function's last callers", e))?;
        let row = sqlx::query(sql(format!("SELECT last_value, is_called FROM {name}")))
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| failed("reading a worker's sequence", e))?;
        let (last, called): (i64, bool) = (row.get(0), row.get(1));
        let last_tick = u64::try_from(last).unwrap_or(0) >> layout.seq_bits();
        let issued_ms = if called {
            layout.tick_start_ms(last_tick)
        } else {
            0
        };
        let hwm: i64 = sqlx::query_scalar(sql(format!(
            "UPDATE {ns}_workers SET hwm_ms = GREATEST(hwm_ms, $1), expires_at_ms = 0, \
             token = token + 1 WHERE worker_id = $2 AND node_name = $3 RETURNING hwm_ms"
        )))
        .bind(to_i64(issued_ms))
        .bind(to_i64(worker))
        .bind(node_name(ns))
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| failed("freeing a worker ID", e))?;
        sqlx::query(sql(format!("DROP SEQUENCE {name}")))
            .execute(&mut *tx)
            .await
            .map_err(|e| failed("dropping a worker's sequence", e))?;
        freed.push(Freed {
            worker_id: worker,
            hwm_ms: u64::try_from(hwm).unwrap_or(0),
        });
    }
    sqlx::query(sql(format!("DROP TABLE {ns}_sql_function")))
        .execute(&mut *tx)
        .await
        .map_err(|e| failed("dropping the function's table", e))?;
    tx.commit()
        .await
        .map_err(|e| failed("committing the uninstall", e))?;
    Ok(freed)
}

/// The worker IDs to lease: free ones (never used first, then those expired longest ago), and
/// their rows written as the function's, live for good under a new token. Returns each with its
/// stored high-water mark.
async fn take_workers(
    tx: &mut Transaction<'_, Postgres>,
    ns: &str,
    plan: &Plan,
) -> Result<Vec<(u64, u64)>> {
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(sql(format!(
        "SELECT worker_id, hwm_ms, expires_at_ms FROM {ns}_workers ORDER BY worker_id"
    )))
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| failed("reading the worker leases", e))?;
    let now_ms: i64 =
        sqlx::query_scalar("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT")
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| failed("reading the clock", e))?;
    let known: std::collections::HashMap<u64, (i64, i64)> = rows
        .iter()
        .map(|(w, hwm, expires)| (u64::try_from(*w).unwrap_or(u64::MAX), (*hwm, *expires)))
        .collect();
    let bound = plan.worker_count.min(1 << 20);
    let mut never: Vec<u64> = (0..bound).filter(|w| !known.contains_key(w)).collect();
    let mut expired: Vec<(i64, u64)> = known
        .iter()
        .filter(|(w, (_, expires))| **w < plan.worker_count && *expires <= now_ms)
        .map(|(w, (_, expires))| (*expires, *w))
        .collect();
    expired.sort_unstable();
    never.truncate(usize::try_from(plan.workers).unwrap_or(usize::MAX));
    let mut chosen: Vec<u64> = never;
    chosen.extend(expired.iter().map(|(_, w)| *w));
    let wanted = usize::try_from(plan.workers).unwrap_or(usize::MAX);
    if chosen.len() < wanted {
        return Err(Error::InvalidArgument {
            name: "workers",
            reason: format!(
                "{wanted} worker IDs asked for, but only {} of the layout's {} are free (the others \
                 are leased by nodes)",
                chosen.len(),
                plan.worker_count
            ),
        });
    }
    chosen.truncate(wanted);
    chosen.sort_unstable();
    let mut taken = Vec::with_capacity(chosen.len());
    for worker in chosen {
        let hwm: i64 = sqlx::query_scalar(sql(format!(
            "INSERT INTO {ns}_workers (worker_id, node_name, token, hwm_ms, expires_at_ms) \
             VALUES ($1, $2, 1, 0, $3) ON CONFLICT (worker_id) DO UPDATE SET \
             node_name = EXCLUDED.node_name, token = {ns}_workers.token + 1, \
             expires_at_ms = EXCLUDED.expires_at_ms RETURNING hwm_ms"
        )))
        .bind(to_i64(worker))
        .bind(node_name(ns))
        .bind(i64::MAX)
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| failed("leasing a worker ID for the function", e))?;
        taken.push((worker, u64::try_from(hwm).unwrap_or(0)));
    }
    Ok(taken)
}

/// What still uses the functions named `proname` in the current schema (a column default, a
/// view), as PostgreSQL describes each; empty when nothing does.
async fn users_of(tx: &mut Transaction<'_, Postgres>, proname: &str) -> Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_depend d \
         JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid \
         WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace \
         AND d.deptype = 'n' AND d.classid <> 'pg_proc'::regclass ORDER BY 1",
    )
    .bind(proname)
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| failed("looking for users of the function", e))
}

/// The function's worker IDs and their sequences, when it is installed.
async fn installed_workers(
    tx: &mut Transaction<'_, Postgres>,
    ns: &str,
) -> Result<Option<Vec<(u64, u32)>>> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(format!("{ns}_sql_function"))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| failed("looking for the function", e))?;
    if !exists {
        return Ok(None);
    }
    let rows: Vec<(i64, sqlx::postgres::types::Oid)> = sqlx::query_as(sql(format!(
        "SELECT worker_id, sequence FROM {ns}_sql_function ORDER BY worker_id"
    )))
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| failed("reading the function's workers", e))?;
    Ok(Some(
        rows.into_iter()
            .map(|(w, oid)| (u64::try_from(w).unwrap_or(0), oid.0))
            .collect(),
    ))
}

/// One connection for the operator's command.
async fn connect(location: &Location, options: &StoreOptions) -> Result<PgPool> {
    if location.backend != Backend::Postgres {
        return Err(Error::InvalidArgument {
            name: "store",
            reason: format!(
                "`{}`: the in-database function needs PostgreSQL (postgres://...)",
                location.display
            ),
        });
    }
    let connect = crate::sql::postgres::connect_options(location, "idmint sql")?;
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(options.call_timeout)
        .connect_with(connect)
        .await
        .map_err(|e| crate::sql::unreachable(location, options, e))
}

/// A transaction holding the namespace's advisory lock, as lease acquisitions and ID-space
/// changes take it: none of them runs while the function's worker IDs are taken or freed.
async fn locked(pool: &PgPool, ns: &str) -> Result<Transaction<'static, Postgres>> {
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL READ COMMITTED")
        .await
        .map_err(|e| failed("starting a transaction", e))?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(crate::sql::postgres::lock_key(ns))
        .execute(&mut *tx)
        .await
        .map_err(|e| failed("waiting for the namespace's lock", e))?;
    Ok(tx)
}

/// A statement built from trusted parts only: the namespace (checked to be `[a-z0-9_]`), quoted
/// identifiers, and numbers; values go in as bound parameters.
fn sql(text: impl Into<String>) -> AssertSqlSafe<String> {
    AssertSqlSafe(text.into())
}

/// `role` as a quoted SQL identifier.
fn quote_ident(role: &str) -> String {
    format!("\"{}\"", role.replace('"', "\"\""))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        name: "sql",
        reason: reason.into(),
    }
}

fn failed(what: &str, error: sqlx::Error) -> Error {
    <crate::sql::postgres::PostgresDialect as crate::sql::Dialect>::error(what, error)
}
