//! Fuzz target `layout_spec`: the layout spec and epoch parsers of `idmint-core`, which read
//! `--layout` and `--epoch` from flags, `IDMINT_*` variables and config files, and every
//! layout they accept.
//!
//! A layout that parses is trusted from then on: the generator composes IDs with unchecked
//! shifts, and the server prints when the layout runs out. So for every accepted layout this
//! target checks, besides "no panic":
//!
//! - **shape**: at most 63 bits, fields contiguous from bit 0 up, exactly one `time` and one
//!   `seq`, `time` above `seq`; the canonical `spec()` parses back to the same layout;
//! - **IDs**: composing arbitrary field values (masked to their widths) gives an ID that is
//!   non-negative as an `i64`, has no bit above the layout, and decomposes to the same values;
//!   unmasked values are refused exactly when one does not fit; for one worker, IDs order as
//!   `(tick, seq)` does; any ID inside the layout's width decomposes and composes back;
//! - **time arithmetic**: `max_tick`, `ends_at_ms`, `tick_start_ms` and `tick_at` agree with
//!   the same computation done in `u128`, and never overflow, whatever the epoch;
//! - **epochs**: `parse_with_epoch` is `parse` followed by `parse_epoch` and `with_epoch`; an
//!   epoch that parses is at most `i64::MAX` ms and survives being printed and parsed again.
//!
//! Specs come from four sources chosen by the input: free text, a spec assembled from
//! near-valid pieces, a spec valid but for its width or order (so that most runs reach a valid
//! layout and the properties above, wide fields included), and preset names. Free text runs to a NUL byte, so a seed reads `\0<spec>\0\x05<epoch>\0<values>`;
//! `fuzz/dict/layout_spec.dict` helps the free-text form along.
#![no_main]

use arbitrary::{Result, Unstructured};
use idmint_core::layout::{format_ms_rfc3339, parse_epoch, FieldKind, IdParts, Layout, PRESETS};
use libfuzzer_sys::fuzz_target;

/// Field names the spec generator picks from: the real ones, their long forms, and a few that
/// must be refused.
const NAMES: &[&str] = &[
    "time",
    "dc",
    "datacenter",
    "worker",
    "shard",
    "seq",
    "sequence",
    "host",
    "",
    "TIME",
    " seq ",
];

/// Widths that are not plain small numbers, to probe the integer parsing.
const ODD_WIDTHS: &[&str] = &[
    "",
    "x",
    "-1",
    "+5",
    "007",
    "0",
    "64",
    "4294967296",
    " 12 ",
    "1_0",
    "١",
];

/// Units: the four valid ones and near misses.
const UNITS: &[&str] = &[
    "1ms", "10ms", "100ms", "1s", "5ms", "", "1 ms", "1MS", "1000ms", "@1ms",
];

/// Largest instant chrono prints as a four-digit-year RFC 3339 timestamp, the only form
/// `parse_epoch` is expected to read back: 9999-12-31T23:59:59.999Z.
const LAST_FOUR_DIGIT_YEAR_MS: u64 = 253_402_300_799_999;

/// A spec assembled from pieces: mostly valid fields in any order, with the odd bad piece.
fn assembled_spec(u: &mut Unstructured<'_>) -> Result<String> {
    let count = u.int_in_range(0..=6)?;
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let name = *u.choose(NAMES)?;
        let width = if u.ratio(1, 8)? {
            (*u.choose(ODD_WIDTHS)?).to_owned()
        } else {
            u.int_in_range(0..=66u32)?.to_string()
        };
        let unit = if name == "time" || u.ratio(1, 16)? {
            match u.int_in_range(0..=2)? {
                0 => String::new(),
                _ => format!("@{}", u.choose(UNITS)?),
            }
        } else {
            String::new()
        };
        let pad = if u.ratio(1, 8)? { " " } else { "" };
        parts.push(format!("{pad}{name}:{width}{unit}{pad}"));
    }
    Ok(parts.join(","))
}

/// The four valid units.
const VALID_UNITS: &[&str] = &["1ms", "10ms", "100ms", "1s"];

/// `items` in an order drawn from the input (Fisher-Yates).
fn shuffled<T>(u: &mut Unstructured<'_>, mut items: Vec<T>) -> Result<Vec<T>> {
    for i in (1..items.len()).rev() {
        let j = u.int_in_range(0..=i)?;
        items.swap(i, j);
    }
    Ok(items)
}

