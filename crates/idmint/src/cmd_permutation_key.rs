//! `idmint permutation-key`: a new secret key for `--permutation-key-file`, from the operating
//! system's random source.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use idmint_core::permutation::{Permutation, KEY_BYTES};

/// Arguments of `idmint permutation-key` (none: the key goes to stdout, to be redirected into
/// a file only the server's user can read).
#[derive(Debug, Args)]
pub struct PermutationKeyArgs {}

/// Writes a new key (32 hexadecimal digits and a line end) to `out`.
pub fn run(_: &PermutationKeyArgs, out: &mut dyn Write) -> Result<()> {
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).context("reading the operating system's random source")?;
    writeln!(out, "{}", Permutation::from_bytes(key).to_hex()).context("writing the key")
}
