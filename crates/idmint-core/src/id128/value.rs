//! The 128-bit value and its fields: where the time, the counter, the node field and the random
//! bits sit in a UUIDv7 and in a ULID (docs/ARCHITECTURE.md, "128-bit IDs").

use std::fmt;

use crate::error::{Error, Result};
use crate::layout::format_ms_rfc3339;

/// Width of the counter after the milliseconds, in both kinds.
pub const COUNTER_BITS: u32 = 24;

/// The widest node field: what the counter leaves of the random bits, at least 26 bits of
/// randomness per ID remaining (a UUIDv7 has 50 bits after its counter).
pub const MAX_NODE_BITS: u32 = 24;

/// The largest millisecond 48 bits hold: 10889-08-02T05:31:50.655Z.
pub const MAX_MS: u64 = (1 << 48) - 1;

/// Which 128-bit layout an ID follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Id128Kind {
    /// RFC 9562 UUID version 7 (`uuidv7`): version and variant bits fixed, 50 bits after the
    /// counter.
    #[cfg_attr(feature = "serde", serde(rename = "uuidv7"))]
    Uuid7,
    /// ULID (`ulid`): no fixed bits, 56 bits after the counter.
    #[cfg_attr(feature = "serde", serde(rename = "ulid"))]
    Ulid,
}

impl Id128Kind {
    /// The bits after the counter: the node field and the random bits together.
    pub const fn tail_bits(self) -> u32 {
        match self {
            Id128Kind::Uuid7 => 50,
            Id128Kind::Ulid => 56,
        }
    }

    /// The name used by the front ends and in decoded output.
    pub const fn as_str(self) -> &'static str {
        match self {
            Id128Kind::Uuid7 => "uuidv7",
            Id128Kind::Ulid => "ulid",
        }
    }

    /// The kind a text form says by itself: 26 characters are a ULID's own text. The other
    /// forms (canonical, hex, bytes) are written for both kinds, so `None`: the version and
    /// variant bits decide ([`Id128::decode`]).
    pub fn of_text(text: &[u8]) -> Option<Self> {
        (text.len() == 26).then_some(Id128Kind::Ulid)
    }

    /// Reads `uuidv7` (also `uuid7`, `uuid`) or `ulid`, in any case.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "uuid" | "uuid7" | "uuidv7" => Ok(Id128Kind::Uuid7),
            "ulid" => Ok(Id128Kind::Ulid),
            _ => Err(Error::argument(
                "kind",
                format!(
                    "`{}` is not a 128-bit kind: use uuidv7 or ulid",
                    name.chars().take(32).collect::<String>()
                ),
            )),
        }
    }
}

impl fmt::Display for Id128Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields one ID is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id128Fields {
    /// Milliseconds since 1970-01-01T00:00:00Z (48 bits).
    pub ms: u64,
    /// The counter within the millisecond (24 bits).
    pub counter: u32,
    /// Width of the node field, 0 for none.
    pub node_bits: u32,
    /// The node field, below `2^node_bits`.
    pub node: u32,
    /// The random bits: the low `tail_bits - node_bits` bits of this.
    pub random: u64,
}

/// A 128-bit ID: a UUIDv7 or a ULID. Compares as its 16 big-endian bytes do, which is the
/// order of generation for IDs of one generator.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id128(u128);

impl Id128 {
    /// The ID whose 16 bytes, big-endian, are `value`.
    pub const fn from_u128(value: u128) -> Self {
        Id128(value)
    }

