//! Errors in what the user typed, and the exit status each error maps to.

use std::fmt;

/// Exit status of a usage error: the same as clap's for an unknown flag or a missing argument.
pub const EXIT_USAGE: u8 = 2;

/// Exit status of any other failure.
pub const EXIT_FAILURE: u8 = 1;

/// A bad value on the command line, named after the flag or argument it came from.
///
/// Displays as `--layout: invalid layout ...`, so `error: {err:#}` is one line that says which
/// flag to fix and why.
#[derive(Debug)]
pub struct InputError {
    /// The flag or argument, as the user sees it in `--help` (`--layout`, `ID`).
    arg: &'static str,
    /// What is wrong with it.
    problem: String,
}

impl InputError {
    /// An error about `arg`: `problem` says what is wrong, in words a user can act on.
    pub fn new(arg: &'static str, problem: impl fmt::Display) -> Self {
        Self {
            arg,
            problem: problem.to_string(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.arg, self.problem)
    }
}

impl std::error::Error for InputError {}

/// The exit status for `err`: [`EXIT_USAGE`] when it is about the user's input,
/// [`EXIT_FAILURE`] otherwise.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|cause| cause.is::<InputError>() || is_bad_setting(cause))
    {
        EXIT_USAGE
    } else {
        EXIT_FAILURE
    }
}

/// True for a server error caused by a setting the user gave (a flag, variable or file entry).
///
/// A listen address that cannot be bound ([`ServerError::Bind`](idmint_server::ServerError))
/// is not one: the address is well formed (a malformed one is a `Config` error), and whether it
/// can be bound depends on the machine at that moment (another process holds the port, the
/// interface is not up yet), so the same command may work when tried again. It exits with
/// [`EXIT_FAILURE`], as a store that cannot be reached does, and a supervisor that does not
/// restart after a usage error (status 2) still restarts after it.
fn is_bad_setting(cause: &(dyn std::error::Error + 'static)) -> bool {
    use idmint_core::Error as Core;
    use idmint_server::ServerError;
    matches!(
        cause.downcast_ref::<ServerError>(),
        Some(
            ServerError::Config { .. }
                | ServerError::Ids(
                    Core::InvalidLayout { .. }
                        | Core::InvalidEpoch { .. }
                        | Core::InvalidArgument { .. }
                        | Core::IdSpaceMismatch { .. }
                        | Core::IdSpaceUnrecorded { .. }
                )
        )
    )
}

/// One line for a value clap refused (`--max-count abc`, `IDMINT_MAX_COUNT=abc`), in the form
/// of every other bad setting: `--max-count: invalid value 'abc': invalid digit found in string`,
/// with `from IDMINT_MAX_COUNT` when the value came from that variable rather than a flag.
/// `None` for other errors (help, an unknown flag, a missing argument), which clap prints with
/// its usage hints. `command` is the whole command tree; `argv` the arguments given.
pub fn value_error_line(
    error: &clap::Error,
    command: &clap::Command,
    argv: &[String],
) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        error.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    // `--max-count <N>`, or `<ID>` for a positional argument.
    let name = arg
        .split_whitespace()
        .next()
        .unwrap_or(arg)
        .trim_matches(['<', '>']);
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => value.as_str(),
        _ => "",
    };
    let why = match (error.kind(), error.get(ContextKind::ValidValue)) {
        (ErrorKind::ValueValidation, _) => std::error::Error::source(error)
            .map_or_else(|| "not a valid value".to_owned(), ToString::to_string),
        _ if value.is_empty() => "a value is required".to_owned(),
        (_, Some(ContextValue::Strings(valid))) => format!("expected one of {}", valid.join(", ")),
        _ => "not a valid value".to_owned(),
    };
    let from = name
        .strip_prefix("--")
        .and_then(|long| env_source(command, long, value, argv))
        .map(|variable| format!(" from {variable}"))
        .unwrap_or_default();
    if value.is_empty() {
        return Some(format!("{name}: {why}{from}"));
    }
    Some(format!("{name}: invalid value '{value}'{from}: {why}"))
}

/// The variable `--long` was read from: set to `value`, with no `--long` among `argv`.
fn env_source(command: &clap::Command, long: &str, value: &str, argv: &[String]) -> Option<String> {
    let given_as_flag = argv
        .iter()
        .any(|arg| arg == &format!("--{long}") || arg.starts_with(&format!("--{long}=")));
    if given_as_flag {
        return None;
    }
    let variable = std::iter::once(command)
        .chain(command.get_subcommands())
        .flat_map(clap::Command::get_arguments)
        .filter(|arg| arg.get_long() == Some(long))
        .find_map(clap::Arg::get_env)?;
    let set = std::env::var_os(variable)?;
    (set.to_string_lossy() == value).then(|| variable.to_string_lossy().into_owned())
}

/// True when `err` comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_are_usage_errors_even_with_context() {
        let err = anyhow::Error::new(InputError::new("--epoch", "is in the future"))
            .context("while reading flags");
        assert_eq!(exit_status(&err), EXIT_USAGE);
        assert_eq!(
            format!("{:#}", anyhow::Error::new(InputError::new("ID", "bad"))),
            "ID: bad"
        );
    }

    #[test]
    fn broken_pipes_are_recognised_through_context() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(
            &anyhow::Error::new(pipe).context("writing JSON")
        ));
        let json = serde_json::Error::io(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(
            &anyhow::Error::new(json).context("writing JSON")
        ));
        assert!(!is_broken_pipe(&anyhow::anyhow!("disk full")));
    }

    #[test]
    fn a_port_in_use_is_a_failure_and_a_bad_address_a_usage_error() {
        let in_use = idmint_server::ServerError::Bind {
            setting: "http",
            what: "HTTP",
            address: std::net::SocketAddr::from(([127, 0, 0, 1], 8080)),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        assert_eq!(exit_status(&anyhow::Error::new(in_use)), EXIT_FAILURE);
        let malformed = idmint_server::ServerError::Config {
            setting: "http".into(),
            reason: "`localhost` is not an address like 127.0.0.1:8080".into(),
        };
        assert_eq!(exit_status(&anyhow::Error::new(malformed)), EXIT_USAGE);
    }

    #[test]
    fn other_errors_are_failures() {
        let err = anyhow::anyhow!("stdout closed");
        assert_eq!(exit_status(&err), EXIT_FAILURE);
    }
}
