//! A segment slot: where the hot path looks up the range of a claimed generation.
//!
//! The buffer has two slots; generation `g` lives in slot `g & 1`, so the current segment and
//! the next one never share a slot. A slot is rewritten only when it is loaded with generation
//! `g + 2`, which happens after the state word has moved to `g + 1`; readers still holding a claim
//! of generation `g` may then be in the middle of a read. They detect it seqlock-style and
//! discard the claim (a gap, never a duplicate):
//!
//! - writer (always under the buffer's mutex): `gen = INVALID` (relaxed); release fence; the
//!   data (relaxed); `gen = new` (release);
//! - reader: `gen` (acquire) must equal the claim's generation; the data (relaxed); acquire
//!   fence; `gen` (relaxed) must still equal it.
//!
//! This is the seqlock of H.-J. Boehm, "Can seqlocks get along with programming language memory
//! models?" (MSPC 2012). If a reader's data load returns a value written by a later rewrite, that
//! store comes after the writer's release fence, so the fence synchronizes with the reader's
//! acquire fence and the `INVALID` store happens-before the second `gen` load, which then cannot
//! return the claim's generation. If both `gen` loads return it, the data are the ones published
//! with it: each publication carries a generation used once (modulo 2^32), and the first load
//! synchronizes with its release store.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Slot generation meaning "being written" or "never written": no claim has this generation
/// (generations are 32-bit).
const INVALID: u64 = u64::MAX;

/// What a successful read of a slot yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotView {
    /// First ID of the segment.
    pub(crate) start: u64,
    /// Number of IDs in the segment (at most `MAX_SEGMENT_LEN`).
    pub(crate) len: u64,
    /// The offset whose claim starts the prefetch of the next segment.
    pub(crate) trigger: u64,
}

/// One of the two segment slots.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Generation held, or [`INVALID`].
    gen: AtomicU64,
    /// First ID.
    start: AtomicU64,
    /// `trigger << 32 | len`: both are below 2^31, and one load reads both.
    len_trigger: AtomicU64,
}

impl Slot {
    /// An empty slot: every read fails.
    pub(crate) fn empty() -> Self {
        Self {
            gen: AtomicU64::new(INVALID),
            start: AtomicU64::new(0),
            len_trigger: AtomicU64::new(0),
        }
    }

    /// Reads the segment of generation `gen`, or `None` if the slot holds another generation
    /// (the claim is stale, or the slot is being rewritten).
    #[inline]
    pub(crate) fn read(&self, gen: u32) -> Option<SlotView> {
        let expected = u64::from(gen);
        if self.gen.load(Ordering::Acquire) != expected {
            return None;
        }
        let start = self.start.load(Ordering::Relaxed);
        let len_trigger = self.len_trigger.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if self.gen.load(Ordering::Relaxed) != expected {
            return None;
        }
        Some(SlotView {
            start,
            len: len_trigger & 0xFFFF_FFFF,
            trigger: len_trigger >> 32,
        })
    }

    /// Publishes `view` as generation `gen`. Callers hold the buffer's mutex, so writers never
    /// race each other; readers are handled by the protocol above.
    pub(crate) fn publish(&self, gen: u32, view: SlotView) {
        debug_assert!(view.len < 1 << 31 && view.trigger < 1 << 31);
        self.gen.store(INVALID, Ordering::Relaxed);
        fence(Ordering::Release);
        self.start.store(view.start, Ordering::Relaxed);
        self.len_trigger
            .store((view.trigger << 32) | view.len, Ordering::Relaxed);
        self.gen.store(u64::from(gen), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_published_generation() {
        let slot = Slot::empty();
        assert_eq!(slot.read(0), None);
        let view = SlotView {
            start: 11,
            len: 100,
            trigger: 10,
        };
        slot.publish(4, view);
        assert_eq!(slot.read(4), Some(view));
        assert_eq!(slot.read(2), None);
        assert_eq!(slot.read(6), None);
    }

    #[test]
    fn concurrent_readers_never_see_a_torn_segment() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;

        // Each generation g is published with start = 1000 * g and len = g + 1: a reader that
        // validates a generation must see exactly that pair.
        let slot = Arc::new(Slot::empty());
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let slot = Arc::clone(&slot);
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let mut validated = 0_u64;
                    while !done.load(Ordering::Relaxed) {
                        for gen in 0..64_u32 {
                            if let Some(view) = slot.read(gen) {
                                assert_eq!(view.start, 1000 * u64::from(gen));
                                assert_eq!(view.len, u64::from(gen) + 1);
                                validated += 1;
                            }
                        }
                    }
                    validated
                })
            })
            .collect();
        for round in 0..20_000_u32 {
            let gen = round % 64;
            slot.publish(
                gen,
                SlotView {
                    start: 1000 * u64::from(gen),
                    len: u64::from(gen) + 1,
                    trigger: 0,
                },
            );
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            assert!(reader.join().is_ok());
        }
    }
}
