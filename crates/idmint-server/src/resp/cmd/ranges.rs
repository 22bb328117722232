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
//! handed to may return it, so one client cannot make a node reissue another's IDs. A
//! connection keeps this for its last [`REMEMBERED`] tags; `RESET` and `AUTH` forget it.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use idmint_core::{Error, Result, SegmentBuffer, Tag};
use idmint_resp::encode;

use super::wrong_arity;
use crate::ids::TagBuffer;
use crate::resp::connection::Session;
use crate::resp::reply::{self, NOT_AN_INTEGER, SYNTAX_ERROR};

/// Tags whose last runs a connection can give back: a client holds a range or two of each tag
/// it uses, and gives them all back when it closes.
const REMEMBERED: usize = 8;

/// What `IDMINT.GIVEBACK` may return on one connection: per tag, the contiguous runs it took
/// last, for its last [`REMEMBERED`] tags (the oldest forgotten first).
#[derive(Debug, Default)]
pub(in crate::resp) struct Returnables(Vec<Returnable>);

impl Returnables {
    /// Forgets everything (`RESET`, a new grant).
    pub(in crate::resp) fn clear(&mut self) {
        self.0.clear();
    }

    /// Takes the record of `raw`'s runs out.
    fn take(&mut self, raw: &[u8]) -> Option<Returnable> {
        let i = self
            .0
            .iter()
            .position(|r| r.tag.as_str().as_bytes() == raw)?;
        Some(self.0.remove(i))
    }

    /// Records a run, joined to the previous one of its tag when it continues it.
    fn remember(&mut self, tag: &Tag, from: Source, run: Range<u64>) {
        let mut record = self.take(tag.as_str().as_bytes());
        match &mut record {
            Some(last) if last.from.same(&from) && last.run.end == run.start => {
                last.run.end = run.end;
            }
            _ => {
                record = Some(Returnable {
                    tag: tag.clone(),
                    from,
                    run,
                })
            }
        }
        if self.0.len() >= REMEMBERED {
            self.0.remove(0);
        }
        self.0.extend(record);
    }

    fn put_back(&mut self, record: Returnable) {
        if self.0.len() < REMEMBERED {
            self.0.push(record);
        }
    }
}

/// The runs of one tag a connection took last, as long as they are contiguous.
#[derive(Debug)]
struct Returnable {
    tag: Tag,
    from: Source,
    run: Range<u64>,
}

/// Where a run came from, so it goes back there.
#[derive(Debug)]
enum Source {
    /// The node's buffer of the tag.
    Buffer(Arc<SegmentBuffer>),
    /// The store, directly (`ABOVE` on a node whose buffer was behind).
    Store,
}

impl Source {
    fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Buffer(a), Source::Buffer(b)) => Arc::ptr_eq(a, b),
            (Source::Store, Source::Store) => true,
            _ => false,
        }
    }
}

impl Session {
    /// `IDMINT.RANGE tag n [ABOVE id]`.
    pub(super) async fn range(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let (tag, n, options) = match args {
            [_, tag, n, options @ ..] => (tag, n, options),
            _ => return wrong_arity(out, "idmint.range"),
        };
        let max = self.shared.options.max_count;
        let Some(n) = reply::parse_count(out, n, "count", max) else {
            return;
        };
        if self.shared.ids.is_permuted() {
            return reply::permuted(out);
        }
        let floor = match options {
            [] => None,
            [word, id] if word.eq_ignore_ascii_case(b"ABOVE") => match reply::parse_u64(id) {
                Some(id) => Some(id),
                None => return encode::error(out, NOT_AN_INTEGER),
            },
            _ => return encode::error(out, SYNTAX_ERROR),
        };
        match self.take_range(tag, n, floor).await {
            Ok(run) => {
                encode::array_header(out, 2);
                reply::id(out, run.start, &self.format);
                reply::id(out, run.end - 1, &self.format);
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// The run `IDMINT.RANGE` answers, remembered for `IDMINT.GIVEBACK`.
    async fn take_range(&mut self, raw: &[u8], n: u64, floor: Option<u64>) -> Result<Range<u64>> {
        let entry = self
            .tags
            .resolve(&self.shared.ids, raw, self.grant.as_deref())
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
                let run = self
                    .range_from_store(buffer.tag(), n, floor.unwrap_or(0))
                    .await?;
                if let Some(entry) = self.tags.get(raw) {
                    entry.issued(run.end - run.start);
                }
                (run, Source::Store)
            }
        };
        self.returnable.remember(buffer.tag(), from, run.clone());
        Ok(run)
    }

    /// A run straight from the store, for a floor this node's buffer has not reached. A range
    /// that does not lie wholly above the floor (a floor beyond every ID handed out: no honest
    /// client sends one) is given back at once, so a bad floor burns no IDs.
    async fn range_from_store(&self, tag: &Tag, n: u64, floor: u64) -> Result<Range<u64>> {
        let store = &self.shared.ids.store().segments;
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
    pub(super) async fn give_back(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let [_, tag, first, last] = args else {
            return wrong_arity(out, "idmint.giveback");
        };
        let (Some(first), Some(last)) = (reply::parse_u64(first), reply::parse_u64(last)) else {
            return encode::error(out, NOT_AN_INTEGER);
        };
        if first > last {
            return encode::error(out, "ERR first must not be above last");
        }
        let Some(end) = last.checked_add(1) else {
            return encode::error(out, NOT_AN_INTEGER);
        };
        let returned = first..end;
        let Some(held) = self.returnable.take(tag) else {
            return encode::integer(out, 0);
        };
        if returned.end != held.run.end || returned.start < held.run.start {
            self.returnable.put_back(held);
            return encode::integer(out, 0);
        }
        let taken_back = match &held.from {
            Source::Buffer(buffer) => Ok(buffer.take_back(returned.clone())),
            Source::Store => {
                let store = &self.shared.ids.store().segments;
                store.give_back(&held.tag, returned.clone()).await
            }
        };
        match taken_back {
            Ok(true) => {
                if held.run.start < returned.start {
                    self.returnable.put_back(Returnable {
                        run: held.run.start..returned.start,
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
