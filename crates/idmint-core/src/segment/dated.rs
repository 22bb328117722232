//! The buffer of a dated tag (see [`crate::dating`]): a [`SegmentBuffer`] whose ranges are
//! judged by the store's clock, replaced by a fresh one when the period it holds IDs of is
//! over.
//!
//! Two pieces:
//! - [`DatedRanges`], the range source: each allocation reads the store's clock, decides the
//!   range with [`Dating::range_at`] (from `max(max_id, the period's first ID)`, cut at the
//!   period's last counter) and takes it with a compare-and-set of `max_id`. `max_id` only
//!   grows, so no composed ID is handed out twice, whatever the clocks do; a node whose
//!   reading of the store's clock is late gets a range of the period the store was in when it
//!   read, or loses the compare-and-set to a node that already moved `max_id` on, and reads
//!   again.
//! - [`DatedBuffer`], which hands IDs out of a segment buffer over that source, and checks each
//!   against the period this node believes the store's clock is in (its own clock plus the
//!   offset measured at the last allocation). An ID of an earlier period (the buffer still held
//!   IDs of yesterday at midnight) is dropped, and the buffer is replaced by a fresh one whose
//!   first range is judged by the store's clock again. The old one is retired first: a range
//!   of the new period it fetched is the fresh buffer's first, so the new period starts at 1;
//!   what it held of the period that is over is left unused (a gap in a period that is over).
//!   The check on the hot path is a clock load and two comparisons.

use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use tokio::runtime::Handle;

use super::{RangeSource, SegmentBuffer, SegmentConfig};
use crate::clock::Clock;
use crate::dating::Dating;
use crate::error::{Error, Result};
use crate::store::{SegmentStore, WorkerLeases, ALLOCATE_ROUNDS};
use crate::tag::Tag;

/// How many buffers one call may go through before it takes the ID it got: a fresh buffer's
/// range was judged by the store's clock a moment ago, which is the boundary's definition.
const FRESH_BUFFERS: usize = 3;

/// How often (this node's clock, ms) a dated tag in use reads the store's clock again, between
/// allocations: a store whose clock steps forward across midnight (an NTP correction, a
/// fail-over to a replica) is noticed within this much, not only at the next range.
const REMEASURE_MS: u64 = 2_000;

/// This node's view of the store's clock between readings, and the period it puts the store
/// in, cached for the hot path.
#[derive(Debug, Default)]
struct StoreTime {
    /// The store's clock minus this node's, measured at the last allocation.
    offset_ms: AtomicI64,
    /// Bumped by every measurement, so a cache computed with an older offset is recomputed.
    measured: AtomicU64,
    /// The smallest ID of the period the store is in by this node's estimate: IDs below it
    /// belong to a period that is over.
    floor: AtomicU64,
    /// Until when (this node's clock, ms) `floor` holds; 0 until computed, and after each
    /// measurement.
    valid_until_ms: AtomicU64,
    /// When (this node's clock, ms) the offset was last measured.
    measured_at_ms: AtomicU64,
    /// A background reading of the store's clock is under way.
    measuring: AtomicBool,
}

impl StoreTime {
    /// Records a reading `store_ms` of the store's clock taken between this node's readings
    /// `before_ms` and `after_ms`.
    fn measure(&self, store_ms: u64, before_ms: u64, after_ms: u64) {
        let midpoint = before_ms / 2 + after_ms / 2;
        let offset = i128::from(store_ms) - i128::from(midpoint);
        let offset = offset.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        self.offset_ms.store(offset, Ordering::Relaxed);
        self.measured_at_ms.store(after_ms, Ordering::Relaxed);
        self.measured.fetch_add(1, Ordering::AcqRel);
        self.valid_until_ms.store(0, Ordering::Release);
    }

    /// The store's clock by this node's estimate, when this node's reads `now_ms`.
    fn store_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_add_signed(self.offset_ms.load(Ordering::Relaxed))
    }
}

/// The range source of a dated tag: see the module documentation.
#[derive(Debug)]
pub struct DatedRanges {
    segments: Arc<dyn SegmentStore>,
    /// For the store's clock.
    leases: Arc<dyn WorkerLeases>,
    clock: Arc<dyn Clock>,
    dating: Dating,
    time: Arc<StoreTime>,
    /// A range of the current period that a replaced buffer fetched and never used: the next
    /// allocation returns it instead of taking one from the store.
    carried: std::sync::Mutex<Option<Range<u64>>>,
}

