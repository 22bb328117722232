//! Bit layouts of snowflake IDs: which field sits where, the time unit and the epoch.
//!
//! A layout is written as a spec string, most significant field first
//! (`time:41@1ms,worker:10,seq:12`), or named by a preset (`twitter`, `discord`, ...). It is
//! validated once when parsed; after that, composing and decomposing IDs are shifts and masks
//! that cannot fail except on out-of-range inputs.

mod decode;
mod epoch;
mod preset;
mod spec;

use std::fmt;

pub use self::decode::DecodedId;
pub use self::epoch::{format_ms_rfc3339, parse_epoch, DEFAULT_EPOCH_MS};
pub use self::preset::PRESETS;
use crate::error::{Error, Result};

/// The most bits a layout may use: IDs stay positive in a signed 64-bit column.
pub const MAX_LAYOUT_BITS: u32 = 63;

/// What a field of an ID holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum FieldKind {
    /// Ticks since the epoch.
    Time,
    /// The datacenter, fixed per deployment.
    Dc,
    /// The worker ID, leased from the store.
    Worker,
    /// The shard, given per request (e.g. `user_id % 2^bits`).
    Shard,
    /// The sequence within a tick.
    Seq,
}

impl FieldKind {
    /// The name used in spec strings.
    pub fn name(self) -> &'static str {
        match self {
            FieldKind::Time => "time",
            FieldKind::Dc => "dc",
            FieldKind::Worker => "worker",
            FieldKind::Shard => "shard",
            FieldKind::Seq => "seq",
        }
    }
}

/// The length of one time tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum TimeUnit {
    /// One millisecond (Twitter, Discord, Instagram).
    #[cfg_attr(feature = "serde", serde(rename = "1ms"))]
    Millis1,
    /// Ten milliseconds (Sonyflake).
    #[cfg_attr(feature = "serde", serde(rename = "10ms"))]
    Millis10,
    /// A hundred milliseconds.
    #[cfg_attr(feature = "serde", serde(rename = "100ms"))]
    Millis100,
    /// One second (Baidu uid-generator).
    #[cfg_attr(feature = "serde", serde(rename = "1s"))]
    Second1,
}

impl TimeUnit {
    /// Every unit, in spec order.
    pub const ALL: [TimeUnit; 4] = [
        TimeUnit::Millis1,
        TimeUnit::Millis10,
        TimeUnit::Millis100,
        TimeUnit::Second1,
    ];

    /// Milliseconds per tick.
    pub fn millis(self) -> u64 {
        match self {
            TimeUnit::Millis1 => 1,
            TimeUnit::Millis10 => 10,
            TimeUnit::Millis100 => 100,
            TimeUnit::Second1 => 1_000,
        }
    }

    /// The spelling in spec strings.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Millis1 => "1ms",
            TimeUnit::Millis10 => "10ms",
            TimeUnit::Millis100 => "100ms",
            TimeUnit::Second1 => "1s",
        }
    }
}

/// One field of a layout: its kind, width and position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Field {
    /// What it holds.
    pub kind: FieldKind,
    /// Width in bits (at least 1).
    pub bits: u32,
    /// Position of its least significant bit.
    pub shift: u32,
}

impl Field {
    /// The largest value the field holds.
    pub fn max_value(&self) -> u64 {
        low_mask(self.bits)
    }

    /// Places `value` (already checked to fit) in the field.
    #[inline]
    fn put(&self, value: u64) -> u64 {
        value << self.shift
    }

    /// Reads the field out of `id`.
    #[inline]
    fn get(&self, id: u64) -> u64 {
        (id >> self.shift) & low_mask(self.bits)
    }
}

/// The values inside one ID, field by field; fields a layout lacks are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IdParts {
    /// Ticks since the epoch.
    pub tick: u64,
    /// Datacenter.
    pub dc: u64,
    /// Worker ID.
    pub worker: u64,
    /// Shard.
    pub shard: u64,
    /// Sequence within the tick.
    pub seq: u64,
}

