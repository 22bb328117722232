//! Store calls, measured: every call of both store traits records its latency and, when it
//! fails, what kind of failure it was. Operators see a slow or failing store before the buffers
//! run dry.
//!
//! Metrics: `idmint_store_call_seconds{op}` (latency of every call) and
//! `idmint_store_errors_total{op,kind}` with `kind` one of `unavailable`, `conflict`, `lease_lost`,
//! `invalid`, `corrupt` (damaged data), `refused` (an answer the caller acts on, such as an
//! unknown or exhausted tag).

use std::future::Future;
use std::time::Duration;

use idmint_core::clock::Stopwatch;
use idmint_core::{Error, Result};
use idmint_store::Store;

use super::layer::{layered, Calls, Layer};
use crate::telemetry::{self, STORE_CALL_SECONDS, STORE_ERRORS};

/// `store` with every call measured.
pub fn metered(store: Store) -> Store {
    telemetry::describe_store_and_resp();
    // The failures an operator alerts on exist from the start, at 0, so a rate over them
    // works before the first one (Prometheus cannot rate a series that is not there yet).
    for op in ["allocate", "renew"] {
        metrics::counter!(STORE_ERRORS, "op" => op, "kind" => "unavailable").absolute(0);
    }
    layered(store, Metered)
}

/// The measuring [`Layer`].
#[derive(Debug)]
struct Metered;

impl Layer for Metered {
    async fn around<T: Send + 'static>(
        &self,
        op: &'static str,
        _: Calls,
        call: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let stopwatch = Stopwatch::start();
        let result = call.await;
        record(op, stopwatch.elapsed(), &result);
        result
    }
}

/// Records one call's latency and outcome.
fn record<T>(op: &'static str, elapsed: Duration, result: &Result<T>) {
    metrics::histogram!(STORE_CALL_SECONDS, "op" => op).record(elapsed.as_secs_f64());
    if let Err(error) = result {
        let kind = match error {
            Error::StoreUnavailable { .. } => "unavailable",
            Error::StoreConflict { .. } => "conflict",
            Error::LeaseLost { .. } => "lease_lost",
            Error::StoreInvalid { .. } => "invalid",
            Error::StoreCorrupt { .. } => "corrupt",
            _ => "refused",
        };
        metrics::counter!(STORE_ERRORS, "op" => op, "kind" => kind).increment(1);
    }
}