#[async_trait]
impl RangeSource for DatedRanges {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        if let Some(range) = self
            .carried
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            return Ok(range);
        }
        for _ in 0..ALLOCATE_ROUNDS {
            let store_ms = self.measure().await?;
            let info = self
                .segments
                .tag_info(tag)
                .await?
                .ok_or_else(|| Error::UnknownTag {
                    tag: tag.to_string(),
                })?;
            if info.dating != Some(self.dating) {
                return Err(Error::store_invalid(format!(
                    "tag `{tag}` was served as {} but the store now holds it as {}: restart \
                     the node",
                    self.dating,
                    info.dating
                        .map_or_else(|| "a plain sequence".to_owned(), |d| d.to_string())
                )));
            }
            let range = self
                .dating
                .range_at(tag.as_str(), info.max_id, step, store_ms)?;
            if self
                .segments
                .compare_and_set_max_id(tag, info.max_id, range.end)
                .await?
            {
                return Ok(range);
            }
        }
        Err(Error::store_conflict(format!(
            "allocating a range of dated tag `{tag}`: {ALLOCATE_ROUNDS} rounds lost to other nodes"
        )))
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        self.segments.give_back(tag, unused).await
    }

    fn is_last(&self, range: &Range<u64>) -> bool {
        self.dating.ends_period(range.end)
    }
}

impl DatedRanges {
    /// Reads the store's clock, records the offset, and returns the reading: at each
    /// allocation, and in the background between them.
    async fn measure(&self) -> Result<u64> {
        let before = self.clock.now_ms();
        let store_ms = self.leases.clock_ms().await?;
        self.time.measure(store_ms, before, self.clock.now_ms());
        Ok(store_ms)
    }
}

/// The buffer of one dated tag: see the module documentation.
#[derive(Debug)]
pub struct DatedBuffer {
    tag: Tag,
    dating: Dating,
    current: ArcSwap<SegmentBuffer>,
    source: Arc<DatedRanges>,
    clock: Arc<dyn Clock>,
    config: SegmentConfig,
    runtime: Handle,
    time: Arc<StoreTime>,
    /// Held while a stale buffer is shut down and replaced: one replacement at a time, and
    /// calls that met the stale buffer closed wait on it for the fresh one.
    replacing: tokio::sync::Mutex<()>,
}

impl DatedBuffer {
    /// A buffer for the dated tag `tag` (its `dating` as the store holds it), taking ranges
    /// from `segments` judged by the clock of `leases` (the same store). No I/O happens here.
    ///
    /// Ranges are the tag's step (`config.min_step`), larger only for a batch that needs more:
    /// the adaptive step of plain tags (`target_lifetime`) is off. A period's counters are
    /// finite and read by people, and a range that grew to the traffic of 15 minutes would
    /// leave large gaps in them, or take a busy day's last counters from every other node.
    pub fn new(
        tag: Tag,
        dating: Dating,
        segments: Arc<dyn SegmentStore>,
        leases: Arc<dyn WorkerLeases>,
        clock: Arc<dyn Clock>,
        config: SegmentConfig,
        runtime: Handle,
    ) -> Arc<Self> {
        let config = SegmentConfig {
            min_step: dating.range_cap(config.min_step),
            target_lifetime: std::time::Duration::ZERO,
            ..config
        };
        let time = Arc::new(StoreTime::default());
        let source = Arc::new(DatedRanges {
            segments,
            leases,
            clock: Arc::clone(&clock),
            dating,
            time: Arc::clone(&time),
            carried: std::sync::Mutex::new(None),
        });
        let first = Self::buffer_over(&tag, &source, &clock, &config, &runtime);
        Arc::new(Self {
            tag,
            dating,
            current: ArcSwap::new(first),
            source,
            clock,
            config,
            runtime,
            time,
            replacing: tokio::sync::Mutex::new(()),
        })
    }

    fn buffer_over(
        tag: &Tag,
        source: &Arc<DatedRanges>,
        clock: &Arc<dyn Clock>,
        config: &SegmentConfig,
        runtime: &Handle,
    ) -> Arc<SegmentBuffer> {
        let source: Arc<dyn RangeSource> = Arc::clone(source) as Arc<dyn RangeSource>;
        SegmentBuffer::with_source(
            tag.clone(),
            source,
            Arc::clone(clock),
            config.clone(),
            runtime.clone(),
        )
    }

