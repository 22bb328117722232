//! Each connection's cache of the segment buffers it uses.
//!
//! `INCR tag` is the command `redis-benchmark` hammers, so its hot path must be short: the
//! raw tag bytes are compared with the few tags this connection used last (no `Tag` is built,
//! no lock is taken, nothing is allocated), then the buffer's lock-free `try_next` is one
//! atomic add. Only a tag the connection has not used yet goes through the registry (a
//! read-locked map, or the store for a tag seen for the first time).
//!
//! IDs issued are counted here too, in `idmint_ids_issued_total{kind="segment",tag}`: the
//! counts are added up per entry and sent to the metrics recorder once per batch of pipelined
//! commands ([`TagCache::flush_metrics`]), not once per ID.

use idmint_core::{Error, Result, Tag};

use crate::auth::Grant;
use crate::ids::{Asker, Ids, Publisher, TagBuffer};
use crate::telemetry;

/// Most tags one connection keeps at hand; using more only costs a registry lookup each.
const CAPACITY: usize = 8;

/// One tag's buffer and its metric.
pub(super) struct TagEntry {
    pub(super) buffer: TagBuffer,
    /// How the tag's IDs are handed out (its permutation, derived once per connection).
    pub(super) publisher: Publisher,
    issued: metrics::Counter,
    /// IDs issued since the last flush.
    pending: u64,
}

impl TagEntry {
    /// Counts `n` IDs issued (sent to the recorder at the next flush).
    #[inline]
    pub(super) fn issued(&mut self, n: u64) {
        self.pending += n;
    }

    fn flush(&mut self) {
        if self.pending > 0 {
            self.issued.increment(self.pending);
            self.pending = 0;
        }
    }
}

/// The buffers of the tags a connection used last, most recent first.
#[derive(Default)]
pub(super) struct TagCache {
    entries: Vec<TagEntry>,
}

impl TagCache {
    /// The cached entry of the tag spelled `raw`, if any. The common case, a connection
    /// reusing its last tag, compares one short byte string.
    #[inline]
    pub(super) fn get(&mut self, raw: &[u8]) -> Option<&mut TagEntry> {
        let i = self
            .entries
            .iter()
            .position(|e| e.buffer.tag().as_str().as_bytes() == raw)?;
        if i > 0 {
            // Keep the most recently used tags at the front.
            self.entries[..=i].rotate_right(1);
        }
        self.entries.first_mut()
    }

    /// Whether the tag spelled `raw` is cached (without moving it to the front).
    pub(super) fn contains(&self, raw: &[u8]) -> bool {
        self.entries
            .iter()
            .any(|e| e.buffer.tag().as_str().as_bytes() == raw)
    }

    /// The entry of the tag spelled `raw`, from the cache or the registry (which creates the
    /// tag's buffer, and the tag itself when allowed, on first use, within the quota of the
    /// connection's `grant`: `None` only when no token is configured). Fails for an invalid
    /// tag name, an unknown tag when tags are not created on first use, a quota, or the
    /// store's error.
    pub(super) async fn resolve(
        &mut self,
        ids: &Ids,
        raw: &[u8],
        grant: Option<&Grant>,
    ) -> Result<&mut TagEntry> {
        if self.get(raw).is_none() {
            let tag = Tag::from_bytes(raw)?;
            let asker = grant.map_or(Asker::Operator, Asker::of);
            let buffer = ids.segments().buffer(&tag, asker).await?;
            let issued = telemetry::segment_counter(&tag);
            let publisher = ids.tag_publisher(&tag);
            if self.entries.len() >= CAPACITY {
                if let Some(mut evicted) = self.entries.pop() {
                    evicted.flush();
                }
            }
            self.entries.insert(
                0,
                TagEntry {
                    buffer,
                    publisher,
                    issued,
                    pending: 0,
                },
            );
        }
        self.entries.first_mut().ok_or_else(|| {
            // Unreachable: the entry was found or just inserted at the front.
            Error::UnknownTag {
                tag: String::from_utf8_lossy(raw).into_owned(),
            }
        })
    }

    /// Forgets every entry (after reporting their counts): the connection's grant changed.
    pub(super) fn clear(&mut self) {
        self.flush_metrics();
        self.entries.clear();
    }

    /// Sends the counts of IDs issued since the last flush to the metrics recorder.
    pub(super) fn flush_metrics(&mut self) {
        for entry in &mut self.entries {
            entry.flush();
        }
    }
}

impl Drop for TagCache {
    /// A closing connection reports what it issued since its last flush.
    fn drop(&mut self) {
        self.flush_metrics();
    }
}
