//! Segment store calls, queued: at most [`SEGMENT_CALLS_IN_FLIGHT`] run at once, the rest wait
//! their turn in arrival order before they start.
//!
//! Why: a burst of first uses (10,000 new tags) or of prefetches (10,000 tags passing their
//! threshold together) starts one store call per tag. The store serves a handful at a time
//! (its connection pool), but every call started holds its whole future (a few KiB with the
//! driver's state) until it runs: 10,000 of them were 32 MiB of heap, which the allocator then
//! kept. Waiting here costs a few bytes per caller instead, and the store's own timeout starts
//! only when the call does, so a long queue is not mistaken for an unreachable store.
//!
//! Worker-lease calls are not queued: a lease renewal must never wait behind segment traffic.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use idmint_core::store::{SegmentStore, TagInfo, TagSettings, TagUpdate};
use idmint_core::{Error, Result, Tag};
use idmint_store::Store;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Segment store calls allowed to run at once: above every backend's connection pool, so the
/// pool stays busy, and small enough that waiting calls cost nothing worth counting.
pub const SEGMENT_CALLS_IN_FLIGHT: usize = 32;

/// `store` with its segment calls queued.
pub fn queued(store: Store) -> Store {
    Store {
        segments: Arc::new(QueuedSegments {
            inner: store.segments,
            turns: Semaphore::new(SEGMENT_CALLS_IN_FLIGHT),
        }),
        leases: store.leases,
        display_url: store.display_url,
    }
}

/// [`SegmentStore`] whose calls wait for one of a fixed number of turns.
#[derive(Debug)]
struct QueuedSegments {
    inner: Arc<dyn SegmentStore>,
    turns: Semaphore,
}

impl QueuedSegments {
    async fn turn(&self) -> Result<SemaphorePermit<'_>> {
        // The semaphore is never closed; the error arm only keeps this total.
        self.turns
            .acquire()
            .await
            .map_err(|_| Error::StoreUnavailable("the store queue is closed".into()))
    }
}

#[async_trait]
impl SegmentStore for QueuedSegments {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let _turn = self.turn().await?;
        self.inner.allocate(tag, step).await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        let _turn = self.turn().await?;
        self.inner.give_back(tag, unused).await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        let _turn = self.turn().await?;
        self.inner.create_tag(tag, settings).await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        let _turn = self.turn().await?;
        self.inner.update_tag(tag, update).await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let _turn = self.turn().await?;
        self.inner.tag_info(tag).await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let _turn = self.turn().await?;
        self.inner.list_tags().await
    }
}
