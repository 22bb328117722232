//! # idmint-server
//!
//! The composition root of `idmint serve`. Today it holds the ID service ([`ids`]): this
//! node's worker lease and snowflake generator, and its per-tag segment buffers, on any store of
//! `idmint-store`. The HTTP, Leaf and Redis-protocol front ends, metrics, configuration and
//! graceful shutdown build on it.

pub mod http;
pub mod ids;
pub mod resp;
