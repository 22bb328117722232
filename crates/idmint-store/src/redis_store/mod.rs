//! Redis: segments and worker leases in a few hashes and sorted sets, every multi-step
//! operation one Lua script (atomic on the server), the store's clock read with `TIME`.
//!
//! Durability: the server must report `appendonly yes` and `appendfsync always`, checked at
//! open (Redis fsyncs the AOF before it answers, so an acknowledged range or lease survives a
//! crash). Connection: one multiplexed connection that reconnects by itself
//! ([`ConnectionManager`]); every call is bounded by the call timeout.
//!
//! Keys, all under the prefix `{ns}:` (the braces make the namespace a Redis Cluster hash tag:
//! every key of one namespace maps to one slot, as a script touching several keys would need on
//! a cluster; this store itself connects to one server):
//! - `{ns}:schema`: the key layout version (string);
//! - `{ns}:tags`: the set of tag names; `{ns}:seg:<tag>`: hash `max_id`, `step`,
//!   `description`, `updated_at_ms`, and `dating` for a dated tag (`day:6:text:UTC`);
//! - `{ns}:w:<id>`: hash `node`, `token`, `hwm`, `expires` per worker ID ever leased;
//! - `{ns}:workers`: sorted set of those worker IDs (score = ID), to find the smallest
//!   never-used one by binary search;
//! - `{ns}:expiry`: sorted set of worker IDs by expiry (score = `expires`), for the one that
//!   expired longest ago;
//! - `{ns}:node:<name>`: sorted set of the worker IDs whose last holder is that node, by expiry,
//!   for a node's previous worker ID;
//! - `{ns}:spaces`: list of the ID-space records, oldest first, each
//!   `version|layout|epoch_ms|datacenter|issues_from_ms|first_id|permutation|recorded_at_ms`
//!   (`permutation` the key's fingerprint, empty for a plain space; records written by a
//!   version-3 binary lack the field);
//! - `{ns}:set`: hash `set_id`, `index`, `count`, `block`, `recorded_at_ms`, the store's place
//!   in a store set (absent for a single store).
//!
//! Sorted-set members are worker IDs zero-padded to 16 digits, so equal scores sort by ID.

mod scripts;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::clock::duration_ms;
use idmint_core::id_space::{check_lease_space, check_record};
use idmint_core::store::{
    FencingToken, Lease, LeaseInfo, LeaseRequest, Partition, Renewal, SegmentStore, SetMembership,
    TagInfo, TagSettings, TagUpdate, WorkerLeases,
};
use idmint_core::{IdSpace, IdSpaceRecord, Tag};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ErrorKind, RedisError, ScriptInvocation, ServerErrorKind};

use self::scripts::Scripts;
use crate::bounded::{bounded, to_i64};
use crate::location::Location;
use crate::{Error, Result, StoreOptions};

/// The key layout version this binary writes to `{ns}:schema`. Version 2 added `{ns}:spaces`:
/// a binary that knows only version 1 would not check the pinned ID space, so it must refuse.
/// Version 3 added `{ns}:set`: an older binary would lease any worker ID of a store that is one
/// partition of a set. Version 4 added the permutation key's fingerprint to the ID-space
/// records: an older binary would hand out plain IDs beside permuted ones. Version 5 added the
/// `dating` field of dated tags: an older binary would hand their IDs out undated. Version 6
/// allows tags of any UTF-8 text in the keys: an older binary would take one for damage.
const SCHEMA_VERSION: u64 = 6;

/// The most worker IDs a layout may have here: worker IDs are Lua numbers and sorted-set
/// scores inside Redis, both doubles, exact up to 2^53.
const MAX_WORKER_COUNT: u64 = 1 << 53;

/// The longest lease (about 142,000 years): `now + ttl` stays an exact double.
const MAX_TTL_MS: u64 = 1 << 52;

/// How many leases one `list_leases` script reads: a page, so a listing of millions of worker
/// IDs never blocks Redis for long.
const LEASE_PAGE: usize = 1_000;

/// How often the connection manager retries one connection attempt before a call fails (and
/// the next call starts a new attempt).
const CONNECT_RETRIES: usize = 2;

