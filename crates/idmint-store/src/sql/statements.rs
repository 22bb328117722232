//! The statements of the SQL backends, written once and filled in per dialect and namespace
//! at open. Placeholders are bound in the order they appear.

use std::sync::Arc;

use super::Dialect;
use crate::schema::{ID_SPACE_COLUMNS, ID_SPACE_READ, STORE_SET_COLUMNS};

/// The columns of a tag row, as written.
pub(crate) const TAG_COLUMNS: &str = "tag, max_id, step, description, updated_at_ms";

/// A tag row as read, joined with its dating (version 5, `{ns}_tag_dates`, NULL for a plain
/// tag), in the order [`super::tag_info`] reads them. `s` is the tag table, `d` the datings.
const TAG_READ: &str = "s.tag, s.max_id, s.step, s.description, s.updated_at_ms, d.dating";

/// Every statement of one namespace.
#[derive(Debug)]
pub(crate) struct Statements {
    /// Takes a full step: step, tag, the largest `max_id` that still fits. Gives the new
    /// `max_id` (returned, or by [`Dialect::allocated`]); no row when the step does not fit.
    pub(crate) allocate: Arc<str>,
    /// A tag's `max_id` (no row for an unknown tag).
    pub(crate) max_id: Arc<str>,
    /// Compare-and-set of `max_id`: new value, tag, expected value. Gives a tail back, or
    /// takes a tag's last range.
    pub(crate) move_max_id: Arc<str>,
    /// Inserts a tag: tag, first ID, step, description.
    pub(crate) create_tag: Arc<str>,
    /// Records a dated tag's dating, in the transaction of `create_tag`: tag, dating.
    pub(crate) create_tag_dating: Arc<str>,
    /// Changes step and/or description (NULL keeps it): step, description, tag.
    pub(crate) update_tag: Arc<str>,
    /// One tag's row: tag.
    pub(crate) tag_info: Arc<str>,
    /// Every tag's row, in byte order of the name.
    pub(crate) list_tags: Arc<str>,
    /// The store's clock.
    pub(crate) now: Arc<str>,
    /// Holder and expiry of one worker ID: worker ID.
    pub(crate) lease_row: Arc<str>,
    /// Every lease row below the worker count, by worker ID: count.
    pub(crate) worker_rows: Arc<str>,
    /// Takes a worker ID with a new token: worker ID, node, expiry, node, expiry.
    pub(crate) take_worker: Arc<str>,
    /// Token and HWM of a worker ID just taken: worker ID.
    pub(crate) taken_worker: Arc<str>,
    /// Extends a lease and raises its HWM if the token holds: HWM, TTL, worker ID, token.
    pub(crate) renew: Arc<str>,
    /// Frees a worker ID with its final HWM if the token holds: HWM, worker ID, token.
    pub(crate) release: Arc<str>,
    /// HWM and expiry of a worker ID if the token holds it: worker ID, token.
    pub(crate) held_lease: Arc<str>,
    /// Every lease row, with whether it is live.
    pub(crate) list_leases: Arc<str>,
    /// The schema version the database holds.
    pub(crate) schema_version: Arc<str>,
    /// Records the schema version: version, version.
    pub(crate) record_version: Arc<str>,
    /// The newest ID-space version (NULL when none).
    pub(crate) newest_space: Arc<str>,
    /// Every ID-space record, oldest first.
    pub(crate) id_spaces: Arc<str>,
    /// Whether each lease is live, and its HWM.
    pub(crate) lease_summary: Arc<str>,
    /// Moves every worker ID's token on (an ID-space change fences every holder).
    pub(crate) move_tokens_on: Arc<str>,
    /// Inserts an ID-space record, stamped with the store's clock.
    pub(crate) record_space: Arc<str>,
    /// Writes a permuted space's key fingerprint, in the transaction of `record_space`.
    pub(crate) record_space_key: Arc<str>,
    /// The store's set record (no row for a single store).
    pub(crate) store_set: Arc<str>,
    /// How many tag and lease rows the store holds.
    pub(crate) data_rows: Arc<str>,
    /// Inserts the set record, stamped with the store's clock: set ID, index, count, block.
    pub(crate) record_store_set: Arc<str>,
}

