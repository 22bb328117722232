//! One segment buffer per tag, made on first use.
//!
//! The hot path is a read-locked map lookup and the buffer's own atomic add. A tag seen for the
//! first time takes the slow path: its row is read from the store (or created, when
//! `auto_create_tags` allows) so the buffer starts with the tag's step. First uses of different
//! tags run at once (each waits only for its own store calls); two first uses of one tag share
//! one. At most `max_tags` tags are served: one more is refused before the store is asked. A
//! dated tag (its row says so) gets a [`DatedBuffer`] instead, over the same store and its
//! clock.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex as StdMutex, PoisonError, RwLock};

use idmint_core::store::{SegmentStore, TagInfo, TagSettings, WorkerLeases};
use idmint_core::{Clock, DatedBuffer, Error, Result, SegmentBuffer, SegmentConfig, Tag};
use tokio::runtime::Handle;
use tokio::sync::OnceCell;

use super::tag_buffer::TagBuffer;

/// Tails given back at once at shutdown.
const GIVE_BACK_AT_ONCE: usize = 32;

/// How segment tags behave.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentOptions {
    /// Buffer tuning; `min_step` is replaced per tag by the tag's own step.
    pub buffer: SegmentConfig,
    /// Create a tag on first use (with `default_step`) instead of refusing it.
    pub auto_create_tags: bool,
    /// The step of tags created on first use.
    pub default_step: u64,
    /// Most tags served (loaded or being loaded); one more is refused with
    /// [`Error::TooManyTags`].
    pub max_tags: usize,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            buffer: SegmentConfig::default(),
            auto_create_tags: true,
            default_step: 1_000,
            max_tags: 10_000,
        }
    }
}

/// The buffers of every tag this node has served.
#[derive(Debug)]
pub struct SegmentRegistry {
    store: Arc<dyn SegmentStore>,
    /// The same store's clock, which dated tags' periods are judged by.
    leases: Arc<dyn WorkerLeases>,
    clock: Arc<dyn Clock>,
    options: SegmentOptions,
    runtime: Handle,
    buffers: RwLock<HashMap<Tag, TagBuffer>>,
    /// Tags on their first use: one cell per tag, so a tag never gets two buffers while
    /// different tags load at once.
    loading: StdMutex<LoadingCells>,
}

impl SegmentRegistry {
    /// An empty registry; buffers run their fetches on `runtime`.
    pub fn new(
        store: Arc<dyn SegmentStore>,
        leases: Arc<dyn WorkerLeases>,
        clock: Arc<dyn Clock>,
        options: SegmentOptions,
        runtime: Handle,
    ) -> Self {
        Self {
            store,
            leases,
            clock,
            options,
            runtime,
            buffers: RwLock::new(HashMap::new()),
            loading: StdMutex::new(HashMap::new()),
        }
    }

    /// `n` IDs of `tag`, as ascending runs.
    pub async fn next_many(&self, tag: &Tag, n: u64) -> Result<Vec<Range<u64>>> {
        self.buffer(tag).await?.next_many(n).await
    }

    /// Passes a tag's new step to its running buffer, if this node has one: the next fetches
    /// use it.
    pub fn set_step(&self, tag: &Tag, step: u64) {
        if let Some(buffer) = self.read().get(tag) {
            buffer.set_min_step(step);
        }
    }

    /// Every tag's segment buffer serving now, for metrics.
    pub fn buffers(&self) -> Vec<Arc<SegmentBuffer>> {
        self.read().values().map(TagBuffer::current).collect()
    }

    /// The segment buffer serving `tag` now, if this node has made one; never creates one,
    /// never asks the store.
    pub fn loaded(&self, tag: &Tag) -> Option<Arc<SegmentBuffer>> {
        self.read().get(tag).map(TagBuffer::current)
    }

    /// How many tags this node has buffers for.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True before this node has used any tag.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Shuts every buffer down, giving unused tails back to the store, [`GIVE_BACK_AT_ONCE`]
    /// at a time (a node with thousands of tags stops in seconds on a store that serves calls
    /// in parallel, instead of one round trip per tag). Returns how many tails the store took
    /// back.
    pub async fn shutdown(&self) -> usize {
        let mut given_back = 0;
        let mut running = tokio::task::JoinSet::new();
        let mut tally = |ended: std::result::Result<
            (Tag, Result<bool>),
            tokio::task::JoinError,
        >| {
            match ended {
                Ok((_, Ok(true))) => given_back += 1,
                Ok((_, Ok(false))) => {}
                Ok((tag, Err(error))) => {
                    tracing::warn!(%tag, error = %error.with_causes(), "giving back a segment tail failed")
                }
                Err(error) => tracing::warn!(%error, "giving back a segment tail failed"),
            }
        };
        let tags: Vec<TagBuffer> = self.read().values().cloned().collect();
        for buffer in tags {
            if running.len() >= GIVE_BACK_AT_ONCE {
                if let Some(ended) = running.join_next().await {
                    tally(ended);
                }
            }
            running.spawn_on(
                async move { (buffer.tag().clone(), buffer.shutdown().await) },
                &self.runtime,
            );
        }
        while let Some(ended) = running.join_next().await {
            tally(ended);
        }
        given_back
    }