    /// The tag.
    pub fn tag(&self) -> &Tag {
        &self.tag
    }

    /// How the tag's IDs are dated and shown.
    pub fn dating(&self) -> &Dating {
        &self.dating
    }

    /// The segment buffer in use now, for gauges and for shutdown.
    pub fn current(&self) -> Arc<SegmentBuffer> {
        self.current.load_full()
    }

    /// The next ID if one of the current period is in memory; `None` sends the caller to
    /// [`next`](Self::next) (which replaces a buffer left with IDs of a period that is over).
    #[inline]
    pub fn try_next(&self) -> Option<u64> {
        let now = self.clock.now_ms();
        if now >= self.time.valid_until_ms.load(Ordering::Acquire) {
            return None;
        }
        let id = self.current.load().try_next()?;
        (id >= self.time.floor.load(Ordering::Acquire)).then_some(id)
    }

    /// The next ID, as [`SegmentBuffer::next`], of the period the store's clock is in.
    pub async fn next(&self) -> Result<u64> {
        self.serve(|buffer| async move { buffer.next().await }, |id| Some(*id))
            .await
    }

    /// `n` IDs as ascending runs, as [`SegmentBuffer::next_many`], of the period the store's
    /// clock is in (a batch that straddles the boundary may end in the next one).
    pub async fn next_many(&self, n: u64) -> Result<Vec<Range<u64>>> {
        self.serve(
            |buffer| async move { buffer.next_many(n).await },
            |runs| runs.first().map(|run| run.start),
        )
        .await
    }

    /// `n` consecutive IDs, as [`SegmentBuffer::take_contiguous`], of the period the store's
    /// clock is in.
    pub async fn take_contiguous(&self, n: u64) -> Result<Range<u64>> {
        self.serve(
            |buffer| async move { buffer.take_contiguous(n).await },
            |run| Some(run.start),
        )
        .await
    }

    /// Passes a new step (capped, see [`Dating::range_cap`]) to the current buffer and the
    /// ones after it.
    pub fn set_min_step(&self, step: u64) {
        self.current
            .load()
            .set_min_step(self.dating.range_cap(step));
    }

    /// Gives the current buffer's unused tail back (see [`SegmentBuffer::shutdown`]).
    pub async fn shutdown(&self) -> Result<bool> {
        self.current.load_full().shutdown().await
    }

    /// Takes IDs with `take` from the current buffer until the first of them (`first`)
    /// belongs to the period the store is in by this node's estimate, replacing the buffer
    /// when it does not.
    async fn serve<T, F, Fut>(&self, take: F, first: impl Fn(&T) -> Option<u64>) -> Result<T>
    where
        F: Fn(Arc<SegmentBuffer>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut fresh = 0;
        loop {
            let buffer = self.current.load_full();
            let taken = match take(Arc::clone(&buffer)).await {
                Ok(taken) => taken,
                // The buffer holds its period's last range, and it cannot serve this call.
                Err(Error::TagExhausted { .. }) => {
                    let floor = self.floor()?;
                    // The counter is one below the next ID: counter 0 of its period when
                    // nothing was handed out yet, so compare periods, not IDs.
                    let held = buffer.counter().unwrap_or(0);
                    let period_over = self.dating.split(held).0 < self.dating.split(floor).0;
                    if period_over && fresh < FRESH_BUFFERS {
                        // That period is over: a fresh buffer for the one the store is in.
                        fresh += 1;
                        self.replace(&buffer).await;
                        continue;
                    }
                    return Err(self.period_end(held));
                }
                // Shut down by a replacement under way: the fresh buffer serves the call.
                Err(_) if buffer.is_shut_down() && fresh < FRESH_BUFFERS => {
                    fresh += 1;
                    drop(self.replacing.lock().await);
                    continue;
                }
                Err(error) => return Err(error),
            };
            let floor = self.floor()?;
            match first(&taken) {
                Some(id) if id < floor && fresh < FRESH_BUFFERS => {
                    fresh += 1;
                    self.replace(&buffer).await;
                }
                _ => return Ok(taken),
            }
        }
    }

    /// The refusal of a call that the period's last range (around `held`) cannot serve.
    fn period_end(&self, held: u64) -> Error {
        let (key, _) = self.dating.split(held);
        Error::PeriodUnavailable {
            tag: self.tag.to_string(),
            reason: format!(
                "too few of period {key}'s counters are left for this request (of {} in all); \
                 ask for fewer, or wait for the next period",
                self.dating.per_period()
            ),
        }
    }

