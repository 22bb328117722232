//! `idmint uuid` and `idmint ulid`: 128-bit IDs made here, no server needed (as `uuidgen`
//! does), by the same generator the server runs: strictly increasing, one per line.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use idmint_core::{Id128Form, Id128Generator, Id128Kind};

use crate::error::InputError;

/// The most IDs one command prints.
const MAX_COUNT: u64 = 100_000_000;

/// Arguments of `idmint uuid` and `idmint ulid`.
#[derive(Debug, Args)]
pub struct Id128Args {
    /// How many IDs to print, 1 to 100,000,000.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1)]
    pub count: u64,

    /// How each ID is written: uuid (8-4-4-4-12 hex), ulid (26 characters of base32), hex (32
    /// digits) or bytes (16 raw bytes each, no newline). [default: uuid for `idmint uuid`,
    /// ulid for `idmint ulid`]
    #[arg(long, value_name = "FORM")]
    pub format: Option<String>,

    /// Put NODE in a node field of this many bits (1 to 24) after the counter: IDs made with
    /// different nodes never collide, whatever their random bits.
    #[arg(long, value_name = "BITS", requires = "node")]
    pub node_bits: Option<u32>,

    /// The node field's value, with --node-bits.
    #[arg(long, value_name = "NODE", requires = "node_bits")]
    pub node: Option<u32>,
}

/// Runs `idmint uuid` (`kind` UUIDv7) or `idmint ulid`.
pub fn run(kind: Id128Kind, args: &Id128Args, out: &mut dyn Write) -> Result<()> {
    if args.count == 0 || args.count > MAX_COUNT {
        return Err(InputError::new(
            "--count",
            format!("{} is not between 1 and {MAX_COUNT}", args.count),
        )
        .into());
    }
    let form = match &args.format {
        Some(name) => Id128Form::parse(name).map_err(|e| InputError::new("--format", reason(e)))?,
        None if kind == Id128Kind::Uuid7 => Id128Form::Uuid,
        None => Id128Form::Ulid,
    };
    let mut builder = Id128Generator::builder(kind);
    if let (Some(bits), Some(node)) = (args.node_bits, args.node) {
        if bits == 0 {
            return Err(InputError::new("--node-bits", "a node field takes 1 to 24 bits").into());
        }
        builder = builder.node(bits, node);
    }
    let ids = builder.build().map_err(|e| match &e {
        idmint_core::Error::InvalidArgument { name: "node", .. } => {
            InputError::new("--node", reason(e))
        }
        _ => InputError::new("--node-bits", reason(e)),
    })?;
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut buf = [0u8; idmint_core::id128::MAX_FORM_LEN];
    let mut left = args.count;
    while left > 0 {
        let batch = left.min(u64::from(idmint_core::id128::MAX_ID128_BATCH));
        for id in ids.next_ids(batch as u32)? {
            out.write_all(form.encode(id, &mut buf))?;
            if form.is_text() {
                out.write_all(b"\n")?;
            }
        }
        left -= batch;
    }
    out.flush().context("writing IDs")
}

/// What is wrong with an argument, without the core's "invalid argument `name`" (the flag says
/// which).
pub fn reason(error: idmint_core::Error) -> String {
    match error {
        idmint_core::Error::InvalidArgument { reason, .. } => reason,
        other => other.to_string(),
    }
}