    /// The buffer of `tag`, made on first use.
    pub async fn buffer(&self, tag: &Tag) -> Result<TagBuffer> {
        if let Some(buffer) = self.read().get(tag) {
            return Ok(buffer.clone());
        }
        let cell = {
            let mut loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
            // Checked again under the lock: a load that finished inserts its buffer before it
            // leaves `loading`.
            if let Some(buffer) = self.read().get(tag) {
                return Ok(buffer.clone());
            }
            match loading.get(tag) {
                Some(cell) => Arc::clone(cell),
                None => {
                    if self.read().len() + loading.len() >= self.options.max_tags {
                        return Err(Error::TooManyTags {
                            tag: tag.to_string(),
                            limit: self.options.max_tags,
                        });
                    }
                    let cell = Arc::new(OnceCell::new());
                    loading.insert(tag.clone(), Arc::clone(&cell));
                    cell
                }
            }
        };
        // Retires the cell however this call ends, a dropped request included: the buffer is
        // in `buffers` by then, or the load failed (or was abandoned) and the next use tries
        // again. A cell left behind would count against `max_tags` for ever.
        let _retire = Retire {
            loading: &self.loading,
            tag,
            cell: Arc::clone(&cell),
        };
        cell.get_or_try_init(|| self.load(tag)).await.cloned()
    }

    /// Makes the buffer of `tag` from its row (created first if allowed) and registers it.
    async fn load(&self, tag: &Tag) -> Result<TagBuffer> {
        let info = self.tag_row(tag).await?;
        let config = SegmentConfig {
            min_step: info.step,
            ..self.options.buffer.clone()
        };
        let buffer = match info.dating {
            None => TagBuffer::Plain(SegmentBuffer::new(
                tag.clone(),
                Arc::clone(&self.store),
                Arc::clone(&self.clock),
                config,
                self.runtime.clone(),
            )),
            Some(dating) => TagBuffer::Dated(DatedBuffer::new(
                tag.clone(),
                dating,
                Arc::clone(&self.store),
                Arc::clone(&self.leases),
                Arc::clone(&self.clock),
                config,
                self.runtime.clone(),
            )),
        };
        let mut buffers = self.buffers.write().unwrap_or_else(PoisonError::into_inner);
        // A second load of the tag (after the first one's cell was retired by a dropped call)
        // keeps the first buffer: one tag, one buffer.
        Ok(buffers.entry(tag.clone()).or_insert(buffer).clone())
    }

    /// The tag's row from the store, creating the tag first if allowed (plain: a dated tag
    /// is made by an operator, with its period and zone).
    async fn tag_row(&self, tag: &Tag) -> Result<TagInfo> {
        if let Some(info) = self.store.tag_info(tag).await? {
            return Ok(info);
        }
        if !self.options.auto_create_tags {
            return Err(Error::UnknownTag(tag.to_string()));
        }
        let settings = TagSettings {
            step: self.options.default_step,
            ..TagSettings::default()
        };
        match self.store.create_tag(tag, &settings).await {
            Ok(info) => Ok(info),
            // Another node created it meanwhile: use its row.
            Err(Error::TagExists(_)) => self
                .store
                .tag_info(tag)
                .await?
                .ok_or_else(|| Error::UnknownTag(tag.to_string())),
            Err(error) => Err(error),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Tag, TagBuffer>> {
        self.buffers.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes a first use's cell from `loading` when the call that made or joined it ends.
struct Retire<'a> {
    loading: &'a StdMutex<LoadingCells>,
    tag: &'a Tag,
    cell: Arc<OnceCell<TagBuffer>>,
}

impl Drop for Retire<'_> {
    fn drop(&mut self) {
        let mut loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
        if loading
            .get(self.tag)
            .is_some_and(|current| Arc::ptr_eq(current, &self.cell))
        {
            loading.remove(self.tag);
        }
    }
}

/// The cells of the tags on their first use.
type LoadingCells = HashMap<Tag, Arc<OnceCell<TagBuffer>>>;
