//! The ID service: what every front end (HTTP, Leaf's API, the Redis protocol, the CLI) calls.
//!
//! It owns the worker lease and its snowflake generator ([`LeaseKeeper`]) and the per-tag
//! segment buffers ([`SegmentRegistry`]), and turns the generators' bounded waits into async
//! waits on tokio timers, so no executor thread ever blocks on the clock or the store.

mod id128;
mod lease;
mod segments;
mod tag_buffer;
mod tag_quota;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::clock::Stopwatch;
use idmint_core::id128::Id128Batch;
use idmint_core::snowflake::Reservation;
use idmint_core::{
    Clock, DecodedId, Error, Id128Kind, IdSpace, Layout, Permutation, Result, SnowflakeBatch,
    SnowflakeConfig, Tag,
};
use idmint_store::Store;

use crate::id_space::{self, SpaceLayouts};

pub use self::id128::{node_field_width, Id128Generators};
pub use self::lease::{ClockPolicy, Holding, LeaseConfig, LeaseKeeper};
pub use self::segments::{SegmentOptions, SegmentRegistry};
pub use self::tag_buffer::TagBuffer;
pub use self::tag_quota::{default_admin_reserve, default_share, Asker};
pub use crate::store::CorruptionLatch;

/// How often a 128-bit call blocked on the granted high-water mark looks again (as the
/// snowflake generator's own wait does).
const HWM_POLL: Duration = Duration::from_millis(5);

/// Everything the ID service is configured with.
#[derive(Debug, Clone)]
pub struct IdsConfig {
    /// The snowflake layout.
    pub layout: Layout,
    /// The datacenter in every snowflake (0 when the layout has no `dc` field).
    pub datacenter: u64,
    /// The worker lease.
    pub lease: LeaseConfig,
    /// The snowflake generator's bounds.
    pub snowflake: SnowflakeConfig,
    /// The segment buffers.
    pub segments: SegmentOptions,
    /// The namespace's permutation (`--permutation-key-file`, derived for the namespace), or
    /// `None` for plain IDs. Part of the pinned ID space. Snowflakes are handed out in it,
    /// each tag's segment IDs in one derived from it for the tag.
    pub permutation: Option<Permutation>,
}

/// How the IDs of one sequence (the snowflakes, or one tag) are handed out: permuted with the
/// sequence's own permutation, or plain. A pointer wide, so the plain case costs the hot
/// paths one null check and each connection's tag entries stay small.
#[derive(Debug, Clone, Default)]
pub struct Publisher(Option<Arc<Permutation>>);

impl Publisher {
    /// The value `id` is handed out as.
    #[inline]
    pub fn publish(&self, id: u64) -> u64 {
        match &self.0 {
            Some(permutation) => permutation.permute(id),
            None => id,
        }
    }

    /// The ID handed out as `public`.
    #[inline]
    pub fn restore(&self, public: u64) -> u64 {
        match &self.0 {
            Some(permutation) => permutation.restore(public),
            None => public,
        }
    }

    /// Whether IDs are permuted.
    fn is_permuted(&self) -> bool {
        self.0.is_some()
    }

    /// The publisher of `tag`'s segment IDs, when this is the namespace's: its permutation
    /// derived for the tag; plain when this one is.
    fn for_tag(&self, tag: &Tag) -> Publisher {
        Publisher(
            self.0
                .as_ref()
                .map(|permutation| Arc::new(permutation.for_tag(tag))),
        )
    }
}

/// The running ID service of one node.
#[derive(Debug)]
pub struct Ids {
    keeper: Arc<LeaseKeeper>,
    segments: SegmentRegistry,
    store: Store,
    /// The first damage any store call of this node reported (see `crate::store`).
    corruption: Arc<CorruptionLatch>,
    layout: Layout,
    spaces: SpaceLayouts,
    max_wait: Duration,
    max_lead: Duration,
    clock: Arc<dyn Clock>,
    /// How snowflakes are handed out: with the namespace's permutation, or plain. Each tag's
    /// publisher is derived from it.
    snowflakes_out: Publisher,
}

