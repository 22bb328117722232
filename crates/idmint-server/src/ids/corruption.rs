//! Damaged store data makes the node not ready, for good.
//!
//! A store that reports corruption ([`Error::StoreCorrupt`]: a malformed SQLite page, PostgreSQL
//! `data_corrupted`, a crashed MySQL table) answers some calls and fails others, depending on
//! which page each one reads; its answers can no longer be trusted to keep IDs unique. So the
//! first such error seen by any store call of this node (a segment fetch, a lease renewal, an
//! admin route, the readiness probe) is latched here, and `/readyz` fails with it until the
//! process restarts: a load balancer takes the node out, and an operator sees the reason. The
//! latch never clears by itself: a call that happens to succeed later proves nothing about the
//! damaged pages, and the fix (restoring the store from a backup) means a restart anyway.

use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Renewal, SegmentStore, TagInfo, TagSettings, TagUpdate,
    WorkerLeases,
};
use idmint_core::{Error, IdSpaceRecord, Result, Tag};
use idmint_store::Store;

/// The first corruption a store call reported, kept until the process ends.
#[derive(Debug, Default)]
pub struct CorruptionLatch {
    first: OnceLock<String>,
}

impl CorruptionLatch {
    /// The store's message of the first corruption seen, if any.
    pub fn reason(&self) -> Option<&str> {
        self.first.get().map(String::as_str)
    }

    /// Latches `result`'s error if it is a corruption (the first one only is kept and logged).
    fn observe<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error @ Error::StoreCorrupt { message, .. }) = &result {
            let message = match std::error::Error::source(error) {
                Some(cause) => format!("{message}: {cause}"),
                None => message.clone(),
            };
            if self.first.set(message.clone()).is_ok() {
                tracing::error!(
                    %message,
                    "the store reports damaged data: this node reports not ready until \
                     restarted; restore the store from a backup"
                );
            }
        }
        result
    }
}

/// `store` with every call watched by `latch`.
pub(super) fn watched(store: Store, latch: &Arc<CorruptionLatch>) -> Store {
    Store {
        segments: Arc::new(WatchedSegments {
            inner: store.segments,
            latch: Arc::clone(latch),
        }),
        leases: Arc::new(WatchedLeases {
            inner: store.leases,
            latch: Arc::clone(latch),
        }),
        display_url: store.display_url,
    }
}

/// [`SegmentStore`] whose errors go through the latch.
#[derive(Debug)]
struct WatchedSegments {
    inner: Arc<dyn SegmentStore>,
    latch: Arc<CorruptionLatch>,
}

#[async_trait]
impl SegmentStore for WatchedSegments {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        self.latch.observe(self.inner.allocate(tag, step).await)
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        self.latch.observe(self.inner.give_back(tag, unused).await)
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        self.latch
            .observe(self.inner.create_tag(tag, settings).await)
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        self.latch.observe(self.inner.update_tag(tag, update).await)
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        self.latch.observe(self.inner.tag_info(tag).await)
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        self.latch.observe(self.inner.list_tags().await)
    }
}

/// [`WorkerLeases`] whose errors go through the latch.
#[derive(Debug)]
struct WatchedLeases {
    inner: Arc<dyn WorkerLeases>,
    latch: Arc<CorruptionLatch>,
}

#[async_trait]
impl WorkerLeases for WatchedLeases {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        self.latch.observe(self.inner.acquire(request).await)
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        self.latch
            .observe(self.inner.renew(lease, hwm_ms, ttl).await)
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        self.latch
            .observe(self.inner.release(lease, final_hwm_ms).await)
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        self.latch.observe(self.inner.list_leases().await)
    }

    async fn clock_ms(&self) -> Result<u64> {
        self.latch.observe(self.inner.clock_ms().await)
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        self.latch.observe(self.inner.id_spaces().await)
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        self.latch
            .observe(self.inner.record_id_space(record, hwm_bound_ms).await)
    }
}

#[cfg(test)]
mod tests {
    use idmint_core::store::MemoryStore;
    use idmint_core::ManualClock;

    use super::*;

    #[test]
    fn the_first_corruption_is_kept_and_nothing_else_latches() {
        let latch = CorruptionLatch::default();
        assert_eq!(latch.observe(Ok(1)), Ok(1));
        let down = Error::store_unavailable("down");
        assert_eq!(latch.observe::<()>(Err(down.clone())), Err(down));
        assert_eq!(latch.reason(), None);
        let first = Error::store_corrupt("page 7 is malformed");
        assert_eq!(latch.observe::<()>(Err(first.clone())), Err(first));
        let second = Error::store_corrupt("page 9 is malformed");
        assert_eq!(latch.observe::<()>(Err(second.clone())), Err(second));
        assert_eq!(latch.observe(Ok(2)), Ok(2));
        assert_eq!(latch.reason(), Some("page 7 is malformed"));
    }

    #[tokio::test]
    async fn a_watched_store_answers_like_the_store_it_wraps() {
        let memory = Arc::new(MemoryStore::new(ManualClock::shared(1_000)));
        let store = Store {
            segments: memory.clone(),
            leases: memory,
            display_url: "memory".into(),
        };
        let latch = Arc::new(CorruptionLatch::default());
        let store = watched(store, &latch);
        let Ok(tag) = Tag::new("t") else {
            panic!("a valid tag is refused");
        };
        assert!(store
            .segments
            .create_tag(&tag, &TagSettings::default())
            .await
            .is_ok());
        assert_eq!(store.segments.allocate(&tag, 3).await, Ok(1..4));
        assert_eq!(store.display_url, "memory");
        assert_eq!(latch.reason(), None);
    }
}
