//! `INCR`, `INCRBY` and `GET`: a tag's segment IDs as Redis' counter commands answer them.

use bytes::{Bytes, BytesMut};
use idmint_core::{DatedForm, Result};
use idmint_resp::encode;

use super::args::{self, Refusal};
use crate::ids::TagBuffer;
use crate::resp::reply::{self, IdFormat};
use crate::resp::session::Session;

/// `INCR tag`: the next segment ID, an integer like Redis' counter (a dated tag's too).
#[derive(Debug)]
pub(super) struct Incr<'a> {
    pub(super) tag: &'a [u8],
}

impl<'a> Incr<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        match params {
            [tag] => Ok(Self { tag }),
            _ => Err(Refusal::Arity("incr")),
        }
    }

    /// Without waiting: an ID this connection's cached buffer of the tag holds in memory,
    /// with no lock and no allocation (the hot path). `false`: run [`apply`](Self::apply).
    #[inline]
    pub(super) fn apply_now(&self, session: &mut Session, out: &mut BytesMut) -> bool {
        let Some(entry) = session.tags.get(self.tag) else {
            return false;
        };
        let Some(id) = entry.buffer.try_next() else {
            return false;
        };
        entry.issued(1);
        reply::id(out, entry.publisher.publish(id), &session.format);
        true
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        next_one(session, self.tag, false, None, out).await;
    }
}

/// The next segment ID of `tag`, in `format` (`None`: the connection's); with `dated_text`, a
/// dated tag shown as text answers in its text form (`IDMINT.NEXT tag` without `FORMAT`).
pub(super) async fn next_one(
    session: &mut Session,
    tag: &[u8],
    dated_text: bool,
    format: Option<&IdFormat>,
    out: &mut BytesMut,
) {
    let result: Result<(u64, Option<IdFormat>)> = async {
        let entry = session
            .tags
            .resolve(&session.shared.ids, tag, session.grant.as_deref())
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
        Ok((id, shown)) => {
            let format = shown.as_ref().or(format).unwrap_or(&session.format);
            reply::id(out, id, format);
        }
        Err(error) => reply::service_error(out, &error),
    }
}

/// How `IDMINT.NEXT` shows a dated tag's IDs when no `FORMAT` is named: in its text form when
/// the tag was made to be shown so; `None` for every other tag.
pub(super) fn dated_format(buffer: &TagBuffer) -> Option<IdFormat> {
    buffer
        .dating()
        .filter(|dating| dating.form() == DatedForm::Text)
        .map(|dating| IdFormat::Dated(*dating))
}

/// `INCRBY tag n`: `n` contiguous IDs; the reply is the last, so the run is
/// `last - n + 1 ..= last`, as with Redis' counter. On a permuted namespace only `n = 1`: the
/// public values of a run are not a run.
#[derive(Debug)]
pub(super) struct IncrBy<'a> {
    pub(super) tag: &'a [u8],
    n: u64,
}

impl<'a> IncrBy<'a> {
    /// `n` in `1..=max_count`.
    pub(super) fn parse(params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        let [tag, n] = params else {
            return Err(Refusal::Arity("incrby"));
        };
        let n = args::count(n, "increment", max_count)?;
        Ok(Self { tag, n })
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        if self.n > 1 && session.shared.ids.is_permuted() {
            return reply::permuted(out);
        }
        let result: Result<u64> = async {
            let entry = session
                .tags
                .resolve(&session.shared.ids, self.tag, session.grant.as_deref())
                .await?;
            let run = entry.buffer.take_contiguous(self.n).await?;
            entry.issued(run.end.saturating_sub(run.start));
            Ok(entry.publisher.publish(run.end.saturating_sub(1)))
        }
        .await;
        match result {
            Ok(last) => reply::id(out, last, &session.format),
            Err(error) => reply::service_error(out, &error),
        }
    }
}

/// `GET tag`: the tag's counter on this node, as a bulk string like Redis' `GET` of a counter
/// (the next `INCR tag` here answers a larger number); null when this node has not loaded the
/// tag. It takes no ID, creates no tag and asks no store, so it tells nothing of other nodes.
#[derive(Debug)]
pub(super) struct Get<'a> {
    tag: &'a [u8],
}

impl<'a> Get<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        match params {
            [tag] => Ok(Self { tag }),
            _ => Err(Refusal::Arity("get")),
        }
    }

    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let ids = &session.shared.ids;
        if ids.is_permuted() {
            // The counter is the volume a permutation hides.
            return encode::error(
                out,
                "ERR permuted this namespace hands out its IDs permuted: a tag's counter is not \
                 shown",
            );
        }
        let counter = std::str::from_utf8(self.tag)
            .ok()
            .and_then(|name| idmint_core::Tag::new(name).ok())
            .and_then(|tag| ids.segments().loaded(&tag))
            .and_then(|buffer| buffer.counter());
        match counter.and_then(|n| i64::try_from(n).ok()) {
            Some(n) => encode::bulk_integer(out, n),
            None => encode::null(out, session.protocol),
        }
    }
}
