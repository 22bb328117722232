//! Tests of the server's pieces in one process: the ID service, the HTTP and the Redis-protocol front ends.
//!
//! One test binary for the crate (one link, one process), a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod http;
mod ids;
mod resp;
