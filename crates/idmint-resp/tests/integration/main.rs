//! Tests of the RESP parser and encoders through the public API. `no_alloc` stays a binary of its own: it measures the process's peak memory, so nothing else may run beside it.
//!
//! One test binary for the crate (one link, one process), a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod parse;
mod props;
