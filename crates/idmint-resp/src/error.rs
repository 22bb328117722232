//! The one error type of this crate: why a request is not valid RESP.
//!
//! A protocol error leaves the parser unable to tell where the next request starts, so the
//! server must answer with [`ProtocolError::write_reply`] (`-ERR Protocol error: ...`), flush,
//! and close the connection, as Redis does. Commands parsed before the error are valid and may
//! be executed and answered first.

use std::fmt;

use bytes::BufMut;

/// Which kind of length header a [`ProtocolError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LengthKind {
    /// The element count of an array (`*N`), "multibulk" in Redis' words.
    Array,
    /// The byte length of a bulk string (`$N`).
    Bulk,
}

impl fmt::Display for LengthKind {
    /// The words Redis uses in its own protocol errors, so messages read the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LengthKind::Array => "multibulk",
            LengthKind::Bulk => "bulk",
        })
    }
}

/// Where a CRLF line ending was expected but something else came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrlfAfter {
    /// After the `\r` that ends a length header (`*N\r` or `$N\r`).
    LengthHeader,
    /// After the declared number of bytes of a bulk string.
    BulkData,
}

impl fmt::Display for CrlfAfter {
    /// Names the place, for the error message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CrlfAfter::LengthHeader => "length header",
            CrlfAfter::BulkData => "bulk string data",
        })
    }
}

/// A request that is not valid RESP, or exceeds the configured [`crate::Limits`].
///
/// The `Display` text is the part after `Protocol error: ` in the reply, worded like Redis'
/// own messages where Redis has one; it names the offending value and limit where there is one.
/// After any of these the connection must be closed: see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A length header is not a decimal integer: empty, a sign other than one leading `-`, a
    /// leading zero, `-0`, a non-digit, or too large for 64 bits.
    #[error("invalid {0} length")]
    InvalidLength(LengthKind),
    /// A length below -1: RESP has no meaning for it.
    #[error("invalid {kind} length {len}: negative")]
    NegativeLength {
        /// Array count or bulk length.
        kind: LengthKind,
        /// The value declared.
        len: i64,
    },
    /// A null array (`*-1`) or null bulk string (`$-1`): valid in replies, never a request.
    /// (Redis refuses `$-1` in a request too, but skips `*-1` silently; no client sends it.)
    #[error("null {kind} (length -1) is not allowed in a request")]
    NullInRequest {
        /// Array or bulk string.
        kind: LengthKind,
    },
    /// A declared array count or bulk length above its limit.
    #[error("{kind} length {len} exceeds the limit of {limit}")]
    LengthOverLimit {
        /// Array count or bulk length.
        kind: LengthKind,
        /// The value declared.
        len: u64,
        /// The limit in force.
        limit: usize,
    },
    /// The declared lengths of one request array add up to more than `max_request_len` bytes.
    #[error("request larger than the limit of {limit} bytes")]
    RequestTooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// An element of a request array is not a bulk string (`+`, `:`, `-`, or anything else).
    #[error("expected '$', got '{}'", .got.escape_ascii())]
    ExpectedBulk {
        /// The byte found where `$` was expected.
        got: u8,
    },
    /// An element of a request array is itself an array. Refused at once, never descended
    /// into, so nesting depth costs nothing.
    #[error("nested arrays are not allowed in a request")]
    NestedArray,
    /// A line ending is not CRLF.
    #[error("expected CRLF after the {after}")]
    MissingCrlf {
        /// Where it was expected.
        after: CrlfAfter,
    },
    /// An array of zero elements (`*0`): no command to run. Redis skips it silently; no client
    /// sends one, so idmint treats it as the sign of a broken peer.
    #[error("empty multibulk request")]
    EmptyArray,
    /// An inline command line (or a run of blank lines) longer than `max_inline_len`.
    #[error("too big inline request (limit {limit} bytes)")]
    InlineTooLong {
        /// The limit in force.
        limit: usize,
    },
    /// An inline command with more arguments than `max_array_len`.
    #[error("too many arguments in inline request (limit {limit})")]
    TooManyArguments {
        /// The limit in force.
        limit: usize,
    },
    /// An inline argument longer than `max_bulk_len`.
    #[error("inline argument of {len} bytes exceeds the limit of {limit}")]
    ArgumentTooLong {
        /// The argument's length.
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// An inline command with an unterminated quote, or a closing quote followed by something
    /// other than whitespace.
    #[error("unbalanced quotes in request")]
    UnbalancedQuotes,
}

impl ProtocolError {
    /// Appends the reply Redis gives for a protocol error: `-ERR Protocol error: <self>\r\n`.
    ///
    /// Send it, then close the connection.
    pub fn write_reply<B: BufMut + ?Sized>(&self, out: &mut B) {
        crate::encode::error_fmt(out, format_args!("ERR Protocol error: {self}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_redis() {
        assert_eq!(
            ProtocolError::InvalidLength(LengthKind::Array).to_string(),
            "invalid multibulk length"
        );
        assert_eq!(
            ProtocolError::InvalidLength(LengthKind::Bulk).to_string(),
            "invalid bulk length"
        );
        assert_eq!(
            ProtocolError::ExpectedBulk { got: b':' }.to_string(),
            "expected '$', got ':'"
        );
        assert_eq!(
            ProtocolError::ExpectedBulk { got: b'\r' }.to_string(),
            "expected '$', got '\\r'"
        );
        assert_eq!(
            ProtocolError::LengthOverLimit {
                kind: LengthKind::Bulk,
                len: 1_000_000_000,
                limit: 65536
            }
            .to_string(),
            "bulk length 1000000000 exceeds the limit of 65536"
        );
    }

    #[test]
    fn reply_is_one_error_line() {
        let mut out = Vec::new();
        ProtocolError::EmptyArray.write_reply(&mut out);
        assert_eq!(out, b"-ERR Protocol error: empty multibulk request\r\n");
        let mut out = Vec::new();
        ProtocolError::ExpectedBulk { got: b'\n' }.write_reply(&mut out);
        assert_eq!(out, b"-ERR Protocol error: expected '$', got '\\n'\r\n");
    }
}