/// A spec that is valid but for, at times, its total width or field order: `time` and `seq`
/// plus any of the other fields, in any order, with widths splitting a budget of up to 64
/// bits. Free text almost never lands on a wide `seq` under a narrow `time`, or on 63 bits
/// exactly; this reaches such corners in a few runs.
fn well_formed_spec(u: &mut Unstructured<'_>) -> Result<String> {
    let mut names = vec!["time", "seq"];
    for extra in ["dc", "worker", "shard"] {
        if u.arbitrary()? {
            names.push(extra);
        }
    }
    let names = shuffled(u, names)?;
    let n = names.len() as u32;
    let mut left = u.int_in_range(n..=64)?;
    let mut widths = vec![0u32; names.len()];
    // Draw the widths in a random order too, so that any field may take most of the budget.
    for (drawn, i) in shuffled(u, (0..names.len()).collect())?
        .into_iter()
        .enumerate()
    {
        let still_to_draw = n - 1 - drawn as u32;
        let width = u.int_in_range(1..=left - still_to_draw)?;
        widths[i] = width;
        left -= width;
    }
    let unit = u.choose(VALID_UNITS)?;
    let fields: Vec<String> = names
        .iter()
        .zip(&widths)
        .map(|(name, width)| match *name {
            "time" => format!("time:{width}@{unit}"),
            other => format!("{other}:{width}"),
        })
        .collect();
    Ok(fields.join(","))
}

/// Free text: the bytes up to the next NUL (or the end), lossily decoded as the command line
/// would be. Delimiting with NUL rather than a length keeps hand-written seeds readable and
/// lets mutations grow or shrink the text without shifting what follows.
fn text(u: &mut Unstructured<'_>) -> Result<String> {
    let rest = u.peek_bytes(u.len()).unwrap_or_default();
    let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let text = String::from_utf8_lossy(u.bytes(len)?).into_owned();
    if !u.is_empty() {
        u.bytes(1)?; // the NUL
    }
    Ok(text)
}

/// The spec string of this run.
fn spec(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=4)? {
        0 => text(u)?,
        1 => {
            let preset = u.choose(PRESETS)?;
            let pad = if u.arbitrary()? { " \t" } else { "" };
            format!("{pad}{}{pad}", preset.name)
        }
        2 => assembled_spec(u)?,
        _ => well_formed_spec(u)?,
    })
}

/// The `--epoch` of this run: none, or one of the three accepted forms, or free text.
fn epoch(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    Ok(match u.int_in_range(0..=5)? {
        0 => None,
        1 => Some(u.arbitrary::<u64>()?.to_string()),
        2 => Some(u.int_in_range(0..=1_900_000_000_000u64)?.to_string()),
        3 => Some(format!(
            "{:04}-{:02}-{:02}",
            u.int_in_range(0..=10_000)?,
            u.int_in_range(0..=13)?,
            u.int_in_range(0..=32)?
        )),
        4 => Some(format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}",
            u.int_in_range(1900..=2200)?,
            u.int_in_range(1..=12)?,
            u.int_in_range(1..=28)?,
            u.int_in_range(0..=23)?,
            u.int_in_range(0..=59)?,
            u.int_in_range(0..=60)?,
            u.int_in_range(0..=999)?,
            u.choose(&["Z", "+00:00", "-23:59", "+14:00", "z", ""])?
        )),
        _ => Some(text(u)?),
    })
}

/// The properties of an epoch string on its own.
fn check_epoch(text: &str) {
    let Ok(ms) = parse_epoch(text) else {
        return;
    };
    assert!(i64::try_from(ms).is_ok(), "epoch {text:?} gave {ms} ms");
    assert_eq!(parse_epoch(&ms.to_string()).ok(), Some(ms));
    if ms <= LAST_FOUR_DIGIT_YEAR_MS {
        let printed = format_ms_rfc3339(ms);
        assert_eq!(
            parse_epoch(&printed).ok(),
            Some(ms),
            "{text:?} printed as {printed:?}"
        );
    }
}

/// Exact `epoch + (tick * unit)` in `u128`, the reference for the `u64` arithmetic.
fn exact_start(layout: &Layout, tick: u64) -> u128 {
    u128::from(layout.epoch_ms()) + u128::from(tick) * u128::from(layout.unit().millis())
}

/// Field values for `layout`: arbitrary, then cut to what each field holds (0 when absent).
fn masked(layout: &Layout, raw: &IdParts) -> IdParts {
    let mask = |kind, v: u64| layout.field(kind).map_or(0, |f| v & f.max_value());
    IdParts {
        tick: mask(FieldKind::Time, raw.tick),
        dc: mask(FieldKind::Dc, raw.dc),
        worker: mask(FieldKind::Worker, raw.worker),
        shard: mask(FieldKind::Shard, raw.shard),
        seq: mask(FieldKind::Seq, raw.seq),
    }
}

