//! A run of IDs reserved with one compare-and-swap.

use crate::layout::{FieldKind, Layout};

/// What turns a packed `(tick, seq)` value into an ID: shifts and the fixed bits of one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Composer {
    seq_bits: u32,
    seq_mask: u64,
    time_shift: u32,
    seq_shift: u32,
    /// dc, worker and shard bits, already in place.
    fixed: u64,
}

impl Composer {
    /// The composer of `layout` for one worker (`fixed` holds its dc and worker bits).
    pub(crate) fn new(layout: &Layout, fixed: u64) -> Self {
        let shift = |kind| layout.field(kind).map_or(0, |f| f.shift);
        Self {
            seq_bits: layout.seq_bits(),
            seq_mask: crate::layout::low_mask(layout.seq_bits()),
            time_shift: shift(FieldKind::Time),
            seq_shift: shift(FieldKind::Seq),
            fixed,
        }
    }

    /// The same composer with the shard's bits added.
    pub(crate) fn with_fixed(self, extra: u64) -> Self {
        Self {
            fixed: self.fixed | extra,
            ..self
        }
    }

    /// The ID of packed value `packed = tick << seq_bits | seq`.
    #[inline]
    pub(crate) fn compose(&self, packed: u64) -> u64 {
        let tick = packed >> self.seq_bits;
        let seq = packed & self.seq_mask;
        self.fixed | (tick << self.time_shift) | (seq << self.seq_shift)
    }
}

/// `count` IDs reserved at once, in increasing order. Iterating composes them; nothing is
/// allocated, so a batch of a million IDs costs one compare-and-swap and a loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnowflakeBatch {
    composer: Composer,
    next: u64,
    end: u64,
}

impl SnowflakeBatch {
    pub(crate) fn new(composer: Composer, first_packed: u64, count: u64) -> Self {
        Self {
            composer,
            next: first_packed,
            end: first_packed + count,
        }
    }

    /// The first ID not yet taken from the batch, if any.
    pub fn first(&self) -> Option<u64> {
        (self.next < self.end).then(|| self.composer.compose(self.next))
    }

    /// The last ID of the batch, if any.
    pub fn last_id(&self) -> Option<u64> {
        (self.next < self.end).then(|| self.composer.compose(self.end - 1))
    }
}

impl Iterator for SnowflakeBatch {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.next >= self.end {
            return None;
        }
        let id = self.composer.compose(self.next);
        self.next += 1;
        Some(id)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.end - self.next).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SnowflakeBatch {}
