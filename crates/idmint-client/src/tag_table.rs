//! The client's buffers by tag name, found on every `next(tag)` with plain loads.
//!
//! `next(tag)` must cost little more than the buffer's own atomic add, so finding the buffer
//! takes no lock and writes no shared memory (a reference count, a reader count, a hazard
//! slot): any of those costs as much as the add itself, and more once threads share it. The
//! first [`SLOTS`] tags go into a fixed table of slots that are each set once and never
//! change (`OnceLock`): a lookup hashes the name and reads a slot or two. Tags beyond it (a
//! client of many tags) go into a map copied on each new tag, read through `ArcSwap`.
//!
//! Slots are filled under the caller's lock, in probe order, so a lookup that reaches an empty
//! slot knows the tag is not in the table. Names come from the program, not from an attacker,
//! so a fast hash with a fixed seed is fine.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use idmint_core::SegmentBuffer;

/// Tags served from the fixed table.
const SLOTS: usize = 64;
/// Slots a tag may be placed in from its hash (linear probing).
const PROBES: usize = 4;

type Entry = (Box<str>, Arc<SegmentBuffer>);
type Overflow = HashMap<Box<str>, Arc<SegmentBuffer>, foldhash::fast::FixedState>;

/// Buffers by tag name.
pub(crate) struct TagTable {
    slots: Box<[OnceLock<Entry>]>,
    overflow: ArcSwap<Overflow>,
    hasher: foldhash::fast::FixedState,
}

impl TagTable {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            overflow: ArcSwap::from_pointee(Overflow::default()),
            hasher: foldhash::fast::FixedState::default(),
        }
    }

    /// The slots `tag` may be in, in probe order.
    #[inline]
    fn probes(&self, tag: &str) -> impl Iterator<Item = &OnceLock<Entry>> {
        let start = self.hasher.hash_one(tag) as usize;
        (0..PROBES).filter_map(move |k| self.slots.get((start + k) % SLOTS))
    }

    /// Runs `f` on the buffer of `tag`, if there is one.
    #[inline]
    pub(crate) fn with<R>(&self, tag: &str, f: impl FnOnce(&Arc<SegmentBuffer>) -> R) -> Option<R> {
        for slot in self.probes(tag) {
            match slot.get() {
                Some((name, buffer)) if **name == *tag => return Some(f(buffer)),
                Some(_) => continue,
                None => return None,
            }
        }
        self.overflow.load().get(tag).map(f)
    }

    /// Adds `tag`'s buffer. Callers hold one lock around [`with`](Self::with)-then-`insert`,
    /// so a tag is added once.
    pub(crate) fn insert(&self, tag: &str, buffer: Arc<SegmentBuffer>) {
        for slot in self.probes(tag) {
            if slot.get().is_none() {
                // Empty, and only this (locked) caller fills slots: it is ours.
                let _ = slot.set((tag.into(), buffer));
                return;
            }
        }
        let mut map = Overflow::clone(&self.overflow.load());
        map.insert(tag.into(), buffer);
        self.overflow.store(Arc::new(map));
    }

    /// Every buffer.
    pub(crate) fn all(&self) -> Vec<Arc<SegmentBuffer>> {
        let fixed = self
            .slots
            .iter()
            .filter_map(|s| s.get())
            .map(|(_, b)| b.clone());
        fixed
            .chain(self.overflow.load().values().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use idmint_core::{MemoryStore, SegmentBuffer, SegmentConfig, SystemClock, Tag};

    use super::*;

    #[tokio::test]
    async fn every_tag_is_found_in_the_table_or_beyond_it() {
        let clock = Arc::new(SystemClock::new());
        let store = Arc::new(MemoryStore::new(clock.clone()));
        let table = TagTable::new();
        let names: Vec<String> = (0..200).map(|i| format!("tag-{i}")).collect();
        for name in &names {
            assert!(table.with(name, |_| ()).is_none());
            let buffer = SegmentBuffer::new(
                Tag::new(name).unwrap(),
                store.clone(),
                clock.clone(),
                SegmentConfig::default(),
                tokio::runtime::Handle::current(),
            );
            table.insert(name, buffer);
        }
        for name in &names {
            let found = table.with(name, |b| b.tag().as_str().to_owned());
            assert_eq!(found.as_deref(), Some(name.as_str()));
        }
        assert_eq!(table.all().len(), 200);
        assert!(table.with("missing", |_| ()).is_none());
    }
}
