//! The async client.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use idmint_core::{
    Clock, Id128, Id128Generator, Id128Kind, SegmentBuffer, SegmentConfig, SystemClock, Tag,
};
use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::nodes::Nodes;
use crate::remote_ranges::RemoteRanges;
use crate::snowflakes::Snowflakes;
use crate::stats::ClientStats;
use crate::tag_table::TagTable;

/// A client of idmint nodes that hands IDs out of its own memory.
///
/// Segment IDs come from a double buffer per tag (idmint-core's [`SegmentBuffer`], the one a
/// node runs over its store) filled from the nodes in the background, so `next` is an atomic
/// add nearly every time; snowflakes come from small batches that never get older than the
/// configured bound. Cheap to clone (an `Arc`); every method may be called from any thread.
///
/// Build it inside a tokio runtime: its background refills run there. For programs without
/// one, [`BlockingClient`](crate::BlockingClient) brings its own.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClientConfig,
    nodes: Arc<Nodes>,
    ranges: Arc<RemoteRanges>,
    clock: Arc<dyn Clock>,
    runtime: Handle,
    /// The tags' buffers, found without a lock or a shared write on every call.
    buffers: TagTable,
    adding: Mutex<()>,
    snowflakes: Snowflakes,
    /// UUIDv7s and ULIDs are made here: no node is asked (nothing to coordinate).
    uuid7: Id128Generator,
    ulid: Id128Generator,
    closed: AtomicBool,
    /// Dated tags (the nodes refused them a range, `dated`): their IDs are taken from a node
    /// one call at a time, never kept, since a kept ID would outlive its period. Read on the
    /// slow path only: a dated tag's buffer is shut, so its fast path finds nothing.
    dated: Mutex<HashSet<Tag>>,
}

/// One tag's IDs, for a loop that draws many: no lookup by name per call. It draws from the
/// client's buffer of the tag, so it stops (with [`Error::Closed`]) once the client is closed.
#[derive(Clone, Debug)]
pub struct TagIds {
    buffer: Arc<SegmentBuffer>,
    client: Client,
}

impl TagIds {
    /// The next ID of the tag: from memory, or after waiting (at most `max_wait`) for a range;
    /// a dated tag's from a node.
    pub async fn next(&self) -> Result<u64> {
        match self.buffer.try_next() {
            Some(id) => Ok(id),
            None => self.client.next_slow(&self.buffer).await,
        }
    }

    /// The next ID if one is in memory, without waiting (a refill is started otherwise).
    #[inline]
    pub fn try_next(&self) -> Option<u64> {
        self.buffer.try_next()
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        self.buffer.tag().as_str()
    }

    /// The slow path of [`next`](Self::next).
    pub(crate) async fn next_slow(&self) -> Result<u64> {
        self.client.next_slow(&self.buffer).await
    }
}

impl Client {
    /// A client of `config.nodes`. Opens no connection yet (the first call does); must be
    /// called inside a tokio runtime.
    pub fn new(config: ClientConfig) -> Result<Self> {
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        Self::on(config, runtime)
    }

