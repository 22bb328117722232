//! Small helpers shared by the commands: integer arguments, ID replies, and how an
//! `idmint_core::Error` becomes a Redis error reply.

use std::ops::Range;
use std::sync::Arc;

use bytes::BytesMut;
use idmint_core::{Dating, Error, ErrorCode, IdForm, Radix};
use idmint_resp::encode;

/// Redis' wording for an argument that is not a 64-bit integer.
pub(super) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";

/// Redis' wording for options it cannot make sense of.
pub(super) const SYNTAX_ERROR: &str = "ERR syntax error";

/// A signed decimal integer as Redis reads one (an optional `-`, then digits); `None` for
/// anything else, including overflow. No allocation.
pub(super) fn parse_i64(arg: &[u8]) -> Option<i64> {
    let (negative, digits) = match arg.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, arg),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(d - b'0');
        value = if negative {
            value.checked_mul(10)?.checked_sub(digit)?
        } else {
            value.checked_mul(10)?.checked_add(digit)?
        };
    }
    Some(value)
}

/// An unsigned decimal integer (digits only, up to `u64::MAX`).
pub(super) fn parse_u64(arg: &[u8]) -> Option<u64> {
    if arg.is_empty() {
        return None;
    }
    arg.iter().try_fold(0u64, |value, &d| {
        if d.is_ascii_digit() {
            value.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        } else {
            None
        }
    })
}

/// How a connection's ID replies are written.
///
/// Integers by default, as Redis' `INCR` answers. JavaScript clients (ioredis, node-redis)
/// turn an integer reply into a double, which cannot hold IDs above 2^53: three snowflakes of
/// one millisecond become three equal numbers. `String` sends each ID as a bulk string of its
/// decimal digits instead, chosen per command (`FORMAT STRING`) or per connection
/// (`IDMINT.FORMAT STRING`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) enum IdFormat {
    #[default]
    Integer,
    String,
    /// A text form: base62, base36, base32 or padded decimal, with a prefix (`FORMAT BASE62
    /// PREFIX ord_ WIDTH 12`), as bulk strings.
    Text(Arc<IdForm>),
    /// A dated tag's text form (`20261123-000042`), as bulk strings: what `IDMINT.NEXT` answers
    /// for a dated tag shown as text, unless the command asks for another `FORMAT`.
    Dated(Dating),
}

impl IdFormat {
    /// `INTEGER`, `STRING`, or a form's radix (`DECIMAL`, `BASE62`, `BASE36`, `BASE32`) at its
    /// full width, any case.
    pub(super) fn parse(word: &[u8]) -> Option<Self> {
        if word.eq_ignore_ascii_case(b"INTEGER") {
            Some(Self::Integer)
        } else if word.eq_ignore_ascii_case(b"STRING") {
            Some(Self::String)
        } else {
            let radix: Radix = std::str::from_utf8(word).ok()?.parse().ok()?;
            Some(Self::Text(Arc::new(IdForm::new(radix))))
        }
    }

    /// The same text form with `PREFIX` or `WIDTH`; refused for `INTEGER` and `STRING`.
    pub(super) fn refined(
        self,
        prefix: Option<&[u8]>,
        width: Option<u64>,
    ) -> std::result::Result<Self, String> {
        if prefix.is_none() && width.is_none() {
            return Ok(self);
        }
        let Self::Text(form) = self else {
            return Err(NEEDS_TEXT_FORMAT.to_owned());
        };
        let mut form = (*form).clone();
        if let Some(prefix) = prefix {
            let prefix = std::str::from_utf8(prefix).unwrap_or("\u{fffd}");
            form = form.with_prefix(prefix).map_err(|e| format!("ERR {e}"))?;
        }
        if let Some(width) = width {
            let width = usize::try_from(width).unwrap_or(usize::MAX);
            form = form.with_width(width).map_err(|e| format!("ERR {e}"))?;
        }
        Ok(Self::Text(Arc::new(form)))
    }

    /// The words [`parse`](Self::parse) reads, lowercase (`base62 prefix=ord_` for a form).
    pub(super) fn name(&self) -> String {
        match self {
            Self::Integer => "integer".to_owned(),
            Self::String => "string".to_owned(),
            Self::Text(form) => form.to_string(),
            Self::Dated(_) => "dated".to_owned(),
        }
    }
}

/// The error for an unknown `FORMAT`.
pub(super) const BAD_FORMAT: &str =
    "ERR FORMAT must be INTEGER, STRING, DECIMAL, BASE62, BASE36 or BASE32";

/// The error for `PREFIX` or `WIDTH` without a text form.
pub(super) const NEEDS_TEXT_FORMAT: &str =
    "ERR PREFIX and WIDTH need FORMAT DECIMAL, BASE62, BASE36 or BASE32";