/// Whether every value of `parts` fits its field (absent fields hold only 0).
fn fits(layout: &Layout, parts: &IdParts) -> bool {
    let ok = |kind, v: u64| v <= layout.field(kind).map_or(0, |f| f.max_value());
    ok(FieldKind::Time, parts.tick)
        && ok(FieldKind::Dc, parts.dc)
        && ok(FieldKind::Worker, parts.worker)
        && ok(FieldKind::Shard, parts.shard)
        && ok(FieldKind::Seq, parts.seq)
}

/// Fields, bit positions and the canonical spec.
fn check_shape(layout: &Layout) {
    let fields = layout.fields();
    let total = layout.total_bits();
    assert!(total <= 63, "{layout}: {total} bits");
    assert_eq!(total, fields.iter().map(|f| f.bits).sum::<u32>());
    let mut top = total;
    for f in fields {
        assert!(f.bits >= 1, "{layout}: empty field");
        assert_eq!(f.shift + f.bits, top, "{layout}: fields not contiguous");
        top = f.shift;
        assert_eq!(layout.field(f.kind), Some(*f));
    }
    assert_eq!(top, 0, "{layout}: lowest field does not start at bit 0");
    for kind in [FieldKind::Time, FieldKind::Seq] {
        assert_eq!(fields.iter().filter(|f| f.kind == kind).count(), 1);
    }
    let (Some(time), Some(seq)) = (layout.field(FieldKind::Time), layout.field(FieldKind::Seq))
    else {
        panic!("{layout}: no time or seq field");
    };
    assert!(time.shift > seq.shift, "{layout}: seq above time");
    assert_eq!(layout.seq_bits(), seq.bits);
    assert!([1, 10, 100, 1000].contains(&layout.unit().millis()));

    let epoch = layout.epoch_ms().to_string();
    let again = Layout::parse_with_epoch(&layout.spec(), Some(&epoch))
        .unwrap_or_else(|e| panic!("{layout}: canonical spec {} refused: {e}", layout.spec()));
    assert_eq!(again.fields(), fields);
    assert_eq!(again.unit(), layout.unit());
    assert_eq!(again.epoch_ms(), layout.epoch_ms());
    assert!(!layout.to_string().is_empty());
}

/// Tick ranges, the end of the layout, and the counts derived from widths.
fn check_time(layout: &Layout, u: &mut Unstructured<'_>) -> Result<()> {
    let time = layout.field(FieldKind::Time).map_or(0, |f| f.bits);
    let max_tick = layout.max_tick();
    assert_eq!(u128::from(max_tick), (1u128 << time) - 1);
    let millis = layout.unit().millis();

    let end = exact_start(layout, max_tick) + u128::from(millis);
    assert!(end <= i64::MAX as u128, "{layout}: ends past i64::MAX ms");
    let ends_at = layout.ends_at_ms();
    assert_eq!(u128::from(ends_at), end);
    assert_eq!(
        u128::from(layout.tick_start_ms(max_tick)),
        exact_start(layout, max_tick)
    );
    assert_eq!(layout.tick_at(ends_at - 1), Some(max_tick));
    assert_eq!(layout.tick_at(ends_at), max_tick.checked_add(1));
    assert_eq!(layout.tick_at(layout.epoch_ms()), Some(0));
    if let Some(before) = layout.epoch_ms().checked_sub(1) {
        assert_eq!(layout.tick_at(before), None);
    }
    let _ = format_ms_rfc3339(ends_at);

    // Any tick inside the layout starts where the exact arithmetic says, and maps back.
    let tick = u.arbitrary::<u64>()? & max_tick;
    let start = layout.tick_start_ms(tick);
    assert_eq!(u128::from(start), exact_start(layout, tick));
    assert_eq!(layout.tick_at(start), Some(tick));
    assert_eq!(layout.tick_at(start + millis - 1), Some(tick));

    // Any instant at all maps to the tick that contains it.
    let now: u64 = u.arbitrary()?;
    match layout.tick_at(now) {
        None => assert!(now < layout.epoch_ms()),
        Some(t) => {
            let from = exact_start(layout, t);
            assert!(from <= u128::from(now) && u128::from(now) < from + u128::from(millis));
        }
    }
    assert_eq!(
        layout.check_epoch_not_future(now).is_err(),
        layout.epoch_ms() > now
    );

    let count = |kind| layout.field(kind).map_or(1, |f| 1u128 << f.bits);
    assert_eq!(u128::from(layout.worker_count()), count(FieldKind::Worker));
    assert_eq!(u128::from(layout.dc_count()), count(FieldKind::Dc));
    assert_eq!(u128::from(layout.shard_count()), count(FieldKind::Shard));
    // A rate for people to read: exact when it fits, else the largest u64.
    let rate = count(FieldKind::Seq) * u128::from(1000 / millis);
    assert_eq!(
        u128::from(layout.ids_per_second_per_worker()),
        rate.min(u128::from(u64::MAX))
    );

    // Moving the epoch keeps the end expressible, or is refused.
    let new_epoch: u64 = u.arbitrary()?;
    let new_end = u128::from(new_epoch) + (u128::from(max_tick) + 1) * u128::from(millis);
    match layout.clone().with_epoch(new_epoch) {
        Ok(moved) => {
            assert!(new_end <= i64::MAX as u128);
            assert_eq!(u128::from(moved.ends_at_ms()), new_end);
        }
        Err(_) => assert!(new_end > i64::MAX as u128),
    }
    Ok(())
}

