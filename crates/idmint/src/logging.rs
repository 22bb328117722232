//! The log of `idmint serve`, set up in this one place: on stderr, in the form
//! `--log-format` names, at the levels `--log-filter` (or `RUST_LOG`) names.
//!
//! - `text` is for people. Colour codes help at a terminal and corrupt everything else (a file,
//!   a pipe, journald, a collector), so lines are coloured only when stderr is a terminal, and
//!   never when `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
//! - `json` is for collectors: one object a line with `timestamp` (RFC 3339, UTC, ms), `level`,
//!   `target`, `message` and the event's fields beside them (`"worker_id":3`), never colour.
//!
//! Timestamps come from the clock module, the one place idmint reads the time.

use std::ffi::OsString;
use std::fmt;
use std::io::IsTerminal;

use idmint_core::clock::wall_clock_ms;
use idmint_core::layout::format_ms_rfc3339;
use idmint_server::config::{LogFormat, LogSettings};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Call once, before anything logs. `settings.filter` was
/// checked when the settings were resolved; should it still not parse, the log falls back to
/// `info` rather than to nothing.
pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(ClockTime);
    match settings.format {
        LogFormat::Text => builder
            .with_ansi(wants_colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR"),
            ))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_ansi(false)
            .init(),
    }
}

/// The log's timestamps, read through the clock module: `2026-11-27T14:33:33.123Z`.
struct ClockTime;

impl FormatTime for ClockTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        w.write_str(&format_ms_rfc3339(wall_clock_ms()))
    }
}

/// Whether to colour the log: only on a terminal, and not when `NO_COLOR` has a value.
fn wants_colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(wants_colour(true, None));
        assert!(wants_colour(true, Some(OsString::new())));
        assert!(!wants_colour(true, Some(OsString::from("1"))));
        assert!(!wants_colour(true, Some(OsString::from("0"))));
        assert!(!wants_colour(false, None));
        assert!(!wants_colour(false, Some(OsString::new())));
    }
}
