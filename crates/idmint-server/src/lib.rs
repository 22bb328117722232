//! # idmint-server
//!
//! The composition root of `idmint serve`: the ID service ([`ids`]: this node's worker lease
//! and snowflake generator, its per-tag segment buffers, on any store of `idmint-store`), the
//! HTTP and Leaf front end ([`http`]), the Redis-protocol front end ([`resp`]), the settings
//! ([`config`]) and the start and graceful stop of it all ([`serve`]).

// This crate's docs are for contributors (it is not published; `idmint serve` is its API), read
// with `cargo doc --document-private-items`, so they link private items freely.
#![allow(rustdoc::private_intra_doc_links)]

mod accept;
pub mod auth;
pub mod config;
mod error;
mod glob;
pub mod http;
pub mod id_space;
pub mod ids;
pub mod io_threads;
pub mod permutation_key;
pub mod resp;
pub mod serve;
pub mod store;
mod tally;
pub mod telemetry;
#[cfg(test)]
mod test_io;
pub mod tls;

pub use self::error::ServerError;
