//! The checks [`ServeConfig::resolve`](super::ServeConfig::resolve) makes on the layers and on
//! the files they name, each refusal a [`ServerError::Config`] naming the setting to change:
//! apart from the resolution itself, which reads as the list of settings it fills.

use std::path::Path;
use std::time::Duration;

use super::PartialConfig;
use crate::error::ServerError;
use crate::ids::LeaseConfig;

/// The longest any duration setting may be, but `--idle-timeout`: a day is far beyond any
/// sensible lease, wait or timeout, and keeps every deadline computed from one far from
/// overflowing (`--store-call-timeout 580000000000years` once panicked at the first call).
const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest `--idle-timeout`: a year (0 already means never).
const MAX_IDLE_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Refuses a duration setting above its bound ([`MAX_DURATION`], [`MAX_IDLE_TIMEOUT`]).
pub(super) fn check_durations(layers: &PartialConfig) -> Result<(), ServerError> {
    let bounded = [
        (
            "store-call-timeout",
            layers.store_call_timeout,
            MAX_DURATION,
        ),
        ("auth-timeout", layers.auth_timeout, MAX_DURATION),
        ("idle-timeout", layers.idle_timeout, MAX_IDLE_TIMEOUT),
        ("lease-ttl", layers.lease_ttl, MAX_DURATION),
        ("lease-renew", layers.lease_renew, MAX_DURATION),
        ("hwm-lead", layers.hwm_lead, MAX_DURATION),
        ("max-lead", layers.max_lead, MAX_DURATION),
        ("max-wait", layers.max_wait, MAX_DURATION),
        ("worker-wait", layers.worker_wait, MAX_DURATION),
    ];
    for (setting, value, max) in bounded {
        if let Some(value) = value.filter(|value| *value > max) {
            return Err(ServerError::Config {
                setting: setting.into(),
                reason: format!(
                    "{} is above the most it may be, {}",
                    humantime::format_duration(value),
                    humantime::format_duration(max)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a `--data-dir` that cannot hold the embedded store: empty, or a file. A folder that
/// does not exist yet is fine (the store creates it); one that cannot be created fails when the
/// store opens, which may be passing (a volume not mounted yet).
pub(super) fn check_data_dir(data_dir: &Path) -> Result<(), ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "data-dir".into(),
        reason,
    };
    if data_dir.as_os_str().is_empty() {
        return Err(refused(
            "is empty: name a folder, e.g. ./idmint-data".into(),
        ));
    }
    if data_dir.exists() && !data_dir.is_dir() {
        return Err(refused(format!(
            "{} is not a folder: the embedded store needs a folder to keep its files in",
            data_dir.display()
        )));
    }
    Ok(())
}

/// Checks the lease timing ([`LeaseConfig::validate`]), naming the setting to change: of a
/// pair in the wrong order, the one the operator gave (`given`: flags, variables and file), or
/// the first of the pair when both or neither were given.
pub(super) fn check_lease_timing(
    lease: &LeaseConfig,
    given: &PartialConfig,
) -> Result<(), ServerError> {
    if lease.renew_every.is_zero() {
        return Err(ServerError::Config {
            setting: "lease-renew".into(),
            reason: "must be above 0".into(),
        });
    }
    // (larger setting, its value, smaller setting, its value, given, what goes wrong)
    let pairs = [
        (
            ("lease-ttl", lease.ttl, given.lease_ttl.is_some()),
            (
                "lease-renew",
                lease.renew_every,
                given.lease_renew.is_some(),
            ),
            "the lease would lapse between renewals",
        ),
        (
            ("hwm-lead", lease.hwm_lead, given.hwm_lead.is_some()),
            (
                "lease-renew",
                lease.renew_every,
                given.lease_renew.is_some(),
            ),
            "snowflakes would stall between renewals",
        ),
    ];
    for ((large, large_value, large_given), (small, small_value, small_given), harm) in pairs {
        if large_value > small_value {
            continue;
        }
        let shown = |d: Duration| humantime::format_duration(d).to_string();
        let reason = if small_given && !large_given {
            format!(
                "{} is not below --{large} ({}): {harm}",
                shown(small_value),
                shown(large_value)
            )
        } else {
            format!(
                "{} is not above --{small} ({}): {harm}",
                shown(large_value),
                shown(small_value)
            )
        };
        return Err(ServerError::Config {
            setting: if small_given && !large_given {
                small
            } else {
                large
            }
            .into(),
            reason,
        });
    }
    lease.validate().map_err(|error| ServerError::Config {
        setting: "lease-ttl".into(),
        reason: error.to_string(),
    })
}

/// The store URLs in the file at `path` (`--store-file`): one a line, spaces around each and
/// blank lines (a trailing line break) ignored. Errors never quote the file.
pub(super) fn read_store_file(path: &Path) -> Result<Vec<String>, ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "store-file".into(),
        reason: format!("{}: {reason}", path.display()),
    };
    let text = std::fs::read_to_string(path).map_err(|e| refused(format!("cannot read: {e}")))?;
    let stores: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if stores.is_empty() {
        return Err(refused(
            "holds no store URL (one a line: the store, or each store of a set)".into(),
        ));
    }
    Ok(stores)
}

/// Refuses an empty URL, a URL given twice (one store cannot be two parts of a set) and a
/// home store outside the list; `setting` gave the list.
pub(super) fn check_store_list(
    stores: &[String],
    setting: &str,
    home: Option<usize>,
) -> Result<(), ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: setting.into(),
        reason,
    };
    for (i, url) in stores.iter().enumerate() {
        if url.trim().is_empty() {
            return Err(refused("an empty store URL".into()));
        }
        if stores[..i].contains(url) {
            return Err(refused(format!(
                "store {i} repeats an earlier one ({}): each store of a set must be its own",
                idmint_store::redact(url)
            )));
        }
    }
    match home {
        Some(home) if home >= stores.len() => Err(ServerError::Config {
            setting: "home-store".into(),
            reason: format!("{home} is not a store of the list (0..{})", stores.len()),
        }),
        _ => Ok(()),
    }
}

/// `filter` if it parses as `RUST_LOG`-style directives. tracing-subscriber drops a directive
/// it cannot parse with a warning nobody sees before the log exists, so a typo would silently
/// log less than asked: refused here instead.
pub(super) fn check_log_filter(filter: String) -> Result<String, ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "log-filter".into(),
        reason,
    };
    if filter.len() > 4_096 {
        return Err(refused("is longer than 4096 bytes".into()));
    }
    for directive in filter.split(',').filter(|d| !d.trim().is_empty()) {
        directive
            .trim()
            .parse::<tracing_subscriber::filter::Directive>()
            .map_err(|e| {
                refused(format!(
                    "`{}` is not a log directive: {e}",
                    directive.trim()
                ))
            })?;
    }
    Ok(filter)
}
