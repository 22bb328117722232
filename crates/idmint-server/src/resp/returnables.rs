//! What `IDMINT.GIVEBACK` may return on one connection: the runs it took last (see
//! `cmd::ranges`). Only the connection a run was handed to may return it, so one client cannot
//! make a node reissue another's IDs. A connection keeps this for its last [`REMEMBERED`]
//! tags; `RESET` and `AUTH` forget it.

use std::ops::Range;
use std::sync::Arc;

use idmint_core::{SegmentBuffer, Tag};

/// Tags whose last runs a connection can give back: a client holds a range or two of each tag
/// it uses, and gives them all back when it closes.
const REMEMBERED: usize = 8;

/// What `IDMINT.GIVEBACK` may return on one connection: per tag, the contiguous runs it took
/// last, for its last [`REMEMBERED`] tags (the oldest forgotten first).
#[derive(Debug, Default)]
pub(super) struct Returnables(Vec<Returnable>);

impl Returnables {
    /// Forgets everything (`RESET`, a new grant).
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    /// Takes the record of `raw`'s runs out.
    pub(super) fn take(&mut self, raw: &[u8]) -> Option<Returnable> {
        let i = self
            .0
            .iter()
            .position(|r| r.tag.as_str().as_bytes() == raw)?;
        Some(self.0.remove(i))
    }

    /// Records a run, joined to the previous one of its tag when it continues it.
    pub(super) fn remember(&mut self, tag: &Tag, from: Source, run: Range<u64>) {
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

    /// Keeps `record` again (what was not given back of it), unless full.
    pub(super) fn put_back(&mut self, record: Returnable) {
        if self.0.len() < REMEMBERED {
            self.0.push(record);
        }
    }
}

/// The runs of one tag a connection took last, as long as they are contiguous.
#[derive(Debug)]
pub(super) struct Returnable {
    pub(super) tag: Tag,
    pub(super) from: Source,
    pub(super) run: Range<u64>,
}

/// Where a run came from, so it goes back there.
#[derive(Debug)]
pub(super) enum Source {
    /// The node's buffer of the tag.
    Buffer(Arc<SegmentBuffer>),
    /// The store, directly (`ABOVE` on a node whose buffer was behind).
    Store,
}

impl Source {
    /// Whether both are the same buffer, or both the store.
    fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Buffer(a), Source::Buffer(b)) => Arc::ptr_eq(a, b),
            (Source::Store, Source::Store) => true,
            _ => false,
        }
    }
}
