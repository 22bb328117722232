//! `idmint decode ID`: when an ID was minted and what each of its fields holds.

use std::io::Write;
use std::num::IntErrorKind;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use idmint_core::{DecodedId, FieldKind, Layout, Permutation};
use idmint_server::id_space::SpaceLayouts;
use idmint_store::StoreOptions;

use crate::error::InputError;
use crate::form_opts::FormOpts;
use crate::layout_opts::LayoutOpts;
use crate::store_opts::open_existing;
use idmint_store::SetOptions;

/// An ID whose time is later than now by more than this was probably decoded with the wrong
/// layout or epoch (a little slack allows for the clocks of other machines).
const FUTURE_SLACK_MS: u64 = 60_000;

/// Arguments of `idmint decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The ID, in decimal (0 to 18446744073709551615), or in the form --format names.
    #[arg(value_name = "ID", allow_negative_numbers = true)]
    pub id: String,

    /// The form the ID is written in, when it is not plain decimal.
    #[command(flatten)]
    pub form: FormOpts,

    /// The layout the ID was minted with.
    #[command(flatten)]
    pub opts: LayoutOpts,

    /// Print the decoded ID as a JSON object (the ID itself as a string).
    #[arg(long)]
    pub json: bool,

    /// Decode with the ID spaces recorded in this store instead of --layout: the one whose
    /// range of values holds the ID, so IDs issued before a change decode too.
    #[arg(long, value_name = "URL", conflicts_with_all = ["layout", "epoch"])]
    pub store: Option<String>,

    /// The deployment's prefix in --store, and the namespace the permutation key was used
    /// for. [default: idmint]
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// The key the ID was permuted with (`serve --permutation-key-file`): the ID is restored
    /// with it before it is taken apart. With --store, it must be the key the store pins.
    #[arg(long, value_name = "FILE")]
    pub permutation_key_file: Option<PathBuf>,

    /// The ID is a segment ID of this tag, permuted: print its plain value (its number in the
    /// tag) rather than take it apart as a snowflake.
    #[arg(
        long,
        value_name = "TAG",
        requires = "permutation_key_file",
        conflicts_with = "store"
    )]
    pub tag: Option<String>,

    /// Read a 128-bit ID as this kind, uuidv7 or ulid. [default: uuidv7 when its version and
    /// variant bits say so, ulid otherwise]
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,

    /// The width of the node field of a 128-bit ID, to show the node it was made on (`serve
    /// --id128-node` uses the layout's datacenter and worker bits).
    #[arg(long, value_name = "BITS", default_value_t = 0)]
    pub node_bits: u32,
}

/// Runs `idmint decode`: the decoded ID goes to `out`, a warning about an ID from the future
/// (a sign of the wrong layout) to `warn`.
pub fn run(
    args: &DecodeArgs,
    now_ms: u64,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<()> {
    let text = args.id.trim();
    let id128_flag = match (&args.kind, args.node_bits) {
        (Some(_), _) => Some("--kind"),
        (None, 0) => None,
        (None, _) => Some("--node-bits"),
    };
    if let (Some(flag), Some(_)) = (id128_flag, &args.form.format) {
        return Err(InputError::new(
            flag,
            "reads 128-bit IDs, which have their own forms: not with --format",
        )
        .into());
    }
    if args.form.format.is_none()
        && (args.kind.is_some() || idmint_core::Id128::is_text_shaped(text.as_bytes()))
    {
        return decode_id128(args, text, now_ms, out, warn);
    }
    if let Some(flag) = id128_flag {
        return Err(InputError::new(
            flag,
            "reads 128-bit IDs: 36, 32 or 26 characters, not only digits",
        )
        .into());
    }
    let id = match args.form.resolve()? {
        Some(form) => form
            .decode(&args.id)
            .map_err(|e| InputError::new("ID", e))?,
        None => parse_id(&args.id)?,
    };
    let namespace = args.namespace.as_deref().unwrap_or("idmint");
    let permutation = args
        .permutation_key_file
        .as_deref()
        .map(|path| idmint_server::permutation_key::load(path, namespace))
        .transpose()?;
    if let (Some(tag), Some(permutation)) = (&args.tag, &permutation) {
        let tag = idmint_core::Tag::new(tag).map_err(|e| InputError::new("--tag", e))?;
        let plain = permutation.for_tag(&tag).restore(id);
        return write_segment(out, args.json, id, &tag, plain);
    }
    let plain = permutation.as_ref().map_or(id, |p| p.restore(id));
    let (layout, decoded) = match &args.store {
        Some(url) => decode_from_store(url, namespace, plain, permutation.as_ref())?,
        None => {
            let layout = args.opts.resolve(now_ms)?;
            let decoded = layout.decode(plain).map_err(|e| InputError::new("ID", e))?;
            (layout, decoded)
        }
    };
    let decoded = match permutation {
        Some(_) => decoded.handed_out_as(id),
        None => decoded,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &decoded).context("writing JSON")?;
        writeln!(out).context("writing JSON")?;
    } else {
        write_text(out, &layout, &decoded)?;
    }
    if decoded.unix_ms > now_ms.saturating_add(FUTURE_SLACK_MS) {
        writeln!(
            warn,
            "warning: ID {id} decodes to {}, which is in the future: was it minted with another \
             layout or epoch?",
            decoded.time
        )
        .context("writing the warning")?;
    }
    Ok(())
}