    /// The smallest ID of the period the store is in by this node's estimate, recomputing the
    /// hot path's cache when it ran out or the offset was measured again, and reading the
    /// store's clock again in the background every [`REMEASURE_MS`].
    fn floor(&self) -> Result<u64> {
        let now = self.clock.now_ms();
        if now < self.time.valid_until_ms.load(Ordering::Acquire) {
            return Ok(self.time.floor.load(Ordering::Acquire));
        }
        let measured = self.time.measured.load(Ordering::Acquire);
        let next_measure = self
            .time
            .measured_at_ms
            .load(Ordering::Relaxed)
            .saturating_add(REMEASURE_MS);
        let recheck_at = if now >= next_measure {
            self.remeasure();
            now.saturating_add(REMEASURE_MS)
        } else {
            next_measure
        };
        let store_now = self.time.store_ms(now);
        let span = self.dating.period_at(store_now)?;
        let floor = self.dating.compose(span.key, 1);
        // The period's end on this node's clock, or the next reading of the store's clock.
        let until = now
            .saturating_add(span.ends_ms.saturating_sub(store_now))
            .min(recheck_at);
        self.time.floor.store(floor, Ordering::Release);
        self.time.valid_until_ms.store(until, Ordering::Release);
        if self.time.measured.load(Ordering::Acquire) != measured {
            // Measured meanwhile: the next call computes again with the new offset.
            self.time.valid_until_ms.store(0, Ordering::Release);
        }
        Ok(floor)
    }

    /// Reads the store's clock in the background, unless a reading is under way; its result
    /// resets the hot path's cache. A failed reading is retried at the next check.
    fn remeasure(&self) {
        if self.time.measuring.swap(true, Ordering::AcqRel) {
            return;
        }
        let source = Arc::clone(&self.source);
        drop(self.runtime.spawn(async move {
            let _ = source.measure().await;
            source.time.measuring.store(false, Ordering::Release);
        }));
    }