/// The key names of one namespace.
#[derive(Debug)]
struct Keys {
    /// `{ns}:`, the start of every key.
    prefix: String,
    /// `{ns}:schema`
    schema: String,
    /// `{ns}:tags`
    tags: String,
    /// `{ns}:seg:`, followed by a tag name.
    segment: String,
    /// `{ns}:workers`
    workers: String,
    /// `{ns}:expiry`
    expiry: String,
    /// `{ns}:spaces`
    spaces: String,
    /// `{ns}:set`, the store-set record.
    store_set: String,
}

impl Keys {
    /// The keys of namespace `ns` (validated `[a-z0-9_]{1,32}`).
    fn new(ns: &str) -> Self {
        let prefix = format!("{{{ns}}}:");
        Self {
            schema: format!("{prefix}schema"),
            tags: format!("{prefix}tags"),
            segment: format!("{prefix}seg:"),
            workers: format!("{prefix}workers"),
            expiry: format!("{prefix}expiry"),
            spaces: format!("{prefix}spaces"),
            store_set: format!("{prefix}set"),
            prefix,
        }
    }

    /// `{ns}:seg:<tag>`
    fn segment(&self, tag: &Tag) -> String {
        format!("{}{}", self.segment, tag.as_str())
    }

    /// `{ns}:w:<id>`
    fn worker(&self, id: u64) -> String {
        format!("{}w:{id}", self.prefix)
    }
}

/// A worker ID as a sorted-set member (as the scripts write it: `%016d`).
fn member(id: u64) -> String {
    format!("{id:016}")
}

