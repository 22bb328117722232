//! The query string's parameters, one type per route's family ([`SnowflakeQuery`],
//! [`CountQuery`], [`DecodeQuery`], [`SizeQuery`], [`LeafDecodeQuery`]) and the text form
//! they share (`format`, `prefix`, `width`), with the pair splitting, percent-decoding and
//! strict decimals under them. Apart from the path and body extractors (`params/mod.rs`):
//! the query's parsing is its own, with no axum type.
//!
//! The query parser borrows from the request and allocates only when a value is
//! percent-encoded; unknown parameters are ignored, a known one given twice is refused.

use idmint_core::ErrorCode;
use std::borrow::Cow;

use idmint_core::{Id128Form, Id128Kind, IdForm, Tag};

use super::super::errors::{echo, ApiError};

/// Something built from the query string.
pub(crate) trait FromQuery: Sized {
    /// `bounds`: the values this node accepts, which a refusal states.
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError>;
}

/// The ranges of the numeric parameters on this node, stated in each refusal, so a client
/// that sends `count=abc` learns what it may send (the node's `--max-count`, not `u64`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// `count`: `1..=max_count`.
    pub max_count: u64,
    /// `size`: `1..=max_lease_size`.
    pub max_lease_size: u64,
    /// `shard`: `0..=max_shard` (0 for a layout without a shard field).
    pub max_shard: u64,
    /// A snowflake to decode: `0..=max_id`, the largest value of the layout's bits.
    pub max_id: u64,
}

impl Default for Bounds {
    /// The defaults of the settings, for tests.
    fn default() -> Self {
        Self {
            max_count: 10_000,
            max_lease_size: 1_000_000,
            max_shard: 0,
            max_id: i64::MAX as u64,
        }
    }
}

/// `?count=N&shard=K` of `/v1/snowflake`, and the text form (see [`FormParts`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SnowflakeQuery {
    pub count: Option<u64>,
    pub shard: Option<u64>,
    pub form: Option<Box<IdForm>>,
}

impl FromQuery for SnowflakeQuery {
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError> {
        let mut out = Self::default();
        let mut form = FormParts::default();
        let (count, shard) = (1..=bounds.max_count, 0..=bounds.max_shard);
        for_each_pair(query, |key, value| match key {
            "count" => set_number(
                &mut out.count,
                "count",
                ErrorCode::InvalidCount,
                &count,
                value,
            ),
            "shard" => set_number(
                &mut out.shard,
                "shard",
                ErrorCode::InvalidShard,
                &shard,
                value,
            ),
            _ => form.take(key, value),
        })?;
        out.form = form.build()?;
        Ok(out)
    }
}

/// `?count=N` of `/v1/segment/{tag}`, and the text form (see [`FormParts`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CountQuery {
    pub count: Option<u64>,
    pub form: Option<Box<IdForm>>,
}

impl FromQuery for CountQuery {
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError> {
        let mut out = Self::default();
        let mut form = FormParts::default();
        let count = 1..=bounds.max_count;
        for_each_pair(query, |key, value| match key {
            "count" => set_number(
                &mut out.count,
                "count",
                ErrorCode::InvalidCount,
                &count,
                value,
            ),
            _ => form.take(key, value),
        })?;
        out.form = form.build()?;
        Ok(out)
    }
}

/// `?count=N&format=F` of `/v1/uuid` and `/v1/ulid`: `F` one of `uuid`, `ulid`, `hex`,
/// `bytes` (`Id128Form`); without it, the route's own form.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Id128Query {
    pub count: Option<u64>,
    pub form: Option<Id128Form>,
}