/// A validated layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    name: Option<&'static str>,
    fields: Vec<Field>,
    unit: TimeUnit,
    epoch_ms: u64,
    time: Field,
    seq: Field,
    dc: Option<Field>,
    worker: Option<Field>,
    shard: Option<Field>,
}

impl Layout {
    /// Parses a preset name or a spec string, with the preset's epoch or the default epoch.
    pub fn parse(spec: &str) -> Result<Self> {
        match preset::find(spec) {
            Some(preset) => Self::parse_spec(preset.spec, preset.epoch_ms, Some(preset.name)),
            None => Self::parse_spec(spec, DEFAULT_EPOCH_MS, None),
        }
    }

    /// Parses `spec` as [`Layout::parse`] does, then replaces the epoch when one is given
    /// (milliseconds since the Unix epoch, RFC 3339, or `YYYY-MM-DD`).
    pub fn parse_with_epoch(spec: &str, epoch: Option<&str>) -> Result<Self> {
        let layout = Self::parse(spec)?;
        match epoch {
            Some(epoch) => layout.with_epoch(parse_epoch(epoch)?),
            None => Ok(layout),
        }
    }

    fn parse_spec(spec: &str, epoch_ms: u64, name: Option<&'static str>) -> Result<Self> {
        let parsed = spec::parse(spec)?;
        Self::from_fields(spec, parsed.fields, parsed.unit, epoch_ms, name)
    }

    /// Builds a layout from fields listed most significant first.
    fn from_fields(
        spec: &str,
        kinds: Vec<(FieldKind, u32)>,
        unit: TimeUnit,
        epoch_ms: u64,
        name: Option<&'static str>,
    ) -> Result<Self> {
        let total: u32 = kinds.iter().map(|(_, bits)| *bits).sum();
        if total > MAX_LAYOUT_BITS {
            return Err(Error::layout(
                spec,
                format!("uses {total} bits; at most {MAX_LAYOUT_BITS} fit in a positive 64-bit ID"),
            ));
        }
        let mut shift = total;
        let fields: Vec<Field> = kinds
            .into_iter()
            .map(|(kind, bits)| {
                shift -= bits;
                Field { kind, bits, shift }
            })
            .collect();
        let find = |kind| fields.iter().copied().find(|f| f.kind == kind);
        let time = find(FieldKind::Time).ok_or_else(|| Error::layout(spec, "no `time` field"))?;
        let seq = find(FieldKind::Seq).ok_or_else(|| Error::layout(spec, "no `seq` field"))?;
        if seq.shift > time.shift {
            // IDs of one worker must grow with (tick, seq); that needs time above seq.
            return Err(Error::layout(
                spec,
                "`time` must come before `seq` (more significant)",
            ));
        }
        let layout = Self {
            name,
            unit,
            epoch_ms,
            time,
            seq,
            dc: find(FieldKind::Dc),
            worker: find(FieldKind::Worker),
            shard: find(FieldKind::Shard),
            fields,
        };
        layout.check_end()?;
        Ok(layout)
    }

    /// Replaces the epoch (ms since the Unix epoch).
    pub fn with_epoch(mut self, epoch_ms: u64) -> Result<Self> {
        self.epoch_ms = epoch_ms;
        self.check_end()?;
        Ok(self)
    }

    /// Refuses layouts whose end cannot be expressed in ms since the Unix epoch.
    fn check_end(&self) -> Result<()> {
        let span = (u128::from(self.max_tick()) + 1) * u128::from(self.unit.millis());
        let end = u128::from(self.epoch_ms) + span;
        if end > u128::from(i64::MAX as u64) {
            return Err(Error::layout(
                &self.spec(),
                "time field too wide for its unit: it would outlast any calendar",
            ));
        }
        Ok(())
    }

