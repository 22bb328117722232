//! A decoded ID, for people and for JSON.

use super::{format_ms_rfc3339, FieldKind, IdParts, Layout};

/// An ID taken apart: the moment it was minted and each field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DecodedId {
    /// The ID, as a string (JavaScript loses integers above 2^53).
    pub id: String,
    /// The layout it was decoded with.
    pub layout: String,
    /// The start of its tick, RFC 3339 UTC.
    pub time: String,
    /// The start of its tick, ms since the Unix epoch.
    pub unix_ms: u64,
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// Datacenter, when the layout has that field.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub dc: Option<u64>,
    /// Worker, when the layout has that field.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub worker: Option<u64>,
    /// Shard, when the layout has that field.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub shard: Option<u64>,
    /// Sequence within the tick.
    pub seq: u64,
    /// The version of the namespace's ID space that issued it, when decoded by a node or
    /// against a store, which know the spaces recorded there.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub id_space: Option<u64>,
    /// The ID before the namespace's permutation, when `id` is a permuted public value
    /// ([`Permutation`](crate::Permutation)): the fields are this one's. For a segment ID, its
    /// number in the tag.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub plain_id: Option<String>,
}

impl DecodedId {
    pub(super) fn new(layout: &Layout, id: u64, parts: IdParts) -> Self {
        let unix_ms = layout.tick_start_ms(parts.tick);
        let present = |kind: FieldKind, value: u64| layout.field(kind).map(|_| value);
        Self {
            id: id.to_string(),
            layout: layout.to_string(),
            time: format_ms_rfc3339(unix_ms),
            unix_ms,
            tick: parts.tick,
            dc: present(FieldKind::Dc, parts.dc),
            worker: present(FieldKind::Worker, parts.worker),
            shard: present(FieldKind::Shard, parts.shard),
            seq: parts.seq,
            id_space: None,
            plain_id: None,
        }
    }

    /// The same fields for the permuted value `public` this ID was handed out as: `id`
    /// becomes `public`, and the plain ID moves to `plain_id`.
    pub fn handed_out_as(self, public: u64) -> Self {
        Self {
            plain_id: Some(self.id),
            id: public.to_string(),
            ..self
        }
    }
}
