//! The packed state word of the hot path: `(generation, offset)` in one `u64`.
//!
//! Every ID a buffer hands out is claimed by one read-modify-write of this word: the high
//! `GEN_BITS` name the segment (its generation), the low [`OFFSET_BITS`] count how many IDs of
//! that segment have been claimed. `fetch_add(1)` therefore claims the next offset of the
//! current segment and nothing else, as long as the offset never carries into the generation.
//!
//! Why the carry cannot happen: a segment is at most [`MAX_SEGMENT_LEN`] (2^30) IDs long, so a
//! valid offset is below 2^30. Offsets at or past the segment's length are failed claims;
//! whoever sees one at or above [`CLAMP_AT`] (2^31) puts the word back to
//! `(generation, EXHAUSTED)` with a compare-and-swap. Between two clamps the offset can only grow
//! by one per caller that is between its `fetch_add` and its own clamp, so reaching 2^32 would
//! take 2^31 threads at the same time. Multi-ID claims use compare-and-swap and never overshoot.

/// Bits of the offset inside the current segment (the low bits of the word).
pub(crate) const OFFSET_BITS: u32 = 32;

/// Bits of the segment generation (the high bits of the word). Generations wrap after 2^32
/// segments; see the module documentation of `segment` for why that is harmless.
#[cfg(test)]
pub(crate) const GEN_BITS: u32 = 64 - OFFSET_BITS;

/// Mask of the offset bits.
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// The longest segment a buffer uses, in IDs. Store ranges longer than this are cut (the rest
/// is a gap); the configured `max_step` is clamped to it. Far above any useful step (Leaf caps
/// at 10^6) and far below the offset field, which leaves room for failed claims.
pub const MAX_SEGMENT_LEN: u64 = 1 << 30;

/// An offset that is past the end of every segment: the word is set to it to mark the current
/// segment used up (wasted straddles, shutdown, clamps).
pub(crate) const EXHAUSTED: u64 = MAX_SEGMENT_LEN;

/// Failed claims that reach this offset are clamped back to [`EXHAUSTED`].
pub(crate) const CLAMP_AT: u64 = 1 << 31;

// The module's argument, checked by the compiler: the generation is exactly the high 32 bits
// (`unpack` casts it to `u32`), every valid offset is below `EXHAUSTED`, failed claims are
// clamped at `CLAMP_AT` above it, and 2^31 more concurrent `fetch_add`s still fit below the
// generation bits.
const _: () = assert!(OFFSET_BITS == 32);
const _: () = assert!(EXHAUSTED == MAX_SEGMENT_LEN && MAX_SEGMENT_LEN < CLAMP_AT);
const _: () = assert!(CLAMP_AT + (1 << 31) - 1 <= OFFSET_MASK);

/// One decoded value of the state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The segment generation (wrapping).
    pub(crate) gen: u32,
    /// The offset claimed inside that segment.
    pub(crate) offset: u64,
}

impl Claim {
    /// Decodes a word.
    #[inline]
    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            // The shift leaves exactly GEN_BITS = 32 bits: the cast cannot truncate.
            gen: (word >> OFFSET_BITS) as u32,
            offset: word & OFFSET_MASK,
        }
    }

    /// Encodes `(gen, offset)`; `offset` must fit in [`OFFSET_BITS`].
    #[inline]
    pub(crate) fn pack(gen: u32, offset: u64) -> u64 {
        debug_assert!(
            offset <= OFFSET_MASK,
            "offset {offset} overflows the state word"
        );
        (u64::from(gen) << OFFSET_BITS) | (offset & OFFSET_MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_round_trip() {
        for (gen, offset) in [(0, 0), (1, 5), (u32::MAX, OFFSET_MASK), (7, CLAMP_AT)] {
            let claim = Claim::unpack(Claim::pack(gen, offset));
            assert_eq!(claim, Claim { gen, offset });
        }
    }

    #[test]
    fn fetch_add_on_a_packed_word_only_moves_the_offset() {
        let word = Claim::pack(9, EXHAUSTED);
        let claim = Claim::unpack(word + (CLAMP_AT - EXHAUSTED));
        assert_eq!(
            claim,
            Claim {
                gen: 9,
                offset: CLAMP_AT
            }
        );
        assert_eq!(GEN_BITS + OFFSET_BITS, 64);
        const { assert!(MAX_SEGMENT_LEN < CLAMP_AT && CLAMP_AT < OFFSET_MASK) };
    }
}
