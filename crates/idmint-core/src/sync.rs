//! What the lock-free paths share: their atomics (swapped for loom's under `--cfg idmint_loom`
//! so the model checker can explore every interleaving of the generator's compare-and-swap
//! loop) and cache-line padding.

#[cfg(idmint_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(idmint_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

/// Keeps its content on cache lines of its own (128 bytes also covers adjacent-line
/// prefetching), so a contended word does not slow down reads of its neighbours, and reads of
/// read-mostly neighbours do not steal the contended word's line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);