    /// Refuses an epoch later than `now_ms`: a layout must not start in the future, or its
    /// first IDs would carry negative time.
    pub fn check_epoch_not_future(&self, now_ms: u64) -> Result<()> {
        if self.epoch_ms > now_ms {
            return Err(Error::InvalidEpoch {
                epoch: format_ms_rfc3339(self.epoch_ms),
                reason: "is in the future".into(),
            });
        }
        Ok(())
    }

    /// The preset this layout came from, if any.
    pub fn preset_name(&self) -> Option<&'static str> {
        self.name
    }

    /// The canonical spec string (`time:41@1ms,worker:10,seq:12`).
    pub fn spec(&self) -> String {
        spec::render(&self.fields, self.unit)
    }

    /// The fields, most significant first.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field of `kind`, if the layout has one.
    pub fn field(&self, kind: FieldKind) -> Option<Field> {
        match kind {
            FieldKind::Time => Some(self.time),
            FieldKind::Seq => Some(self.seq),
            FieldKind::Dc => self.dc,
            FieldKind::Worker => self.worker,
            FieldKind::Shard => self.shard,
        }
    }

    /// Bits used in total.
    pub fn total_bits(&self) -> u32 {
        self.fields.iter().map(|f| f.bits).sum()
    }

    /// The tick length.
    pub fn unit(&self) -> TimeUnit {
        self.unit
    }

    /// The epoch, in ms since the Unix epoch.
    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Position of the time field's lowest bit: every field below it together.
    pub fn time_shift(&self) -> u32 {
        self.time.shift
    }

    /// Bits of the sequence field.
    pub fn seq_bits(&self) -> u32 {
        self.seq.bits
    }

    /// The last tick the time field holds.
    pub fn max_tick(&self) -> u64 {
        self.time.max_value()
    }

    /// How many worker IDs the layout has (1 without a worker field).
    pub fn worker_count(&self) -> u64 {
        self.worker.map_or(1, |f| f.max_value() + 1)
    }

    /// How many datacenters the layout has (1 without a dc field).
    pub fn dc_count(&self) -> u64 {
        self.dc.map_or(1, |f| f.max_value() + 1)
    }

    /// How many shards the layout has (1 without a shard field).
    pub fn shard_count(&self) -> u64 {
        self.shard.map_or(1, |f| f.max_value() + 1)
    }

    /// The most IDs one worker can issue per second (all shards share one sequence),
    /// saturating at `u64::MAX`.
    ///
    /// A valid layout may give the sequence up to 62 bits, and from 55 bits at 1 ms per tick
    /// the exact rate no longer fits a `u64` (found by the `layout_spec` fuzz target: the
    /// multiplication overflowed, a panic in debug builds and a wrong figure in release). The
    /// rate is a figure for people (`idmint layout`), so the largest `u64` stands for "more
    /// than can ever be used" rather than widening the type for every caller.
    pub fn ids_per_second_per_worker(&self) -> u64 {
        (self.seq.max_value() + 1).saturating_mul(1_000 / self.unit.millis())
    }

    /// The tick that contains `unix_ms`; `None` before the epoch.
    pub fn tick_at(&self, unix_ms: u64) -> Option<u64> {
        let since = unix_ms.checked_sub(self.epoch_ms)?;
        Some(match self.unit {
            TimeUnit::Millis1 => since,
            unit => since / unit.millis(),
        })
    }

    /// The start of `tick`, in ms since the Unix epoch.
    pub fn tick_start_ms(&self, tick: u64) -> u64 {
        self.epoch_ms
            .saturating_add(tick.saturating_mul(self.unit.millis()))
    }

    /// When the layout runs out: the first moment its time field cannot hold, ms since the
    /// Unix epoch.
    pub fn ends_at_ms(&self) -> u64 {
        self.tick_start_ms(self.max_tick()) + self.unit.millis()
    }

    /// Checks that `value` fits the field of `kind` (absent fields only hold 0).
    pub fn check_fits(&self, kind: FieldKind, value: u64) -> Result<()> {
        let max = self.field(kind).map_or(0, |f| f.max_value());
        if value > max {
            let reason = match self.field(kind) {
                Some(f) => format!("{value} does not fit in {} bits (max {max})", f.bits),
                None => format!(
                    "{value} given but the layout has no `{}` field",
                    kind.name()
                ),
            };
            return Err(Error::argument(kind.name(), reason));
        }
        Ok(())
    }

    /// Composes an ID from its parts, checking each fits its field.
    pub fn compose(&self, parts: &IdParts) -> Result<u64> {
        self.check_fits(FieldKind::Time, parts.tick)?;
        self.check_fits(FieldKind::Dc, parts.dc)?;
        self.check_fits(FieldKind::Worker, parts.worker)?;
        self.check_fits(FieldKind::Shard, parts.shard)?;
        self.check_fits(FieldKind::Seq, parts.seq)?;
        Ok(self.compose_fixed(parts.dc, parts.worker)
            | self.compose_unchecked(parts.tick, parts.seq, parts.shard))
    }

    /// The bits of the dc and worker fields, computed once per generator. Values must fit.
    pub(crate) fn compose_fixed(&self, dc: u64, worker: u64) -> u64 {
        self.dc.map_or(0, |f| f.put(dc)) | self.worker.map_or(0, |f| f.put(worker))
    }

    /// The time, sequence and shard bits; values must already fit their fields.
    #[inline]
    pub(crate) fn compose_unchecked(&self, tick: u64, seq: u64, shard: u64) -> u64 {
        self.time.put(tick) | self.seq.put(seq) | self.shard.map_or(0, |f| f.put(shard))
    }

    /// The largest ID of datacenter `dc` at `tick` or any earlier tick: the time field at
    /// `tick`, every other field at its maximum. It bounds those IDs whatever the order of the
    /// fields, since the fields above the time field are at their maximum too.
    pub fn max_id_at(&self, tick: u64, dc: u64) -> u64 {
        let max = |f: Option<Field>| f.map_or(0, |f| f.max_value());
        self.compose_fixed(dc & max(self.dc), max(self.worker))
            | self.compose_unchecked(
                tick.min(self.max_tick()),
                self.seq.max_value(),
                max(self.shard),
            )
    }

    /// The smallest ID of datacenter `dc` at `tick` or any later tick: the time field at
    /// `tick`, every other field 0.
    pub fn min_id_at(&self, tick: u64, dc: u64) -> u64 {
        let max = |f: Option<Field>| f.map_or(0, |f| f.max_value());
        self.compose_fixed(dc & max(self.dc), 0)
            | self.compose_unchecked(tick.min(self.max_tick()), 0, 0)
    }

    /// Splits an ID into its parts. Errors when `id` has bits above the layout's width.
    pub fn decompose(&self, id: u64) -> Result<IdParts> {
        let bits = self.total_bits();
        if bits < 64 && id >> bits != 0 {
            return Err(Error::argument(
                "id",
                format!(
                    "{id} has bits above the layout's {bits}; it was not made with this layout"
                ),
            ));
        }
        let get = |f: Option<Field>| f.map_or(0, |f| f.get(id));
        Ok(IdParts {
            tick: self.time.get(id),
            dc: get(self.dc),
            worker: get(self.worker),
            shard: get(self.shard),
            seq: self.seq.get(id),
        })
    }

    /// Decodes an ID for people: its time and every field.
    pub fn decode(&self, id: u64) -> Result<DecodedId> {
        let parts = self.decompose(id)?;
        Ok(DecodedId::new(self, id, parts))
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{name} ({})", self.spec()),
            None => f.write_str(&self.spec()),
        }
    }
}

/// A mask of the `bits` low bits.
#[inline]
pub(crate) fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

#[cfg(test)]
mod tests;
