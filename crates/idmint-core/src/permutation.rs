//! A keyed, reversible shuffle of the 63-bit ID values, for public IDs that show neither how
//! many IDs were issued nor when.
//!
//! A segment ID counts orders; a snowflake carries its time in its top bits. Shown to the
//! public, both say more than a shop means to say. A [`Permutation`] maps every value in
//! `1..2^63` to another value in `1..2^63`, one to one, and back with the same key: the
//! store's IDs stay dense and time-ordered, the public ones look random, and distinct IDs stay
//! distinct, since a permutation cannot map two values to one.
//!
//! The construction: a Feistel network on the 63 bits themselves, its two halves 31 and 32 bits
//! wide and swapping widths at every round ([`ROUNDS`] rounds, as FF1 does for odd widths),
//! each round's function SipHash-2-4 under the 128-bit key of the round number and the half. A
//! Feistel network is a permutation of its domain (here every value below 2^63) whatever its
//! round function. The only value it must not answer is 0: the one ID whose image is 0 takes the
//! image of 0 instead ("cycle walking", which stays one to one because it follows the cycle of
//! the permutation that holds the ID). 0 and every value from 2^63 up are left as they are, so
//! the mapping is a permutation of all of `u64` and never answers 0 for an ID.
//!
//! One key serves many sequences, each with a permutation of its own ([`derive`]): a node
//! permutes its snowflakes with the key derived for its namespace, and each tag's segment IDs
//! with one derived from that for the tag. Tags count from 1 each, so with one permutation
//! for all of them anyone allowed to take IDs of one tag could list the public values of 1, 2,
//! 3... and read every other tag's IDs off that list; and two namespaces given the same key
//! would hand out the same values.
//!
//! [`derive`]: Permutation::derive
//!
//! What it is not: encryption of a secret. The key hides the order, the volume and the time
//! from people who see IDs; it does not hide that two equal IDs are equal, and it rests on
//! the key staying on the servers. docs/ARCHITECTURE.md, "Permuted IDs", says what it costs
//! and what it does not protect against.

use std::fmt;

use siphasher::sip::SipHasher24;

use crate::error::{Error, Result};

/// Rounds of the Feistel network. Four rounds of a pseudo-random function already give a
/// pseudo-random permutation (Luby–Rackoff); with halves of 31 and 32 bits, more rounds push
/// the number of IDs an observer needs before the outputs can be told from random ones toward
/// 2^31 (NIST's FF3-1 uses 8, FF1 10).
pub const ROUNDS: u8 = 8;

/// Bytes of a key.
pub const KEY_BYTES: usize = 16;

/// The name of this construction in a key's fingerprint (and so in the pinned ID space): a
/// later construction gets another name, and a node never mixes the two.
const SCHEME: &str = "feistel63x8-siphash24";

/// The values that are permuted: `1..2^63`.
const TOP: u64 = 1 << 63;

/// Bits of the wider half, the low one of a value.
const RIGHT_BITS: u32 = 32;

/// Bits of all values permuted.
const BITS: u32 = 63;

/// A secret 128-bit key and the permutation it selects.
#[derive(Clone)]
pub struct Permutation {
    k0: u64,
    k1: u64,
    /// SipHash-2-4 keyed with `k0, k1`: the state every hash of a round starts from.
    hasher: SipHasher24,
}

impl PartialEq for Permutation {
    fn eq(&self, other: &Self) -> bool {
        (self.k0, self.k1) == (other.k0, other.k1)
    }
}

impl Eq for Permutation {}

impl fmt::Debug for Permutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key itself: a Debug print ends up in logs.
        f.debug_struct("Permutation")
            .field("fingerprint", &self.fingerprint())
            .finish()
    }
}

impl Permutation {
    /// The permutation of a 16-byte key.
    pub fn from_bytes(key: [u8; KEY_BYTES]) -> Self {
        let (low, high) = key.split_at(8);
        let half = |bytes: &[u8]| {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            u64::from_le_bytes(word)
        };
        let (k0, k1) = (half(low), half(high));
        Self {
            k0,
            k1,
            hasher: SipHasher24::new_with_keys(k0, k1),
        }
    }

    /// The permutation of the key derived from this one for `context` within `domain`
    /// (`b"namespace"` and the namespace's name, `b"tag"` and the tag's): two 64-bit SipHash
    /// outputs of this key over the domain and the context, so knowing one derived key's values
    /// says nothing of another's, nor of this key's.
    pub fn derive(&self, domain: &[u8], context: &[u8]) -> Self {
        let word = |half: u8| {
            let mut message = Vec::with_capacity(domain.len() + context.len() + 16);
            message.extend_from_slice(b"idmint derive ");
            message.push(half);
            message.extend_from_slice(&(domain.len() as u64).to_le_bytes());
            message.extend_from_slice(domain);
            message.extend_from_slice(context);
            self.hasher.hash(&message)
        };
        let (k0, k1) = (word(0), word(1));
        Self {
            k0,
            k1,
            hasher: SipHasher24::new_with_keys(k0, k1),
        }
    }

