//! The ID commands: `INCR`, `INCRBY`, `IDMINT.SNOWFLAKE`, `IDMINT.NEXT`, `IDMINT.DECODE`.

use bytes::BytesMut;
use idmint_core::Result;
use idmint_resp::encode;

use super::wrong_arity;
use crate::resp::connection::Session;
use crate::resp::reply::{self, NOT_AN_INTEGER, SYNTAX_ERROR};

impl Session {
    /// `INCR tag` and `IDMINT.NEXT tag`: the next segment ID.
    pub(super) async fn incr(&mut self, tag: &[u8], out: &mut BytesMut) {
        let result: Result<u64> = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let id = match entry.buffer.try_next() {
                Some(id) => id,
                None => entry.buffer.next().await?,
            };
            entry.issued(1);
            Ok(id)
        }
        .await;
        match result {
            Ok(id) => reply::id(out, id),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `INCRBY tag n`: `n` contiguous IDs; the reply is the last, so the run is
    /// `last - n + 1 ..= last`, as with Redis' counter.
    pub(super) async fn incr_by(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let [_, tag, n] = args else {
            return wrong_arity(out, "incrby");
        };
        let max = self.shared.options.max_count;
        let Some(n) = reply::parse_count(out, n, "increment", max) else {
            return;
        };
        let result: Result<u64> = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let run = entry.buffer.take_contiguous(n).await?;
            entry.issued(run.end.saturating_sub(run.start));
            Ok(run.end.saturating_sub(1))
        }
        .await;
        match result {
            Ok(last) => reply::id(out, last),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.SNOWFLAKE [COUNT n] [SHARD k]`.
    pub(super) async fn snowflake(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let mut count = None;
        let mut shard = 0;
        let mut options = args.get(1..).unwrap_or_default().iter();
        while let Some(option) = options.next() {
            let Some(value) = options.next() else {
                return encode::error(out, SYNTAX_ERROR);
            };
            if option.eq_ignore_ascii_case(b"COUNT") {
                let max = self.shared.options.max_count;
                match reply::parse_count(out, value, "COUNT", max) {
                    Some(n) => count = Some(n),
                    None => return,
                }
            } else if option.eq_ignore_ascii_case(b"SHARD") {
                match reply::parse_u64(value) {
                    Some(k) => shard = k,
                    None => return encode::error(out, NOT_AN_INTEGER),
                }
            } else {
                return encode::error(out, SYNTAX_ERROR);
            }
        }
        match self.shared.ids.snowflakes(count.unwrap_or(1), shard).await {
            Ok(mut batch) => {
                let issued = batch.len() as u64;
                if count.is_some() {
                    let largest = batch.last_id();
                    reply::ids(out, batch, largest);
                } else {
                    match batch.next() {
                        Some(id) => reply::id(out, id),
                        None => encode::error(out, "ERR no snowflake was issued"),
                    }
                }
                self.snowflakes_pending += issued;
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.NEXT tag [COUNT n]`.
    pub(super) async fn next(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let (tag, count) = match args {
            [_, tag] => (tag, None),
            [_, tag, option, value] if option.eq_ignore_ascii_case(b"COUNT") => {
                let max = self.shared.options.max_count;
                match reply::parse_count(out, value, "COUNT", max) {
                    Some(n) => (tag, Some(n)),
                    None => return,
                }
            }
            _ => return encode::error(out, SYNTAX_ERROR),
        };
        let Some(count) = count else {
            return self.incr(tag, out).await;
        };
        let result = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let runs = entry.buffer.next_many(count).await?;
            let total: u64 = runs.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            entry.issued(total);
            Ok::<_, idmint_core::Error>(runs)
        }
        .await;
        match result {
            Ok(runs) => {
                let (ids, largest) = reply::RunIds::new(runs);
                reply::ids(out, ids, largest);
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.DECODE id`: the ID taken apart with the layout of the space that issued it, as
    /// field/value pairs
    /// (what `HGETALL` returns, so clients read it into a map).
    pub(super) fn decode(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let Some(id) = args.get(1).and_then(|a| reply::parse_u64(a)) else {
            return encode::error(out, NOT_AN_INTEGER);
        };
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
            + usize::from(decoded.id_space.is_some());
        encode::array_header(out, 2 * (6 + present));
        encode::bulk(out, b"id");
        reply::id(out, id);
        encode::bulk(out, b"layout");
        encode::bulk(out, decoded.layout.as_bytes());
        encode::bulk(out, b"time");
        encode::bulk(out, decoded.time.as_bytes());
        encode::bulk(out, b"unix_ms");
        reply::id(out, decoded.unix_ms);
        encode::bulk(out, b"tick");
        reply::id(out, decoded.tick);
        for (field, value) in optional {
            if let Some(value) = value {
                encode::bulk(out, field.as_bytes());
                reply::id(out, value);
            }
        }
        encode::bulk(out, b"seq");
        reply::id(out, decoded.seq);
        if let Some(version) = decoded.id_space {
            encode::bulk(out, b"id_space");
            reply::id(out, version);
        }
    }
}
