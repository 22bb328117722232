//! `IDMINT.DECODE id [TAG t] [FORMAT f [PREFIX p] [WIDTH n]]`: an ID taken apart.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::Refusal;
use super::options::{Extra, IdOptions};
use crate::resp::reply::{self, IdFormat, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::session::Session;

/// `IDMINT.DECODE id`: the ID taken apart with the layout of the space that issued it, as a
/// map (field/value pairs in RESP2, what `HGETALL` returns, so clients read it into a map
/// either way).
#[derive(Debug)]
pub(super) struct Decode<'a> {
    /// The ID as written, read in the form the command (or the connection) names.
    text: &'a [u8],
    options: IdOptions<'a>,
}

impl<'a> Decode<'a> {
    pub(super) fn parse(params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        let Some((text, words)) = params.split_first() else {
            return Err(Refusal::Arity("idmint.decode"));
        };
        let options = IdOptions::parse(words, Extra::Tag, max_count)?;
        Ok(Self { text, options })
    }

    /// `[FORMAT f [PREFIX p] [WIDTH n]]`, or the connection's format: the ID as that form
    /// writes it. `COUNT` is read as the other ID commands read it, then refused.
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let format = match self.options.format(&session.format) {
            Ok(format) => format,
            Err(refusal) => return refusal.write(out),
        };
        if self.options.count.is_some() {
            return encode::error(out, SYNTAX_ERROR);
        }
        let text = self.text;
        let id = match format.as_ref() {
            IdFormat::Text(form) => match std::str::from_utf8(text)
                .map_err(|_| "not UTF-8".to_owned())
                .and_then(|t| form.decode(t).map_err(|e| e.to_string()))
            {
                Ok(id) => id,
                Err(message) => return encode::error_fmt(out, format_args!("ERR {message}")),
            },
            _ => match reply::parse_u64(text) {
                Some(id) => id,
                None => return encode::error(out, NOT_AN_INTEGER),
            },
        };
        if let Some(raw) = self.options.tag {
            return decode_segment(session, id, raw, &format, out);
        }
        let decoded = match session.shared.ids.decode(id) {
            Ok(decoded) => decoded,
            Err(error) => return reply::service_error(out, &error),
        };
        let optional = [
            ("dc", decoded.dc),
            ("worker", decoded.worker),
            ("shard", decoded.shard),
        ];
        let present = optional.iter().filter(|(_, v)| v.is_some()).count()
            + usize::from(decoded.id_space.is_some())
            + usize::from(decoded.plain_id.is_some());
        encode::map_header(out, session.protocol, 6 + present);
        encode::bulk(out, b"id");
        reply::id(out, id, &format);
        encode::bulk(out, b"layout");
        encode::bulk(out, decoded.layout.as_bytes());
        encode::bulk(out, b"time");
        encode::bulk(out, decoded.time.as_bytes());
        encode::bulk(out, b"unix_ms");
        reply::id(out, decoded.unix_ms, &IdFormat::Integer);
        encode::bulk(out, b"tick");
        reply::id(out, decoded.tick, &IdFormat::Integer);
        for (field, value) in optional {
            if let Some(value) = value {
                encode::bulk(out, field.as_bytes());
                reply::id(out, value, &IdFormat::Integer);
            }
        }
        encode::bulk(out, b"seq");
        reply::id(out, decoded.seq, &IdFormat::Integer);
        if let Some(version) = decoded.id_space {
            encode::bulk(out, b"id_space");
            reply::id(out, version, &IdFormat::Integer);
        }
        if let Some(plain) = &decoded.plain_id {
            encode::bulk(out, b"plain_id");
            encode::bulk(out, plain.as_bytes());
        }
    }
}

/// `IDMINT.DECODE id TAG t`: a segment ID of tag `t`, as a map of `id`, `tag` and `plain_id`
/// (its number in the tag; the ID itself on a node that hands out plain IDs).
fn decode_segment(session: &Session, id: u64, raw: &[u8], format: &IdFormat, out: &mut BytesMut) {
    let tag = match idmint_core::Tag::from_bytes(raw) {
        Ok(tag) => tag,
        Err(error) => return reply::service_error(out, &error),
    };
    let plain = session.shared.ids.tag_publisher(&tag).restore(id);
    encode::map_header(out, session.protocol, 3);
    encode::bulk(out, b"id");
    reply::id(out, id, format);
    encode::bulk(out, b"tag");
    encode::bulk(out, tag.as_str().as_bytes());
    encode::bulk(out, b"plain_id");
    reply::id(out, plain, &IdFormat::Integer);
}
