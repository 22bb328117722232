//! The one error type of `idmint-core`.
//!
//! Every variant is something a caller can act on: a bad input to fix, a wait that may succeed
//! if retried, a store that is down, or a limit that will never lift (layout exhausted). The
//! server maps them to HTTP statuses and Redis `-ERR` replies, so the split between them is part
//! of the contract: [`Error::code`] is the [`ErrorCode`] clients see, and
//! [`Error::is_retryable`] says which ones a client may simply try again.
//!
//! This module depends on no other module of the crate but the codes: a variant carries plain
//! data (numbers, text the module raising it wrote), so the modules that raise errors own
//! their wording and the error type can be read, and changed, on its own.

use std::sync::Arc;
use std::time::Duration;

use crate::error_code::ErrorCode;

/// Result alias used throughout `idmint-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `idmint-core` and in the store traits it defines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A layout spec string could not be parsed or breaks a layout rule.
    #[error("invalid layout `{spec}`: {reason}")]
    InvalidLayout {
        /// The spec as given.
        spec: String,
        /// What is wrong with it, in words a user can act on.
        reason: String,
    },

    /// An epoch could not be parsed or is not usable (for example, in the future).
    #[error("invalid epoch `{epoch}`: {reason}")]
    InvalidEpoch {
        /// The epoch as given.
        epoch: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A caller-supplied value is out of range (a shard too wide for its field, a count of 0...).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// Which argument.
        name: &'static str,
        /// Why it was refused.
        reason: String,
    },

    /// A tag name breaks the rule: UTF-8, 1 to 128 bytes, no control characters or line
    /// separators, no space at either end (see `tag.rs`).
    #[error(
        "invalid tag `{tag}`: tags are 1 to 128 bytes of UTF-8 text, without control \
         characters and without a space at either end"
    )]
    InvalidTag {
        /// The refused name (possibly truncated for display, control characters escaped)
        tag: String,
    },

    /// The layout's time field has run out: no more IDs can ever be issued with this layout.
    #[error("layout exhausted: its time field ran out at {ends_at}")]
    LayoutExhausted {
        /// The moment the layout ran out, RFC 3339 UTC.
        ends_at: String,
    },

    /// The clock is before the layout's epoch, so no tick can be computed.
    #[error("clock reads {now_ms} ms since the Unix epoch, before the layout epoch {epoch_ms}")]
    ClockBeforeEpoch {
        /// The clock reading.
        now_ms: u64,
        /// The layout epoch.
        epoch_ms: u64,
    },

    /// The generator would have to run further ahead of the clock than `max_lead` allows
    /// (sequence exhausted, or the clock is behind the last issued tick) and the bounded wait
    /// ran out.
    #[error("clock is {behind_ms} ms behind the next tick; waited {waited:?} (max_wait)")]
    ClockBehind {
        /// How far the next tick is ahead of the clock, beyond what `max_lead` allows.
        behind_ms: u64,
        /// How long the call waited before giving up.
        waited: Duration,
    },

    /// The next tick is above the high-water mark the store has confirmed for this worker's
    /// lease, and the bounded wait for a raise ran out. Usually the store is slow or the lease
    /// was lost.
    #[error("high-water mark not granted: next tick {tick} is above granted tick {granted}")]
    HwmNotGranted {
        /// The tick the generator needed.
        tick: u64,
        /// The highest tick the store has confirmed.
        granted: u64,
    },

    /// Both segment buffers of a tag are empty and the store did not deliver a new range in
    /// time.
    #[error("no segment available for tag `{tag}` after waiting {waited:?}: {cause}")]
    SegmentUnavailable {
        /// The tag.
        tag: String,
        /// How long the call waited.
        waited: Duration,
        /// Why the store gave nothing (last store error, or a timeout).
        cause: String,
    },

    /// The store could not be reached or did not answer in time. Retryable.
    #[error("store unavailable: {message}")]
    StoreUnavailable {
        /// What the store call was doing, and what went wrong, in words.
        message: String,
        /// The driver's error behind it, if any.
        #[source]
        cause: Option<Cause>,
    },

    /// A conditional write lost a race (another node wrote first). Not an outage.
    #[error("store conflict: {message}")]
    StoreConflict {
        /// What the store call was doing, and what went wrong, in words.
        message: String,
        /// The driver's error behind it, if any.
        #[source]
        cause: Option<Cause>,
    },

    /// The store holds data that breaks an invariant, or refused a request as invalid.
    #[error("store refused: {message}")]
    StoreInvalid {
        /// What the store call was doing, and what went wrong, in words.
        message: String,
        /// The driver's error behind it, if any.
        #[source]
        cause: Option<Cause>,
    },

    /// The worker lease is no longer ours (expired and taken, or the token changed).
    #[error("worker lease lost: worker {worker_id}")]
    LeaseLost {
        /// The worker ID that was lost.
        worker_id: u64,
    },

    /// The generator was closed (its worker lease is being released): it issues nothing more.
    #[error("the snowflake generator is closed: its worker lease was released")]
    GeneratorClosed,

    /// Every worker ID of the layout is held by a live node.
    #[error("no worker ID free: all {worker_count} are held by live nodes")]
    NoWorkerFree {
        /// How many worker IDs the layout has.
        worker_count: u64,
    },

    /// A specific worker ID was asked for but a live node holds it.
    #[error("worker ID {worker_id} is held by live node `{holder}`")]
    WorkerHeld {
        /// The requested worker ID.
        worker_id: u64,
        /// The node that holds it.
        holder: String,
    },

    /// A node starting found no worker ID free ([`Error::NoWorkerFree`]) or its static one held
    /// ([`Error::WorkerHeld`]), and no lease expired within the time it may wait for one
    /// (`worker_wait`). A node restarted right after it was killed finds its old lease still
    /// live until it expires; waiting a bounded time lets it start then instead of failing at
    /// once, and when it does fail the operator sees whom it waited for and how long.
    #[error(
        "{cause}; waited {} (worker_wait) for a worker lease to expire{}",
        seconds(.waited),
        soonest_expiry(.first_to_expire.as_ref())
    )]
    WorkerWaitRanOut {
        /// The store's last refusal: [`Error::NoWorkerFree`] or [`Error::WorkerHeld`].
        cause: Box<Error>,
        /// How long the node waited.
        waited: Duration,
        /// The live lease that expires first (among those the node could take), when the
        /// store could list them.
        first_to_expire: Option<ExpiringLease>,
    },

    /// The worker ID a node was given has a high-water mark further ahead of the node's clock
    /// than `max_lead`: an earlier holder issued IDs up to a time this clock has not reached
    /// (typically a restart with the clock stepped back). Under the clock policy `fail` the
    /// node refuses the worker ID rather than wait or switch.
    ///
    /// Retryable, code [`ErrorCode::ClockBehind`] like [`Error::ClockBehind`]: nothing but the
    /// clock has to change, and it does by itself. The same request succeeds once the clock has
    /// reached the mark (the lease keeper retries it while re-acquiring; a node refused at start
    /// starts when run again then), which is what the message says, beside the two ways not
    /// to wait.
    #[error(
        "the clock is {behind_ms} ms behind the high-water mark of worker {worker_id} \
         (IDs up to then were already issued); clock policy `fail` takes no worker ID before \
         the clock reaches it: try again in {behind_ms} ms, fix the clock, or use the policy \
         `wait` or `switch`"
    )]
    ClockBehindHwm {
        /// The worker ID refused.
        worker_id: u64,
        /// How far its HWM is ahead of the clock.
        behind_ms: u64,
    },

    /// The tag does not exist in the store.
    #[error("unknown tag `{tag}`")]
    UnknownTag {
        /// The tag.
        tag: String,
    },

    /// This node already serves as many tags as it may (`--max-tags`): the tag is neither
    /// created nor loaded. Not retryable: it takes a higher limit (or fewer tags), which keeps
    /// a client inventing tag names from growing the node's memory, metrics and store rows
    /// without bound.
    #[error(
        "too many tags: this node serves at most {limit} and `{tag}` would be one more; \
         raise --max-tags or reuse a tag (tokens other than the admin's stop at --max-tags \
         less --admin-tag-reserve)"
    )]
    TooManyTags {
        /// The tag refused.
        tag: String,
        /// The limit: `--max-tags`, less the admin reserve for a token of another scope.
        limit: usize,
    },

    /// The token's share of tags is used up (its `max_tags`): the tag is neither created in
    /// the store nor loaded on this node. Not retryable, like [`Error::TooManyTags`]: the
    /// token's tags keep working, a new one takes a higher quota (or fewer tags). Keeps one
    /// tenant from filling the store and every node's `--max-tags` for the others.
    #[error(
        "tag quota: the token `{token}` may have at most {limit} tags {place}, and `{tag}` \
         would be one more; reuse one of its tags or raise its max_tags in --tokens-file"
    )]
    TagQuota {
        /// The tag refused.
        tag: String,
        /// The token's name.
        token: String,
        /// The token's quota.
        limit: usize,
        /// Where it is counted: `in the store` (tags matching its patterns) or `loaded on
        /// this node`.
        place: &'static str,
    },

    /// The tag already exists (on create).
    #[error("tag `{tag}` already exists")]
    TagExists {
        /// The tag.
        tag: String,
    },

    /// The tag has reached the end of its ID space: the IDs left before
    /// [`MAX_SEGMENT_ID`](crate::store::MAX_SEGMENT_ID) (none, or fewer than a request that
    /// must be served whole needs) cannot serve the call. Not retryable: the end never moves.
    /// A distinct error, rather than a store refusal, so clients and operators can tell a tag
    /// that is used up (start a new tag) from a store in trouble.
    ///
    /// The last ID is written out as `i64::MAX - 1` (`MAX_SEGMENT_ID - 1`: the store keeps
    /// `max_id` in a signed 64-bit column) so this module needs nothing of `store`; a test
    /// there checks the two agree.
    #[error(
        "tag `{tag}` is exhausted: too few IDs are left below its end (the last ID is \
         {last_id}) to serve this request",
        last_id = i64::MAX - 1
    )]
    TagExhausted {
        /// The tag.
        tag: String,
    },

    /// A dated tag cannot hand out an ID now: its period's counter is used up, or the
    /// store's clock is back in a period before IDs already handed out. Not retryable at
    /// once: it lifts when the next period begins (or the clock catches up).
    #[error("tag `{tag}`: {reason}")]
    PeriodUnavailable {
        /// The tag.
        tag: String,
        /// Which of the two, with the periods involved.
        reason: String,
    },

    /// A run of a dated tag's IDs for a client to keep (`IDMINT.RANGE`, a segment lease) was
    /// asked for: the client would hand its IDs out after the period ended, dated wrong. Not
    /// retryable; the client takes IDs as it needs them instead.
    #[error(
        "tag `{tag}` is dated: a range kept by a client would outlive its period; take IDs as \
         they are needed (IDMINT.NEXT tag [COUNT n], GET /v1/segment/{tag}?count=n)"
    )]
    DatedRangeRefused {
        /// The tag.
        tag: String,
    },

    /// The store's data is damaged (a corrupt SQLite page, PostgreSQL `data_corrupted`, a
    /// broken MySQL table file). Not retryable: the same call fails again, and other calls may
    /// read wrong data, so a node that sees it reports itself not ready until restarted. The
    /// operator restores the store from a backup.
    #[error("store corrupt: {message}")]
    StoreCorrupt {
        /// What the store call was doing, and what went wrong, in words.
        message: String,
        /// The driver's error behind it, if any.
        #[source]
        cause: Option<Cause>,
    },
    /// A node's layout, epoch or datacenter differs from the ID space the store pins for its
    /// namespace: under other settings its ticks would become other values, and the fenced
    /// high-water mark could no longer keep them unique.
    #[error("{message}")]
    IdSpaceMismatch {
        /// What differs (`epoch`, `layout`, `datacenter`, `permutation key`).
        differences: Vec<&'static str>,
        /// Both spaces, what differs, and the two ways on (written by `id_space`).
        message: String,
    },

    /// The namespace has worker leases with high-water marks but no recorded ID space: nodes
    /// of an idmint from before ID spaces were recorded issued IDs there, under settings
    /// nobody wrote down. A node must not guess them (its own might differ), so the operator
    /// records them once with `idmint id-space adopt`.
    #[error(
        "this namespace has {workers} worker lease(s) from before ID spaces were recorded, so \
         the layout, epoch and datacenter its IDs were issued with are not known; record the \
         settings those nodes ran with, once, with `idmint id-space adopt --layout SPEC \
         [--epoch EPOCH] [--datacenter N]` (this node was given {given}), then start it again"
    )]
    IdSpaceUnrecorded {
        /// The space this node was given, as `IdSpace` shows it.
        given: String,
        /// How many worker IDs have a high-water mark.
        workers: u64,
    },

    /// A change of ID space was refused: it would overlap IDs already issued, or nodes of the
    /// current space still run. Nothing was changed.
    #[error("ID space change refused: {reason}")]
    IdSpaceRefused {
        /// Why, with the IDs or nodes in the way.
        reason: String,
    },

    /// The store's ID space changed while this node ran on an older one (a worker lease is
    /// asked for under the old space): the node must be restarted with the new settings.
    #[error(
        "the ID space of this namespace is now version {stored}, this node runs version \
         {held}: restart it with the settings `idmint id-space show` prints"
    )]
    IdSpaceChanged {
        /// The version this node runs.
        held: u64,
        /// The version in force in the store.
        stored: u64,
    },
}

