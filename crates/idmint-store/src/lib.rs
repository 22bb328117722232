//! # idmint-store
//!
//! The stores behind idmint's uniqueness (docs/ARCHITECTURE.md, "Uniqueness"): atomic range allocation per
//! tag and fenced worker leases, implementing [`SegmentStore`] and [`WorkerLeases`] of
//! `idmint-core` on SQLite (the embedded default, no set-up), PostgreSQL, MySQL/MariaDB and
//! Redis. Each backend sits behind a cargo feature and is chosen by URL with [`open`]:
//! `sqlite://PATH`, `postgres://...`, `mysql://...`, `redis://...`.
//!
//! Every backend creates and migrates its own schema, checks at connect that it is durable
//! (refusing one that is not, unless the caller opts out), bounds every call with a timeout and
//! reports failures as the typed errors of `idmint-core`: unavailable (retry), conflict,
//! corrupt (damaged data), or invalid.

// docs.rs builds with `--cfg docsrs` on nightly: items behind a cargo feature show which.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's examples, compiled and run as doc tests so the text on crates.io stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The SQL backends' helpers: unused in a build with only Redis, or no backend at all.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code)
)]
mod bounded;
mod location;
#[cfg(feature = "redis")]
mod redis_store;
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code)
)]
mod schema;
mod set;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql;

use std::sync::Arc;
use std::time::Duration;

pub use idmint_core::store::{SegmentStore, WorkerLeases};
pub use idmint_core::{Error, Result};

pub use self::location::{redact, Backend, Location};
pub use self::set::{open_set, SetOptions, SetStatus, StoreState, RETRY_AFTER};
/// Snowflake IDs made inside PostgreSQL by a function a column default calls.
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::sql::in_database;

/// How to open a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Prefix of every table (SQL) or key (Redis): several idmint clusters, or test runs, can
    /// share one database. `[a-z0-9_]{1,32}`; default `idmint`.
    pub namespace: String,
    /// The longest any one call may take before it fails as unavailable. Default 5 s.
    pub call_timeout: Duration,
    /// Accept a store that cannot promise durability (SQLite without WAL and `synchronous=FULL`,
    /// Redis without `appendfsync always`). A crash may then reissue IDs; a warning is logged.
    pub allow_non_durable: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            namespace: "idmint".into(),
            call_timeout: Duration::from_secs(5),
            allow_non_durable: false,
        }
    }
}

impl StoreOptions {
    /// Checks the namespace: it becomes part of table names, so only `[a-z0-9_]{1,32}`. Public
    /// so a server can refuse a bad namespace before it opens anything.
    pub fn validate(&self) -> Result<()> {
        let ns = &self.namespace;
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if ns.is_empty() || ns.len() > 32 || !ns.chars().all(valid) {
            return Err(Error::InvalidArgument {
                name: "namespace",
                reason: format!("`{ns}` must be 1 to 32 characters of a-z 0-9 _"),
            });
        }
        if self.call_timeout.is_zero() {
            return Err(Error::InvalidArgument {
                name: "call_timeout",
                reason: "must be above zero".into(),
            });
        }
        Ok(())
    }
}

/// An open store: both traits, backed by one connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    /// Range allocation per tag.
    pub segments: Arc<dyn SegmentStore>,
    /// Worker leases with fenced high-water marks.
    pub leases: Arc<dyn WorkerLeases>,
    /// The URL with its password hidden, for logs.
    pub display_url: String,
    /// For a store set, each store's state (for `/readyz` and metrics); `None` for one store.
    pub set: Option<Arc<SetStatus>>,
}

/// Opens the store at `url`: connects, checks durability, creates or migrates the schema.
///
/// Fails with [`Error::StoreUnavailable`] naming the URL (password hidden) when the store cannot
/// be reached, [`Error::StoreInvalid`] when it is not durable or its schema is newer than this
/// binary knows, [`Error::StoreCorrupt`] when a SQLite file fails its integrity check (the
/// message names the file, the problems and what to do), and [`Error::InvalidArgument`] for a
/// URL of an unknown or disabled backend.
pub async fn open(url: &str, options: &StoreOptions) -> Result<Store> {
    options.validate()?;
    let location = Location::parse(url)?;
    match location.backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => Ok(Store::new(
            sql::sqlite::open(&location, options).await?,
            &location,
        )),
        #[cfg(feature = "postgres")]
        Backend::Postgres => Ok(Store::new(
            sql::postgres::open(&location, options).await?,
            &location,
        )),
        #[cfg(feature = "mysql")]
        Backend::Mysql => Ok(Store::new(
            sql::mysql::open(&location, options).await?,
            &location,
        )),
        #[cfg(feature = "redis")]
        Backend::Redis => Ok(Store::new(
            redis_store::RedisStore::open(&location, options).await?,
            &location,
        )),
        #[allow(unreachable_patterns)]
        backend => Err(Error::InvalidArgument {
            name: "store",
            reason: format!(
                "`{}`: this build has no {} support (cargo feature `{}`)",
                location.display,
                backend.name(),
                backend.feature()
            ),
        }),
    }
}

impl Store {
    /// Shares one backend between both traits.
    #[allow(dead_code)]
    fn new<T: SegmentStore + WorkerLeases + 'static>(backend: T, location: &Location) -> Self {
        let backend = Arc::new(backend);
        Self {
            segments: backend.clone(),
            leases: backend,
            display_url: location.display.clone(),
            set: None,
        }
    }
}
