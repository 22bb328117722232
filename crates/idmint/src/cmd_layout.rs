//! `idmint layout`: what a layout holds, how fast it mints and when it runs out.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use idmint_core::layout::{format_ms_rfc3339, MAX_LAYOUT_BITS, PRESETS};
use idmint_core::{Layout, TimeUnit};
use serde::Serialize;

use crate::layout_opts::LayoutOpts;
use crate::text::{group_digits, span, table};

/// Milliseconds in a day.
const DAY_MS: i128 = 86_400_000;

/// A layout that runs out sooner than this many days from now gets a warning.
const WARN_DAYS: i128 = 365;

/// Arguments of `idmint layout`.
#[derive(Debug, Args)]
pub struct LayoutArgs {
    /// The layout to show.
    #[command(flatten)]
    pub opts: LayoutOpts,

    /// Print a JSON object (an array with --list) instead of text.
    #[arg(long)]
    pub json: bool,

    /// List the presets (name, spec, epoch) instead of showing one layout.
    #[arg(long, conflicts_with_all = ["layout", "epoch"])]
    pub list: bool,
}

/// Runs `idmint layout`: the report goes to `out`, warnings (a layout that ran out or soon
/// will) to `warn`.
pub fn run(
    args: &LayoutArgs,
    now_ms: u64,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<()> {
    if args.list {
        let presets = preset_rows()?;
        return if args.json {
            write_json(out, &presets)
        } else {
            write_presets(out, &presets)
        };
    }
    let layout = args.opts.resolve(now_ms)?;
    let report = LayoutReport::new(&layout, now_ms);
    if args.json {
        write_json(out, &report)?;
    } else {
        write_report(out, &report)?;
    }
    if let Some(warning) = report.warning() {
        writeln!(warn, "warning: {warning}").context("writing the warning")?;
    }
    Ok(())
}

/// Everything `idmint layout` says about one layout; also its JSON form.
#[derive(Debug, Serialize)]
struct LayoutReport {
    /// The preset's name, if the layout is one.
    preset: Option<&'static str>,
    /// The canonical spec.
    spec: String,
    /// The epoch, RFC 3339 UTC.
    epoch: String,
    /// The epoch, ms since the Unix epoch.
    epoch_ms: u64,
    /// The tick length.
    unit: TimeUnit,
    /// Bits used, of the [`MAX_LAYOUT_BITS`] available.
    total_bits: u32,
    /// The fields, most significant first.
    fields: Vec<FieldRow>,
    /// The most IDs one worker mints per second.
    ids_per_second_per_worker: u64,
    /// Worker IDs (1 without a worker field).
    worker_count: u64,
    /// Datacenters (1 without a dc field).
    dc_count: u64,
    /// Shards (1 without a shard field).
    shard_count: u64,
    /// When the time field runs out, RFC 3339 UTC.
    ends_at: String,
    /// When the time field runs out, ms since the Unix epoch.
    ends_at_ms: u64,
    /// True when the layout has already run out: it cannot mint IDs any more.
    ran_out: bool,
    /// Whole days from now until the layout runs out; negative once it has.
    remaining_days: i64,
    /// The time left (or since it ran out) in words: `53 years 231 days`.
    remaining: String,
    /// Where the preset comes from, if the layout is one.
    note: Option<&'static str>,
    /// The preset's own epoch when `--epoch` replaced it, RFC 3339 UTC.
    preset_epoch: Option<String>,
}

/// One field of the table.
#[derive(Debug, Serialize)]
struct FieldRow {
    /// `time`, `dc`, `worker`, `shard` or `seq`.
    name: &'static str,
    /// Width.
    bits: u32,
    /// Position of its lowest bit.
    shift: u32,
    /// Its highest bit.
    msb: u32,
    /// Its lowest bit (the shift).
    lsb: u32,
    /// The largest value it holds.
    max_value: u64,
    /// How many values it holds (ticks, for `time`).
    count: u64,
}

impl LayoutReport {
    /// Describes `layout` as seen at `now_ms`.
    fn new(layout: &Layout, now_ms: u64) -> Self {
        let preset = layout
            .preset_name()
            .and_then(|name| PRESETS.iter().find(|p| p.name == name));
        let ends_at_ms = layout.ends_at_ms();
        let remaining_ms = i128::from(ends_at_ms) - i128::from(now_ms);
        let fields = layout
            .fields()
            .iter()
            .map(|f| FieldRow {
                name: f.kind.name(),
                bits: f.bits,
                shift: f.shift,
                msb: f.shift + f.bits - 1,
                lsb: f.shift,
                max_value: f.max_value(),
                count: f.max_value().saturating_add(1),
            })
            .collect();
        Self {
            preset: layout.preset_name(),
            spec: layout.spec(),
            epoch: format_ms_rfc3339(layout.epoch_ms()),
            epoch_ms: layout.epoch_ms(),
            unit: layout.unit(),
            total_bits: layout.total_bits(),
            fields,
            ids_per_second_per_worker: layout.ids_per_second_per_worker(),
            worker_count: layout.worker_count(),
            dc_count: layout.dc_count(),
            shard_count: layout.shard_count(),
            ends_at: format_ms_rfc3339(ends_at_ms),
            ends_at_ms,
            ran_out: remaining_ms <= 0,
            remaining_days: i64::try_from(remaining_ms / DAY_MS).unwrap_or(i64::MAX),
            remaining: span(now_ms, ends_at_ms),
            note: preset.map(|p| p.note),
            preset_epoch: preset
                .filter(|p| p.epoch_ms != layout.epoch_ms())
                .map(|p| format_ms_rfc3339(p.epoch_ms)),
        }
    }

    /// The layout as users name it: `twitter (time:41@1ms,...)` or just the spec.
    fn title(&self) -> String {
        match self.preset {
            Some(name) => format!("{name} ({})", self.spec),
            None => self.spec.clone(),
        }
    }

    /// When the layout runs out, relative to now: `in 53 years 231 days` or `ran out 2 years
    /// ago`.
    fn relative_end(&self) -> String {
        if self.ran_out {
            format!("ran out {} ago", self.remaining)
        } else {
            format!("in {}", self.remaining)
        }
    }

    /// A warning for a layout that ran out or runs out within a year.
    fn warning(&self) -> Option<String> {
        if self.ran_out {
            Some(format!(
                "layout {} ran out on {} ({} ago): it can decode old IDs but mint no new ones",
                self.title(),
                self.ends_at,
                self.remaining
            ))
        } else if i128::from(self.remaining_days) < WARN_DAYS {
            Some(format!(
                "layout {} runs out on {}, in {}",
                self.title(),
                self.ends_at,
                self.remaining
            ))
        } else {
            None
        }
    }
}

/// Writes `value` as pretty JSON followed by a newline.
fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).context("writing JSON")?;
    writeln!(out).context("writing JSON")?;
    Ok(())
}