impl Error {
    /// The code clients see for this error (the HTTP API's `error.code`, and the word after
    /// `-ERR` for those the Redis protocol names). An argument named `shard` or `id` has its own
    /// code, as the HTTP API reports those by the parameter; [`Error::WorkerWaitRanOut`] has the
    /// code of its cause.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidLayout { .. } => ErrorCode::InvalidLayout,
            Error::InvalidEpoch { .. } => ErrorCode::InvalidEpoch,
            Error::InvalidArgument { name: "shard", .. } => ErrorCode::InvalidShard,
            Error::InvalidArgument { name: "id", .. } => ErrorCode::InvalidId,
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::InvalidTag { .. } => ErrorCode::InvalidTag,
            Error::LayoutExhausted { .. } => ErrorCode::LayoutExhausted,
            Error::ClockBeforeEpoch { .. } => ErrorCode::ClockBeforeEpoch,
            Error::ClockBehind { .. } | Error::ClockBehindHwm { .. } => ErrorCode::ClockBehind,
            Error::HwmNotGranted { .. } => ErrorCode::HwmNotGranted,
            Error::SegmentUnavailable { .. } => ErrorCode::SegmentUnavailable,
            Error::StoreUnavailable { .. } => ErrorCode::StoreUnavailable,
            Error::StoreConflict { .. } => ErrorCode::StoreConflict,
            Error::StoreInvalid { .. } => ErrorCode::StoreInvalid,
            Error::StoreCorrupt { .. } => ErrorCode::StoreCorrupt,
            Error::LeaseLost { .. } => ErrorCode::LeaseLost,
            Error::GeneratorClosed => ErrorCode::ShuttingDown,
            Error::NoWorkerFree { .. } => ErrorCode::NoWorkerFree,
            Error::WorkerHeld { .. } => ErrorCode::WorkerHeld,
            Error::WorkerWaitRanOut { cause, .. } => cause.code(),
            Error::UnknownTag { .. } => ErrorCode::UnknownTag,
            Error::TooManyTags { .. } => ErrorCode::TooManyTags,
            Error::TagQuota { .. } => ErrorCode::TagQuota,
            Error::TagExists { .. } => ErrorCode::TagExists,
            Error::TagExhausted { .. } => ErrorCode::TagExhausted,
            Error::PeriodUnavailable { .. } => ErrorCode::PeriodUnavailable,
            Error::DatedRangeRefused { .. } => ErrorCode::Dated,
            Error::IdSpaceMismatch { .. } => ErrorCode::IdSpaceMismatch,
            Error::IdSpaceUnrecorded { .. } => ErrorCode::IdSpaceUnrecorded,
            Error::IdSpaceRefused { .. } => ErrorCode::IdSpaceRefused,
            Error::IdSpaceChanged { .. } => ErrorCode::IdSpaceChanged,
        }
    }

    /// True when the same call may succeed later without any change by the caller: a bounded
    /// wait ran out, or the store is down. Bad input, exhausted layouts and tags, and a corrupt
    /// store are not retryable. The retryability of the [`code`](Error::code), so a client that
    /// reads only the code decides the same.
    pub fn is_retryable(&self) -> bool {
        self.code().is_retryable()
    }

    /// [`Error::StoreUnavailable`] without a cause (see [`Error::caused_by`]).
    pub fn store_unavailable(message: impl Into<String>) -> Self {
        let (message, cause) = (message.into(), None);
        Error::StoreUnavailable { message, cause }
    }

    /// [`Error::StoreConflict`] without a cause.
    pub fn store_conflict(message: impl Into<String>) -> Self {
        let (message, cause) = (message.into(), None);
        Error::StoreConflict { message, cause }
    }

    /// [`Error::StoreInvalid`] without a cause.
    pub fn store_invalid(message: impl Into<String>) -> Self {
        let (message, cause) = (message.into(), None);
        Error::StoreInvalid { message, cause }
    }

    /// [`Error::StoreCorrupt`] without a cause.
    pub fn store_corrupt(message: impl Into<String>) -> Self {
        let (message, cause) = (message.into(), None);
        Error::StoreCorrupt { message, cause }
    }

    /// A store error with the driver's error kept as its [`source`](std::error::Error::source),
    /// so callers can inspect it rather than parse text. Other errors are returned unchanged.
    pub fn caused_by(mut self, error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        if let Error::StoreUnavailable { cause, .. }
        | Error::StoreConflict { cause, .. }
        | Error::StoreInvalid { cause, .. }
        | Error::StoreCorrupt { cause, .. } = &mut self
        {
            *cause = Some(Cause(Arc::from(error.into())));
        }
        self
    }

    /// The message with every cause after it (`store unavailable: allocating a segment: pool
    /// timed out`), for logs and operators; `Display` alone leaves the driver's text out.
    pub fn with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut next = std::error::Error::source(self);
        while let Some(cause) = next {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            next = cause.source();
        }
        text
    }

    /// Shorthand for [`Error::InvalidLayout`].
    pub(crate) fn layout(spec: &str, reason: impl Into<String>) -> Self {
        Error::InvalidLayout {
            spec: spec.to_owned(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub(crate) fn argument(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }
}

/// The driver's error behind a store error, shared so the error stays cheap to clone. Two
/// causes are equal when they say the same.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// The driver's error, to downcast (e.g. to `sqlx::Error`).
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

/// `waited` in seconds with one decimal (`0.0s`, `10.1s`): the wait is a setting of seconds,
/// and `Duration`'s own form prints `0ns` or `10.100392117s`.
fn seconds(waited: &Duration) -> String {
    format!("{:.1}s", waited.as_secs_f64())
}

/// The tail of [`Error::WorkerWaitRanOut`]'s message: which lease would have expired first.
fn soonest_expiry(lease: Option<&ExpiringLease>) -> String {
    match lease {
        Some(lease) => format!(
            "; the first to expire, worker {}'s held by `{}`, runs until {}",
            lease.worker_id, lease.node_name, lease.expires_at
        ),
        None => String::new(),
    }
}

/// The live worker lease a node waited for in vain ([`Error::WorkerWaitRanOut`]): plain data,
/// made from the store's lease row by `store`, so this module needs nothing of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiringLease {
    /// The worker ID.
    pub worker_id: u64,
    /// The node that holds it.
    pub node_name: String,
    /// When it expires, RFC 3339 UTC.
    pub expires_at: String,
}
