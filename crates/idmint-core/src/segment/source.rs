//! Where a buffer takes its ranges from: a store of this process, or anything else that hands
//! out non-overlapping ranges in increasing order (the idmint client takes them from nodes).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::store::SegmentStore;
use crate::tag::Tag;

/// The two calls a [`SegmentBuffer`](super::SegmentBuffer) makes: take a range, give an unused
/// tail back. Every [`SegmentStore`] is one (see [`SegmentBuffer::new`](super::SegmentBuffer::new));
/// [`SegmentBuffer::with_source`](super::SegmentBuffer::with_source) takes any other.
///
/// What the buffer relies on: a range is never handed out twice, in this process or any
/// other, and each range starts at or after the end of the previous one it got (it refuses
/// one that does not). Errors that a retry may fix are [retryable](crate::Error::is_retryable):
/// the buffer retries those in the background and returns the others at once. Implement it
/// with `#[async_trait::async_trait]`, as the trait is declared.
#[async_trait]
pub trait RangeSource: Send + Sync + fmt::Debug {
    /// A range of about `step` IDs of `tag` (shorter only at the tag's end), never empty.
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>>;

    /// Gives back `unused`, the unused tail of the last range taken, when the source can take
    /// it (nobody took IDs after it); returns whether it did.
    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool>;

    /// Whether `range` is the last this source will ever hand the buffer, even though it ends
    /// below `MAX_SEGMENT_ID` (a dated tag's range that ends with its period). The buffer then
    /// treats it as a tag's end: it fetches nothing after it, and a run that does not fit in
    /// what is left fails without taking any of it. False by default.
    fn is_last(&self, _range: &Range<u64>) -> bool {
        false
    }
}

/// A store as a range source.
#[derive(Debug)]
pub(crate) struct StoreRanges(pub(crate) Arc<dyn SegmentStore>);

#[async_trait]
impl RangeSource for StoreRanges {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        self.0.allocate(tag, step).await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        self.0.give_back(tag, unused).await
    }
}
