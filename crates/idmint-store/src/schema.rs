//! Versioned schema migrations, shared by the SQL backends.
//!
//! Each backend lists, per schema version, the statements that bring the previous version to
//! it. On open, a backend reads the version its database holds and asks [`plan`] what to
//! apply: nothing when up to date, the missing versions in order, or an error when the
//! database is newer than this binary (an older binary must not write to a schema it does not
//! know).
//!
//! Version 4 adds a table (`{ns}_id_space_keys`, the permutation key's fingerprint of each
//! permuted ID space) rather than a column: `CREATE TABLE IF NOT EXISTS` can be run again on
//! every backend, where MySQL's `ADD COLUMN` cannot, and MySQL commits DDL at once, so its
//! migrations must be safe to run twice. An idmint from before version 4 refuses the store, so
//! no node that would ignore a permutation key is left on it.
//!
//! Version 5 adds `{ns}_tag_dates`, the dating of each dated tag (`day:6:text:UTC`), for the
//! same reasons: a node from before it would hand a dated tag's IDs out undated.
//!
//! Version 6 lets tags be any UTF-8 text (`订单`, `orders eu`): MySQL's tag columns become
//! `utf8mb4` with a binary collation (they were ASCII); the other backends store any text
//! already and change nothing. It is a version so an idmint from before it, which would take
//! such a tag in the store for damage, refuses the store.

use crate::{Error, Result};

/// The schema version this binary writes.
pub(crate) const LATEST: i64 = 6;

/// The columns of the ID-space table (version 2), as written.
pub(crate) const ID_SPACE_COLUMNS: &str =
    "version, layout, epoch_ms, datacenter, issues_from_ms, first_id, recorded_at_ms";

/// The ID-space columns as read, joined with the permutation key's fingerprint (version 4,
/// `{ns}_id_space_keys`, NULL for a plain space), in the order `sql::rows::id_space` takes
/// them. `s` is the ID-space table, `k` the keys.
pub(crate) const ID_SPACE_READ: &str = "s.version, s.layout, s.epoch_ms, s.datacenter, \
     s.issues_from_ms, s.first_id, s.recorded_at_ms, k.permutation";

/// The columns of the store-set table (version 3), in the order `sql::rows::membership` takes
/// them.
pub(crate) const STORE_SET_COLUMNS: &str =
    "set_id, member_index, member_count, block_size, recorded_at_ms";

/// The versions to apply to a database at `current` (0 for an empty one), in order.
pub(crate) fn plan(current: i64, display_url: &str) -> Result<std::ops::RangeInclusive<i64>> {
    if current > LATEST {
        return Err(Error::store_invalid(format!(
            "the schema in {display_url} is version {current}, newer than this idmint knows ({LATEST}); \
             upgrade idmint before pointing it at this store"
        )));
    }
    Ok(current + 1..=LATEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_only_what_is_missing_and_refuses_the_future() {
        assert_eq!(plan(0, "x").ok(), Some(1..=LATEST));
        assert!(plan(LATEST, "x").is_ok_and(|r| r.is_empty()));
        assert!(
            matches!(plan(LATEST + 1, "x"), Err(Error::StoreInvalid { message: m, .. }) if m.contains("newer"))
        );
    }
}