    /// The permutation of namespace `namespace` under this key: what a node's snowflakes are
    /// handed out in, and what its tags' permutations derive from.
    pub fn for_namespace(&self, namespace: &str) -> Self {
        self.derive(b"namespace", namespace.as_bytes())
    }

    /// The permutation of `tag`'s segment IDs, from its namespace's.
    pub fn for_tag(&self, tag: &crate::Tag) -> Self {
        self.derive(b"tag", tag.as_str().as_bytes())
    }

    /// Reads a key written as 32 hexadecimal digits (any case), with white space around it, as
    /// `idmint permutation-key` writes it. The error never quotes the text: it may be a key.
    pub fn from_hex(text: &str) -> Result<Self> {
        let digits = text.trim();
        if digits.len() != KEY_BYTES * 2 {
            return Err(Error::argument(
                "permutation key",
                format!(
                    "a key is {} hexadecimal digits, this text has {} characters",
                    KEY_BYTES * 2,
                    digits.chars().count()
                ),
            ));
        }
        let mut key = [0u8; KEY_BYTES];
        for (byte, pair) in key.iter_mut().zip(digits.as_bytes().chunks_exact(2)) {
            let (Some(high), Some(low)) = (hex_value(pair[0]), hex_value(pair[1])) else {
                return Err(Error::argument(
                    "permutation key",
                    "a key holds only the hexadecimal digits 0-9 and a-f",
                ));
            };
            *byte = high << 4 | low;
        }
        if key == [0; KEY_BYTES] {
            return Err(Error::argument(
                "permutation key",
                "the key is all zeros, which is no secret: make one with `idmint permutation-key`",
            ));
        }
        Ok(Self::from_bytes(key))
    }

    /// The key as 32 lowercase hexadecimal digits, as [`from_hex`](Self::from_hex) reads it.
    pub fn to_hex(&self) -> String {
        let mut text = String::with_capacity(KEY_BYTES * 2);
        for byte in self
            .k0
            .to_le_bytes()
            .into_iter()
            .chain(self.k1.to_le_bytes())
        {
            text.push_str(&format!("{byte:02x}"));
        }
        text
    }

    /// What the store pins in place of the key: the construction's name and 64 bits of
    /// SipHash of a fixed text under the key. Two nodes with the same fingerprint have the same
    /// key (a different key matches by chance once in 2^64); the key cannot be found from it
    /// short of trying every one of 2^128.
    pub fn fingerprint(&self) -> String {
        let digest = self.hasher.hash(b"idmint permutation key fingerprint");
        format!("{SCHEME}:{digest:016x}")
    }

    /// The public value of `id`: another value in `1..2^63` for an `id` in that range; 0 and
    /// values from 2^63 up are their own image.
    #[inline]
    pub fn permute(&self, id: u64) -> u64 {
        self.walk(id, Self::encrypt)
    }

    /// The ID whose public value is `public`: the inverse of [`permute`](Self::permute).
    #[inline]
    pub fn restore(&self, public: u64) -> u64 {
        self.walk(public, Self::decrypt)
    }

    /// `network` (forward or backward) applied to a `value` in `1..2^63`, again while it
    /// answers 0, which is no ID; values outside the range as they are.
    #[inline]
    fn walk(&self, value: u64, network: fn(&Self, u64) -> u64) -> u64 {
        if !(1..TOP).contains(&value) {
            return value;
        }
        let mut image = network(self, value);
        while image == 0 {
            image = network(self, image);
        }
        image
    }

    /// The Feistel network forward on a value below 2^63: the left half (31 bits at the start)
    /// is mixed with the round function of the right one and the halves swap, so the widths
    /// alternate and come back after an even number of rounds.
    #[inline]
    fn encrypt(&self, value: u64) -> u64 {
        let (mut left, mut right) = (value >> RIGHT_BITS, value & mask(RIGHT_BITS));
        let mut left_bits = BITS - RIGHT_BITS;
        for round in 0..ROUNDS {
            let mixed = (left ^ self.round(round, right)) & mask(left_bits);
            (left, right) = (right, mixed);
            left_bits = BITS - left_bits;
        }
        left << RIGHT_BITS | right
    }

    /// The Feistel network backward: each round undone, last first.
    #[inline]
    fn decrypt(&self, value: u64) -> u64 {
        let (mut left, mut right) = (value >> RIGHT_BITS, value & mask(RIGHT_BITS));
        let mut left_bits = BITS - RIGHT_BITS;
        for round in (0..ROUNDS).rev() {
            // `left` is the round's right half; `right` its left half, mixed, as wide as it.
            let unmixed = (right ^ self.round(round, left)) & mask(BITS - left_bits);
            (left, right) = (unmixed, left);
            left_bits = BITS - left_bits;
        }
        left << RIGHT_BITS | right
    }