    /// A client whose background work runs on `runtime`.
    pub(crate) fn on(config: ClientConfig, runtime: Handle) -> Result<Self> {
        config.validate()?;
        let nodes = Arc::new(Nodes::new(&config)?);
        let ranges = Arc::new(RemoteRanges::new(nodes.clone(), config.max_wait));
        let snowflakes = Snowflakes::new(
            config.snowflake_batch,
            config.snowflake_max_age,
            config.max_wait,
        );
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let id128 = |kind| {
            let builder = Id128Generator::builder(kind).clock(clock.clone());
            match config.id128_node {
                Some((bits, node)) => builder.node(bits, node),
                None => builder,
            }
            .build()
            .map_err(|e| Error::from_core(e, Duration::ZERO))
        };
        let (uuid7, ulid) = (id128(Id128Kind::Uuid7)?, id128(Id128Kind::Ulid)?);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                nodes,
                ranges,
                clock,
                uuid7,
                ulid,
                runtime,
                buffers: TagTable::new(),
                adding: Mutex::new(()),
                snowflakes,
                closed: AtomicBool::new(false),
                dated: Mutex::new(HashSet::new()),
            }),
        })
    }

    /// The next segment ID of `tag`: strictly above every ID this client handed out for it
    /// before, unique across every client and node.
    ///
    /// A dated tag (made with a `period` on the nodes) is the exception: a range kept here
    /// would outlive its period, so each ID is taken from a node when asked for
    /// (`IDMINT.NEXT`), one round trip each. Its IDs are unique and dated by the store's clock,
    /// and increase as long as the client talks to one node.
    pub async fn next(&self, tag: &str) -> Result<u64> {
        if let Some(id) = self.try_next(tag) {
            return Ok(id);
        }
        let buffer = self.buffer(tag)?;
        self.next_slow(&buffer).await
    }

    /// The wait for a range, with the buffer's error as the caller should see it; for a dated
    /// tag, an ID from a node.
    pub(crate) async fn next_slow(&self, buffer: &SegmentBuffer) -> Result<u64> {
        let started = Instant::now();
        if self.is_dated(buffer.tag()) {
            return self.dated_next(buffer.tag()).await;
        }
        if buffer.is_shut_down() {
            return Err(Error::Closed);
        }
        match buffer.next().await {
            Ok(id) => Ok(id),
            Err(idmint_core::Error::DatedRangeRefused { .. }) => {
                self.inner.dated_tags().insert(buffer.tag().clone());
                // Shut, so the fast path finds nothing and starts no fetch the nodes refuse.
                let _ = buffer.shutdown().await;
                self.dated_next(buffer.tag()).await
            }
            Err(error) => Err(Error::from_core(error, started.elapsed())),
        }
    }

    fn is_dated(&self, tag: &Tag) -> bool {
        self.inner.dated_tags().contains(tag)
    }

    /// One ID of the dated tag `tag`, from the first node that answers within `max_wait`.
    async fn dated_next(&self, tag: &Tag) -> Result<u64> {
        self.check_open()?;
        let started = Instant::now();
        let mut cmd = redis::cmd("IDMINT.NEXT");
        cmd.arg(tag.as_str()).arg("FORMAT").arg("INTEGER");
        match self
            .inner
            .nodes
            .call::<u64>(&cmd, self.inner.config.max_wait)
            .await
        {
            Ok((_, id)) => Ok(id),
            Err(error) => Err(Error::from_core(error, started.elapsed())),
        }
    }

    /// The next ID of `tag` if one is in memory: no waiting, no reference count touched.
    #[inline]
    pub(crate) fn try_next(&self, tag: &str) -> Option<u64> {
        self.inner.buffers.with(tag, |b| b.try_next())?
    }

    /// A handle on `tag` for drawing many IDs (skips the lookup by name).
    pub fn tag(&self, tag: &str) -> Result<TagIds> {
        Ok(TagIds {
            buffer: self.buffer(tag)?,
            client: self.clone(),
        })
    }

    /// One snowflake, taken from a batch no older than `snowflake_max_age`.
    pub async fn snowflake(&self) -> Result<u64> {
        let ids = self.snowflakes(1).await?;
        ids.first().copied().ok_or(Error::Closed)
    }

    /// `n` snowflakes, increasing.
    pub async fn snowflakes(&self, n: usize) -> Result<Vec<u64>> {
        self.check_open()?;
        self.inner.snowflakes.take(&self.inner.nodes, n).await
    }

    /// A UUIDv7 (RFC 9562) made here, no round trip: above every one this client made
    /// before, on any thread; 48-bit milliseconds, a 24-bit counter, then the node field of
    /// [`ClientConfig::id128_node`](crate::ClientConfig::id128_node) and CSPRNG bits (the
    /// layout of the nodes' `IDMINT.UUID`, docs/ARCHITECTURE.md "128-bit IDs").
    /// `Id128Form::Uuid.render(id)` (or `to_string()`) writes `0192f3a1-7c2e-7a3b-...`.
    pub fn uuid7(&self) -> Result<Id128> {
        self.id128(&self.inner.uuid7)
    }

    /// A ULID made here, as [`uuid7`](Self::uuid7) makes UUIDs (`Id128Form::Ulid.render(id)`
    /// writes its 26 characters).
    pub fn ulid(&self) -> Result<Id128> {
        self.id128(&self.inner.ulid)
    }

    /// Needs no node, so it works after [`close`](Self::close) too (as in the Java and Go
    /// libraries).
    fn id128(&self, ids: &Id128Generator) -> Result<Id128> {
        ids.next_id()
            .map_err(|e| Error::from_core(e, Duration::ZERO))
    }

    /// The client's counters.
    pub fn stats(&self) -> ClientStats {
        self.inner.nodes.stats.snapshot()
    }

    /// Stops handing out IDs and gives every tag's unused IDs back to the node that handed
    /// them out, where it can still take them (nothing taken there since). Returns how many
    /// tags gave back. Later calls fail with [`Error::Closed`].
    pub async fn close(&self) -> usize {
        let buffers: Vec<_> = {
            let _adding = self.inner.adding();
            if self.inner.closed.swap(true, Ordering::AcqRel) {
                return 0;
            }
            self.inner.buffers.all()
        };
        // Every tag at once: a node that hangs costs one wait, not one per tag.
        let closing: Vec<_> = buffers
            .into_iter()
            .map(|buffer| {
                self.inner
                    .runtime
                    .spawn(async move { buffer.shutdown().await })
            })
            .collect();
        let mut given = 0;
        for closed in closing {
            match closed.await {
                Ok(Ok(true)) => given += 1,
                Ok(Ok(false)) => {}
                Ok(Err(error)) => tracing::debug!(%error, "idmint client: give-back failed"),
                Err(error) => tracing::debug!(%error, "idmint client: give-back did not finish"),
            }
        }
        given
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The buffer of `tag`, made on first use.
    #[inline]
    fn buffer(&self, tag: &str) -> Result<Arc<SegmentBuffer>> {
        if let Some(buffer) = self.inner.buffers.with(tag, Arc::clone) {
            return Ok(buffer);
        }
        self.add_buffer(tag)
    }

    #[cold]
    fn add_buffer(&self, name: &str) -> Result<Arc<SegmentBuffer>> {
        self.check_open()?;
        let tag = Tag::new(name).map_err(|source| Error::Refused { source })?;
        let _adding = self.inner.adding();
        // Checked again under the lock `close` takes: no buffer is added after its snapshot.
        self.check_open()?;
        if let Some(buffer) = self.inner.buffers.with(name, Arc::clone) {
            return Ok(buffer);
        }
        let config = &self.inner.config;
        let segment = SegmentConfig::default()
            .with_steps(config.min_step, config.max_step)
            .with_target_lifetime(config.target_lifetime)
            .with_prefetch_at(config.prefetch_at)
            .with_max_wait(config.max_wait);
        let buffer = SegmentBuffer::with_source(
            tag,
            self.inner.ranges.clone(),
            self.inner.clock.clone(),
            segment,
            self.inner.runtime.clone(),
        );
        self.inner.buffers.insert(name, buffer.clone());
        Ok(buffer)
    }
}

