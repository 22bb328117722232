//! A client of idmint nodes that hands IDs out of its own memory and fails over between
//! nodes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), idmint_client::Error> {
//! use idmint_client::{Client, ClientConfig};
//! let ids = Client::new(ClientConfig::new(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"]))?;
//! let order_id = ids.next("orders").await?; // from memory nearly always
//! let event_id = ids.snowflake().await?;
//! # let _ = (order_id, event_id);
//! ids.close().await; // gives unused IDs back
//! # Ok(())
//! # }
//! ```
//!
//! # What it promises
//!
//! - **Unique, always.** Every ID comes from a range or batch a node handed out once; the
//!   client never makes one up. When no node can serve within `max_wait` a call fails with
//!   [`Error::Unavailable`].
//! - **Increasing per client.** A tag's IDs from one client strictly increase, across
//!   failovers too (each range is asked for above the last: `IDMINT.RANGE tag n ABOVE id`),
//!   and so do its snowflakes. Across clients they only trend upwards: each holds its own
//!   range. On nodes that hand out permuted IDs (`--permutation-key-file`) there is no order:
//!   snowflakes come in the node's order, and segment IDs, which the client takes in runs,
//!   are refused with the reason (take them with `IDMINT.NEXT tag COUNT n`).
//! - **Dated tags** (made with a `period` on the nodes: IDs such as `20261123000042` that start
//!   again every day) are not kept: a range held here would outlive its period, so the nodes
//!   refuse one, and the client takes each of their IDs from a node (`IDMINT.NEXT`), one round
//!   trip each. They are unique and dated by the store's clock, and increase while the client
//!   talks to one node.
//! - **What a crash loses.** A client process that dies loses the IDs it held (at most two
//!   ranges per tag): never reissued, a gap. A client closed or dropped gives them back
//!   where the node can still take them.
//!
//! # How
//!
//! Segment IDs: idmint-core's [`SegmentBuffer`](idmint_core::SegmentBuffer), the lock-free
//! double buffer a node runs over its store, here over the nodes (`remote_ranges`). The range
//! size follows the rate so a range lasts about `target_lifetime`. Snowflakes: batches of
//! `snowflake_batch` that are dropped once older than `snowflake_max_age` (`snowflakes`).
//! Failover and back-off: `nodes`. Counters: [`ClientStats`] and the `metrics` facade
//! (`stats`).

// docs.rs builds with `--cfg docsrs` on nightly: items behind a cargo feature show which.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's examples, compiled and run as doc tests so the text on crates.io stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod blocking;
mod client;
mod config;
mod error;
mod nodes;
mod remote_ranges;
mod snowflakes;
mod stats;
mod tag_table;

pub use blocking::{BlockingClient, BlockingTagIds};
pub use client::{Client, TagIds};
pub use config::ClientConfig;
pub use error::{ConfigError, ConfigField, Error, Result};
/// IDs as text (base62, base36, Crockford's base32, padded decimal, with a prefix), written and
/// read exactly as the nodes do for `format=` and `FORMAT`: `IdForm::new(Radix::Base62)
/// .with_prefix("ord_")?.encode(id)`.
pub use idmint_core::form::{IdForm, Radix};
/// UUIDv7s and ULIDs ([`Client::uuid7`], [`Client::ulid`]): the value, its text forms
/// (`Id128Form::Uuid.render(id)`, `Id128::parse(text)`), and the generator itself for code
/// that wants one of its own.
pub use idmint_core::id128::{Decoded128, Id128, Id128Form, Id128Generator, Id128Kind};
pub use stats::ClientStats;
