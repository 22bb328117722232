//! `IDMINT.RANGE` and `IDMINT.GIVEBACK`: what a client that keeps IDs in its own memory (the
//! idmint client libraries) needs from a node.
//!
//! `IDMINT.RANGE tag n [ABOVE id]` takes `n` contiguous IDs like `INCRBY`, answered as
//! `[first, last]`. With `ABOVE`, every ID of the run is above `id`: a client that fails over
//! from another node passes the last ID it holds, so its IDs keep increasing although this
//! node's own buffer may be behind the other's. A node whose buffer is behind takes the run
//! straight from the store (whose next range is above every range ever handed out), leaving
//! its buffer alone.
//!
//! `IDMINT.GIVEBACK tag first last` returns the unused tail of the last runs this connection
//! took of `tag` (1: taken back, the node hands those IDs out next; 0: not, when something was
//! taken after them, or the runs are not this connection's). Only the connection a run was
//! handed to may return it, so one client cannot make a node reissue another's IDs (what a
//! connection may return is `crate::resp::returnables`).

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use idmint_core::{Error, Result, Tag};
use idmint_resp::encode;

use super::args::{self, Refusal};
use crate::ids::TagBuffer;
use crate::resp::reply::{self, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::returnables::{Returnable, Source};
use crate::resp::session::Session;

/// `IDMINT.RANGE tag n [ABOVE id]`.
#[derive(Debug)]
pub(super) struct TakeRange<'a> {
    tag: &'a [u8],
    n: u64,
    /// `ABOVE id`, or why it is refused: a node that hands out permuted IDs refuses the
    /// command before it reads `ABOVE`.
    floor: Result<Option<u64>, Refusal<'a>>,
}

impl<'a> TakeRange<'a> {
    /// `n` in `1..=max_count`.
    pub(super) fn parse(params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        let [tag, n, options @ ..] = params else {
            return Err(Refusal::Arity("idmint.range"));
        };
        let n = args::count(n, "count", max_count)?;
        let floor = match options {
            [] => Ok(None),
            [word, id] if word.eq_ignore_ascii_case(b"ABOVE") => args::unsigned(id).map(Some),
            _ => Err(Refusal::Fixed(SYNTAX_ERROR)),
        };
        Ok(Self { tag, n, floor })
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        if session.shared.ids.is_permuted() {
            return reply::permuted(out);
        }
        let floor = match self.floor {
            Ok(floor) => floor,
            Err(refusal) => return refusal.write(out),
        };
        match take_range(session, self.tag, self.n, floor).await {
            Ok(run) => {
                encode::array_header(out, 2);
                reply::id(out, run.start, &session.format);
                reply::id(out, run.end - 1, &session.format);
            }
            Err(error) => reply::service_error(out, &error),
        }
    }
}

/// The run `IDMINT.RANGE` answers, remembered for `IDMINT.GIVEBACK`.
async fn take_range(
    session: &mut Session,
    raw: &[u8],
    n: u64,
    floor: Option<u64>,
) -> Result<Range<u64>> {
    let entry = session
        .tags
        .resolve(&session.shared.ids, raw, session.grant.as_deref())
        .await?;
    let buffer = match &entry.buffer {
        TagBuffer::Plain(buffer) => Arc::clone(buffer),
        TagBuffer::Dated(dated) => {
            return Err(Error::DatedRangeRefused {
                tag: dated.tag().to_string(),
            })
        }
    };
    let behind = floor.is_some_and(|floor| buffer.counter().is_some_and(|c| c < floor));
    let mut taken = None;
    if !behind {
        let run = buffer.take_contiguous(n).await?;
        if floor.is_none_or(|floor| run.start > floor) {
            entry.issued(run.end - run.start);
            taken = Some((run, Source::Buffer(buffer.clone())));
        } else {
            // Below the floor (the buffer was given back to since the check): never
            // handed out, so it goes back, and the store serves instead.
            buffer.take_back(run);
        }
    }
    let (run, from) = match taken {
        Some(taken) => taken,
        None => {
            let run = range_from_store(session, buffer.tag(), n, floor.unwrap_or(0)).await?;
            if let Some(entry) = session.tags.get(raw) {
                entry.issued(run.end - run.start);
            }
            (run, Source::Store)
        }
    };
    session.returnable.remember(buffer.tag(), from, run.clone());
    Ok(run)
}

/// A run straight from the store, for a floor this node's buffer has not reached. A range
/// that does not lie wholly above the floor (a floor beyond every ID handed out: no honest
/// client sends one) is given back at once, so a bad floor burns no IDs.
async fn range_from_store(session: &Session, tag: &Tag, n: u64, floor: u64) -> Result<Range<u64>> {
    let store = &session.shared.ids.store().segments;
    let run = store.allocate(tag, n).await?;
    if run.start > floor {
        return Ok(run);
    }
    store.give_back(tag, run).await?;
    Err(Error::InvalidArgument {
        name: "ABOVE",
        reason: format!("{floor} is beyond every ID of tag {tag} handed out so far"),
    })
}

/// `IDMINT.GIVEBACK tag first last`.
#[derive(Debug)]
pub(super) struct GiveBack<'a> {
    tag: &'a [u8],
    /// `first..last + 1`.
    returned: Range<u64>,
}

impl<'a> GiveBack<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        let [tag, first, last] = params else {
            return Err(Refusal::Arity("idmint.giveback"));
        };
        let (Some(first), Some(last)) = (reply::parse_u64(first), reply::parse_u64(last)) else {
            return Err(Refusal::Fixed(NOT_AN_INTEGER));
        };
        if first > last {
            return Err(Refusal::Fixed("ERR first must not be above last"));
        }
        let end = last.checked_add(1).ok_or(Refusal::Fixed(NOT_AN_INTEGER))?;
        Ok(Self {
            tag,
            returned: first..end,
        })
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let Some(held) = session.returnable.take(self.tag) else {
            return encode::integer(out, 0);
        };
        if self.returned.end != held.run.end || self.returned.start < held.run.start {
            session.returnable.put_back(held);
            return encode::integer(out, 0);
        }
        let taken_back = match &held.from {
            Source::Buffer(buffer) => Ok(buffer.take_back(self.returned.clone())),
            Source::Store => {
                let store = &session.shared.ids.store().segments;
                store.give_back(&held.tag, self.returned.clone()).await
            }
        };
        match taken_back {
            Ok(true) => {
                if held.run.start < self.returned.start {
                    session.returnable.put_back(Returnable {
                        run: held.run.start..self.returned.start,
                        ..held
                    });
                }
                encode::integer(out, 1);
            }
            // Something was taken after the runs: nothing of them can come back any more. After
            // a store error the record is dropped too: whether the store took them is unknown,
            // and a second try could lower its counter under another node's range.
            Ok(false) => encode::integer(out, 0),
            Err(error) => reply::service_error(out, &error),
        }
    }
}