impl Ids {
    /// Checks the layout, epoch and datacenter against the ID space pinned in the store
    /// (recording them when none is), then takes a worker lease under that space and starts
    /// renewing it. Fails when the store pins another space, no worker ID can be had or the
    /// store refuses. Every store call of the service, from then on, is watched for damaged
    /// data ([`store_corrupt`](Self::store_corrupt)).
    pub async fn start(
        config: IdsConfig,
        store: Store,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>> {
        let corruption = Arc::new(CorruptionLatch::default());
        let store = crate::store::watched(store, &corruption);
        let given =
            IdSpace::of(&config.layout, config.datacenter).permuted(config.permutation.as_ref());
        if given.permutation.is_some() {
            refuse_plain_segments(&store).await?;
        }
        let history = id_space::pin(store.leases.as_ref(), &given).await?;
        let mut lease = config.lease.clone();
        if let Some(current) = history.last() {
            lease.id_space = Some(current.version);
            lease.issues_from_ms = current.issues_from_ms;
        }
        let spaces = SpaceLayouts::new(history)?;
        let keeper = LeaseKeeper::start(
            Arc::clone(&store.leases),
            config.layout.clone(),
            config.datacenter,
            Arc::clone(&clock),
            lease,
            config.snowflake,
        )
        .await?;
        tokio::spawn(Arc::clone(&keeper).run());
        let segments = SegmentRegistry::new(
            Arc::clone(&store.segments),
            Arc::clone(&store.leases),
            Arc::clone(&clock),
            config.segments.clone(),
            tokio::runtime::Handle::current(),
        );
        Ok(Arc::new(Self {
            keeper,
            segments,
            store,
            corruption,
            layout: config.layout,
            spaces,
            max_wait: config.snowflake.max_wait,
            max_lead: config.snowflake.max_lead,
            clock,
            snowflakes_out: Publisher(config.permutation.map(Arc::new)),
        }))
    }

    /// The value snowflake `id` is handed out as: its image under the namespace's
    /// permutation, or `id` itself when the namespace hands out plain IDs. Every front end
    /// passes every snowflake it answers through here, and every segment ID through its tag's
    /// [`tag_publisher`](Self::tag_publisher).
    #[inline]
    pub fn publish_snowflake(&self, id: u64) -> u64 {
        self.snowflakes_out.publish(id)
    }

    /// How the segment IDs of `tag` are handed out: with a permutation derived for the tag
    /// (tags count from 1 each: with one permutation for all, whoever may take IDs of one tag
    /// could read every other tag's IDs off a list of its own), or plain. Two SipHash calls;
    /// a connection keeps it with the tag's buffer.
    pub fn tag_publisher(&self, tag: &Tag) -> Publisher {
        self.snowflakes_out.for_tag(tag)
    }

    /// Whether IDs are handed out permuted: runs of consecutive IDs (`INCRBY n`,
    /// `IDMINT.RANGE`, segment leases) cannot be, since their public values are not
    /// consecutive.
    pub fn is_permuted(&self) -> bool {
        self.snowflakes_out.is_permuted()
    }

    /// Why a run of consecutive IDs is refused on a permuted namespace: the text of the
    /// RESP `-ERR permuted ...` and the HTTP 409 `permuted`.
    pub const RUNS_REFUSED: &'static str = "this namespace hands out its IDs permuted \
        (--permutation-key-file), and a run of consecutive IDs cannot be: their public values \
        are not consecutive. Ask for a batch of IDs instead (COUNT n, ?count=n)";

    /// One snowflake for shard 0 if it can be had without waiting; `None` when the caller
    /// must go through [`snowflakes`](Self::snowflakes) (to wait, or to get the error). The
    /// per-request fast path of `IDMINT.SNOWFLAKE`.
    #[inline]
    pub fn try_snowflake(&self) -> Option<u64> {
        match self.keeper.holding().generator.try_reserve(1, 0) {
            Ok(Reservation::Ready(mut batch)) => batch.next(),
            _ => None,
        }
    }

    /// `count` snowflakes for `shard`, waiting at most `max_wait` (asynchronously) when the
    /// sequence or the granted HWM is used up.
    pub async fn snowflakes(&self, count: u64, shard: u64) -> Result<SnowflakeBatch> {
        // Measured, not summed from the pauses: a timer fires late by up to a millisecond or
        // more, and a thousand short pauses would stretch max_wait more than twofold.
        let mut stopwatch: Option<Stopwatch> = None;
        loop {
            let retry_after = {
                let holding = self.keeper.holding();
                match holding.generator.try_reserve(count, shard)? {
                    Reservation::Ready(batch) => return Ok(batch),
                    Reservation::Blocked(blocked, retry_after) => {
                        let waited = match &stopwatch {
                            Some(started) => started.elapsed(),
                            None => {
                                stopwatch = Some(Stopwatch::start());
                                Duration::ZERO
                            }
                        };
                        let budget = self.max_wait.saturating_sub(waited);
                        if !blocked.may_clear_within(retry_after, budget) {
                            return Err(holding.generator.blocked_error(blocked, waited));
                        }
                        retry_after.min(budget)
                    }
                }
            };
            tokio::time::sleep(retry_after.max(Duration::from_millis(1))).await;
        }
    }

    /// `count` 128-bit IDs of `kind` if they can be had without waiting, handed to `write`
    /// (which must not wait either: the IDs are read from the generator as it iterates);
    /// `None` when the caller must go through [`id128s`](Self::id128s). The per-request fast
    /// path of `IDMINT.UUID` and `IDMINT.ULID`.
    #[inline]
    pub fn try_id128s<R>(
        &self,
        kind: Id128Kind,
        count: u64,
        write: impl FnOnce(Id128Batch<'_>) -> R,
    ) -> Option<R> {
        let count = u32::try_from(count).ok()?;
        let holding = self.keeper.holding();
        let batch = holding.id128.of(kind).next_ids(count).ok()?;
        if !within_granted(&holding, &batch) {
            return None;
        }
        Some(write(batch))
    }

    /// `count` 128-bit IDs of `kind`, handed to `write` in increasing order, waiting at most
    /// `max_wait` (asynchronously) when the generator runs `max_lead` ahead of the clock (2^23
    /// IDs or more in every millisecond of it). With `--id128-node` they carry the node field
    /// of the worker ID this node holds when they are taken.
    pub async fn id128s<R>(
        &self,
        kind: Id128Kind,
        count: u64,
        write: impl FnOnce(Id128Batch<'_>) -> R,
    ) -> Result<R> {
        // Above u32, the generator refuses the count as it refuses any over its batch limit.
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        let mut stopwatch: Option<Stopwatch> = None;
        loop {
            let pause = {
                let holding = self.keeper.holding();
                let waited = stopwatch
                    .as_ref()
                    .map_or(Duration::ZERO, Stopwatch::elapsed);
                let budget = self.max_wait.saturating_sub(waited);
                match holding.id128.of(kind).next_ids(count) {
                    // With a node field, no ID past the lease's confirmed high-water mark (the
                    // snowflakes' fence): a node that lost its lease stops, and the next
                    // holder of the worker ID starts above the mark. The IDs taken are left
                    // unused (a gap); the call waits for a raise as snowflake calls do.
                    Ok(batch) if !within_granted(&holding, &batch) => {
                        let granted = holding.generator.granted_tick();
                        if budget.is_zero() && stopwatch.is_some() {
                            return Err(Error::HwmNotGranted {
                                tick: holding
                                    .generator
                                    .layout()
                                    .tick_at(batch.last_ms().unwrap_or(0))
                                    .unwrap_or(u64::MAX),
                                granted,
                            });
                        }
                        HWM_POLL.min(budget)
                    }
                    Ok(batch) => return Ok(write(batch)),
                    Err(Error::ClockBehind { behind_ms, .. }) => {
                        if budget.is_zero() && stopwatch.is_some() {
                            return Err(Error::ClockBehind { behind_ms, waited });
                        }
                        Duration::from_millis(behind_ms).min(budget)
                    }
                    Err(error) => return Err(error),
                }
            };
            stopwatch.get_or_insert_with(Stopwatch::start);
            tokio::time::sleep(pause.max(Duration::from_millis(1))).await;
        }
    }

    /// The width of the node field in this node's 128-bit IDs: 0 without `--id128-node`.
    pub fn id128_node_bits(&self) -> u32 {
        self.keeper.holding().id128.of(Id128Kind::Uuid7).node().0
    }

    /// How far the snowflake generator's next tick is ahead of the clock beyond `max_lead`, in
    /// ms: above 0 (a worker ID kept under the clock policy `wait`), snowflake calls fail with
    /// `clock_behind` until the clock catches up, and `/readyz` says so.
    pub fn snowflake_clock_behind_ms(&self) -> u64 {
        let lead_ms = self.keeper.holding().generator.lead_ms();
        lead_ms.saturating_sub(idmint_core::clock::duration_ms(self.max_lead))
    }

    /// The store's message when any store call of this node reported damaged data
    /// ([`Error::StoreCorrupt`]): from then on until the
    /// process restarts, `/readyz` fails with it.
    pub fn store_corrupt(&self) -> Option<&str> {
        self.corruption.reason()
    }

    /// `count` segment IDs of `tag`, as ascending runs, for `asker` (whose quota a new tag
    /// counts against).
    pub async fn segment_ids(
        &self,
        tag: &Tag,
        count: u64,
        asker: Asker<'_>,
    ) -> Result<Vec<Range<u64>>> {
        self.segments.next_many(tag, count, asker).await
    }

    /// `count` consecutive segment IDs of `tag` for a client to hand out later (a lease):
    /// refused for a dated tag, whose IDs the client would hand out past their period.
    pub async fn segment_lease(
        &self,
        tag: &Tag,
        count: u64,
        asker: Asker<'_>,
    ) -> Result<Range<u64>> {
        match self.segments.buffer(tag, asker).await? {
            TagBuffer::Plain(buffer) => buffer.take_contiguous(count).await,
            TagBuffer::Dated(_) => Err(Error::DatedRangeRefused {
                tag: tag.to_string(),
            }),
        }
    }

    /// Takes a snowflake apart with the layout of the ID space that issued it: this node's
    /// for its own IDs, an earlier space's for IDs issued before a change. `id` is the value
    /// as handed out: on a permuted namespace it is restored first, and the answer carries
    /// the plain ID beside it.
    pub fn decode(&self, id: u64) -> Result<DecodedId> {
        let plain = self.snowflakes_out.restore(id);
        let decoded = self
            .spaces
            .decode(plain)
            .unwrap_or_else(|| self.layout.decode(plain));
        match (decoded, self.is_permuted()) {
            (Ok(decoded), true) => Ok(decoded.handed_out_as(id)),
            (Ok(decoded), false) => Ok(decoded),
            (Err(error), false) => Err(error),
            // The error would quote the plain value, as if the caller had sent it.
            (Err(_), true) => Err(Error::InvalidArgument {
                name: "id",
                reason: format!(
                    "{id} is not a snowflake of this namespace (restored with its permutation, \
                     it does not fit the layout)"
                ),
            }),
        }
    }

    /// The namespace's ID spaces, oldest first, as recorded when this node started.
    pub fn id_spaces(&self) -> &[idmint_core::IdSpaceRecord] {
        self.spaces.history()
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The store, for the admin routes.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The clock the generators read, for its divergence metric.
    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// The lease keeper, for readiness and metrics.
    pub fn keeper(&self) -> &LeaseKeeper {
        &self.keeper
    }

    /// The segment buffers, for metrics.
    pub fn segments(&self) -> &SegmentRegistry {
        &self.segments
    }

    /// Graceful stop: give unused segment tails back, then write the final HWM and free the
    /// worker ID. Call once nothing is served any more.
    pub async fn shutdown(&self) -> Result<()> {
        let given_back = self.segments.shutdown().await;
        tracing::info!(given_back, "segment tails given back");
        self.keeper.release().await
    }
}

/// Refuses to start a namespace's permutation over segment tags: their plain IDs were handed
/// out already, and the permuted ones would be spread over the same values. Only a namespace
/// with no ID space recorded yet gets here with a key that is not pinned, and the pin that
/// follows refuses every later change of key.
async fn refuse_plain_segments(store: &Store) -> Result<()> {
    if !store.leases.id_spaces().await?.is_empty() {
        return Ok(());
    }
    let tags = store.segments.list_tags().await?;
    match tags.first() {
        None => Ok(()),
        Some(first) => Err(Error::InvalidArgument {
            name: "permutation key",
            reason: format!(
                "this namespace has {} segment tag(s) (`{}` first) whose IDs were handed out \
                 plain: a permutation key can only be given to a new namespace (`--namespace`)",
                tags.len(),
                first.tag
            ),
        }),
    }
}

/// Whether `batch` may be handed out on `holding`'s lease: always without a node field; with
/// one, when its last millisecond is within the high-water mark the store confirmed for the
/// lease (the snowflake generator's granted tick, whose start is a millisecond no later holder
/// of the worker ID issues in).
#[inline]
fn within_granted(holding: &lease::Holding, batch: &Id128Batch<'_>) -> bool {
    if !holding.id128.fenced() {
        return true;
    }
    let layout = holding.generator.layout();
    let granted_ms = holding
        .generator
        .granted_tick()
        .saturating_mul(layout.unit().millis())
        .saturating_add(layout.epoch_ms());
    batch.last_ms().is_some_and(|ms| ms <= granted_ms)
}
