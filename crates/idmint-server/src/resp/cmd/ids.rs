//! The ID commands: `INCR`, `INCRBY`, `IDMINT.SNOWFLAKE`, `IDMINT.NEXT`, `IDMINT.DECODE`,
//! `IDMINT.FORMAT`, and `GET`, which reads a tag's counter without taking an ID.

use bytes::{Bytes, BytesMut};
use idmint_core::{DatedForm, Result};
use idmint_resp::encode;

use super::wrong_arity;
use crate::ids::TagBuffer;
use crate::resp::connection::Session;
use crate::resp::reply::{self, IdFormat, BAD_FORMAT, NOT_AN_INTEGER, SYNTAX_ERROR};

/// The options of `IDMINT.SNOWFLAKE` and `IDMINT.NEXT`, read before anything runs: a command
/// with a bad option takes no ID.
struct Options {
    count: Option<u64>,
    shard: Option<u64>,
    /// `TAG t` of `IDMINT.DECODE`: a segment ID of that tag.
    tag: Option<Bytes>,
    format: IdFormat,
    /// Whether the command named its `FORMAT` (a dated tag is then not shown as text).
    format_given: bool,
}

/// The option a command takes beside `COUNT` and the form: `SHARD k` (`IDMINT.SNOWFLAKE`),
/// `TAG t` (`IDMINT.DECODE`), or none (`IDMINT.NEXT`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    Nothing,
    Shard,
    Tag,
}

impl Session {
    /// Reads `[COUNT n] [SHARD k | TAG t] [FORMAT f] [PREFIX p] [WIDTH n]` (`SHARD` or `TAG`
    /// as `extra` allows; `PREFIX` and `WIDTH` only with a text form), in any order, writing
    /// the error reply and returning `None` for anything else.
    fn options(&self, args: &[Bytes], extra: Extra, out: &mut BytesMut) -> Option<Options> {
        let mut options = Options {
            count: None,
            shard: None,
            tag: None,
            format: self.format.clone(),
            format_given: false,
        };
        let (mut prefix, mut width) = (None, None);
        let mut words = args.iter();
        while let Some(option) = words.next() {
            let Some(value) = words.next() else {
                encode::error(out, SYNTAX_ERROR);
                return None;
            };
            if option.eq_ignore_ascii_case(b"COUNT") {
                let max = self.shared.options.max_count;
                options.count = Some(reply::parse_count(out, value, "COUNT", max)?);
            } else if extra == Extra::Tag && option.eq_ignore_ascii_case(b"TAG") {
                options.tag = Some(value.clone());
            } else if extra == Extra::Shard && option.eq_ignore_ascii_case(b"SHARD") {
                let Some(k) = reply::parse_u64(value) else {
                    encode::error(out, NOT_AN_INTEGER);
                    return None;
                };
                options.shard = Some(k);
            } else if option.eq_ignore_ascii_case(b"FORMAT") {
                let Some(format) = IdFormat::parse(value) else {
                    encode::error(out, BAD_FORMAT);
                    return None;
                };
                options.format = format;
                options.format_given = true;
            } else if option.eq_ignore_ascii_case(b"PREFIX") {
                prefix = Some(value.as_ref());
            } else if option.eq_ignore_ascii_case(b"WIDTH") {
                let Some(w) = reply::parse_u64(value) else {
                    encode::error(out, NOT_AN_INTEGER);
                    return None;
                };
                width = Some(w);
            } else {
                encode::error(out, SYNTAX_ERROR);
                return None;
            }
        }
        match options.format.refined(prefix, width) {
            Ok(format) => options.format = format,
            Err(message) => {
                encode::error(out, &message);
                return None;
            }
        }
        Some(options)
    }
}

impl Session {
    /// `INCR tag`: the next segment ID, an integer like Redis' counter (a dated tag's too).
    pub(super) async fn incr(&mut self, tag: &[u8], out: &mut BytesMut) {
        self.next_one(tag, false, out).await;
    }

