//! The options of `IDMINT.SNOWFLAKE`, `IDMINT.NEXT` and `IDMINT.DECODE`:
//! `[COUNT n] [SHARD k | TAG t KIND k] [FORMAT f] [PREFIX p] [WIDTH n]`, in any order.
//!
//! They are read before anything runs, so a command with a bad option takes no ID. Only the
//! refinement of the form by `PREFIX` and `WIDTH` waits for the apply: without `FORMAT` it
//! refines the connection's own form (`IDMINT.FORMAT`).

use std::borrow::Cow;

use bytes::Bytes;
use idmint_core::Id128Kind;

use super::args::{self, Refusal};
use crate::resp::reply::{IdFormat, BAD_FORMAT, SYNTAX_ERROR};

/// The option a command takes beside `COUNT` and the form: `SHARD k` (`IDMINT.SNOWFLAKE`),
/// `TAG t` and `KIND k` (`IDMINT.DECODE`), or none (`IDMINT.NEXT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extra {
    Nothing,
    Shard,
    Tag,
}

/// The options as read.
#[derive(Debug, Default)]
pub(super) struct IdOptions<'a> {
    pub(super) count: Option<u64>,
    pub(super) shard: Option<u64>,
    /// `TAG t` of `IDMINT.DECODE`: a segment ID of that tag.
    pub(super) tag: Option<&'a [u8]>,
    /// `KIND uuidv7|ulid` of `IDMINT.DECODE`: a 128-bit ID read as that kind.
    pub(super) kind: Option<Id128Kind>,
    /// `FORMAT f`; `None`: the connection's.
    format: Option<IdFormat>,
    prefix: Option<&'a [u8]>,
    /// `WIDTH n`, kept in 32 bits (a larger one is refused as the largest is: no form is that
    /// wide) so the parsed command stays small.
    width: Option<u32>,
}

impl<'a> IdOptions<'a> {
    /// Reads the options in `words` (`SHARD` or `TAG` as `extra` allows), `COUNT` in
    /// `1..=max_count`; refuses anything else.
    pub(super) fn parse(
        words: &'a [Bytes],
        extra: Extra,
        max_count: u64,
    ) -> Result<Self, Refusal<'a>> {
        let mut options = Self::default();
        let mut words = words.iter();
        while let Some(option) = words.next() {
            let Some(value) = words.next() else {
                return Err(Refusal::Fixed(SYNTAX_ERROR));
            };
            if option.eq_ignore_ascii_case(b"COUNT") {
                options.count = Some(args::count(value, "COUNT", max_count)?);
            } else if extra == Extra::Tag && option.eq_ignore_ascii_case(b"TAG") {
                options.tag = Some(value);
            } else if extra == Extra::Tag && option.eq_ignore_ascii_case(b"KIND") {
                let kind = std::str::from_utf8(value)
                    .ok()
                    .and_then(|name| Id128Kind::parse(name).ok());
                options.kind = Some(kind.ok_or(Refusal::Quoting {
                    before: "ERR KIND must be UUIDV7 or ULID, got '",
                    word: value.get(..64.min(value.len())).unwrap_or_default(),
                    after: "'",
                })?);
            } else if extra == Extra::Shard && option.eq_ignore_ascii_case(b"SHARD") {
                options.shard = Some(args::unsigned(value)?);
            } else if option.eq_ignore_ascii_case(b"FORMAT") {
                let format = IdFormat::parse(value).ok_or(Refusal::Fixed(BAD_FORMAT))?;
                options.format = Some(format);
            } else if option.eq_ignore_ascii_case(b"PREFIX") {
                options.prefix = Some(value);
            } else if option.eq_ignore_ascii_case(b"WIDTH") {
                let width = args::unsigned(value)?;
                options.width = Some(u32::try_from(width).unwrap_or(u32::MAX));
            } else {
                return Err(Refusal::Fixed(SYNTAX_ERROR));
            }
        }
        Ok(options)
    }

    /// Whether the command named its `FORMAT` (a dated tag is then not shown as text).
    pub(super) fn format_given(&self) -> bool {
        self.format.is_some()
    }

    /// Whether an option says the ID is a 64-bit one: `TAG`, `FORMAT`, `PREFIX` or `WIDTH`.
    pub(super) fn names_64_bit(&self) -> bool {
        self.tag.is_some() || self.format.is_some() || self.prefix.is_some() || self.width.is_some()
    }

    /// Whether no option was given at all: the plain command.
    pub(super) fn is_empty(&self) -> bool {
        self.count.is_none()
            && self.shard.is_none()
            && self.tag.is_none()
            && self.kind.is_none()
            && self.format.is_none()
            && self.prefix.is_none()
            && self.width.is_none()
    }

    /// How the IDs are written: the `FORMAT` named or the `connection`'s, with `PREFIX` and
    /// `WIDTH` (refused for a form that is not text). Borrowed when nothing is refined.
    pub(super) fn format<'b>(
        &'b self,
        connection: &'b IdFormat,
    ) -> Result<Cow<'b, IdFormat>, Refusal<'static>> {
        let named = self.format.as_ref().unwrap_or(connection);
        if self.prefix.is_none() && self.width.is_none() {
            return Ok(Cow::Borrowed(named));
        }
        match named
            .clone()
            .refined(self.prefix, self.width.map(u64::from))
        {
            Ok(format) => Ok(Cow::Owned(format)),
            Err(message) => Err(Refusal::Text(message)),
        }
    }
}
