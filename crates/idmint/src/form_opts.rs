//! `--format`, `--prefix` and `--width`: IDs as text (`idmint_core::form`), for the commands
//! that print or read IDs.

use anyhow::Result;
use clap::Args;
use idmint_core::{Error, IdForm, Radix};

use crate::error::InputError;

/// How IDs are written: plain decimal unless `--format` is given.
#[derive(Debug, Clone, Args)]
pub struct FormOpts {
    /// IDs as text: decimal, base62, base36 or base32 (Crockford's, the ULID alphabet), padded
    /// to the width of the largest ID so they sort as text as they do as numbers.
    #[arg(long, value_name = "FORM")]
    pub format: Option<String>,

    /// With --format: written before each ID (up to 16 of A-Z a-z 0-9 _ -).
    #[arg(long, value_name = "TEXT", requires = "format")]
    pub prefix: Option<String>,

    /// With --format: digits at least (0: the shortest text, which no longer sorts).
    #[arg(long, value_name = "N", requires = "format")]
    pub width: Option<usize>,
}

impl FormOpts {
    /// The form asked for, if any; a bad value names its flag.
    pub fn resolve(&self) -> Result<Option<IdForm>> {
        let Some(format) = &self.format else {
            return Ok(None);
        };
        let radix: Radix = format.parse().map_err(|e| flag("--format", e))?;
        let mut form = IdForm::new(radix);
        if let Some(prefix) = &self.prefix {
            form = form.with_prefix(prefix).map_err(|e| flag("--prefix", e))?;
        }
        if let Some(width) = self.width {
            form = form.with_width(width).map_err(|e| flag("--width", e))?;
        }
        Ok(Some(form))
    }
}

fn flag(name: &'static str, error: Error) -> anyhow::Error {
    InputError::new(name, error).into()
}
