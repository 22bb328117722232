//! # idmint-core
//!
//! The I/O-free heart of idmint: bit layouts for 64-bit IDs, the clock they read, the lock-free
//! snowflake generator, the double-buffered segment allocator, and the store traits that keep
//! both unique across processes (a fenced high-water mark per worker ID, atomic range
//! allocation per tag). Stores, servers and the CLI build on these pieces.
//!
//! The invariants this crate upholds are written in docs/ARCHITECTURE.md, "Uniqueness" and "Clock model":
//! an ID is never issued twice, never above the high-water mark the store confirmed, never past
//! the end of its layout, and no clock step, backwards or forwards, changes that.

pub mod clock;
pub mod error;
pub mod id_space;
pub mod layout;
pub mod segment;
pub mod snowflake;
pub mod store;
pub mod tag;

mod sync;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use id_space::{IdSpace, IdSpaceRecord};
pub use layout::{DecodedId, FieldKind, Layout, TimeUnit};
pub use segment::{SegmentBuffer, SegmentConfig};
pub use snowflake::{LocalSnowflakes, SnowflakeBatch, SnowflakeConfig, SnowflakeGenerator};
pub use store::{SegmentStore, WorkerLeases};
pub use tag::Tag;
