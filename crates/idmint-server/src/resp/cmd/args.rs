//! What the commands' parses share: [`Refusal`], the error a parse answers instead of a typed
//! command, and the readers of the arguments several commands take.
//!
//! A refusal borrows the words of the request it quotes and is written only when its turn
//! comes (after the authentication checks, or inside `EXEC`), so a parse allocates nothing
//! and writes nothing.

use bytes::BytesMut;
use idmint_resp::encode;

use crate::resp::reply::{self, NOT_AN_INTEGER};

/// Why a command's arguments were refused, written as Redis words the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::resp) enum Refusal<'a> {
    /// A fixed error line (`ERR syntax error`).
    Fixed(&'static str),
    /// `-ERR wrong number of arguments for 'name' command`, `name` as Redis spells it (lower
    /// case, `client|setname` for a subcommand).
    Arity(&'static str),
    /// A count outside `1..=max`: `-ERR {what} must be between 1 and {max}, got {got}`.
    Count {
        what: &'static str,
        max: u64,
        got: i64,
    },
    /// An error that quotes a word of the request, escaped: `{before}{word}{after}`.
    Quoting {
        before: &'static str,
        word: &'a [u8],
        after: &'static str,
    },
    /// A message made while parsing (a text form's `PREFIX` or `WIDTH` refused).
    Text(String),
}

impl Refusal<'_> {
    /// Appends the error reply to `out`.
    pub(in crate::resp) fn write(&self, out: &mut BytesMut) {
        match self {
            Refusal::Fixed(message) => encode::error(out, message),
            Refusal::Arity(name) => encode::error_fmt(
                out,
                format_args!("ERR wrong number of arguments for '{name}' command"),
            ),
            Refusal::Count { what, max, got } => encode::error_fmt(
                out,
                format_args!("ERR {what} must be between 1 and {max}, got {got}"),
            ),
            Refusal::Quoting {
                before,
                word,
                after,
            } => encode::error_fmt(out, format_args!("{before}{}{after}", word.escape_ascii())),
            Refusal::Text(message) => encode::error(out, message),
        }
    }
}

/// `-ERR unknown subcommand 'x'. Try NAME HELP.`: `after` is `'. Try NAME HELP.`, and the
/// subcommand is quoted up to 128 bytes.
pub(super) fn unknown_subcommand<'a>(sub: &'a [u8], after: &'static str) -> Refusal<'a> {
    Refusal::Quoting {
        before: "ERR unknown subcommand '",
        word: sub.get(..128.min(sub.len())).unwrap_or_default(),
        after,
    }
}

/// A count in `1..=max`: `COUNT n`, `INCRBY tag n`, `IDMINT.RANGE tag n`.
pub(super) fn count<'a>(arg: &[u8], what: &'static str, max: u64) -> Result<u64, Refusal<'a>> {
    match reply::parse_i64(arg) {
        None => Err(Refusal::Fixed(NOT_AN_INTEGER)),
        Some(n) => match u64::try_from(n) {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(Refusal::Count { what, max, got: n }),
        },
    }
}

/// An unsigned integer argument (`SHARD k`, `WIDTH n`, an ID).
pub(super) fn unsigned<'a>(arg: &[u8]) -> Result<u64, Refusal<'a>> {
    reply::parse_u64(arg).ok_or(Refusal::Fixed(NOT_AN_INTEGER))
}

/// A `HELP` reply: one simple string per line.
pub(super) fn help(out: &mut BytesMut, lines: &[&str]) {
    encode::array_header(out, lines.len());
    for line in lines {
        encode::simple(out, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(refusal: &Refusal<'_>) -> String {
        let mut out = BytesMut::new();
        refusal.write(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn counts_are_bounded() {
        assert_eq!(count(b"5", "COUNT", 10), Ok(5));
        let zero = count(b"0", "COUNT", 10).err();
        assert_eq!(
            zero.as_ref().map(written).as_deref(),
            Some("-ERR COUNT must be between 1 and 10, got 0\r\n")
        );
        assert!(count(b"11", "COUNT", 10).is_err());
        assert!(count(b"-3", "COUNT", 10).is_err());
        assert_eq!(
            count(b"ten", "COUNT", 10)
                .err()
                .as_ref()
                .map(written)
                .as_deref(),
            Some("-ERR value is not an integer or out of range\r\n")
        );
    }

    #[test]
    fn refusals_read_like_redis() {
        assert_eq!(
            written(&Refusal::Arity("client|setname")),
            "-ERR wrong number of arguments for 'client|setname' command\r\n"
        );
        let long = [b'x'; 300];
        let text = written(&unknown_subcommand(&long, "'. Try CLIENT HELP."));
        assert_eq!(
            text,
            format!(
                "-ERR unknown subcommand '{}'. Try CLIENT HELP.\r\n",
                "x".repeat(128)
            )
        );
        assert_eq!(
            written(&unknown_subcommand(b"a\r\nb", "'. Try CONFIG HELP.")),
            "-ERR unknown subcommand 'a\\r\\nb'. Try CONFIG HELP.\r\n"
        );
    }
}
