//! Store calls, measured: every call of both store traits records its latency and, when it
//! fails, what kind of failure it was. Operators see a slow or failing store before the buffers
//! run dry.
//!
//! Metrics: `idmint_store_call_seconds{op}` (latency of every call) and
//! `idmint_store_errors_total{op,kind}` with `kind` one of `unavailable`, `conflict`, `lease_lost`,
//! `invalid`, `corrupt` (damaged data), `refused` (an answer the caller acts on, such as an
//! unknown or exhausted tag).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::clock::Stopwatch;
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Renewal, SegmentStore, TagInfo, TagSettings, TagUpdate,
    WorkerLeases,
};
use idmint_core::{Error, IdSpaceRecord, Result, Tag};
use idmint_store::Store;

use crate::telemetry::{self, STORE_CALL_SECONDS, STORE_ERRORS};

/// `store` with every call measured.
pub fn metered(store: Store) -> Store {
    telemetry::describe_store_and_resp();
    Store {
        segments: Arc::new(MeteredSegments(store.segments)),
        leases: Arc::new(MeteredLeases(store.leases)),
        display_url: store.display_url,
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

/// Runs `call` as store operation `op`, measured.
async fn measure<T>(
    op: &'static str,
    call: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let stopwatch = Stopwatch::start();
    let result = call.await;
    record(op, stopwatch.elapsed(), &result);
    result
}

/// [`SegmentStore`] with every call measured.
#[derive(Debug)]
struct MeteredSegments(Arc<dyn SegmentStore>);

#[async_trait]
impl SegmentStore for MeteredSegments {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        measure("allocate", self.0.allocate(tag, step)).await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        measure("give_back", self.0.give_back(tag, unused)).await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        measure("create_tag", self.0.create_tag(tag, settings)).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        measure("update_tag", self.0.update_tag(tag, update)).await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        measure("tag_info", self.0.tag_info(tag)).await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        measure("list_tags", self.0.list_tags()).await
    }
}

/// [`WorkerLeases`] with every call measured.
#[derive(Debug)]
struct MeteredLeases(Arc<dyn WorkerLeases>);

#[async_trait]
impl WorkerLeases for MeteredLeases {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        measure("acquire", self.0.acquire(request)).await
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        measure("renew", self.0.renew(lease, hwm_ms, ttl)).await
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        measure("release", self.0.release(lease, final_hwm_ms)).await
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        measure("list_leases", self.0.list_leases()).await
    }

    async fn clock_ms(&self) -> Result<u64> {
        measure("clock", self.0.clock_ms()).await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        measure("id_spaces", self.0.id_spaces()).await
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        measure(
            "record_id_space",
            self.0.record_id_space(record, hwm_bound_ms),
        )
        .await
    }
}
