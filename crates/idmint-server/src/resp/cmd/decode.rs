//! `IDMINT.DECODE id [TAG t] [FORMAT f [PREFIX p] [WIDTH n]] [KIND uuidv7|ulid]`: an ID taken
//! apart, a snowflake, a segment ID of a tag, or a 128-bit ID.

use bytes::{Bytes, BytesMut};
use idmint_core::{Id128, Id128Form, Id128Kind};
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
        if let Some(kind) = self.options.kind {
            if self.options.names_64_bit() {
                return encode::error(
                    out,
                    "ERR KIND reads a 128-bit ID, and TAG, FORMAT, PREFIX and WIDTH a 64-bit one: give one or the other",
                );
            }
            return decode_id128(session, text, Some(kind), out);
        }
        // A 64-bit ID of 26, 32 or 36 characters is written in a text form the command or the
        // connection names, or in zero-padded decimal digits, which no 128-bit text is.
        let plain = !self.options.names_64_bit() && !matches!(session.format, IdFormat::Text(_));
        if plain && Id128::is_text_shaped(text) {
            return decode_id128(session, text, None, out);
        }
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

/// `IDMINT.DECODE id [KIND k]` of a 128-bit ID: a map of `id` (canonical), `kind`, `ms`,
/// `time`, `version` and `variant` (UUIDv7 only), `counter`, and `node` when this node gives
/// its IDs a node field (read with its width). Text forms only (16 bytes that are not UTF-8
/// are read as the ID's bytes).
fn decode_id128(session: &Session, text: &[u8], kind: Option<Id128Kind>, out: &mut BytesMut) {
    // Text forms only: 16 characters a client typed would otherwise be read as raw bytes.
    let parsed = match std::str::from_utf8(text) {
        Ok(text) => Id128::parse(text),
        Err(_) => Id128::parse_bytes(text),
    };
    let decoded = parsed.and_then(|id| {
        id.decode(
            kind.or(Id128Kind::of_text(text)),
            session.shared.ids.id128_node_bits(),
        )
        .map(|decoded| (id, decoded))
    });
    let (id, decoded) = match decoded {
        Ok(decoded) => decoded,
        Err(error) => return reply::service_error(out, &error),
    };
    let fields = 5
        + usize::from(decoded.version.is_some())
        + usize::from(decoded.variant.is_some())
        + usize::from(decoded.node.is_some());
    encode::map_header(out, session.protocol, fields);
    let mut scratch = [0u8; idmint_core::id128::MAX_FORM_LEN];
    encode::bulk(out, b"id");
    encode::bulk(out, Id128Form::Uuid.encode(id, &mut scratch));
    encode::bulk(out, b"kind");
    encode::bulk(out, decoded.kind.as_str().as_bytes());
    encode::bulk(out, b"ms");
    reply::id(out, decoded.ms, &IdFormat::Integer);
    encode::bulk(out, b"time");
    encode::bulk(out, decoded.time.as_bytes());
    let numbers = [
        ("version", decoded.version.map(u64::from)),
        ("variant", decoded.variant.map(u64::from)),
        ("counter", Some(u64::from(decoded.counter))),
        ("node", decoded.node.map(u64::from)),
    ];
    for (field, value) in numbers {
        if let Some(value) = value {
            encode::bulk(out, field.as_bytes());
            reply::id(out, value, &IdFormat::Integer);
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