impl FromQuery for Id128Query {
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError> {
        let mut out = Self::default();
        let count = 1..=bounds.max_count;
        for_each_pair(query, |key, value| match key {
            "count" => set_number(
                &mut out.count,
                "count",
                ErrorCode::InvalidCount,
                &count,
                value,
            ),
            "format" => {
                if out.form.is_some() {
                    return Err(ApiError::new(
                        ErrorCode::InvalidFormat,
                        "`format` is given more than once",
                    ));
                }
                let form = Id128Form::parse(value)
                    .map_err(|e| ApiError::new(ErrorCode::InvalidFormat, e.to_string()))?;
                out.form = Some(form);
                Ok(())
            }
            _ => Ok(()),
        })?;
        Ok(out)
    }
}

/// `/v1/decode/{id}`'s query: the ID's text form ([`FormParts`]), `tag=T` for a segment ID of
/// `T` (restored with its permutation), or `kind=uuidv7|ulid` for a 128-bit ID of that kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DecodeQuery {
    pub form: Option<Box<IdForm>>,
    pub tag: Option<Tag>,
    pub kind: Option<Id128Kind>,
    /// Whether `prefix` or `width` was given (they refine `format`, which refuses them alone).
    refined: bool,
}

impl DecodeQuery {
    /// Whether the query says how to read a 64-bit ID (a form, a tag); else 128-bit lengths are.
    pub(crate) fn names_64_bit(&self) -> bool {
        self.form.is_some() || self.tag.is_some() || self.refined
    }
}

impl FromQuery for DecodeQuery {
    fn from_query(query: &str, _bounds: &Bounds) -> Result<Self, ApiError> {
        let mut form = FormParts::default();
        let mut tag = None;
        let mut kind = None;
        for_each_pair(query, |key, value| match key {
            "tag" => {
                tag = Some(Tag::new(value).map_err(ApiError::from)?);
                Ok(())
            }
            "kind" => {
                if kind.is_some() {
                    return Err(ApiError::new(
                        ErrorCode::InvalidArgument,
                        "`kind` is given more than once",
                    ));
                }
                kind = Some(Id128Kind::parse(value).map_err(ApiError::from)?);
                Ok(())
            }
            _ => form.take(key, value),
        })?;
        let refined = form.prefix.is_some() || form.width.is_some();
        let out = Self {
            form: form.build()?,
            tag,
            kind,
            refined,
        };
        if out.kind.is_some() && out.names_64_bit() {
            return Err(ApiError::new(
                ErrorCode::InvalidArgument,
                "`kind` reads a 128-bit ID, and `tag`, `format`, `prefix` and `width` a 64-bit \
                 one: give one or the other",
            ));
        }
        Ok(out)
    }
}

/// `format=base62|base36|base32|decimal`, `prefix=P`, `width=N`: IDs as text in that form
/// (`idmint_core::form`). Without `format`, IDs are plain decimal and `prefix` or `width`
/// alone is refused; other keys are ignored, as everywhere in the query.
#[derive(Debug, Default)]
struct FormParts {
    format: Option<String>,
    prefix: Option<String>,
    width: Option<u64>,
}

impl FormParts {
    fn take(&mut self, key: &str, value: &str) -> Result<(), ApiError> {
        let text = |slot: &mut Option<String>, name: &'static str| {
            if slot.is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidFormat,
                    format!("`{name}` is given more than once"),
                ));
            }
            *slot = Some(value.to_owned());
            Ok(())
        };
        match key {
            "format" => text(&mut self.format, "format"),
            "prefix" => text(&mut self.prefix, "prefix"),
            "width" => set_number(
                &mut self.width,
                "width",
                ErrorCode::InvalidFormat,
                &(0..=idmint_core::form::MAX_WIDTH as u64),
                value,
            ),
            _ => Ok(()),
        }
    }

    /// The form, boxed: it is rare, and the queries (and so the handlers' futures, which are
    /// moved as they are polled) stay small without it.
    fn build(self) -> Result<Option<Box<IdForm>>, ApiError> {
        let Some(format) = self.format else {
            if self.prefix.is_some() || self.width.is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidFormat,
                    "`prefix` and `width` need a `format` (base62, base36, base32 or decimal)",
                ));
            }
            return Ok(None);
        };
        let width = self.width.map(|w| usize::try_from(w).unwrap_or(usize::MAX));
        IdForm::from_parts(&format, self.prefix.as_deref(), width)
            .map(|form| Some(Box::new(form)))
            .map_err(|e| ApiError::new(ErrorCode::InvalidFormat, e.to_string()))
    }
}