    /// The next segment ID of `tag`, in the connection's format; with `dated_text`, a dated
    /// tag shown as text answers in its text form (`IDMINT.NEXT tag` without `FORMAT`).
    async fn next_one(&mut self, tag: &[u8], dated_text: bool, out: &mut BytesMut) {
        let result: Result<(u64, Option<IdFormat>)> = async {
            let entry = self
                .tags
                .resolve(&self.shared.ids, tag, self.grant.as_deref())
                .await?;
            let id = match entry.buffer.try_next() {
                Some(id) => id,
                None => entry.buffer.next().await?,
            };
            entry.issued(1);
            let shown = dated_text.then(|| dated_format(&entry.buffer)).flatten();
            Ok((entry.publisher.publish(id), shown))
        }
        .await;
        match result {
            Ok((id, shown)) => reply::id(out, id, shown.as_ref().unwrap_or(&self.format)),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `INCRBY tag n`: `n` contiguous IDs; the reply is the last, so the run is
    /// `last - n + 1 ..= last`, as with Redis' counter. On a permuted namespace only `n = 1`:
    /// the public values of a run are not a run.
    pub(super) async fn incr_by(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let [_, tag, n] = args else {
            return wrong_arity(out, "incrby");
        };
        let max = self.shared.options.max_count;
        let Some(n) = reply::parse_count(out, n, "increment", max) else {
            return;
        };
        if n > 1 && self.shared.ids.is_permuted() {
            return reply::permuted(out);
        }
        let result: Result<u64> = async {
            let entry = self
                .tags
                .resolve(&self.shared.ids, tag, self.grant.as_deref())
                .await?;
            let run = entry.buffer.take_contiguous(n).await?;
            entry.issued(run.end.saturating_sub(run.start));
            Ok(entry.publisher.publish(run.end.saturating_sub(1)))
        }
        .await;
        match result {
            Ok(last) => reply::id(out, last, &self.format),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.SNOWFLAKE [COUNT n] [SHARD k] [FORMAT f [PREFIX p] [WIDTH n]]`.
    pub(super) async fn snowflake(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let args = args.get(1..).unwrap_or_default();
        let Some(options) = self.options(args, Extra::Shard, out) else {
            return;
        };
        let count = options.count;
        let shard = options.shard.unwrap_or(0);
        match self.shared.ids.snowflakes(count.unwrap_or(1), shard).await {
            Ok(mut batch) => {
                let issued = batch.len() as u64;
                let ids = &self.shared.ids;
                if count.is_some() {
                    let largest = batch.last_id();
                    reply::ids(
                        out,
                        batch.map(|id| ids.publish_snowflake(id)),
                        largest,
                        &options.format,
                    );
                } else {
                    match batch.next() {
                        Some(id) => reply::id(out, ids.publish_snowflake(id), &options.format),
                        None => encode::error(out, "ERR no snowflake was issued"),
                    }
                }
                self.snowflakes_pending += issued;
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.NEXT tag [COUNT n] [FORMAT f [PREFIX p] [WIDTH n]]`.
    pub(super) async fn next(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(tag) = args.get(1) else {
            return wrong_arity(out, "idmint.next");
        };
        let Some(options) = self.options(args.get(2..).unwrap_or_default(), Extra::Nothing, out)
        else {
            return;
        };
        let dated_text = !options.format_given;
        let Some(count) = options.count else {
            let format = std::mem::replace(&mut self.format, options.format);
            self.next_one(tag, dated_text, out).await;
            self.format = format;
            return;
        };
        let result = async {
            let entry = self
                .tags
                .resolve(&self.shared.ids, tag, self.grant.as_deref())
                .await?;
            let runs = entry.buffer.next_many(count).await?;
            let total: u64 = runs.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            entry.issued(total);
            let shown = dated_text.then(|| dated_format(&entry.buffer)).flatten();
            Ok::<_, idmint_core::Error>((runs, entry.publisher.clone(), shown))
        }
        .await;
        match result {
            Ok((runs, publisher, shown)) => {
                let (ids, largest) = reply::RunIds::new(runs);
                let public = ids.map(|id| publisher.publish(id));
                reply::ids(
                    out,
                    public,
                    largest,
                    shown.as_ref().unwrap_or(&options.format),
                );
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.FORMAT [INTEGER|STRING|DECIMAL|BASE62|BASE36|BASE32 [PREFIX p] [WIDTH n]]`:
    /// sets how this connection's ID replies are written (`+OK`), or, without an argument,
    /// answers the current choice. Lasts until the connection closes or sends `RESET`; a client
    /// that reconnects must send it again.
    pub(super) fn format(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(word) = args.get(1) else {
            return encode::bulk(out, self.format.name().as_bytes());
        };
        let Some(format) = IdFormat::parse(word) else {
            return encode::error(out, BAD_FORMAT);
        };
        let (mut prefix, mut width) = (None, None);
        let mut words = args.get(2..).unwrap_or_default().iter();
        while let Some(option) = words.next() {
            match (option, words.next()) {
                (o, Some(v)) if o.eq_ignore_ascii_case(b"PREFIX") => prefix = Some(v.as_ref()),
                (o, Some(v)) if o.eq_ignore_ascii_case(b"WIDTH") => {
                    let Some(w) = reply::parse_u64(v) else {
                        return encode::error(out, NOT_AN_INTEGER);
                    };
                    width = Some(w);
                }
                _ => return encode::error(out, SYNTAX_ERROR),
            }
        }
        match format.refined(prefix, width) {
            Ok(format) => {
                self.format = format;
                encode::ok(out);
            }
            Err(message) => encode::error(out, &message),
        }
    }

    /// `GET tag`: the tag's counter on this node, as a bulk string like Redis' `GET` of a
    /// counter (the next `INCR tag` here answers a larger number); null when this node has not
    /// loaded the tag. It takes no ID, creates no tag and asks no store, so it tells nothing
    /// of other nodes.
    pub(super) fn get(&mut self, args: &[Bytes], out: &mut BytesMut) {
        if self.shared.ids.is_permuted() {
            // The counter is the volume a permutation hides.
            return encode::error(
                out,
                "ERR permuted this namespace hands out its IDs permuted: a tag's counter is not \
                 shown",
            );
        }
        let raw = args.get(1).map_or(&[][..], |a| a);
        let counter = std::str::from_utf8(raw)
            .ok()
            .and_then(|name| idmint_core::Tag::new(name).ok())
            .and_then(|tag| self.shared.ids.segments().loaded(&tag))
            .and_then(|buffer| buffer.counter());
        match counter.and_then(|n| i64::try_from(n).ok()) {
            Some(n) => encode::bulk_integer(out, n),
            None => encode::null(out, self.protocol),
        }
    }

    /// `IDMINT.DECODE id`: the ID taken apart with the layout of the space that issued it, as
    /// a map (field/value pairs in RESP2, what `HGETALL` returns, so clients read it into a
    /// map either way).
    pub(super) fn decode(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(text) = args.get(1) else {
            return wrong_arity(out, "idmint.decode");
        };
        // `[FORMAT f [PREFIX p] [WIDTH n]]`, or the connection's format: the ID as that form
        // writes it.
        let Some(options) = self.options(args.get(2..).unwrap_or_default(), Extra::Tag, out) else {
            return;
        };
        if options.count.is_some() {
            return encode::error(out, SYNTAX_ERROR);
        }
        let id = match &options.format {
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
        if let Some(raw) = &options.tag {
            return self.decode_segment(id, raw, &options.format, out);
        }
        let decoded = match self.shared.ids.decode(id) {
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
        let format = options.format;
        encode::map_header(out, self.protocol, 6 + present);
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

impl Session {
    /// `IDMINT.DECODE id TAG t`: a segment ID of tag `t`, as a map of `id`, `tag` and
    /// `plain_id` (its number in the tag; the ID itself on a node that hands out plain IDs).
    fn decode_segment(&mut self, id: u64, raw: &[u8], format: &IdFormat, out: &mut BytesMut) {
        let tag = match idmint_core::Tag::from_bytes(raw) {
            Ok(tag) => tag,
            Err(error) => return reply::service_error(out, &error),
        };
        let plain = self.shared.ids.tag_publisher(&tag).restore(id);
        encode::map_header(out, self.protocol, 3);
        encode::bulk(out, b"id");
        reply::id(out, id, format);
        encode::bulk(out, b"tag");
        encode::bulk(out, tag.as_str().as_bytes());
        encode::bulk(out, b"plain_id");
        reply::id(out, plain, &IdFormat::Integer);
    }
}

/// How `IDMINT.NEXT` shows a dated tag's IDs when no `FORMAT` is named: in its text form when
/// the tag was made to be shown so; `None` for every other tag.
fn dated_format(buffer: &TagBuffer) -> Option<IdFormat> {
    buffer
        .dating()
        .filter(|dating| dating.form() == DatedForm::Text)
        .map(|dating| IdFormat::Dated(*dating))
}
