//! Atomics of the lock-free paths, swapped for loom's under `--cfg idmint_loom` so the model checker
//! can explore every interleaving of the generator's compare-and-swap loop.

#[cfg(idmint_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(idmint_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