/// `?size=N` of `/v1/segment/{tag}/lease`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SizeQuery {
    pub size: Option<u64>,
}

impl FromQuery for SizeQuery {
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError> {
        let mut out = Self::default();
        let size = 1..=bounds.max_lease_size;
        for_each_pair(query, |key, value| match key {
            "size" => set_number(&mut out.size, "size", ErrorCode::InvalidSize, &size, value),
            _ => Ok(()),
        })?;
        Ok(out)
    }
}

/// `?snowflakeId=ID` of Leaf's `/decodeSnowflakeId`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LeafDecodeQuery {
    pub snowflake_id: Option<u64>,
}

impl FromQuery for LeafDecodeQuery {
    fn from_query(query: &str, bounds: &Bounds) -> Result<Self, ApiError> {
        let mut out = Self::default();
        for_each_pair(query, |key, value| match key {
            "snowflakeId" => set_number(
                &mut out.snowflake_id,
                "snowflakeId",
                ErrorCode::InvalidId,
                &(0..=bounds.max_id),
                value,
            ),
            _ => Ok(()),
        })?;
        Ok(out)
    }
}

/// Calls `visit` with each `key=value` pair, both percent-decoded (`+` is a space).
fn for_each_pair(
    query: &str,
    mut visit: impl FnMut(&str, &str) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        visit(&percent_decode(key)?, &percent_decode(value)?)?;
    }
    Ok(())
}

/// Stores the decimal `value` of parameter `name` in `slot`, refusing a second one. `range` is
/// what the parameter accepts, stated when `value` is not a number; a number outside it is
/// refused where the value is used (the handler, or the ID service), with the same range.
fn set_number(
    slot: &mut Option<u64>,
    name: &'static str,
    code: ErrorCode,
    range: &std::ops::RangeInclusive<u64>,
    value: &str,
) -> Result<(), ApiError> {
    if slot.is_some() {
        return Err(ApiError::new(
            code,
            format!("`{name}` is given more than once"),
        ));
    }
    *slot = Some(parse_decimal(value).ok_or_else(|| {
        ApiError::new(
            code,
            format!(
                "`{name}` must be a decimal integer in {}..={}, got `{}`",
                range.start(),
                range.end(),
                echo(value)
            ),
        )
    })?);
    Ok(())
}

