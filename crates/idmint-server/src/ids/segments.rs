//! One segment buffer per tag, made on first use.
//!
//! The hot path is a read-locked map lookup and the buffer's own atomic add. A tag seen for the
//! first time takes the slow path: its row is read from the store (or created, when
//! `auto_create_tags` allows) so the buffer starts with the tag's step.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock};

use idmint_core::store::{SegmentStore, TagSettings};
use idmint_core::{Clock, Error, Result, SegmentBuffer, SegmentConfig, Tag};
use tokio::runtime::Handle;
use tokio::sync::Mutex;

/// How segment tags behave.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentOptions {
    /// Buffer tuning; `min_step` is replaced per tag by the tag's own step.
    pub buffer: SegmentConfig,
    /// Create a tag on first use (with `default_step`) instead of refusing it.
    pub auto_create_tags: bool,
    /// The step of tags created on first use.
    pub default_step: u64,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            buffer: SegmentConfig::default(),
            auto_create_tags: true,
            default_step: 1_000,
        }
    }
}

/// The buffers of every tag this node has served.
#[derive(Debug)]
pub struct SegmentRegistry {
    store: Arc<dyn SegmentStore>,
    clock: Arc<dyn Clock>,
    options: SegmentOptions,
    runtime: Handle,
    buffers: RwLock<HashMap<Tag, Arc<SegmentBuffer>>>,
    /// Serializes first uses, so one tag never gets two buffers.
    creating: Mutex<()>,
}

impl SegmentRegistry {
    /// An empty registry; buffers run their fetches on `runtime`.
    pub fn new(
        store: Arc<dyn SegmentStore>,
        clock: Arc<dyn Clock>,
        options: SegmentOptions,
        runtime: Handle,
    ) -> Self {
        Self {
            store,
            clock,
            options,
            runtime,
            buffers: RwLock::new(HashMap::new()),
            creating: Mutex::new(()),
        }
    }

    /// `n` IDs of `tag`, as ascending runs.
    pub async fn next_many(&self, tag: &Tag, n: u64) -> Result<Vec<Range<u64>>> {
        self.buffer(tag).await?.next_many(n).await
    }

    /// `n` consecutive IDs of `tag` (Redis `INCRBY`, leases to clients).
    pub async fn take_contiguous(&self, tag: &Tag, n: u64) -> Result<Range<u64>> {
        self.buffer(tag).await?.take_contiguous(n).await
    }

    /// Passes a tag's new step to its running buffer, if this node has one: the next fetches
    /// use it.
    pub fn set_step(&self, tag: &Tag, step: u64) {
        if let Some(buffer) = self.read().get(tag) {
            buffer.set_min_step(step);
        }
    }

    /// Every buffer, for metrics.
    pub fn buffers(&self) -> Vec<Arc<SegmentBuffer>> {
        self.read().values().cloned().collect()
    }

    /// The buffer of `tag` if this node has made it; never creates one, never asks the store.
    pub fn loaded(&self, tag: &Tag) -> Option<Arc<SegmentBuffer>> {
        self.read().get(tag).cloned()
    }

    /// How many tags this node has buffers for.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True before this node has used any tag.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Shuts every buffer down, giving unused tails back to the store. Returns how many tails
    /// the store took back.
    pub async fn shutdown(&self) -> usize {
        let mut given_back = 0;
        for buffer in self.buffers() {
            match buffer.shutdown().await {
                Ok(true) => given_back += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(tag = %buffer.tag(), error = %error.with_causes(), "giving back a segment tail failed")
                }
            }
        }
        given_back
    }

    /// The buffer of `tag`, made on first use.
    pub async fn buffer(&self, tag: &Tag) -> Result<Arc<SegmentBuffer>> {
        if let Some(buffer) = self.read().get(tag) {
            return Ok(Arc::clone(buffer));
        }
        let _creating = self.creating.lock().await;
        if let Some(buffer) = self.read().get(tag) {
            return Ok(Arc::clone(buffer));
        }
        let step = self.tag_step(tag).await?;
        let config = SegmentConfig {
            min_step: step,
            ..self.options.buffer.clone()
        };
        let buffer = SegmentBuffer::new(
            tag.clone(),
            Arc::clone(&self.store),
            Arc::clone(&self.clock),
            config,
            self.runtime.clone(),
        );
        self.buffers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tag.clone(), Arc::clone(&buffer));
        Ok(buffer)
    }

    /// The tag's step from the store, creating the tag first if allowed.
    async fn tag_step(&self, tag: &Tag) -> Result<u64> {
        if let Some(info) = self.store.tag_info(tag).await? {
            return Ok(info.step);
        }
        if !self.options.auto_create_tags {
            return Err(Error::UnknownTag(tag.to_string()));
        }
        let settings = TagSettings {
            step: self.options.default_step,
            ..TagSettings::default()
        };
        match self.store.create_tag(tag, &settings).await {
            Ok(info) => Ok(info.step),
            // Another node created it meanwhile: use its row.
            Err(Error::TagExists(_)) => self
                .store
                .tag_info(tag)
                .await?
                .map(|info| info.step)
                .ok_or_else(|| Error::UnknownTag(tag.to_string())),
            Err(error) => Err(error),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Tag, Arc<SegmentBuffer>>> {
        self.buffers.read().unwrap_or_else(PoisonError::into_inner)
    }
}