    /// Replaces `stale` (if it is still current) with a fresh buffer, whose first range the
    /// store judges by its clock.
    ///
    /// The stale buffer is retired first, its fetch in flight waited for: a fetch that read
    /// the store's clock after the boundary brought it a range of the new period (its first
    /// counters, often), which the fresh buffer hands out first, so they are not skipped even
    /// when another node took the range after it meanwhile. A next range of the period that is
    /// over goes back to the store when it is still the tag's last allocation; what the stale
    /// buffer held of that period is otherwise a gap, as any unused range is, and none of it is
    /// handed out.
    async fn replace(&self, stale: &Arc<SegmentBuffer>) {
        let _one = self.replacing.lock().await;
        if !Arc::ptr_eq(&self.current.load(), stale) {
            // Another call replaced it meanwhile: its fresh buffer stays.
            return;
        }
        let carried = match (stale.retire().await, self.floor()) {
            (Some(next), Ok(floor)) if next.start >= floor => Some(next),
            (Some(next), _) => {
                // A failed give-back leaves a gap, never a duplicate: the store takes a range
                // back only while nothing was allocated after it.
                let _ = self.source.give_back(&self.tag, next).await;
                None
            }
            (None, _) => None,
        };
        *self
            .source
            .carried
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = carried;
        let fresh = Self::buffer_over(
            &self.tag,
            &self.source,
            &self.clock,
            &self.config,
            &self.runtime,
        );
        fresh.set_min_step(stale.min_step());
        self.current.store(fresh);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::HashSet;
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::dating::{DatedForm, Period};
    use crate::store::{MemoryStore, TagSettings};

    /// 2026-11-23T23:59:59Z.
    const LAST_SECOND: u64 = 1_795_478_399_000;

    fn daily(digits: u32) -> Dating {
        Dating::new(Period::Day, chrono_tz::Tz::UTC, digits, DatedForm::Text).unwrap()
    }

    /// A store whose clock is `store_clock`, with dated tag `orders`.
    async fn store(store_clock: &Arc<ManualClock>, dating: Dating) -> (Arc<MemoryStore>, Tag) {
        let store = Arc::new(MemoryStore::new(store_clock.clone()));
        let tag = Tag::new("orders").unwrap();
        let settings = TagSettings {
            step: 10,
            dating: Some(dating),
            ..TagSettings::default()
        };
        store.create_tag(&tag, &settings).await.unwrap();
        (store, tag)
    }

    fn node(store: &Arc<MemoryStore>, tag: &Tag, clock: &Arc<ManualClock>) -> Arc<DatedBuffer> {
        let dating = daily(6);
        DatedBuffer::new(
            tag.clone(),
            dating,
            store.clone(),
            store.clone(),
            clock.clone(),
            SegmentConfig {
                min_step: 10,
                max_step: 100,
                ..SegmentConfig::default()
            },
            Handle::current(),
        )
    }

    async fn take(buffer: &DatedBuffer) -> u64 {
        match buffer.try_next() {
            Some(id) => id,
            None => buffer.next().await.unwrap(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ids_start_again_at_the_store_s_midnight() {
        let clock = ManualClock::shared(LAST_SECOND);
        let (store, tag) = store(&clock, daily(6)).await;
        let buffer = node(&store, &tag, &clock);
        let today = take_many(&buffer, 5).await;
        assert_eq!(
            today,
            (1..=5)
                .map(|c| daily(6).compose(20261123, c))
                .collect::<Vec<_>>()
        );
        clock.advance(Duration::from_secs(1));
        assert_eq!(buffer.try_next(), None, "the cache ends with the period");
        assert_eq!(take(&buffer).await, daily(6).compose(20261124, 1));
        assert_eq!(take(&buffer).await, daily(6).compose(20261124, 2));
        let text = daily(6).text(daily(6).compose(20261124, 2));
        assert_eq!(text, "20261124-000002");
    }

    /// However far into its last range of the day a buffer is when midnight comes (so whether
    /// or not it fetched its next range, of the new day, before it was replaced), the new day
    /// starts at 1, even when another node takes the range after it meanwhile: the range it
    /// fetched is the fresh buffer's first. (CI runs on a loaded machine saw a new day start
    /// at 21, the step plus one.)
    #[tokio::test(start_paused = true)]
    async fn the_new_day_starts_at_one_whatever_the_buffer_held_at_midnight() {
        for taken in 1..=10u64 {
            let clock = ManualClock::shared(LAST_SECOND);
            let (store, tag) = store(&clock, daily(6)).await;
            let buffer = node(&store, &tag, &clock);
            let today = take_many(&buffer, taken as usize).await;
            assert_eq!(today.last(), Some(&daily(6).compose(20261123, taken)));
            // Midnight comes before a fetch the takes started could run: it reads the store's
            // clock after midnight, and brings the buffer a range of the new day.
            clock.advance(Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(10)).await;
            // Another node takes the new day's next range meanwhile.
            let other = node(&store, &tag, &clock);
            let other_first = take(&other).await;
            let mut ids = Vec::new();
            for _ in 0..3 {
                ids.push(buffer.next().await.unwrap());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let mut new_day = [ids.clone(), vec![other_first]].concat();
            new_day.sort_unstable();
            assert_eq!(
                new_day.first(),
                Some(&daily(6).compose(20261124, 1)),
                "{taken} taken before midnight: {ids:?}, the other node {other_first}"
            );
            for pair in ids.windows(2) {
                assert!(pair[0] < pair[1], "{ids:?}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_node_whose_clock_lags_dates_by_the_store_s_clock() {
        let store_clock = ManualClock::shared(LAST_SECOND);
        let (store, tag) = store(&store_clock, daily(6)).await;
        let lagging = ManualClock::shared(LAST_SECOND - 5_000);
        let ahead = ManualClock::shared(LAST_SECOND + 5_000);
        let (a, b) = (node(&store, &tag, &lagging), node(&store, &tag, &ahead));
        let mut seen = HashSet::new();
        for step in 0..40u64 {
            // 100 ms a step: the store passes midnight at step 10.
            let store_now = store_clock.now_ms();
            let key = daily(6).period_at(store_now).unwrap().key;
            for buffer in [&a, &b] {
                let id = take(buffer).await;
                assert!(seen.insert(id), "{id} twice");
                assert_eq!(
                    id / 1_000_000,
                    key,
                    "step {step}: {id} at store time {store_now}"
                );
            }
            for clock in [&store_clock, &lagging, &ahead] {
                clock.advance(Duration::from_millis(100));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_period_refuses_until_the_next_one() {
        let clock = ManualClock::shared(LAST_SECOND);
        let (store, tag) = store(&clock, daily(1)).await;
        let buffer = DatedBuffer::new(
            tag.clone(),
            daily(1),
            store.clone(),
            store.clone(),
            clock.clone(),
            SegmentConfig::with_min_step(4),
            Handle::current(),
        );
        let ids: Vec<u64> = take_many(&buffer, 9).await;
        assert_eq!(ids, (1..=9).map(|c| 202611230 + c).collect::<Vec<_>>());
        let full = buffer.next().await.unwrap_err();
        assert!(matches!(full, Error::PeriodUnavailable { .. }), "{full}");
        clock.advance(Duration::from_secs(1));
        assert_eq!(buffer.next().await.unwrap(), 202611241);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_clock_that_steps_back_a_day_reissues_nothing() {
        let clock = ManualClock::shared(LAST_SECOND + 1_000);
        let (store, tag) = store(&clock, daily(6)).await;
        let buffer = node(&store, &tag, &clock);
        let mut seen = HashSet::new();
        for _ in 0..25 {
            assert!(seen.insert(take(&buffer).await));
        }
        clock.step_back(Duration::from_secs(3_600));
        // What is in memory is still handed out; the store refuses yesterday's ranges.
        let mut refused = false;
        for _ in 0..200 {
            match buffer.try_next() {
                Some(id) => assert!(seen.insert(id), "{id} twice"),
                None => match buffer.next().await {
                    Ok(id) => assert!(seen.insert(id), "{id} twice"),
                    Err(error) => {
                        assert!(error.to_string().contains("went back"), "{error}");
                        refused = true;
                        break;
                    }
                },
            }
        }
        assert!(refused);
        assert!(seen.iter().all(|id| id / 1_000_000 == 20261124));
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_too_large_for_the_period_leaves_the_period_to_others() {
        let clock = ManualClock::shared(LAST_SECOND - 3_600_000);
        let (store, tag) = store(&clock, daily(2)).await;
        let buffer = DatedBuffer::new(
            tag.clone(),
            daily(2),
            store.clone(),
            store.clone(),
            clock.clone(),
            SegmentConfig::with_min_step(50),
            Handle::current(),
        );
        // Too large as the very first call (the buffer holds nothing yet): nothing is lost.
        assert!(buffer.next_many(150).await.is_err());
        assert_eq!(
            take_many(&buffer, 10).await,
            (1..=10).map(|c| 2026112300 + c).collect::<Vec<_>>()
        );
        let refused = buffer.next_many(95).await.unwrap_err();
        assert!(refused.to_string().contains("too few"), "{refused}");
        // The rest of the period is still there (at most the run begun in the segment held is
        // a gap), up to its last counter, 99.
        let runs = buffer.next_many(80).await.unwrap();
        let ids: Vec<u64> = runs.into_iter().flatten().collect();
        assert_eq!(ids.len(), 80);
        assert!(
            ids[0] <= 2026112312 && *ids.last().unwrap() < 2026112400,
            "{ids:?}"
        );
        let mut rest = Vec::new();
        while let Ok(id) = buffer.next().await {
            rest.push(id);
        }
        assert_eq!(rest.last(), Some(&2026112399), "{rest:?}");
        assert!(matches!(
            buffer.next().await,
            Err(Error::PeriodUnavailable { .. })
        ));
        clock.advance(Duration::from_secs(2 * 3_600));
        assert_eq!(buffer.next().await.unwrap(), 2026112401);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_clock_that_steps_forward_is_noticed_between_ranges() {
        let store_clock = ManualClock::shared(LAST_SECOND - 60_000);
        let (store, tag) = store(&store_clock, daily(6)).await;
        let node_clock = ManualClock::shared(LAST_SECOND - 60_000);
        let buffer = node(&store, &tag, &node_clock);
        assert_eq!(take(&buffer).await, daily(6).compose(20261123, 1));
        // The store's clock jumps past midnight; the node's runs on. Within REMEASURE_MS and
        // a reading, the node hands out the new day, though it holds yesterday's range.
        store_clock.advance(Duration::from_secs(120));
        let mut last = 0;
        for _ in 0..50 {
            node_clock.advance(Duration::from_millis(100));
            tokio::time::sleep(Duration::from_millis(1)).await;
            last = take(&buffer).await;
        }
        assert_eq!(daily(6).split(last).0, 20261124, "{last}");
    }

    async fn take_many(buffer: &DatedBuffer, n: usize) -> Vec<u64> {
        let mut ids = Vec::new();
        for _ in 0..n {
            ids.push(take(buffer).await);
        }
        ids
    }
}
