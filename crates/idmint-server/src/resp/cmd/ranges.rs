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
//! took of `tag`, when nothing was taken after them (1: taken back; 0: not, and nothing
//! changed). Only the connection a run was handed to may return it, so one client cannot
//! make a node reissue another's IDs.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use idmint_core::{Error, Result, SegmentBuffer, Tag};
use idmint_resp::encode;

use super::wrong_arity;
use crate::resp::connection::Session;
use crate::resp::reply::{self, NOT_AN_INTEGER, SYNTAX_ERROR};

/// The runs of one tag this connection took last, as long as they are contiguous: what
/// `IDMINT.GIVEBACK` may return.
#[derive(Debug)]
pub(in crate::resp) struct Returnable {
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
                reply::id(out, run.start, self.format);
                reply::id(out, run.end - 1, self.format);
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// The run `IDMINT.RANGE` answers, remembered for `IDMINT.GIVEBACK`.
    async fn take_range(&mut self, raw: &[u8], n: u64, floor: Option<u64>) -> Result<Range<u64>> {
        let entry = self.tags.resolve(&self.shared.ids, raw).await?;
        let buffer = entry.buffer.clone();
        let behind = floor.is_some_and(|floor| buffer.counter().is_some_and(|c| c < floor));
        let mut taken = None;
        if !behind {
            let run = buffer.take_contiguous(n).await?;
            entry.issued(run.end - run.start);
            if floor.is_none_or(|floor| run.start > floor) {
                taken = Some((run, Source::Buffer(buffer.clone())));
            }
            // Otherwise the run is below the floor (the buffer moved back since the check: it
            // was given back to): it stays unused, a gap, and the store serves instead.
        }
        let (run, from) = match taken {
            Some(taken) => taken,
            None => {
                let tag = buffer.tag();
                let run = self.shared.ids.store().segments.allocate(tag, n).await?;
                let floor = floor.unwrap_or(0);
                let run = run.start.max(floor.saturating_add(1)).max(1)..run.end;
                if run.is_empty() {
                    return Err(Error::InvalidArgument {
                        name: "ABOVE",
                        reason: format!("{floor} is beyond every ID of tag {tag} handed out so far"),
                    });
                }
                if let Some(entry) = self.tags.get(raw) {
                    entry.issued(run.end - run.start);
                }
                (run, Source::Store)
            }
        };
        self.remember(buffer.tag(), from, run.clone());
        Ok(run)
    }

    /// Records a run for `IDMINT.GIVEBACK`, joined to the previous one when it continues it.
    fn remember(&mut self, tag: &Tag, from: Source, run: Range<u64>) {
        if let Some(last) = &mut self.returnable {
            if last.tag == *tag && last.from.same(&from) && last.run.end == run.start {
                last.run.end = run.end;
                return;
            }
        }
        self.returnable = Some(Returnable {
            tag: tag.clone(),
            from,
            run,
        });
    }

    /// `IDMINT.GIVEBACK tag first last`.
    pub(super) async fn give_back(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let [_, tag, first, last] = args else {
            return wrong_arity(out, "idmint.giveback");
        };
        let (Some(first), Some(last)) = (reply::parse_u64(first), reply::parse_u64(last)) else {
            return encode::error(out, NOT_AN_INTEGER);
        };
        if first > last || last == u64::MAX {
            return encode::error(out, "ERR first must not be above last");
        }
        let returned = first..last + 1;
        let Some(held) = self.returnable.take() else {
            return encode::integer(out, 0);
        };
        let ours = held.tag.as_str().as_bytes() == &tag[..]
            && returned.end == held.run.end
            && returned.start >= held.run.start;
        if !ours {
            self.returnable = Some(held);
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
                    self.returnable = Some(Returnable {
                        run: held.run.start..returned.start,
                        ..held
                    });
                }
                encode::integer(out, 1);
            }
            Ok(false) => encode::integer(out, 0),
            Err(error) => reply::service_error(out, &error),
        }
    }
}