impl Statements {
    /// Builds every statement of dialect `D` for namespace `ns` (validated: `[a-z0-9_]{1,32}`).
    pub(crate) fn new<D: Dialect>(ns: &str) -> Self {
        let (s, w) = (format!("{ns}_segments"), format!("{ns}_workers"));
        let (now, lock, name, greatest) = (D::NOW, D::LOCKING_READ, D::NODE_NAME, D::GREATEST);
        let returning = |columns: &str| match D::RETURNING {
            true => format!(" RETURNING {columns}"),
            false => String::new(),
        };
        let sql = |text: String| Arc::<str>::from(D::placeholders(text));
        let lease_columns = "hwm_ms, expires_at_ms";
        Self {
            allocate: sql(format!(
                "UPDATE {s} SET max_id = {next}, updated_at_ms = {now} \
                 WHERE tag = ? AND max_id <= ?{ret}",
                next = D::NEXT_MAX_ID,
                ret = returning("max_id"),
            )),
            max_id: sql(format!("SELECT max_id FROM {s} WHERE tag = ?")),
            move_max_id: sql(format!(
                "UPDATE {s} SET max_id = ?, updated_at_ms = {now} WHERE tag = ? AND max_id = ?"
            )),
            create_tag: sql(format!(
                "INSERT INTO {s} ({TAG_COLUMNS}) VALUES (?, ?, ?, ?, {now})"
            )),
            create_tag_dating: sql(format!(
                "INSERT INTO {ns}_tag_dates (tag, dating) VALUES (?, ?)"
            )),
            update_tag: sql(format!(
                "UPDATE {s} SET step = COALESCE(?, step), \
                 description = COALESCE(?, description), updated_at_ms = {now} \
                 WHERE tag = ?"
            )),
            tag_info: sql(format!(
                "SELECT {TAG_READ} FROM {s} s LEFT JOIN {ns}_tag_dates d ON d.tag = s.tag \
                 WHERE s.tag = ?"
            )),
            list_tags: sql(format!(
                "SELECT {TAG_READ} FROM {s} s LEFT JOIN {ns}_tag_dates d ON d.tag = s.tag \
                 ORDER BY s.tag"
            )),
            now: sql(format!("SELECT {now}")),
            lease_row: sql(format!(
                "SELECT {name}, expires_at_ms FROM {w} WHERE worker_id = ?{lock}"
            )),
            worker_rows: sql(format!(
                "SELECT worker_id, {name}, expires_at_ms FROM {w} WHERE worker_id < ? \
                 ORDER BY worker_id{lock}"
            )),
            take_worker: sql(format!(
                "INSERT INTO {w} (worker_id, node_name, token, hwm_ms, expires_at_ms) \
                 VALUES (?, ?, 1, 0, ?) {upsert} node_name = ?, token = {w}.token + 1, \
                 expires_at_ms = ?{ret}",
                upsert = D::upsert("worker_id"),
                ret = returning("token, hwm_ms"),
            )),
            taken_worker: sql(format!(
                "SELECT token, hwm_ms FROM {w} WHERE worker_id = ?{lock}"
            )),
            renew: sql(format!(
                "UPDATE {w} SET hwm_ms = {greatest}(hwm_ms, ?), expires_at_ms = {now} + ? \
                 WHERE worker_id = ? AND token = ?{}",
                returning(lease_columns)
            )),
            release: sql(format!(
                "UPDATE {w} SET hwm_ms = ?, expires_at_ms = 0 WHERE worker_id = ? AND token = ?{}",
                returning(lease_columns)
            )),
            held_lease: sql(format!(
                "SELECT {lease_columns} FROM {w} WHERE worker_id = ? AND token = ?{lock}"
            )),
            list_leases: sql(format!(
                "SELECT worker_id, {name}, expires_at_ms, hwm_ms, expires_at_ms > {now} \
                 FROM {w} ORDER BY worker_id"
            )),
            schema_version: sql(format!("SELECT version FROM {ns}_schema WHERE id = 1")),
            record_version: sql(format!(
                "INSERT INTO {ns}_schema (id, version) VALUES (1, ?) {} version = ?",
                D::upsert("id")
            )),
            newest_space: sql(format!("SELECT MAX(version) FROM {ns}_id_spaces{lock}")),
            id_spaces: sql(format!(
                "SELECT {ID_SPACE_READ} FROM {ns}_id_spaces s \
                 LEFT JOIN {ns}_id_space_keys k ON k.version = s.version ORDER BY s.version"
            )),
            lease_summary: sql(format!(
                "SELECT expires_at_ms > {now}, hwm_ms FROM {w}{lock}"
            )),
            move_tokens_on: sql(format!("UPDATE {w} SET token = token + 1")),
            record_space: sql(format!(
                "INSERT INTO {ns}_id_spaces ({ID_SPACE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, {now})"
            )),
            record_space_key: sql(format!(
                "INSERT INTO {ns}_id_space_keys (version, permutation) VALUES (?, ?)"
            )),
            store_set: sql(format!(
                "SELECT {STORE_SET_COLUMNS} FROM {ns}_store_set WHERE id = 1{lock}"
            )),
            data_rows: sql(format!(
                "SELECT (SELECT COUNT(*) FROM {s}) + (SELECT COUNT(*) FROM {w})"
            )),
            record_store_set: sql(format!(
                "INSERT INTO {ns}_store_set (id, {STORE_SET_COLUMNS}) VALUES (1, ?, ?, ?, ?, {now})"
            )),
        }
    }
}
