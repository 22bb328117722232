//! The layout spec string: `time:41@1ms,dc:5,worker:5,seq:12`, most significant field first.
//!
//! Parsing only checks the grammar and each field on its own (known name, width, unit, no
//! repeats); the rules across fields (63 bits, one `time`, one `seq`) are checked by
//! [`Layout`](super::Layout) so they hold however a layout is built.

use super::{preset, Field, FieldKind, TimeUnit, MAX_LAYOUT_BITS};
use crate::error::{Error, Result};

/// A spec string split into fields, before the cross-field rules are checked.
#[derive(Debug)]
pub(super) struct ParsedSpec {
    /// `(kind, bits)`, most significant first.
    pub fields: Vec<(FieldKind, u32)>,
    /// The unit of the `time` field (1ms when the spec gives none).
    pub unit: TimeUnit,
}

/// Splits and checks `spec`.
pub(super) fn parse(spec: &str) -> Result<ParsedSpec> {
    let trimmed = spec.trim();
    if trimmed.is_empty() {
        return Err(Error::layout(
            spec,
            "empty; give a preset or fields like time:41@1ms,worker:10,seq:12",
        ));
    }
    if !trimmed.contains(':') {
        return Err(Error::layout(
            spec,
            format!(
                "not a preset ({}) nor a list of fields like time:41@1ms,worker:10,seq:12",
                preset::names().join(", ")
            ),
        ));
    }
    let mut fields: Vec<(FieldKind, u32)> = Vec::new();
    let mut unit = TimeUnit::Millis1;
    for part in trimmed.split(',') {
        let (kind, bits, field_unit) = parse_field(spec, part.trim())?;
        if fields.iter().any(|(seen, _)| *seen == kind) {
            return Err(Error::layout(
                spec,
                format!("`{}` appears twice", kind.name()),
            ));
        }
        if let Some(field_unit) = field_unit {
            unit = field_unit;
        }
        fields.push((kind, bits));
    }
    Ok(ParsedSpec { fields, unit })
}

/// Parses one `name:bits[@unit]`.
fn parse_field(spec: &str, part: &str) -> Result<(FieldKind, u32, Option<TimeUnit>)> {
    let (name, rest) = part.split_once(':').ok_or_else(|| {
        Error::layout(
            spec,
            format!("field `{part}` needs a width, e.g. `{part}:10`"),
        )
    })?;
    let kind = match name.trim() {
        "time" => FieldKind::Time,
        "dc" | "datacenter" => FieldKind::Dc,
        "worker" => FieldKind::Worker,
        "shard" => FieldKind::Shard,
        "seq" | "sequence" => FieldKind::Seq,
        other => {
            return Err(Error::layout(
                spec,
                format!("unknown field `{other}`; fields are time, dc, worker, shard, seq"),
            ))
        }
    };
    let (width, unit) = match rest.split_once('@') {
        Some((width, unit)) if kind == FieldKind::Time => {
            (width, Some(parse_unit(spec, unit.trim())?))
        }
        Some(_) => {
            return Err(Error::layout(
                spec,
                format!("only `time` takes a unit, not `{}`", kind.name()),
            ))
        }
        None => (rest, None),
    };
    let bits = width
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|bits| (1..=MAX_LAYOUT_BITS).contains(bits))
        .ok_or_else(|| {
            Error::layout(
                spec,
                format!(
                    "width `{}` of `{}` is not a whole number from 1 to {MAX_LAYOUT_BITS}",
                    width.trim(),
                    kind.name()
                ),
            )
        })?;
    Ok((kind, bits, unit))
}

fn parse_unit(spec: &str, unit: &str) -> Result<TimeUnit> {
    TimeUnit::ALL
        .into_iter()
        .find(|u| u.as_str() == unit)
        .ok_or_else(|| {
            let known: Vec<&str> = TimeUnit::ALL.iter().map(|u| u.as_str()).collect();
            Error::layout(
                spec,
                format!("unknown time unit `{unit}`; units are {}", known.join(", ")),
            )
        })
}

/// The canonical spec of a layout's fields.
pub(super) fn render(fields: &[Field], unit: TimeUnit) -> String {
    fields
        .iter()
        .map(|f| match f.kind {
            FieldKind::Time => format!("time:{}@{}", f.bits, unit.as_str()),
            kind => format!("{}:{}", kind.name(), f.bits),
        })
        .collect::<Vec<_>>()
        .join(",")
}