/// Composing and decomposing IDs.
fn check_ids(layout: &Layout, u: &mut Unstructured<'_>) -> Result<()> {
    let total = layout.total_bits();
    let raw = IdParts {
        tick: u.arbitrary()?,
        dc: u.arbitrary()?,
        worker: u.arbitrary()?,
        shard: u.arbitrary()?,
        seq: u.arbitrary()?,
    };
    // Raw values: refused exactly when one does not fit.
    match layout.compose(&raw) {
        Ok(id) => {
            assert!(fits(layout, &raw), "{layout}: {raw:?} accepted");
            assert_eq!(layout.decompose(id).ok(), Some(raw));
        }
        Err(_) => assert!(!fits(layout, &raw), "{layout}: {raw:?} refused"),
    }

    let parts = masked(layout, &raw);
    let id = layout
        .compose(&parts)
        .unwrap_or_else(|e| panic!("{layout}: {parts:?} refused: {e}"));
    assert!(i64::try_from(id).is_ok(), "{layout}: negative ID {id}");
    assert_eq!(id >> total, 0, "{layout}: {id} has bits above {total}");
    assert_eq!(layout.decompose(id).ok(), Some(parts));
    let decoded = layout
        .decode(id)
        .unwrap_or_else(|e| panic!("{layout}: {id} does not decode: {e}"));
    assert_eq!(decoded.tick, parts.tick);
    assert_eq!(decoded.seq, parts.seq);
    assert_eq!(decoded.unix_ms, layout.tick_start_ms(parts.tick));
    assert_eq!(
        decoded.worker.is_some(),
        layout.field(FieldKind::Worker).is_some()
    );

    // For one (dc, worker, shard), IDs order exactly as (tick, seq) does: what makes one
    // worker's IDs strictly increase.
    let other = masked(
        layout,
        &IdParts {
            tick: u.arbitrary()?,
            seq: u.arbitrary()?,
            ..parts
        },
    );
    let other_id = layout
        .compose(&other)
        .unwrap_or_else(|e| panic!("{layout}: {other:?} refused: {e}"));
    assert_eq!(
        id.cmp(&other_id),
        (parts.tick, parts.seq).cmp(&(other.tick, other.seq)),
        "{layout}: IDs of one worker out of (tick, seq) order"
    );

    // Any ID: inside the layout's width it decomposes and composes back; above, refused.
    let any: u64 = u.arbitrary()?;
    match layout.decompose(any) {
        Ok(p) => {
            assert_eq!(any >> total, 0);
            assert_eq!(layout.compose(&p).ok(), Some(any));
        }
        Err(_) => assert_ne!(any >> total, 0),
    }
    Ok(())
}

/// One run: a spec, maybe an epoch, and the values to compose with.
fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let spec = spec(u)?;
    let epoch = epoch(u)?;
    if let Some(text) = &epoch {
        check_epoch(text);
    }

    let plain = Layout::parse(&spec);
    let with_epoch = Layout::parse_with_epoch(&spec, epoch.as_deref());
    let expected = match (&plain, &epoch) {
        (Ok(layout), Some(text)) => parse_epoch(text)
            .ok()
            .and_then(|ms| layout.clone().with_epoch(ms).ok()),
        (Ok(layout), None) => Some(layout.clone()),
        (Err(_), _) => None,
    };
    assert_eq!(
        with_epoch.as_ref().ok(),
        expected.as_ref(),
        "{spec:?} with epoch {epoch:?}"
    );

    for layout in [plain.ok(), with_epoch.ok()].into_iter().flatten() {
        check_shape(&layout);
        check_time(&layout, u)?;
        check_ids(&layout, u)?;
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    // Running out of input only ends the run early; every check made so far stands.
    let _ = run(&mut Unstructured::new(data));
});