/// Writes the text report.
fn write_report(out: &mut dyn Write, report: &LayoutReport) -> Result<()> {
    let mut lines: Vec<(&str, String)> = vec![
        ("layout", report.title()),
        (
            "epoch",
            format!("{} ({} ms since 1970)", report.epoch, report.epoch_ms),
        ),
    ];
    if let Some(preset_epoch) = &report.preset_epoch {
        lines.push((
            "preset epoch",
            format!("{preset_epoch} (replaced by --epoch)"),
        ));
    }
    lines.push(("unit", report.unit.as_str().to_owned()));
    lines.push((
        "total bits",
        format!("{} of {MAX_LAYOUT_BITS}", report.total_bits),
    ));
    write_pairs(out, &lines)?;

    writeln!(out, "fields, most significant first:")?;
    write_fields(out, &report.fields)?;

    let mut lines: Vec<(&str, String)> = vec![
        (
            "IDs per second per worker",
            group_digits(report.ids_per_second_per_worker),
        ),
        ("workers", group_digits(report.worker_count)),
        ("datacenters", group_digits(report.dc_count)),
        ("shards", group_digits(report.shard_count)),
        (
            "runs out",
            format!("{} ({})", report.ends_at, report.relative_end()),
        ),
    ];
    if let Some(note) = report.note {
        lines.push(("note", note.to_owned()));
    }
    write_pairs(out, &lines)?;
    Ok(())
}

/// The field table: name left-aligned, numbers right-aligned.
fn write_fields(out: &mut dyn Write, fields: &[FieldRow]) -> Result<()> {
    let mut rows = vec![
        ["field", "bits", "bit range", "shift", "max value", "count"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for f in fields {
        let range = if f.msb == f.lsb {
            f.msb.to_string()
        } else {
            format!("{}..{}", f.msb, f.lsb)
        };
        rows.push(vec![
            f.name.to_owned(),
            f.bits.to_string(),
            range,
            f.shift.to_string(),
            group_digits(f.max_value),
            group_digits(f.count),
        ]);
    }
    for line in table(&rows, &[false, true, true, true, true, true]) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// Writes `label: value` lines with the values aligned.
fn write_pairs(out: &mut dyn Write, lines: &[(&str, String)]) -> Result<()> {
    for (label, value) in lines {
        // 27 fits the longest label, "IDs per second per worker:", plus a space.
        writeln!(out, "{:<27}{value}", format!("{label}:"))?;
    }
    Ok(())
}

/// One line of `idmint layout --list`; also its JSON form.
#[derive(Debug, Serialize)]
struct PresetRow {
    /// The name to pass to `--layout`.
    name: &'static str,
    /// Its canonical spec.
    spec: String,
    /// Its epoch, RFC 3339 UTC.
    epoch: String,
    /// Its epoch, ms since the Unix epoch.
    epoch_ms: u64,
    /// When it runs out, RFC 3339 UTC.
    ends_at: String,
    /// Where it comes from.
    note: &'static str,
}

/// Every preset, parsed, so the list shows exactly what `--layout NAME` would use.
fn preset_rows() -> Result<Vec<PresetRow>> {
    PRESETS
        .iter()
        .map(|preset| {
            let layout = Layout::parse(preset.name)
                .with_context(|| format!("preset `{}` does not parse", preset.name))?;
            Ok(PresetRow {
                name: preset.name,
                spec: layout.spec(),
                epoch: format_ms_rfc3339(layout.epoch_ms()),
                epoch_ms: layout.epoch_ms(),
                ends_at: format_ms_rfc3339(layout.ends_at_ms()),
                note: preset.note,
            })
        })
        .collect()
}

/// Writes the preset list as a table.
fn write_presets(out: &mut dyn Write, presets: &[PresetRow]) -> Result<()> {
    let mut rows = vec![vec![
        "preset".to_owned(),
        "spec".to_owned(),
        "epoch".to_owned(),
        "epoch (ms)".to_owned(),
        "runs out".to_owned(),
    ]];
    for p in presets {
        rows.push(vec![
            p.name.to_owned(),
            p.spec.clone(),
            p.epoch.clone(),
            p.epoch_ms.to_string(),
            p.ends_at.clone(),
        ]);
    }
    for line in table(&rows, &[false; 5]) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "\nUse one with --layout NAME; `idmint layout --layout NAME` shows its fields and origin."
    )?;
    Ok(())
}
