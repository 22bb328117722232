//! What serves one tag: a plain segment buffer, or a dated tag's buffer (see
//! `idmint_core::dating`), whose IDs start again every period.

use std::ops::Range;
use std::sync::Arc;

use idmint_core::{DatedBuffer, Dating, Result, SegmentBuffer, Tag};

/// The buffer of one tag, as the front ends use it. Cloning is a pointer copy.
#[derive(Debug, Clone)]
pub enum TagBuffer {
    /// A tag whose IDs count on for ever.
    Plain(Arc<SegmentBuffer>),
    /// A dated tag.
    Dated(Arc<DatedBuffer>),
}

impl TagBuffer {
    /// The tag.
    pub fn tag(&self) -> &Tag {
        match self {
            TagBuffer::Plain(buffer) => buffer.tag(),
            TagBuffer::Dated(buffer) => buffer.tag(),
        }
    }

    /// The dating of a dated tag.
    pub fn dating(&self) -> Option<&Dating> {
        match self {
            TagBuffer::Plain(_) => None,
            TagBuffer::Dated(buffer) => Some(buffer.dating()),
        }
    }

    /// The segment buffer serving now: for gauges, warm-up and shutdown.
    pub fn current(&self) -> Arc<SegmentBuffer> {
        match self {
            TagBuffer::Plain(buffer) => Arc::clone(buffer),
            TagBuffer::Dated(buffer) => buffer.current(),
        }
    }

    /// The next ID if one is in memory (of the current period, for a dated tag). The plain
    /// case inlines into `INCR`'s fast path; the dated one stays out of line so it does not
    /// keep the plain one from inlining.
    #[inline]
    pub fn try_next(&self) -> Option<u64> {
        match self {
            TagBuffer::Plain(buffer) => buffer.try_next(),
            TagBuffer::Dated(buffer) => dated_try_next(buffer),
        }
    }

    /// The next ID, waiting for the store when none is in memory.
    pub async fn next(&self) -> Result<u64> {
        match self {
            TagBuffer::Plain(buffer) => buffer.next().await,
            TagBuffer::Dated(buffer) => buffer.next().await,
        }
    }

    /// `n` IDs as ascending runs.
    pub async fn next_many(&self, n: u64) -> Result<Vec<Range<u64>>> {
        match self {
            TagBuffer::Plain(buffer) => buffer.next_many(n).await,
            TagBuffer::Dated(buffer) => buffer.next_many(n).await,
        }
    }

    /// `n` consecutive IDs.
    pub async fn take_contiguous(&self, n: u64) -> Result<Range<u64>> {
        match self {
            TagBuffer::Plain(buffer) => buffer.take_contiguous(n).await,
            TagBuffer::Dated(buffer) => buffer.take_contiguous(n).await,
        }
    }

    /// Passes the tag's new step on.
    pub fn set_min_step(&self, step: u64) {
        match self {
            TagBuffer::Plain(buffer) => buffer.set_min_step(step),
            TagBuffer::Dated(buffer) => buffer.set_min_step(step),
        }
    }

    /// Gives the unused tail back (see [`SegmentBuffer::shutdown`]).
    pub async fn shutdown(&self) -> Result<bool> {
        match self {
            TagBuffer::Plain(buffer) => buffer.shutdown().await,
            TagBuffer::Dated(buffer) => buffer.shutdown().await,
        }
    }
}

/// [`DatedBuffer::try_next`], out of line (see [`TagBuffer::try_next`]).
#[inline(never)]
fn dated_try_next(buffer: &DatedBuffer) -> Option<u64> {
    buffer.try_next()
}