impl Inner {
    fn adding(&self) -> std::sync::MutexGuard<'_, ()> {
        self.adding.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn dated_tags(&self) -> std::sync::MutexGuard<'_, HashSet<Tag>> {
        self.dated.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("nodes", &self.inner.config.nodes)
            .field("tags", &self.inner.buffers.all().len())
            .field("closed", &self.inner.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    /// A client dropped without [`Client::close`] still gives its unused IDs back, in the
    /// background, if its runtime is still running.
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let buffers = self.buffers.all();
        if buffers.is_empty() {
            return;
        }
        // Detached: nobody waits for it.
        drop(self.runtime.spawn(async move {
            for buffer in buffers {
                let _ = buffer.shutdown().await;
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashSet;

    use super::*;
    use crate::BlockingClient;

    /// No node is needed: the address is never dialled for 128-bit IDs.
    fn config() -> ClientConfig {
        ClientConfig::new(["redis://127.0.0.1:9"])
    }

    #[test]
    fn uuids_and_ulids_are_made_here_increasing_across_threads() {
        let client = Arc::new(BlockingClient::new(config().with_id128_node(8, 200)).unwrap());
        let in_order = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (client, in_order) = (client.clone(), in_order.clone());
                std::thread::spawn(move || {
                    for _ in 0..5_000 {
                        let mut list = in_order.lock().unwrap();
                        list.push(client.uuid7().unwrap());
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let ids = in_order.lock().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 20_000);
        let decoded = ids[0].decode(None, 8).unwrap();
        assert_eq!((decoded.kind, decoded.node), (Id128Kind::Uuid7, Some(200)));
        let ulid = client.ulid().unwrap();
        assert_eq!(
            ulid.decode(Some(Id128Kind::Ulid), 8).unwrap().node,
            Some(200)
        );
        client.close();
        assert!(client.uuid7().unwrap() > *ids.last().unwrap(), "no node needed");
    }

    #[test]
    fn a_node_field_that_does_not_fit_is_refused_by_name() {
        for config in [
            config().with_id128_node(0, 0),
            config().with_id128_node(3, 8),
        ] {
            match BlockingClient::new(config) {
                Err(Error::Config { source }) => {
                    assert_eq!(source.field, crate::ConfigField::Id128Node);
                }
                other => panic!("accepted: {:?}", other.map(|_| ())),
            }
        }
    }
}