    /// The 16 bytes as one big-endian number.
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The ID made of these 16 bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Id128(u128::from_be_bytes(bytes))
    }

    /// The 16 bytes, most significant first: what a `uuid` column or `uuid::Uuid` holds.
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Puts the fields in their places for `kind`. Values wider than their field are cut to
    /// it: callers check widths where input reaches them ([`Id128Fields`] from a generator
    /// always fits).
    #[inline]
    pub const fn compose(kind: Id128Kind, fields: &Id128Fields) -> Self {
        let tail = kind.tail_bits();
        // A width past the largest node field is cut to it (a generator never makes one).
        let node_bits = if fields.node_bits > MAX_NODE_BITS {
            MAX_NODE_BITS
        } else {
            fields.node_bits
        };
        let random_bits = tail - node_bits;
        let ms = (fields.ms & MAX_MS) as u128;
        let counter = (fields.counter & ((1 << COUNTER_BITS) - 1)) as u128;
        let node = if node_bits == 0 {
            0
        } else {
            (fields.node as u128 & ((1 << node_bits) - 1)) << random_bits
        };
        let random = fields.random as u128 & ((1u128 << random_bits) - 1);
        let value = match kind {
            Id128Kind::Uuid7 => {
                ms << 80
                    | 0x7 << 76
                    | (counter >> 12) << 64
                    | 0b10 << 62
                    | (counter & 0xFFF) << 50
                    | node
                    | random
            }
            Id128Kind::Ulid => ms << 80 | counter << 56 | node | random,
        };
        Id128(value)
    }

    /// The milliseconds since the Unix epoch in the first 48 bits (both kinds).
    pub const fn ms(self) -> u64 {
        (self.0 >> 80) as u64
    }

    /// The version nibble, as a UUID reads it (7 for a UUIDv7).
    pub const fn version(self) -> u8 {
        ((self.0 >> 76) & 0xF) as u8
    }

    /// The two variant bits, as a UUID reads them (0b10 for RFC 9562's).
    pub const fn variant_bits(self) -> u8 {
        ((self.0 >> 62) & 0b11) as u8
    }

    /// Whether the version and variant bits say UUIDv7.
    pub const fn is_uuid7(self) -> bool {
        self.version() == 7 && self.variant_bits() == 0b10
    }

    /// The fields, read as `kind` with a node field of `node_bits` (0 for none).
    pub fn fields(self, kind: Id128Kind, node_bits: u32) -> Result<Id128Fields> {
        check_node_bits(node_bits)?;
        let v = self.0;
        let counter = match kind {
            Id128Kind::Uuid7 => ((v >> 64) & 0xFFF) << 12 | ((v >> 50) & 0xFFF),
            Id128Kind::Ulid => (v >> 56) & 0xFF_FFFF,
        } as u32;
        let random_bits = kind.tail_bits() - node_bits;
        let node = ((v >> random_bits) & ((1u128 << node_bits) - 1)) as u32;
        Ok(Id128Fields {
            ms: self.ms(),
            counter,
            node_bits,
            node,
            random: (v & ((1u128 << random_bits) - 1)) as u64,
        })
    }

    /// What the ID says, read as `kind` (`None`: a UUIDv7 when its version and variant bits
    /// say so, a ULID otherwise), with a node field of `node_bits`.
    pub fn decode(self, kind: Option<Id128Kind>, node_bits: u32) -> Result<Decoded128> {
        let kind = kind.unwrap_or(if self.is_uuid7() {
            Id128Kind::Uuid7
        } else {
            Id128Kind::Ulid
        });
        let fields = self.fields(kind, node_bits)?;
        let uuid = kind == Id128Kind::Uuid7;
        Ok(Decoded128 {
            kind,
            ms: fields.ms,
            time: format_ms_rfc3339(fields.ms),
            version: uuid.then_some(self.version()),
            variant: uuid.then_some(self.variant_bits()),
            counter: fields.counter,
            node: (node_bits > 0).then_some(fields.node),
        })
    }
}

impl fmt::Debug for Id128 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id128({})", super::Id128Form::Uuid.render(*self))
    }
}

/// What an ID says: its time, its kind's fixed bits, its counter and node field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Decoded128 {
    /// The layout it was read as.
    pub kind: Id128Kind,
    /// Milliseconds since the Unix epoch.
    pub ms: u64,
    /// The same moment, RFC 3339 UTC.
    pub time: String,
    /// The version nibble (UUIDs only).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub version: Option<u8>,
    /// The variant bits (UUIDs only; 2 = 0b10 is RFC 9562's).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub variant: Option<u8>,
    /// The 24-bit counter within the millisecond.
    pub counter: u32,
    /// The node field, when its width was given.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub node: Option<u32>,
}

/// Refuses a node field wider than [`MAX_NODE_BITS`].
pub(crate) fn check_node_bits(node_bits: u32) -> Result<()> {
    if node_bits > MAX_NODE_BITS {
        return Err(Error::argument(
            "node_bits",
            format!("{node_bits} is wider than the {MAX_NODE_BITS} bits a node field may take"),
        ));
    }
    Ok(())
}
