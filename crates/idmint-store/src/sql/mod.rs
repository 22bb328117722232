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
//!
//! The shared code: opening and migrating here, segment calls in `segments.rs`, lease calls
//! in `leases.rs`, each over every dialect ([`for_every_dialect`]).

/// Writes an `impl` of [`SqlStore`] over every dialect, with what the shared code needs of a
/// dialect's driver written once: running statements on a connection, binding and reading
/// `i64`, `String` and `bool` (binding `Option`s of the first two), reading columns by
/// position. Every sqlx driver meets these bounds, but Rust carries no trait's where clause
/// to the code using the trait, so every `impl` over `D: Dialect` must state them. Used as
/// `for_every_dialect! { impl SqlStore { ... } }` or
/// `for_every_dialect! { #[async_trait] impl SegmentStore for SqlStore { ... } }`. rustfmt
/// leaves a macro's body as it is: write an `impl` out plainly to format it.
macro_rules! for_every_dialect {
    ($(#[$attr:meta])* impl $trait:ident for SqlStore $body:tt) => {
        for_every_dialect!(@impl [$(#[$attr])* impl<D: Dialect> $trait for SqlStore<D>] $body);
    };
    (impl SqlStore $body:tt) => {
        for_every_dialect!(@impl [impl<D: Dialect> SqlStore<D>] $body);
    };
    (@impl [$($head:tt)*] $body:tt) => {
        $($head)*
        where
            for<'c> &'c mut <D::Db as ::sqlx::Database>::Connection:
                ::sqlx::Executor<'c, Database = D::Db>,
            <D::Db as ::sqlx::Database>::Arguments: ::sqlx::IntoArguments<D::Db>,
            usize: ::sqlx::ColumnIndex<<D::Db as ::sqlx::Database>::Row>,
            i64: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            String: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            Option<i64>: for<'q> ::sqlx::Encode<'q, D::Db>,
            Option<String>: for<'q> ::sqlx::Encode<'q, D::Db>,
            bool: for<'r> ::sqlx::Decode<'r, D::Db> + ::sqlx::Type<D::Db>,
        $body
    };
}

#[cfg(feature = "sqlite")]
mod group_commit;
mod leases;
mod rows;
mod segments;
mod statements;

#[cfg(feature = "postgres")]
pub mod in_database;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "postgres")]
mod quiet_parse;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Connection, Database, Pool, Transaction};

use self::statements::Statements;
use crate::bounded::bounded;
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

for_every_dialect! {
    impl SqlStore {
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
