//! # idmint-core
//!
//! The I/O-free heart of idmint: bit layouts for 64-bit IDs, the clock they read, the lock-free
//! snowflake generator, the double-buffered segment allocator, and the store traits that keep
//! both unique across processes (a fenced high-water mark per worker ID, atomic range
//! allocation per tag). Stores, servers and the CLI build on these pieces.
//!
//! The invariants this crate upholds are written in docs/ARCHITECTURE.md, "Uniqueness" and
//! "Clock model": an ID is never issued twice, never above the high-water mark the store
//! confirmed, never past the end of its layout, and no clock step, backwards or forwards,
//! changes that.
//!
//! ## Quick start
//!
//! Snowflake IDs, time-ordered, in a layout of your choice:
//!
//! ```
//! use idmint_core::{Layout, SnowflakeGenerator};
//!
//! let layout = Layout::parse("twitter")?; // time:41@1ms,dc:5,worker:5,seq:12
//! let ids = SnowflakeGenerator::builder(layout).datacenter(1).worker(7).build()?;
//! let (first, second) = (ids.next_id()?, ids.next_id()?);
//! assert!(first < second);
//! let parts = ids.layout().decode(second)?;
//! assert_eq!((parts.dc, parts.worker), (Some(1), Some(7)));
//! # Ok::<(), idmint_core::Error>(())
//! ```
//!
//! A generator built like this is unfenced: that no other process uses datacenter 1, worker 7
//! at the same time, and that a restart happens after the clock passed the last ID, is then up
//! to you. A store lease ([`WorkerLeases`], implemented by idmint-store for SQLite,
//! PostgreSQL, MySQL and Redis) does both and gives the [`Fence`] to build with.
//!
//! Segment IDs, dense per-tag sequences handed out from ranges of a [`SegmentStore`] and
//! fetched ahead in the background, need the `async` feature: see `segment::SegmentBuffer`.
//!
//! ## Cargo features
//!
//! None is on by default, so the crate is what it says, no I/O: no runtime, no serialization
//! framework. `async` adds the segment buffer and the in-memory store, on tokio; `serde` adds
//! `Serialize` to layouts, decoded IDs, tags and store records; `conformance` (with `async`)
//! exports the store conformance suite (`store::conformance`), the checks every implementation
//! of the store traits runs in its tests. The store traits are always there: they are plain
//! traits (async-trait is a macro, not a runtime), and implementing them belongs to the crates
//! that do I/O, such as idmint-store.

// docs.rs builds with `--cfg docsrs` on nightly: items behind a cargo feature show which.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's examples, compiled and run as doc tests so the text on crates.io stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod backoff;
pub mod clock;
pub mod dating;
pub mod error;
pub mod error_code;
pub mod form;
pub mod id128;
pub mod id_space;
pub mod layout;
pub mod permutation;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub mod segment;
pub mod snowflake;
pub mod store;
pub mod tag;

mod sync;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, SystemClock};
pub use dating::{DatedForm, Dating, Period};
pub use error::{Error, Result};
pub use error_code::ErrorCode;
pub use form::{IdForm, Radix};
pub use id128::{Id128, Id128Form, Id128Generator, Id128Kind};
pub use id_space::{IdSpace, IdSpaceRecord};
pub use layout::{DecodedId, FieldKind, Layout, TimeUnit};
pub use permutation::Permutation;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use segment::{DatedBuffer, RangeSource, SegmentBuffer, SegmentConfig};
pub use snowflake::{
    Fence, LocalSnowflakes, SnowflakeBatch, SnowflakeBuilder, SnowflakeConfig, SnowflakeGenerator,
};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use store::MemoryStore;
pub use store::{SegmentStore, WorkerLeases};
pub use tag::Tag;
