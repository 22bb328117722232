//! `--layout` and `--epoch`: the flags every subcommand that makes or reads IDs shares.
//!
//! They are read from the command line only. `serve` will also take them from its config file
//! and `IDMINT_*` variables; `layout` and `decode` do not, so `idmint layout --list` can refuse
//! an explicit `--layout` without tripping over a variable set for the server.

use anyhow::Result;
use clap::Args;
use idmint_core::layout::parse_epoch;
use idmint_core::Layout;

use crate::error::InputError;

/// The layout used when none is given: 41 bits of milliseconds
/// (69 years from the default epoch, 2025-01-01), 1,024 workers, 4,096 IDs per ms per worker.
pub const DEFAULT_LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// Which layout to use and from which epoch.
#[derive(Debug, Clone, Args)]
pub struct LayoutOpts {
    /// A preset name (twitter, discord, instagram, sonyflake, uid-generator, js-safe) or
    /// fields, most significant first: time:BITS@UNIT (1ms, 10ms, 100ms, 1s), seq:BITS and
    /// optionally dc:BITS, worker:BITS, shard:BITS; at most 63 bits.
    #[arg(long, value_name = "SPEC", default_value = DEFAULT_LAYOUT)]
    pub layout: String,

    /// The moment tick 0 stands for: ms since 1970, RFC 3339 or YYYY-MM-DD (UTC). Default:
    /// the preset's own epoch, or 2025-01-01 for a custom layout. Must not be in the future.
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
}

impl LayoutOpts {
    /// Parses the layout and its epoch, refusing an epoch later than `now_ms`.
    ///
    /// Every error is an [`InputError`] naming the flag to fix: `--layout` for the spec,
    /// `--epoch` for an epoch that does not parse, is in the future or pushes the layout's end
    /// past any calendar.
    pub fn resolve(&self, now_ms: u64) -> Result<Layout> {
        let layout = Layout::parse(&self.layout).map_err(|e| InputError::new("--layout", e))?;
        let Some(epoch) = &self.epoch else {
            // The preset's or the default epoch: only a layout can be blamed.
            layout
                .check_epoch_not_future(now_ms)
                .map_err(|e| InputError::new("--layout", e))?;
            return Ok(layout);
        };
        let epoch_ms = parse_epoch(epoch).map_err(|e| InputError::new("--epoch", e))?;
        let layout = layout
            .with_epoch(epoch_ms)
            .map_err(|e| InputError::new("--epoch", format!("with epoch `{epoch}`, {e}")))?;
        layout
            .check_epoch_not_future(now_ms)
            .map_err(|e| InputError::new("--epoch", e))?;
        Ok(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-21T00:00:00Z.
    const NOW_MS: u64 = 1_795_219_200_000;

    fn opts(layout: &str, epoch: Option<&str>) -> LayoutOpts {
        LayoutOpts {
            layout: layout.to_owned(),
            epoch: epoch.map(str::to_owned),
        }
    }

    fn message(layout: &str, epoch: Option<&str>) -> String {
        match opts(layout, epoch).resolve(NOW_MS) {
            Ok(layout) => format!("unexpectedly parsed {layout}"),
            Err(err) => format!("{err:#}"),
        }
    }

    #[test]
    fn blames_the_flag_that_is_wrong() {
        assert!(message("time:41@5ms,seq:12", None).starts_with("--layout: invalid layout"));
        assert!(message(DEFAULT_LAYOUT, Some("soon")).starts_with("--epoch: invalid epoch `soon`"));
        assert!(message(DEFAULT_LAYOUT, Some("2099-01-01")).contains("future"));
        assert!(message(DEFAULT_LAYOUT, Some("2099-01-01")).starts_with("--epoch:"));
    }

    #[test]
    fn keeps_the_preset_epoch_unless_told_otherwise() {
        let twitter = opts("twitter", None).resolve(NOW_MS);
        assert_eq!(twitter.map(|l| l.epoch_ms()).ok(), Some(1_288_834_974_657));
        let custom = opts("twitter", Some("2015-01-01")).resolve(NOW_MS);
        assert_eq!(custom.map(|l| l.epoch_ms()).ok(), Some(1_420_070_400_000));
    }
}
