//! Every store call is bounded in time, and every driver error becomes a typed error of
//! `idmint-core`: unavailable (the caller may retry), corrupt (damaged data), or invalid.

use std::future::Future;
use std::time::Duration;

use crate::{Error, Result};

/// Runs `call`, failing with [`Error::StoreUnavailable`] if it takes longer than `timeout`.
/// Dropping the call on timeout is safe: every write is one statement or one transaction, so
/// it either committed or did not.
pub(crate) async fn bounded<T>(
    timeout: Duration,
    what: &str,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(Error::store_unavailable(format!(
            "{what} timed out after {timeout:?}"
        ))),
    }
}

/// Maps a sqlx error: anything about reaching the database is unavailable (retry); damaged
/// data is corrupt; any other error the database raised about the statement or data is
/// invalid.
pub(crate) fn sql_error(what: &str, error: sqlx::Error) -> Error {
    let kind: fn(String) -> Error = match &error {
        sqlx::Error::Database(db) if is_transient(db.code().as_deref()) => Error::store_unavailable,
        sqlx::Error::Database(db) if is_sqlite_fault(db.as_ref()) => Error::store_unavailable,
        sqlx::Error::Database(db) if is_corruption(db.as_ref()) => Error::store_corrupt,
        sqlx::Error::Database(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::TypeNotFound { .. } => Error::store_invalid,
        _ => Error::store_unavailable,
    };
    kind(what.to_owned()).caused_by(error)
}

/// Database error codes that mean "try again" whatever the backend: SQLite busy and locked
/// (primary and extended codes), and the standard SQLSTATEs of a serialization failure or
/// deadlock. Backends add their own codes (connection loss, MySQL error numbers) in their
/// error wrappers.
fn is_transient(code: Option<&str>) -> bool {
    matches!(code, Some("5" | "6" | "261" | "517" | "40001" | "40P01"))
}

/// Whether `db` is a SQLite error of the machine rather than of the statement: the disk is full
/// (`SQLITE_FULL`, 13), an I/O error (`SQLITE_IOERR`, 10), the file cannot be written
/// (`SQLITE_READONLY`, 8: a file system remounted read-only, a file whose mode changed) or
/// opened (`SQLITE_CANTOPEN`, 14), with their extended codes. Each passes when the operator
/// frees space or restores the file, so the call is unavailable, to be retried, never refused.
fn is_sqlite_fault(db: &dyn sqlx::error::DatabaseError) -> bool {
    if !is_sqlite(db) {
        return false;
    }
    let code = db.code().and_then(|code| code.parse::<u32>().ok());
    code.is_some_and(|code| matches!(code & 0xFF, 8 | 10 | 13 | 14))
}

/// Whether `error` is a database error that means the stored data is damaged (see
/// [`is_corruption`]).
#[cfg(feature = "sqlite")]
pub(crate) fn is_corrupt(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if is_corruption(db.as_ref()))
}

/// Whether a database error means the stored data is damaged: SQLite's `SQLITE_CORRUPT` (11)
/// and `SQLITE_NOTADB` (26), with their extended codes (the primary code is the low byte), and
/// PostgreSQL's `data_corrupted` (XX001) and `index_corrupted` (XX002). MySQL reports its
/// equivalents by error number (see the MySQL backend's wrapper).
fn is_corruption(db: &dyn sqlx::error::DatabaseError) -> bool {
    if is_sqlite(db) {
        let code = db.code().and_then(|code| code.parse::<u32>().ok());
        return code.is_some_and(|code| matches!(code & 0xFF, 11 | 26));
    }
    matches!(db.code().as_deref(), Some("XX001" | "XX002"))
}

/// Whether `db` is an error of SQLite, whose codes are numbers (others' are SQLSTATEs).
#[cfg(feature = "sqlite")]
fn is_sqlite(db: &dyn sqlx::error::DatabaseError) -> bool {
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
}

/// Without SQLite support no error is SQLite's.
#[cfg(not(feature = "sqlite"))]
fn is_sqlite(_: &dyn sqlx::error::DatabaseError) -> bool {
    false
}

/// A value read from the store as `i64`, checked to be non-negative.
pub(crate) fn to_u64(what: &str, value: i64) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::store_invalid(format!("{what} is negative in the store: {value}")))
}

/// A value written to the store as `i64`, checked to fit.
pub(crate) fn to_i64(what: &str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::InvalidArgument {
        name: "value",
        reason: format!("{what} {value} does not fit a signed 64-bit column"),
    })
}