/// A plain decimal `u64`: digits only (no sign, no spaces), at most 20 of them, no overflow.
pub(crate) fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Percent-decodes `raw` (`+` is a space); borrows when there is nothing to decode. Malformed
/// escapes are kept as they are (like browsers do); a result that is not UTF-8 is refused,
/// which `form_urlencoded` (lossy) would not do, so the parameter's own error is kept.
fn percent_decode(raw: &str) -> Result<Cow<'_, str>, ApiError> {
    let spaced = if raw.contains('+') {
        Cow::Owned(raw.replace('+', " "))
    } else {
        Cow::Borrowed(raw)
    };
    let not_utf8 = |_| {
        ApiError::new(
            ErrorCode::InvalidQuery,
            "the query string is not UTF-8 once percent-decoded",
        )
    };
    match spaced {
        Cow::Borrowed(text) => percent_encoding::percent_decode_str(text)
            .decode_utf8()
            .map_err(not_utf8),
        Cow::Owned(text) => percent_encoding::percent_decode_str(&text)
            .decode_utf8()
            .map(|decoded| Cow::Owned(decoded.into_owned()))
            .map_err(not_utf8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_strict() {
        assert_eq!(parse_decimal("0"), Some(0));
        assert_eq!(parse_decimal("18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "+1",
            "-1",
            " 1",
            "1 ",
            "1e3",
            "0x10",
            "18446744073709551616",
            "abc",
        ] {
            assert_eq!(parse_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn queries_are_decoded_and_duplicates_refused() {
        assert_eq!(
            SnowflakeQuery::from_query("count=%31%30&shard=3&x=y&&flag", &Bounds::default())
                .map_err(|e| e.code().as_str()),
            Ok(SnowflakeQuery {
                count: Some(10),
                shard: Some(3),
                form: None,
            })
        );
        assert_eq!(
            SnowflakeQuery::from_query("", &Bounds::default()).map_err(|e| e.code().as_str()),
            Ok(SnowflakeQuery::default())
        );
        let code = |q: &str| {
            SnowflakeQuery::from_query(q, &Bounds::default())
                .err()
                .map(|e| e.code().as_str())
        };
        assert_eq!(code("count=1&count=2"), Some("invalid_count"));
        assert_eq!(code("count="), Some("invalid_count"));
        assert_eq!(code("count"), Some("invalid_count"));
        assert_eq!(code("shard=-1"), Some("invalid_shard"));
        assert_eq!(code("count=%FF"), Some("invalid_query"));
        assert_eq!(code("unused=%FF%FE"), Some("invalid_query"));
    }

    #[test]
    fn percent_decoding_keeps_malformed_escapes() {
        assert_eq!(percent_decode("a%2Fb+c").ok().as_deref(), Some("a/b c"));
        assert_eq!(percent_decode("100%").ok().as_deref(), Some("100%"));
        assert_eq!(percent_decode("%zz%4").ok().as_deref(), Some("%zz%4"));
        assert!(matches!(
            percent_decode("plain"),
            Ok(Cow::Borrowed("plain"))
        ));
    }

    #[test]
    fn leaf_decode_reads_its_camel_case_parameter() {
        assert_eq!(
            LeafDecodeQuery::from_query("snowflakeId=42", &Bounds::default())
                .map_err(|e| e.code().as_str()),
            Ok(LeafDecodeQuery {
                snowflake_id: Some(42)
            })
        );
        assert_eq!(
            SizeQuery::from_query("size=x", &Bounds::default())
                .err()
                .map(|e| e.code().as_str()),
            Some("invalid_size")
        );
        assert_eq!(
            CountQuery::from_query("count=7", &Bounds::default()).map_err(|e| e.code().as_str()),
            Ok(CountQuery {
                count: Some(7),
                form: None,
            })
        );
    }

    #[test]
    fn id128_queries_read_count_and_form() {
        let read =
            |q: &str| Id128Query::from_query(q, &Bounds::default()).map_err(|e| e.code().as_str());
        assert_eq!(
            read("count=3&format=HEX&other=x"),
            Ok(Id128Query {
                count: Some(3),
                form: Some(Id128Form::Hex),
            })
        );
        assert_eq!(read(""), Ok(Id128Query::default()));
        assert_eq!(read("format=nope"), Err("invalid_format"));
        assert_eq!(read("format=uuid&format=ulid"), Err("invalid_format"));
        assert_eq!(read("count=x"), Err("invalid_count"));
    }

    #[test]
    fn decode_kind_is_read_and_not_mixed_with_64_bit_forms() {
        let read =
            |q: &str| DecodeQuery::from_query(q, &Bounds::default()).map_err(|e| e.code().as_str());
        assert_eq!(read("kind=ulid").map(|q| q.kind), Ok(Some(Id128Kind::Ulid)));
        assert_eq!(
            read("kind=uuidv7").map(|q| q.kind),
            Ok(Some(Id128Kind::Uuid7))
        );
        assert_eq!(read("kind=snowflake").err(), Some("invalid_argument"));
        assert_eq!(
            read("kind=ulid&format=base62").err(),
            Some("invalid_argument")
        );
        assert_eq!(read("kind=ulid&tag=orders").err(), Some("invalid_argument"));
        assert_eq!(read("tag=orders").map(|q| q.names_64_bit()), Ok(true));
        assert_eq!(read("").map(|q| q.names_64_bit()), Ok(false));
    }
}