/// [`SegmentStore`] and [`WorkerLeases`] on one Redis server.
pub(crate) struct RedisStore {
    /// The connection, shared by every call (cloning it is cheap).
    conn: ConnectionManager,
    /// The key names.
    keys: Keys,
    /// The scripts.
    scripts: Scripts,
    /// Bound of every call.
    timeout: Duration,
    /// The URL with its password hidden.
    display: String,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.display)
            .field("prefix", &self.keys.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects, checks durability, loads the scripts and records the key layout version.
    pub(crate) async fn open(location: &Location, options: &StoreOptions) -> Result<Self> {
        let display = location.display.clone();
        let timeout = options.call_timeout;
        let client =
            redis::Client::open(location.url.as_str()).map_err(|e| Error::InvalidArgument {
                name: "store",
                reason: format!("`{display}` is not a usable Redis URL: {e}"),
            })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(CONNECT_RETRIES)
            .set_max_delay(Duration::from_secs(1));
        let what = format!("connecting to {display}");
        let connect = async {
            ConnectionManager::new_with_config(client, config)
                .await
                .map_err(|e| match classify(&e) {
                    Class::Unavailable => {
                        Error::store_unavailable(format!("cannot reach {display}")).caused_by(e)
                    }
                    Class::Invalid => {
                        Error::store_invalid(format!("{display} refused us")).caused_by(e)
                    }
                })
        };
        let conn = bounded(timeout, &what, connect).await?;
        let store = Self {
            conn,
            keys: Keys::new(&options.namespace),
            scripts: Scripts::new(),
            timeout,
            display,
        };
        store.check_durability(options.allow_non_durable).await?;
        store.load_scripts().await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Refuses a server without `appendonly yes` and `appendfsync always` (or one that hides its
    /// configuration), unless allowed.
    async fn check_durability(&self, allow: bool) -> Result<()> {
        let what = "checking durability";
        let call = async {
            let mut conn = self.conn.clone();
            let mut found = Vec::new();
            for name in ["appendonly", "appendfsync"] {
                let reply: std::result::Result<HashMap<String, String>, RedisError> =
                    redis::cmd("CONFIG")
                        .arg("GET")
                        .arg(name)
                        .query_async(&mut conn)
                        .await;
                match reply {
                    Ok(values) => found.push(values.get(name).cloned()),
                    Err(e) if classify(&e) == Class::Unavailable => {
                        return Err(redis_error(what, e))
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(Ok(found))
        };
        let needed = "idmint needs `appendonly yes` and `appendfsync always` so a crash cannot \
                      reissue IDs: set both in redis.conf (or at run time: CONFIG SET appendonly \
                      yes, CONFIG SET appendfsync always, CONFIG REWRITE)";
        let problem = match bounded(self.timeout, what, call).await? {
            Ok(found) => {
                let shown = |value: &Option<String>| value.clone().unwrap_or_else(|| "?".into());
                let (appendonly, appendfsync) = match found.as_slice() {
                    [a, f] => (shown(a), shown(f)),
                    _ => ("?".into(), "?".into()),
                };
                if appendonly == "yes" && appendfsync == "always" {
                    return Ok(());
                }
                format!(
                    "{} runs with appendonly {appendonly}, appendfsync {appendfsync}; {needed}",
                    self.display
                )
            }
            Err(e) => format!(
                "{} does not let idmint read its configuration (CONFIG GET: {e}), so its \
                 durability cannot be checked; allow CONFIG GET to idmint's user (ACL \
                 `+config|get`; not renamed away). {needed}",
                self.display
            ),
        };
        if allow {
            tracing::warn!("{problem} (accepted: durability checks are switched off)");
            return Ok(());
        }
        Err(Error::store_invalid(problem))
    }

    /// Loads every script into the server's cache: fails early if scripting is disabled or a
    /// script does not compile. (Calls load them again after a server restart.)
    async fn load_scripts(&self) -> Result<()> {
        let what = "loading the scripts";
        let call = async {
            let mut conn = self.conn.clone();
            for script in self.scripts.all() {
                script
                    .load_async(&mut conn)
                    .await
                    .map_err(|e| redis_error(what, e))?;
            }
            Ok(())
        };
        bounded(self.timeout, what, call).await
    }

    /// Records this binary's key layout version; refuses a namespace written by a newer one.
    async fn migrate(&self) -> Result<()> {
        let mut invocation = self.scripts.schema.key(&self.keys.schema);
        invocation.arg(SCHEMA_VERSION);
        let reply = self.run("migrating the key layout", &invocation).await?;
        let found = match reply.as_slice() {
            [found] => found,
            _ => return Err(unexpected("migrating the key layout", &reply)),
        };
        let found = number("the key layout version", found)?;
        if found > SCHEMA_VERSION {
            return Err(Error::store_invalid(format!(
                "the key layout in {} is version {found}, newer than this idmint knows \
                 ({SCHEMA_VERSION}); upgrade idmint before pointing it at this store",
                self.display
            )));
        }
        Ok(())
    }

    /// Runs a script, bounded by the call timeout; its reply is an array of strings.
    /// Sets `tag`'s `max_id` to `new` if it is `expected` (the `move_max_id` script).
    async fn move_max_id(&self, tag: &Tag, expected: u64, new: u64, what: &str) -> Result<bool> {
        let mut invocation = self.scripts.move_max_id.key(self.keys.segment(tag));
        invocation
            .arg(decimal("expected", expected)?)
            .arg(decimal("new", new)?);
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status] if status == "ok" => Ok(true),
            [status] if status == "no" => Ok(false),
            [status] if status == "unknown" => Err(Error::UnknownTag {
                tag: tag.to_string(),
            }),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn run(&self, what: &str, invocation: &ScriptInvocation<'_>) -> Result<Vec<String>> {
        let call = async {
            let mut conn = self.conn.clone();
            invocation
                .invoke_async::<Vec<String>>(&mut conn)
                .await
                .map_err(|e| redis_error(what, e))
        };
        bounded(self.timeout, what, call).await
    }
}

/// Whether a Redis error means "try again" or "this will not work".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// The server could not be reached, is starting, busy, failing over or out of room.
    Unavailable,
    /// The server refused the request or us (permissions, authentication, data).
    Invalid,
}

/// Sorts a Redis error into unavailable or invalid.
fn classify(error: &RedisError) -> Class {
    if error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
    {
        return Class::Unavailable;
    }
    match error.kind() {
        ErrorKind::Io
        | ErrorKind::Parse
        | ErrorKind::Server(
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly,
        ) => Class::Unavailable,
        // Codes the client does not know: a script running too long (BUSY), out of memory,
        // failed AOF or RDB writes (MISCONF), too few replicas for a write.
        ErrorKind::Extension
            if matches!(
                error.code(),
                Some("BUSY" | "OOM" | "MISCONF" | "NOREPLICAS" | "LOADING")
            ) =>
        {
            Class::Unavailable
        }
        _ => Class::Invalid,
    }
}

/// Maps a Redis error of a call to the core's errors.
fn redis_error(what: &str, error: RedisError) -> Error {
    match classify(&error) {
        Class::Unavailable => Error::store_unavailable(what).caused_by(error),
        Class::Invalid => Error::store_invalid(what).caused_by(error),
    }
}

/// A script reply this code does not expect.
fn unexpected(what: &str, reply: &[String]) -> Error {
    Error::store_invalid(format!("{what}: unexpected reply from Redis: {reply:?}"))
}

/// A stored decimal as `u64`.
/// A set membership from the record's fields: set ID, index, count, block, recorded_at_ms.
fn membership(fields: &[String]) -> Result<SetMembership> {
    let [set_id, index, count, block, recorded] = fields else {
        return Err(Error::store_corrupt(format!(
            "the store-set record has the fields {fields:?}"
        )));
    };
    let partition = Partition::new(
        number("index", index)?,
        number("count", count)?,
        number("block", block)?,
    )
    .map_err(|e| Error::store_corrupt(format!("the store-set record is damaged: {e}")))?;
    Ok(SetMembership {
        set_id: set_id.clone(),
        partition,
        recorded_at_ms: number("recorded_at_ms", recorded)?,
    })
}

fn number(what: &str, text: &str) -> Result<u64> {
    text.parse()
        .map_err(|_| Error::store_invalid(format!("{what} `{text}` in Redis is not a number")))
}

/// A tag hash's fields (`max_id`, `step`, `description`, `updated_at_ms`, `dating`, empty for
/// a plain tag) as [`TagInfo`].
fn tag_info(tag: Tag, fields: &[String]) -> Result<TagInfo> {
    let [max_id, step, description, updated_at_ms, dating] = fields else {
        return Err(unexpected("reading a tag", fields));
    };
    let dating = match dating.as_str() {
        "" => None,
        spec => Some(idmint_core::Dating::parse(spec).map_err(|e| {
            Error::store_corrupt(format!("tag `{tag}` holds a damaged dating in Redis: {e}"))
        })?),
    };
    Ok(TagInfo {
        max_id: number("max_id", max_id)?,
        step: number("step", step)?,
        description: description.clone(),
        updated_at_ms: number("updated_at_ms", updated_at_ms)?,
        tag,
        dating,
    })
}

/// Refuses a step of 0.
fn check_step(step: u64) -> Result<()> {
    if step == 0 {
        return Err(Error::InvalidArgument {
            name: "step",
            reason: "must be at least 1".into(),
        });
    }
    Ok(())
}

/// A TTL in ms, capped at [`MAX_TTL_MS`].
fn ttl_ms(ttl: Duration) -> u64 {
    duration_ms(ttl).min(MAX_TTL_MS)
}

/// A value that must fit a signed 64-bit integer (Redis's integers), as a decimal string.
fn decimal(what: &str, value: u64) -> Result<String> {
    to_i64(what, value).map(|v| v.to_string())
}

#[async_trait]
impl SegmentStore for RedisStore {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        check_step(step)?;
        let what = "allocating a segment";
        let mut invocation = self.scripts.allocate.key(self.keys.segment(tag));
        invocation.arg(decimal("step", step)?);
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status, start, end] if status == "ok" => {
                let range = number("max_id", start)?..number("max_id", end)?;
                // A full step, or the rest of the tag (shorter, up to the end).
                let fits = !range.is_empty() && range.end - range.start <= step;
                fits.then_some(range)
                    .ok_or_else(|| unexpected(what, &reply))
            }
            [status] if status == "unknown" => Err(Error::UnknownTag {
                tag: tag.to_string(),
            }),
            [status] if status == "exhausted" => Err(Error::TagExhausted {
                tag: tag.to_string(),
            }),
            [status, message] if status == "corrupt" => Err(Error::store_invalid(format!(
                "{what}: tag `{tag}` holds a bad {message}"
            ))),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        if unused.start >= unused.end {
            return Ok(false);
        }
        self.move_max_id(tag, unused.end, unused.start, "giving back a segment tail")
            .await
    }

    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
        self.move_max_id(tag, expected, new, "moving a tag's max_id")
            .await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        check_step(settings.step)?;
        let what = "creating a tag";
        let mut invocation = self.scripts.create_tag.key(self.keys.segment(tag));
        invocation
            .key(&self.keys.tags)
            .arg(tag.as_str())
            .arg(decimal("first_id", settings.first_id.max(1))?)
            .arg(decimal("step", settings.step)?)
            .arg(settings.description.as_str())
            .arg(settings.dating.map(|d| d.spec()).unwrap_or_default());
        let reply = self.run(what, &invocation).await?;
        match reply.split_first() {
            Some((status, fields)) if status == "ok" => tag_info(tag.clone(), fields),
            Some((status, [])) if status == "exists" => Err(Error::TagExists {
                tag: tag.to_string(),
            }),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        if let Some(step) = update.step {
            check_step(step)?;
        }
        let what = "updating a tag";
        let step = match update.step {
            Some(step) => decimal("step", step)?,
            None => String::new(),
        };
        let mut invocation = self.scripts.update_tag.key(self.keys.segment(tag));
        invocation
            .arg(step)
            .arg(if update.description.is_some() {
                "1"
            } else {
                "0"
            })
            .arg(update.description.as_deref().unwrap_or(""));
        let reply = self.run(what, &invocation).await?;
        match reply.split_first() {
            Some((status, fields)) if status == "ok" => tag_info(tag.clone(), fields),
            Some((status, [])) if status == "unknown" => Err(Error::UnknownTag {
                tag: tag.to_string(),
            }),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let what = "reading a tag";
        let call = async {
            let mut conn = self.conn.clone();
            let fields: Vec<Option<String>> = redis::cmd("HMGET")
                .arg(self.keys.segment(tag))
                .arg(&["max_id", "step", "description", "updated_at_ms", "dating"])
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error(what, e))?;
            Ok(fields)
        };
        let fields = bounded(self.timeout, what, call).await?;
        if fields.iter().all(Option::is_none) {
            return Ok(None);
        }
        // A plain tag has no `dating`.
        let fields: Option<Vec<String>> = fields
            .into_iter()
            .enumerate()
            .map(|(i, field)| {
                if i == 4 {
                    Some(field.unwrap_or_default())
                } else {
                    field
                }
            })
            .collect();
        let fields = fields.ok_or_else(|| {
            Error::store_invalid(format!("{what}: tag `{tag}` lacks a field in Redis"))
        })?;
        tag_info(tag.clone(), &fields).map(Some)
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let what = "listing tags";
        let mut invocation = self.scripts.list_tags.key(&self.keys.tags);
        invocation.arg(&self.keys.segment);
        let reply = self.run(what, &invocation).await?;
        let rows = reply.chunks_exact(6);
        if !rows.remainder().is_empty() {
            return Err(unexpected(what, &reply));
        }
        let mut tags = rows
            .map(|row| {
                let tag = Tag::new(&row[0]).map_err(|_| {
                    Error::store_invalid(format!("bad tag name `{}` in Redis", row[0]))
                })?;
                tag_info(tag, &row[1..])
            })
            .collect::<Result<Vec<_>>>()?;
        tags.sort_by(|a, b| a.tag.as_str().cmp(b.tag.as_str()));
        Ok(tags)
    }
}

#[async_trait]
impl WorkerLeases for RedisStore {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        let what = "acquiring a worker ID";
        request.check_partition()?;
        let count = request.worker_count;
        if count > MAX_WORKER_COUNT {
            return Err(Error::InvalidArgument {
                name: "worker_count",
                reason: format!("{count} worker IDs; the Redis store serves at most 2^53"),
            });
        }
        let static_id = match request.worker_id {
            Some(id) if id >= count => {
                return Err(Error::InvalidArgument {
                    name: "worker_id",
                    reason: format!("{id} is outside 0..{count}"),
                })
            }
            Some(id) => id.to_string(),
            None => String::new(),
        };
        let mut invocation = self.scripts.acquire.key(&self.keys.workers);
        invocation
            .key(&self.keys.expiry)
            .arg(&self.keys.prefix)
            .arg(request.node_name.as_str())
            .arg(count)
            .arg(static_id)
            .arg(ttl_ms(request.ttl))
            .arg(request.id_space.map(|v| v.to_string()).unwrap_or_default())
            .arg(request.partition.index)
            .arg(request.partition.count);
        invocation.key(&self.keys.spaces).key(&self.keys.store_set);
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status, id, token, hwm, expires] if status == "ok" => Ok(Lease {
                worker_id: number("worker ID", id)?,
                token: FencingToken(number("token", token)?),
                hwm_ms: number("hwm", hwm)?,
                expires_at_ms: number("expires", expires)?,
            }),
            [status, holder] if status == "held" => Err(Error::WorkerHeld {
                worker_id: request.worker_id.unwrap_or_default(),
                holder: holder.clone(),
            }),
            [status] if status == "none" => Err(Error::NoWorkerFree {
                worker_count: count,
            }),
            [status, in_force] if status == "space" => {
                check_lease_space(request.id_space, Some(number("version", in_force)?))
                    .and(Err(unexpected(what, &reply)))
            }
            [status] if status == "set" => {
                // The script refused the partition; the record says how (read after the fact,
                // for the message only).
                let recorded = self.store_set().await?;
                SetMembership::check_lease(recorded.as_ref(), request.partition).and(Err(
                    Error::store_conflict("the store-set record changed during the lease"),
                ))
            }
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn store_set(&self) -> Result<Option<SetMembership>> {
        let what = "reading the store-set record";
        let call = async {
            let mut conn = self.conn.clone();
            redis::cmd("HMGET")
                .arg(&self.keys.store_set)
                .arg(&["set_id", "index", "count", "block", "recorded_at_ms"])
                .query_async::<Vec<Option<String>>>(&mut conn)
                .await
                .map_err(|e| redis_error(what, e))
        };
        let fields = bounded(self.timeout, what, call).await?;
        if fields.iter().all(Option::is_none) {
            return Ok(None);
        }
        let fields: Vec<String> = fields.into_iter().map(Option::unwrap_or_default).collect();
        membership(&fields).map(Some)
    }

    async fn join_store_set(&self, set_id: &str, partition: Partition) -> Result<SetMembership> {
        let what = "joining a store set";
        let mut invocation = self.scripts.join_set.key(&self.keys.store_set);
        invocation
            .key(&self.keys.tags)
            .key(&self.keys.workers)
            .arg(set_id)
            .arg(partition.index)
            .arg(partition.count)
            .arg(partition.block);
        let reply = self.run(what, &invocation).await?;
        let (existing, has_data) = match reply.as_slice() {
            [status, fields @ ..] if status == "ok" => return membership(fields),
            [status, fields @ ..] if status == "exists" => (Some(membership(fields)?), false),
            [status] if status == "data" => (None, true),
            _ => return Err(unexpected(what, &reply)),
        };
        SetMembership::join_decision(existing, set_id, partition, has_data)?
            .ok_or_else(|| unexpected(what, &reply))
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let what = "renewing a worker lease";
        let mut invocation = self.scripts.renew.key(self.keys.worker(lease.worker_id));
        invocation
            .key(&self.keys.expiry)
            .arg(&self.keys.prefix)
            .arg(lease.token.0)
            .arg(decimal("hwm_ms", hwm_ms)?)
            .arg(ttl_ms(ttl))
            .arg(member(lease.worker_id));
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status, hwm, expires] if status == "ok" => Ok(Renewal {
                hwm_ms: number("hwm", hwm)?,
                expires_at_ms: number("expires", expires)?,
            }),
            [status] if status == "lost" => Err(Error::LeaseLost {
                worker_id: lease.worker_id,
            }),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let what = "releasing a worker lease";
        let mut invocation = self.scripts.release.key(self.keys.worker(lease.worker_id));
        invocation
            .key(&self.keys.expiry)
            .arg(&self.keys.prefix)
            .arg(lease.token.0)
            .arg(decimal("hwm_ms", final_hwm_ms)?)
            .arg(member(lease.worker_id));
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status] if status == "ok" => Ok(()),
            [status] if status == "lost" => Err(Error::LeaseLost {
                worker_id: lease.worker_id,
            }),
            _ => Err(unexpected(what, &reply)),
        }
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let what = "listing worker leases";
        let mut leases: Vec<LeaseInfo> = Vec::new();
        loop {
            let from = match leases.last() {
                Some(last) => format!("({}", last.worker_id),
                None => "-inf".to_owned(),
            };
            let mut invocation = self.scripts.list_leases.key(&self.keys.workers);
            invocation.arg(&self.keys.prefix).arg(from).arg(LEASE_PAGE);
            let reply = self.run(what, &invocation).await?;
            let Some((now, rows)) = reply.split_first() else {
                return Err(unexpected(what, &reply));
            };
            let now = number("the store's clock", now)?;
            let rows = rows.chunks_exact(4);
            if !rows.remainder().is_empty() {
                return Err(unexpected(what, &reply));
            }
            let page = rows.len();
            for row in rows {
                let expires_at_ms = number("expires", &row[2])?;
                leases.push(LeaseInfo {
                    worker_id: number("worker ID", &row[0])?,
                    node_name: row[1].clone(),
                    expires_at_ms,
                    hwm_ms: number("hwm", &row[3])?,
                    live: expires_at_ms > now,
                });
            }
            if page < LEASE_PAGE {
                return Ok(leases);
            }
        }
    }

    async fn clock_ms(&self) -> Result<u64> {
        let what = "reading the store's clock";
        let call = async {
            let mut conn = self.conn.clone();
            redis::cmd("TIME")
                .query_async::<(u64, u64)>(&mut conn)
                .await
                .map_err(|e| redis_error(what, e))
        };
        let (seconds, micros) = bounded(self.timeout, what, call).await?;
        Ok(seconds.saturating_mul(1_000).saturating_add(micros / 1_000))
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        let what = "reading the ID spaces";
        let call = async {
            let mut conn = self.conn.clone();
            redis::cmd("LRANGE")
                .arg(&self.keys.spaces)
                .arg(0)
                .arg(-1)
                .query_async::<Vec<String>>(&mut conn)
                .await
                .map_err(|e| redis_error(what, e))
        };
        let lines = bounded(self.timeout, what, call).await?;
        lines.iter().map(|line| id_space(line)).collect()
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let what = "recording the ID space";
        let space = &record.space;
        let permutation = space.permutation.as_deref().unwrap_or("");
        for (name, text) in [("layout", &space.layout[..]), ("permutation", permutation)] {
            if text.contains('|') {
                return Err(Error::InvalidArgument {
                    name,
                    reason: "holds no `|`".into(),
                });
            }
        }
        let line = format!(
            "{}|{}|{}|{}|{}|{}|{permutation}",
            record.version,
            space.layout,
            space.epoch_ms,
            space.datacenter,
            record.issues_from_ms,
            record.first_id
        );
        let mut invocation = self.scripts.record_space.key(&self.keys.spaces);
        invocation
            .key(&self.keys.workers)
            .key(&self.keys.expiry)
            .arg(&self.keys.prefix)
            .arg(record.version)
            .arg(line)
            .arg(hwm_bound_ms);
        let reply = self.run(what, &invocation).await?;
        match reply.as_slice() {
            [status] if status == "ok" => Ok(()),
            [status, newest, live, max_hwm] if status == "refused" => check_record(
                record,
                Some(number("version", newest)?).filter(|v| *v > 0),
                number("live", live)?,
                number("hwm", max_hwm)?,
                hwm_bound_ms,
            )
            .and(Err(unexpected(what, &reply))),
            _ => Err(unexpected(what, &reply)),
        }
    }
}

