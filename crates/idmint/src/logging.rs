//! The log of `idmint serve`, set up in this one place (a JSON format would be one more
//! choice here): human-readable lines on stderr at `RUST_LOG`'s levels (default `info`).
//!
//! Colour codes help a person at a terminal and corrupt everything else: a file, a pipe,
//! journald, a collector. So the lines are coloured only when stderr is a terminal, and never
//! when `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).

use std::ffi::OsString;
use std::io::IsTerminal;

/// Installs the global subscriber. Call once, before anything logs.
pub fn init() {
    let colour = wants_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
    );
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .init();
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