/// Decodes the plain `id` with the ID space of the store at `url` whose range of values holds
/// it, once `permutation` is found to be the one the store pins (or none, for plain IDs).
fn decode_from_store(
    url: &str,
    namespace: &str,
    id: u64,
    permutation: Option<&Permutation>,
) -> Result<(Layout, DecodedId)> {
    let options = StoreOptions {
        namespace: namespace.to_owned(),
        ..StoreOptions::default()
    };
    let runtime = crate::store_opts::runtime()?;
    let store = open_existing(
        &runtime,
        &[url.to_owned()],
        &options,
        &SetOptions::default(),
    )?;
    let history = runtime.block_on(store.leases.id_spaces())?;
    if history.is_empty() {
        return Err(nothing_recorded(&options.namespace));
    }
    let pinned = history.last().and_then(|r| r.space.permutation.as_deref());
    let given = permutation.map(Permutation::fingerprint);
    match (pinned, given.as_deref()) {
        (Some(pinned), None) => {
            return Err(InputError::new(
                "--permutation-key-file",
                format!(
                    "namespace `{}` hands out its IDs permuted (key {pinned}): give its key to \
                     decode them",
                    options.namespace
                ),
            )
            .into())
        }
        (pinned, Some(given)) if pinned != Some(given) => {
            return Err(InputError::new(
                "--permutation-key-file",
                format!(
                    "this is key {given}, and namespace `{}` pins {}: the ID would be restored \
                     to some other value",
                    options.namespace,
                    pinned.unwrap_or("no permutation")
                ),
            )
            .into())
        }
        _ => {}
    }
    let spaces = SpaceLayouts::new(history)?;
    let (Some((_, layout)), Some(decoded)) = (spaces.space_of(id), spaces.decode(id)) else {
        return Err(nothing_recorded(&options.namespace));
    };
    let decoded = decoded.map_err(|e| InputError::new("ID", e))?;
    Ok((layout.clone(), decoded))
}

/// `idmint decode ID --tag T`: the public segment ID, its tag and its plain value.
fn write_segment(
    out: &mut dyn Write,
    json: bool,
    id: u64,
    tag: &idmint_core::Tag,
    plain: u64,
) -> Result<()> {
    if json {
        let value = serde_json::json!({
            "id": id.to_string(),
            "tag": tag.as_str(),
            "plain_id": plain.to_string(),
        });
        serde_json::to_writer_pretty(&mut *out, &value).context("writing JSON")?;
        writeln!(out).context("writing JSON")
    } else {
        writeln!(out, "id:      {id}\ntag:     {tag}\nplain:   {plain}").context("writing")
    }
}

