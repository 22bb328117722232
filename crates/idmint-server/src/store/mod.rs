//! The store as the server uses it: the store of `idmint-store` (one store or a set) wrapped in
//! layers, each of which sees every call of both store traits.
//!
//! [`layer`] writes the forwarding of each trait method once; each other module is one
//! [`Layer`](layer::Layer). They stack in this order, a call passing through them from the
//! outside in:
//!
//! 1. [`corruption`]: the first damaged data any call reports is latched, and `/readyz` fails
//!    with it until the process restarts (applied by `Ids::start`, so every call of the ID
//!    service is watched, whoever makes it);
//! 2. [`main_runtime`]: the call runs as a task of the main runtime, whose reactor outlives
//!    the I/O threads' runtimes, and segment calls wait their turn in a queue (applied in
//!    `serve`);
//! 3. [`metered`]: the call's latency and failure kind are recorded, from the moment it starts
//!    on the store: a queue's wait above is not the store's latency (applied in `serve`);
//! 4. the store itself.
//!
//! Each layer answers exactly as the store it wraps: the store conformance suite runs through
//! every one of them (the tests below).

mod corruption;
pub mod layer;
pub mod main_runtime;
pub mod metered;

pub(crate) use self::corruption::watched;
pub use self::corruption::CorruptionLatch;

#[cfg(test)]
mod conformance_tests;
