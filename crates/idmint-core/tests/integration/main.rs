//! Property tests of idmint-core's public API: layouts, the text forms of IDs, dated sequences, the ID permutation, the snowflake generator, segment buffers. The loom model stays a binary of its own (it needs `--cfg idmint_loom`).
//!
//! One test binary for the crate (one link, one process), a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod dating_props;
mod form_props;
mod id128_props;
mod layout_props;
mod permutation_props;
#[cfg(feature = "async")]
mod segment_props;
mod snowflake_props;