/// `idmint decode` of a UUIDv7 or ULID: its time, kind, counter and node field.
fn decode_id128(
    args: &DecodeArgs,
    text: &str,
    now_ms: u64,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<()> {
    let reason = crate::cmd_id128::reason;
    let id = idmint_core::Id128::parse(text).map_err(|e| InputError::new("ID", reason(e)))?;
    let kind = args
        .kind
        .as_deref()
        .map(idmint_core::Id128Kind::parse)
        .transpose()
        .map_err(|e| InputError::new("--kind", reason(e)))?
        .or(idmint_core::Id128Kind::of_text(text.as_bytes()));
    let decoded = id
        .decode(kind, args.node_bits)
        .map_err(|e| InputError::new("--node-bits", reason(e)))?;
    if args.json {
        let mut value = serde_json::to_value(&decoded).context("writing JSON")?;
        value["id"] = serde_json::Value::String(text.to_owned());
        serde_json::to_writer_pretty(&mut *out, &value).context("writing JSON")?;
        writeln!(out).context("writing JSON")?;
    } else {
        let mut lines = vec![
            ("id", text.to_owned()),
            ("kind", decoded.kind.to_string()),
            ("time", decoded.time.clone()),
            ("unix ms", decoded.ms.to_string()),
        ];
        if let (Some(version), Some(variant)) = (decoded.version, decoded.variant) {
            lines.push(("version", version.to_string()));
            lines.push(("variant", format!("{variant:#04b}")));
        }
        lines.push(("counter", decoded.counter.to_string()));
        if let Some(node) = decoded.node {
            lines.push(("node", node.to_string()));
        }
        for (label, value) in lines {
            writeln!(out, "{:<9}{value}", format!("{label}:"))?;
        }
    }
    if decoded.ms > now_ms.saturating_add(FUTURE_SLACK_MS) {
        writeln!(
            warn,
            "warning: ID {text} decodes to {}, which is in the future: is it a 128-bit ID of \
             another kind?",
            decoded.time
        )
        .context("writing the warning")?;
    }
    Ok(())
}

/// The refusal of `--store` in a namespace where no node recorded an ID space.
fn nothing_recorded(namespace: &str) -> anyhow::Error {
    InputError::new(
        "--store",
        format!(
            "no ID space is recorded in namespace `{namespace}`: no node served snowflakes there"
        ),
    )
    .into()
}

/// Parses the ID argument: a decimal `u64`, surrounding spaces allowed.
fn parse_id(text: &str) -> Result<u64, InputError> {
    text.trim().parse::<u64>().map_err(|e| {
        let problem = match e.kind() {
            IntErrorKind::Empty => "is empty".to_owned(),
            IntErrorKind::PosOverflow => {
                format!("is larger than {}, the largest 64-bit ID", u64::MAX)
            }
            _ if text.trim().starts_with('-') => "is negative; IDs are 0 or more".to_owned(),
            _ => "is not a decimal number".to_owned(),
        };
        InputError::new("ID", format!("`{text}` {problem}"))
    })
}

/// Writes `label: value` lines: the ID, the layout, the time, then every field of the layout,
/// most significant first (the time field as its tick).
fn write_text(out: &mut dyn Write, layout: &Layout, decoded: &DecodedId) -> Result<()> {
    let mut lines: Vec<(&str, String)> = vec![("id", decoded.id.clone())];
    if let Some(plain) = &decoded.plain_id {
        lines.push(("plain", plain.clone()));
    }
    lines.extend([
        ("layout", decoded.layout.clone()),
        ("time", decoded.time.clone()),
        ("unix ms", decoded.unix_ms.to_string()),
    ]);
    if let Some(version) = decoded.id_space {
        lines.insert(lines.len() - 2, ("space", format!("version {version}")));
    }
    for field in layout.fields() {
        let value = match field.kind {
            FieldKind::Time => Some(decoded.tick),
            FieldKind::Dc => decoded.dc,
            FieldKind::Worker => decoded.worker,
            FieldKind::Shard => decoded.shard,
            FieldKind::Seq => Some(decoded.seq),
        };
        let label = match field.kind {
            FieldKind::Time => "tick",
            kind => kind.name(),
        };
        if let Some(value) = value {
            lines.push((label, value.to_string()));
        }
    }
    for (label, value) in lines {
        writeln!(out, "{:<9}{value}", format!("{label}:"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> String {
        match parse_id(text) {
            Ok(id) => format!("unexpectedly parsed {id}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn ids_are_decimal_u64() {
        assert_eq!(
            parse_id(" 175928847299117063 ").ok(),
            Some(175_928_847_299_117_063)
        );
        assert_eq!(parse_id("18446744073709551615").ok(), Some(u64::MAX));
        assert_eq!(problem("abc"), "ID: `abc` is not a decimal number");
        assert_eq!(problem("-5"), "ID: `-5` is negative; IDs are 0 or more");
        assert_eq!(problem(""), "ID: `` is empty");
        assert!(problem("18446744073709551616").contains("larger than"));
        assert!(problem("0x10").contains("not a decimal"));
    }
}
