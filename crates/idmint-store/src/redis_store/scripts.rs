//! The Lua scripts: every multi-step operation of the Redis store is one script, which Redis
//! runs atomically (no other command runs while a script does), so each is one decision.
//!
//! Each script is `lua/prelude.lua` (the store clock, exact decimal helpers) followed by its own
//! file. They are sent as `EVALSHA` by [`redis::Script`], which loads them again (`SCRIPT
//! LOAD`) when the server answers `NOSCRIPT`, e.g. after a restart emptied its script cache.

use redis::Script;

/// Prepends the prelude to a script file of `lua/`.
macro_rules! lua {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/prelude.lua"),
            "\n",
            include_str!(concat!("lua/", $file))
        ))
    };
}

/// Every script of the Redis store, hashed once at open.
#[derive(Debug)]
pub(super) struct Scripts {
    /// Takes `[max_id, max_id + step)` (or the rest up to the end) and advances `max_id`.
    pub(super) allocate: Script,
    /// Sets `max_id` when it holds the expected value (a tail given back, a set's range).
    pub(super) move_max_id: Script,
    /// Creates a tag unless it exists.
    pub(super) create_tag: Script,
    /// Changes a tag's step or description.
    pub(super) update_tag: Script,
    /// Every tag, in one snapshot.
    pub(super) list_tags: Script,
    /// Chooses and takes a worker ID, issuing a new token.
    pub(super) acquire: Script,
    /// Extends a lease and raises its HWM, if the token holds.
    pub(super) renew: Script,
    /// Frees a worker ID with its final HWM, if the token holds.
    pub(super) release: Script,
    /// Every lease, with the store's clock, in one snapshot.
    pub(super) list_leases: Script,
    /// Reads and records the namespace's layout version.
    pub(super) schema: Script,
    /// Records the ID space in force, fencing every holder on a change.
    pub(super) record_space: Script,
    /// Records the store's place in a store set, if it has none and holds no data.
    pub(super) join_set: Script,
}

impl Scripts {
    /// Builds (and hashes) every script.
    pub(super) fn new() -> Self {
        Self {
            allocate: lua!("allocate.lua"),
            move_max_id: lua!("move_max_id.lua"),
            create_tag: lua!("create_tag.lua"),
            update_tag: lua!("update_tag.lua"),
            list_tags: lua!("list_tags.lua"),
            acquire: lua!("acquire.lua"),
            renew: lua!("renew.lua"),
            release: lua!("release.lua"),
            list_leases: lua!("list_leases.lua"),
            schema: lua!("schema.lua"),
            record_space: lua!("record_space.lua"),
            join_set: lua!("join_set.lua"),
        }
    }

    /// Every script, to load them all at open (which also checks that they compile).
    pub(super) fn all(&self) -> [&Script; 12] {
        [
            &self.allocate,
            &self.move_max_id,
            &self.create_tag,
            &self.update_tag,
            &self.list_tags,
            &self.acquire,
            &self.renew,
            &self.release,
            &self.list_leases,
            &self.schema,
            &self.record_space,
            &self.join_set,
        ]
    }
}
