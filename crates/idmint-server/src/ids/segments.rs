//! One segment buffer per tag, made on first use.
//!
//! The hot path is a read-locked map lookup and the buffer's own atomic add. A tag seen for the
//! first time takes the slow path: its row is read from the store (or created, when
//! `auto_create_tags` allows) so the buffer starts with the tag's step. First uses of different
//! tags run at once (each waits only for its own store calls); two first uses of one tag share
//! one. At most `max_tags` tags are served: one more is refused before the store is asked, and
//! tokens other than the admin scope get that cap less the admin reserve and their own quota
//! (`tag_quota`). A
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
use super::tag_quota::{Asker, TagQuotas};

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
    /// The part of `max_tags` only the admin scope may fill (`--admin-tag-reserve`).
    pub admin_reserve: usize,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            buffer: SegmentConfig::default(),
            auto_create_tags: true,
            default_step: 1_000,
            max_tags: 10_000,
            admin_reserve: super::tag_quota::default_admin_reserve(10_000),
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
    /// Each token's share of the tags.
    quotas: TagQuotas,
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
        let quotas = TagQuotas::new(options.max_tags);
        Self {
            store,
            leases,
            clock,
            options,
            runtime,
            buffers: RwLock::new(HashMap::new()),
            loading: StdMutex::new(HashMap::new()),
            quotas,
        }
    }

    /// `n` IDs of `tag`, as ascending runs, for `asker`.
    pub async fn next_many(&self, tag: &Tag, n: u64, asker: Asker<'_>) -> Result<Vec<Range<u64>>> {
        self.buffer(tag, asker).await?.next_many(n).await
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

    /// The buffer of `tag`, made on first use when `asker` may: within `max_tags` (less the
    /// admin reserve for a tenant) and the tenant's quota. A tag already served is everyone's.
    pub async fn buffer(&self, tag: &Tag, asker: Asker<'_>) -> Result<TagBuffer> {
        if let Some(buffer) = self.read().get(tag) {
            return Ok(buffer.clone());
        }
        let (cell, charged) = {
            let mut loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
            // Checked again under the lock: a load that finished inserts its buffer before it
            // leaves `loading`.
            if let Some(buffer) = self.read().get(tag) {
                return Ok(buffer.clone());
            }
            match loading.get(tag) {
                Some(cell) => (Arc::clone(cell), None),
                None => {
                    let limit = match asker {
                        Asker::Operator => self.options.max_tags,
                        Asker::Tenant(_) => self
                            .options
                            .max_tags
                            .saturating_sub(self.options.admin_reserve),
                    };
                    if self.read().len() + loading.len() >= limit {
                        return Err(Error::TooManyTags {
                            tag: tag.to_string(),
                            limit,
                        });
                    }
                    let charged = self.quotas.charge(asker, tag)?;
                    let cell = Arc::new(OnceCell::new());
                    loading.insert(tag.clone(), Arc::clone(&cell));
                    (cell, charged)
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
            charged: charged.map(|token| (&self.quotas, token)),
        };
        cell.get_or_try_init(|| self.load(tag, asker))
            .await
            .cloned()
    }

    /// Makes the buffer of `tag` from its row (created first if allowed) and registers it.
    async fn load(&self, tag: &Tag, asker: Asker<'_>) -> Result<TagBuffer> {
        let info = self.tag_row(tag, asker).await?;
        let mut config = self.options.buffer.clone();
        config.min_step = info.step;
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

    /// The tag's row from the store, creating the tag first if allowed, within the asker's
    /// quota (plain: a dated tag is made by an operator, with its period and zone).
    async fn tag_row(&self, tag: &Tag, asker: Asker<'_>) -> Result<TagInfo> {
        if let Some(info) = self.store.tag_info(tag).await? {
            return Ok(info);
        }
        if !self.options.auto_create_tags {
            return Err(Error::UnknownTag {
                tag: tag.to_string(),
            });
        }
        let settings = TagSettings {
            step: self.options.default_step,
            ..TagSettings::default()
        };
        let created = self.store.create_tag(tag, &settings);
        let created = self.quotas.create(
            asker,
            tag,
            self.store.as_ref(),
            self.clock.as_ref(),
            created,
        );
        match created.await {
            Ok(info) => Ok(info),
            // Another node created it meanwhile: use its row.
            Err(Error::TagExists { .. }) => {
                self.store
                    .tag_info(tag)
                    .await?
                    .ok_or_else(|| Error::UnknownTag {
                        tag: tag.to_string(),
                    })
            }
            Err(error) => Err(error),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Tag, TagBuffer>> {
        self.buffers.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes a first use's cell from `loading` when the call that made or joined it ends, and
/// gives the token's charge back when the load it paid for failed.
struct Retire<'a> {
    loading: &'a StdMutex<LoadingCells>,
    tag: &'a Tag,
    cell: Arc<OnceCell<TagBuffer>>,
    charged: Option<(&'a TagQuotas, Box<str>)>,
}

impl Drop for Retire<'_> {
    fn drop(&mut self) {
        if let Some((quotas, token)) = &self.charged {
            if !self.cell.initialized() {
                quotas.release(token);
            }
        }
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