    /// The round function: SipHash-2-4 of the round number and the half (5 bytes: one
    /// SipHash block), cut to 32 bits.
    #[inline]
    fn round(&self, round: u8, half: u64) -> u64 {
        let [b0, b1, b2, b3, ..] = half.to_le_bytes();
        self.hasher.hash(&[round, b0, b1, b2, b3]) & mask(32)
    }
}

/// The low `bits` bits set.
#[inline]
const fn mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

/// The value of one hexadecimal digit.
fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f";

    fn permutation() -> Permutation {
        match Permutation::from_hex(KEY) {
            Ok(p) => p,
            Err(e) => panic!("the test key parses: {e}"),
        }
    }

    #[test]
    fn the_key_round_trips_through_its_text_and_never_shows_in_debug() {
        let p = permutation();
        assert_eq!(p.to_hex(), KEY);
        assert_eq!(
            Permutation::from_hex(&format!("  {}\n", KEY.to_uppercase())).ok(),
            Some(p.clone())
        );
        let shown = format!("{p:?}");
        assert!(!shown.contains(KEY) && shown.contains(SCHEME), "{shown}");
    }

    #[test]
    fn bad_keys_are_refused_without_quoting_them() {
        for text in [
            "",
            "0001",
            "000102030405060708090a0b0c0d0e0g",
            "00000000000000000000000000000000",
            "000102030405060708090a0b0c0d0e0f00",
        ] {
            let Err(error) = Permutation::from_hex(text) else {
                panic!("{text:?} must be refused");
            };
            let message = error.to_string();
            assert!(message.contains("permutation key"), "{message}");
            if text.len() > 4 {
                assert!(!message.contains(text), "{message}");
            }
        }
    }

    #[test]
    fn the_edges_stay_and_every_output_is_in_range() {
        let p = permutation();
        for id in [0, TOP, TOP + 1, u64::MAX] {
            assert_eq!(p.permute(id), id);
            assert_eq!(p.restore(id), id);
        }
        for id in [1, 2, 3, TOP - 1, TOP - 2, 1 << 62, 175_928_847_299_117_063] {
            let public = p.permute(id);
            assert!((1..TOP).contains(&public), "{id} -> {public}");
            assert_eq!(p.restore(public), id);
        }
    }

    /// The values of one key, fixed: the public IDs a deployment handed out must read back
    /// the same after any upgrade, so the construction may never change under its name. The
    /// figures were checked against a separate SipHash-2-4 and Feistel written in Python.
    #[test]
    fn known_answers() {
        let p = permutation();
        let answers: Vec<u64> = [1, 2, 1_000_000, TOP - 1].map(|id| p.permute(id)).to_vec();
        assert_eq!(
            answers,
            [
                2_667_191_020_593_736_291,
                3_035_966_685_293_840_273,
                200_893_764_881_503_827,
                2_517_158_464_679_573_534
            ]
        );
        assert_eq!(p.fingerprint(), "feistel63x8-siphash24:1e47711ebf27b4d7");
    }

    #[test]
    fn derived_keys_differ_by_domain_and_context_and_are_stable() {
        let p = permutation();
        let shop = p.derive(b"namespace", b"shop");
        assert_eq!(shop, permutation().derive(b"namespace", b"shop"));
        assert_ne!(shop, p.derive(b"namespace", b"shop2"));
        assert_ne!(shop, p.derive(b"tag", b"shop"));
        // The domain's length is part of the message: no two (domain, context) pairs meet.
        assert_ne!(p.derive(b"ab", b"c"), p.derive(b"a", b"bc"));
        let orders = shop.derive(b"tag", b"orders");
        assert_ne!(
            orders.permute(1),
            shop.derive(b"tag", b"invoices").permute(1)
        );
        assert_eq!(orders.restore(orders.permute(42)), 42);
        // Pinned like the construction: deployed IDs depend on it (checked against the same
        // separate Python implementation).
        assert_eq!(shop.fingerprint(), "feistel63x8-siphash24:046b8ca722885d85");
        assert_eq!(orders.permute(1), 3_007_276_984_159_904_297);
    }

    #[test]
    fn the_fingerprint_names_the_scheme_and_tells_keys_apart() {
        let p = permutation();
        let Ok(other) = Permutation::from_hex("100102030405060708090a0b0c0d0e0f") else {
            panic!("the other key parses");
        };
        assert!(p.fingerprint().starts_with("feistel63x8-siphash24:"));
        assert_eq!(p.fingerprint().len(), SCHEME.len() + 1 + 16);
        assert_ne!(p.fingerprint(), other.fingerprint());
        assert_eq!(p.fingerprint(), permutation().fingerprint());
        assert_ne!(p.permute(42), other.permute(42));
    }
}