/// An ID as a reply in `format`. Every ID idmint issues fits in 63 bits (snowflake layouts are
/// at most 63 bits, segment IDs at most `i64::MAX`); should one not, it is refused rather than
/// sent as a negative number.
#[inline]
pub(super) fn id(out: &mut BytesMut, id: u64, format: &IdFormat) {
    match (i64::try_from(id), format) {
        (Ok(n), IdFormat::Integer) => encode::integer(out, n),
        (Ok(n), IdFormat::String) => encode::bulk_integer(out, n),
        (Ok(_), IdFormat::Text(form)) => encode::bulk(out, form.encode(id).as_bytes()),
        (Ok(_), IdFormat::Dated(dating)) => encode::bulk(out, dating.text(id).as_bytes()),
        (Err(_), _) => {
            encode::error_fmt(out, format_args!("ERR ID {id} does not fit a RESP integer"))
        }
    }
}

/// IDs as an array (`IDMINT.SNOWFLAKE COUNT n`, `IDMINT.NEXT tag COUNT n`), ascending,
/// `largest` being the last. Refused as a whole, like [`id`], should the largest not fit a
/// RESP integer; then none of the others is sent as a negative number either.
pub(super) fn ids<I>(out: &mut BytesMut, ids: I, largest: Option<u64>, format: &IdFormat)
where
    I: ExactSizeIterator<Item = u64>,
{
    match (largest.map(i64::try_from), format) {
        (Some(Err(_)), _) => id(out, largest.unwrap_or(u64::MAX), format),
        // Every ID is at most `largest`, which fits.
        (_, IdFormat::Integer) => {
            encode::integer_array(out, ids.map(|id| i64::try_from(id).unwrap_or(i64::MAX)))
        }
        (_, IdFormat::String) => {
            encode::array_header(out, ids.len());
            for n in ids {
                encode::bulk_integer(out, i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        (_, IdFormat::Text(form)) => {
            encode::array_header(out, ids.len());
            let mut text = String::with_capacity(form.prefix().len() + 20);
            for n in ids {
                text.clear();
                form.encode_into(n, &mut text);
                encode::bulk(out, text.as_bytes());
            }
        }
        (_, IdFormat::Dated(dating)) => {
            encode::array_header(out, ids.len());
            for n in ids {
                encode::bulk(out, dating.text(n).as_bytes());
            }
        }
    }
}

/// The IDs of ascending runs, one by one, knowing how many there are: what a segment buffer
/// hands out for `COUNT n` becomes one array reply without a `Vec` of the IDs.
pub(super) struct RunIds {
    runs: std::vec::IntoIter<Range<u64>>,
    current: Range<u64>,
    left: usize,
}

impl RunIds {
    /// The IDs of `runs`, and the largest of them.
    pub(super) fn new(runs: Vec<Range<u64>>) -> (Self, Option<u64>) {
        let largest = runs
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| r.end - 1)
            .max();
        let left = runs
            .iter()
            .map(|r| usize::try_from(r.end.saturating_sub(r.start)).unwrap_or(usize::MAX))
            .fold(0usize, usize::saturating_add);
        let ids = Self {
            runs: runs.into_iter(),
            current: 0..0,
            left,
        };
        (ids, largest)
    }
}

impl Iterator for RunIds {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(id) = self.current.next() {
                self.left = self.left.saturating_sub(1);
                return Some(id);
            }
            self.current = self.runs.next()?;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for RunIds {}

/// The reply for an error of the ID service.
///
/// - Retryable errors ([`Error::is_retryable`]: store down, buffers empty after the bounded
///   wait, lease lost, clock behind) are `-TRYAGAIN`, the Redis code for "the same command may
///   succeed later", with the word "unavailable" and the cause.
/// - Everything else (bad tag, unknown tag, a shard too wide for the layout, an ID the layout
///   cannot decode, an exhausted layout, a store that refused) is `-ERR` and the message.
/// - Of those, the errors a client program must tell apart from a bad command carry the HTTP
///   API's code right after `ERR`: `-ERR tag_exhausted ...` (the tag's IDs are used up, or too
///   few are left for `INCRBY`/`COUNT`: start a new tag), `-ERR too_many_tags ...` (the node's
///   `--max-tags` is reached), `-ERR tag_quota ...` (the token's `max_tags` is), `-ERR store_corrupt ...`, and `-ERR permuted ...` from
///   [`permuted`].
pub(super) fn service_error(out: &mut BytesMut, error: &Error) {
    let code = error.code();
    if code.is_retryable() {
        tracing::debug!(%error, "RESP command failed; retryable");
        encode::error_fmt(
            out,
            format_args!("TRYAGAIN idmint is temporarily unavailable: {error}"),
        );
    } else if named_after_err(code) {
        tracing::debug!(%error, "RESP command failed");
        encode::error_fmt(out, format_args!("ERR {code} {error}"));
    } else {
        tracing::debug!(%error, "RESP command failed");
        encode::error_fmt(out, format_args!("ERR {error}"));
    }
}

/// The refusal of a run of consecutive IDs (`INCRBY n`, `IDMINT.RANGE`) on a namespace that
/// hands out its IDs permuted: `-ERR permuted ...`, the HTTP API's code, so a client library
/// can turn to batches.
pub(super) fn permuted(out: &mut BytesMut) {
    let code = ErrorCode::Permuted;
    encode::error_fmt(
        out,
        format_args!("ERR {code} {}", crate::ids::Ids::RUNS_REFUSED),
    );
}

/// Whether a `-ERR` reply names `code` right after `ERR` (see [`service_error`]): the codes a
/// client acts on differently from any other refusal. The others keep Redis' plain `-ERR
/// message`, which clients written for Redis show as they are.
fn named_after_err(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::TagExhausted
            | ErrorCode::Dated
            | ErrorCode::PeriodUnavailable
            | ErrorCode::TooManyTags
            | ErrorCode::TagQuota
            | ErrorCode::StoreCorrupt
            | ErrorCode::Permuted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_redis() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"42"), Some(42));
        assert_eq!(parse_i64(b"-7"), Some(-7));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"1.0",
            b"9223372036854775808",
            b"x",
        ] {
            assert_eq!(parse_i64(bad), None, "{}", bad.escape_ascii());
        }
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b""), None);
    }

    #[test]
    fn errors_map_by_retryability() {
        let mut out = BytesMut::new();
        service_error(&mut out, &Error::store_unavailable("connection refused"));
        assert_eq!(
            &out[..],
            b"-TRYAGAIN idmint is temporarily unavailable: store unavailable: connection refused\r\n"
        );
        out.clear();
        service_error(&mut out, &Error::UnknownTag { tag: "x".into() });
        assert_eq!(&out[..], b"-ERR unknown tag `x`\r\n");
        out.clear();
        service_error(&mut out, &Error::TagExhausted { tag: "x".into() });
        assert!(
            out.starts_with(b"-ERR tag_exhausted tag `x` is exhausted: "),
            "{}",
            out.escape_ascii()
        );
        out.clear();
        service_error(&mut out, &Error::store_corrupt("malformed"));
        assert_eq!(&out[..], b"-ERR store_corrupt store corrupt: malformed\r\n");
        out.clear();
        permuted(&mut out);
        assert!(out.starts_with(b"-ERR permuted "), "{}", out.escape_ascii());
    }

    #[test]
    fn a_code_named_after_err_is_never_a_retryable_one() {
        // A retryable error is `-TRYAGAIN` whatever its code.
        for &code in ErrorCode::ALL {
            assert!(!(named_after_err(code) && code.is_retryable()), "{code}");
        }
    }

    #[test]
    fn ids_fit_or_are_refused() {
        let mut out = BytesMut::new();
        id(&mut out, 12, &IdFormat::Integer);
        id(&mut out, 12, &IdFormat::String);
        id(&mut out, u64::MAX, &IdFormat::String);
        assert_eq!(
            &out[..],
            &b":12\r\n$2\r\n12\r\n-ERR ID 18446744073709551615 does not fit a RESP integer\r\n"[..]
        );
    }

    #[test]
    fn runs_become_one_array_of_their_ids() {
        let (ids, largest) = RunIds::new(vec![7..9, 9..9, 20..22]);
        assert_eq!(ids.len(), 4);
        assert_eq!(largest, Some(21));
        assert_eq!(ids.collect::<Vec<_>>(), vec![7, 8, 20, 21]);

        let mut out = BytesMut::new();
        let (ids, largest) = RunIds::new(vec![98..101, 5..6]);
        super::ids(&mut out, ids, largest, &IdFormat::Integer);
        assert_eq!(&out[..], &b"*4\r\n:98\r\n:99\r\n:100\r\n:5\r\n"[..]);

        out.clear();
        let (ids, largest) = RunIds::new(vec![9..10, 10..11]);
        super::ids(&mut out, ids, largest, &IdFormat::String);
        assert_eq!(&out[..], &b"*2\r\n$1\r\n9\r\n$2\r\n10\r\n"[..]);

        out.clear();
        let (ids, largest) = RunIds::new(Vec::new());
        super::ids(&mut out, ids, largest, &IdFormat::Integer);
        assert_eq!(&out[..], &b"*0\r\n"[..]);
    }

    #[test]
    fn an_array_with_an_id_that_does_not_fit_is_refused_whole() {
        let mut out = BytesMut::new();
        let huge = u64::MAX - 1;
        let (ids, largest) = RunIds::new(vec![1..3, huge..huge + 1]);
        super::ids(&mut out, ids, largest, &IdFormat::Integer);
        assert_eq!(
            &out[..],
            &b"-ERR ID 18446744073709551614 does not fit a RESP integer\r\n"[..]
        );
    }
}