/// An ID-space record from its line in `{ns}:spaces`: 8 fields, or 7 without the permutation
/// (written before key layout 4).
fn id_space(line: &str) -> Result<IdSpaceRecord> {
    let fields: Vec<&str> = line.split('|').collect();
    let (version, layout, epoch, datacenter, from, first, permutation, at) = match fields[..] {
        [version, layout, epoch, datacenter, from, first, permutation, at] => (
            version,
            layout,
            epoch,
            datacenter,
            from,
            first,
            permutation,
            at,
        ),
        [version, layout, epoch, datacenter, from, first, at] => {
            (version, layout, epoch, datacenter, from, first, "", at)
        }
        _ => {
            return Err(Error::store_invalid(format!(
                "ID-space record `{line}` in Redis is not 7 or 8 fields"
            )))
        }
    };
    Ok(IdSpaceRecord {
        version: number("version", version)?,
        space: IdSpace {
            layout: (*layout).to_owned(),
            epoch_ms: number("epoch_ms", epoch)?,
            datacenter: number("datacenter", datacenter)?,
            permutation: Some(permutation)
                .filter(|p| !p.is_empty())
                .map(str::to_owned),
        },
        issues_from_ms: number("issues_from_ms", from)?,
        first_id: number("first_id", first)?,
        recorded_at_ms: number("recorded_at_ms", at)?,
    })
}
