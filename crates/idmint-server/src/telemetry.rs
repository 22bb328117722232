//! The service's metrics, for both front ends and the store meter: every name (so HTTP and the
//! Redis protocol record the same series), its description, and the recording helpers.
//!
//! Counters go to the global `metrics` recorder; `serve` installs the Prometheus one. Gauges
//! that describe the ID service are set at scrape time by `GET /metrics`.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use idmint_core::{Id128Kind, Tag};
use metrics::Counter;

/// Counter: IDs handed out, labels `kind` (`snowflake`, `segment`, `uuidv7` or `ulid`) and, for
/// segments, `tag`.
pub const IDS_ISSUED: &str = "idmint_ids_issued_total";
/// Counter: error responses of the HTTP front end, label `code` (the `error.code` of the body).
pub const HTTP_ERRORS: &str = "idmint_http_errors_total";
/// Histogram: latency of HTTP requests inside the service (token check included), label
/// `routes`: `mint` (the ID routes, Leaf's included), `admin`, `metrics`, `page` (`/ui`, the
/// probes, Leaf's monitor paths).
pub const HTTP_REQUEST_SECONDS: &str = "idmint_http_request_seconds";
/// Gauge per `tag`: seconds the IDs buffered in memory last at the observed rate (the outage
/// budget); `+Inf` while no consumption was observed and IDs are buffered.
pub const SEGMENT_BUFFER_SECONDS: &str = "idmint_segment_buffer_seconds";
/// Gauge per `tag`: IDs buffered in memory (current segment plus the loaded next one).
pub const SEGMENT_BUFFERED_IDS: &str = "idmint_segment_buffered_ids";
/// Gauge per `tag`: the adaptive step (size of the last range requested).
pub const SEGMENT_STEP: &str = "idmint_segment_step";
/// Gauge per `tag`: observed consumption, IDs per second.
pub const SEGMENT_RATE: &str = "idmint_segment_rate_per_second";
/// Gauge: 1 while the store confirms this node's worker lease, else 0.
pub const LEASE_HELD: &str = "idmint_lease_held";
/// Gauge: the worker ID this node holds (or last held).
pub const WORKER_ID: &str = "idmint_worker_id";
/// Gauge per store of a set (`store` = its place in the list): 1 when it answered the last
/// scrape's probe in time, else 0.
pub const STORE_UP: &str = "idmint_store_up";
/// Gauge per store of a set: the last probe's round trip, in ms.
pub const STORE_PROBE_MS: &str = "idmint_store_probe_ms";
/// Counter: worker leases taken from another store of a set because this node's store stopped
/// answering.
pub const LEASE_MOVES: &str = "idmint_lease_moves_total";
/// Gauge: how far the snowflake generator runs ahead of the clock (borrowed time), in ms.
pub const SNOWFLAKE_LEAD_MS: &str = "idmint_snowflake_lead_ms";

/// Gauge: how far the worker lease's high-water mark, confirmed by the store, is ahead of the
/// clock, in ms: how long snowflakes keep flowing if the store stops answering now.
pub const LEASE_HWM_LEAD_MS: &str = "idmint_lease_hwm_lead_ms";
/// Gauge: the wall clock minus the generators' clock, in ms (negative after a step back).
pub const CLOCK_DIVERGENCE_MS: &str = "idmint_clock_divergence_ms";
/// Histogram: latency of store calls, label `op`.
pub const STORE_CALL_SECONDS: &str = "idmint_store_call_seconds";
/// Counter: failed store calls, labels `op` and `kind`.
pub const STORE_ERRORS: &str = "idmint_store_errors_total";
/// Gauge: open Redis-protocol connections.
pub const RESP_CONNECTIONS: &str = "idmint_resp_connections";
/// Counter: Redis-protocol requests refused as malformed (the connection is closed).
pub const RESP_PROTOCOL_ERRORS: &str = "idmint_resp_protocol_errors_total";
/// Counter: connections refused or closed by a limit, labels `listener` (`http`, `resp`) and
/// `reason` (`max_connections`, `per_address`, `auth_timeout`, `idle_timeout`,
/// `auth_failures`, `tls_handshake`).
pub const CONNECTIONS_REFUSED: &str = "idmint_connections_refused_total";
/// Counter: requests with a missing or wrong token, label `listener`.
pub const AUTH_FAILURES: &str = "idmint_auth_failures_total";

/// Handles registered once, for the hot path.
#[derive(Debug)]
pub(crate) struct Recorded {
    snowflakes: Counter,
    /// UUIDv7s and ULIDs, in [`id128_index`] order.
    id128s: [Counter; 2],
}

impl Recorded {
    /// Registers the hot-path counters with the global recorder and describes every metric.
    pub(crate) fn register() -> Self {
        metrics::describe_counter!(IDS_ISSUED, "IDs handed out, by kind and tag");
        metrics::describe_gauge!(
            STORE_UP,
            "1 when this store of the set answered the scrape's probe in time, else 0"
        );
        metrics::describe_gauge!(
            STORE_PROBE_MS,
            "Round trip of the scrape's probe of this store of the set, ms"
        );
        metrics::describe_counter!(
            LEASE_MOVES,
            "Worker leases taken from another store of the set after this node's stopped answering"
        );
        metrics::describe_counter!(HTTP_ERRORS, "HTTP error responses, by error code");
        metrics::describe_histogram!(
            HTTP_REQUEST_SECONDS,
            metrics::Unit::Seconds,
            "Latency of HTTP requests inside the service, by group of routes"
        );
        metrics::describe_gauge!(
            SEGMENT_BUFFER_SECONDS,
            metrics::Unit::Seconds,
            "How long the IDs buffered for a tag last at the observed rate (outage budget)"
        );
        metrics::describe_gauge!(SEGMENT_BUFFERED_IDS, "IDs buffered in memory for a tag");
        metrics::describe_gauge!(SEGMENT_STEP, "Adaptive segment step of a tag");
        metrics::describe_gauge!(
            SEGMENT_RATE,
            "Observed consumption of a tag, IDs per second"
        );
        metrics::describe_gauge!(LEASE_HELD, "1 while this node's worker lease is confirmed");
        metrics::describe_gauge!(
            CLOCK_DIVERGENCE_MS,
            metrics::Unit::Milliseconds,
            "Wall clock minus the generators' clock (negative after the wall clock stepped back)"
        );
        metrics::describe_gauge!(WORKER_ID, "Worker ID held by this node");
        metrics::describe_gauge!(
            LEASE_HWM_LEAD_MS,
            metrics::Unit::Milliseconds,
            "How far the store-confirmed high-water mark is ahead of the clock"
        );

        metrics::describe_gauge!(
            SNOWFLAKE_LEAD_MS,
            metrics::Unit::Milliseconds,
            "How far the snowflake generator runs ahead of the clock"
        );
        describe_store_and_resp();
        Self {
            snowflakes: snowflake_counter(),
            id128s: id128_counters(),
        }
    }

    /// Counts `n` snowflakes.
    #[inline]
    pub(crate) fn snowflakes(&self, n: u64) {
        self.snowflakes.increment(n);
    }

    /// Counts `n` 128-bit IDs of `kind`.
    #[inline]
    pub(crate) fn id128s(&self, kind: Id128Kind, n: u64) {
        self.id128s[id128_index(kind)].increment(n);
    }
}

/// The counters of 128-bit IDs, `kind="uuidv7"` then `kind="ulid"` (the kinds' names), for
/// callers that keep the handles.
pub(crate) fn id128_counters() -> [Counter; 2] {
    [Id128Kind::Uuid7, Id128Kind::Ulid]
        .map(|kind| metrics::counter!(IDS_ISSUED, "kind" => kind.as_str()))
}

/// The place of `kind`'s counter in [`id128_counters`].
#[inline]
pub(crate) fn id128_index(kind: Id128Kind) -> usize {
    match kind {
        Id128Kind::Uuid7 => 0,
        Id128Kind::Ulid => 1,
    }
}

/// Most tags with metric series of their own: the first this many used since the start. The
/// others share the series labelled [`OTHER_TAGS`], so a client that invents tag names cannot
/// grow `/metrics` (and the recorder's memory) without bound.
pub const METRIC_TAGS: usize = 100;

/// The `tag` label of the tags beyond [`METRIC_TAGS`]; a tag named `(other)` is counted there
/// too, so no series ever stands for two things.
pub const OTHER_TAGS: &str = "(other)";

/// The tags that have series of their own, in this process.
static NAMED_TAGS: Mutex<Option<HashSet<Tag>>> = Mutex::new(None);

/// The `tag` label of `tag`: its name while fewer than [`METRIC_TAGS`] tags have one (first
/// come, kept for the process's life, so a counter's series never changes), else
/// [`OTHER_TAGS`].
///
/// The name is passed with each `\` doubled: the exporter escapes `"` and newlines (a tag has
/// none of the latter) but takes a `\` for the start of an escape already made, so `a\"b` would
/// lose its `\` and be shown as the tag `a"b`. Doubled, every tag reads back exactly.
pub(crate) fn tag_label(tag: &Tag) -> String {
    if tag.as_str() == OTHER_TAGS {
        return OTHER_TAGS.to_owned();
    }
    let mut named = NAMED_TAGS.lock().unwrap_or_else(PoisonError::into_inner);
    let named = named.get_or_insert_with(HashSet::new);
    if named.contains(tag) || (named.len() < METRIC_TAGS && named.insert(tag.clone())) {
        tag.as_str().replace('\\', "\\\\")
    } else {
        OTHER_TAGS.to_owned()
    }
}

/// Counts `n` segment IDs of `tag`.
pub(crate) fn record_segment(tag: &Tag, n: u64) {
    segment_counter(tag).increment(n);
}

/// Counts an HTTP error response.
pub(crate) fn record_http_error(code: &'static str) {
    metrics::counter!(HTTP_ERRORS, "code" => code).increment(1);
}

/// The counter of segment IDs of `tag`, for callers that keep the handle.
pub(crate) fn segment_counter(tag: &Tag) -> Counter {
    metrics::counter!(IDS_ISSUED, "kind" => "segment", "tag" => tag_label(tag))
}

/// The counter of snowflakes, for callers that keep the handle.
pub(crate) fn snowflake_counter() -> Counter {
    metrics::counter!(IDS_ISSUED, "kind" => "snowflake")
}

/// Describes the metrics of the store meter and the Redis protocol.
pub(crate) fn describe_store_and_resp() {
    metrics::describe_histogram!(
        STORE_CALL_SECONDS,
        metrics::Unit::Seconds,
        "Latency of store calls, by operation"
    );
    metrics::describe_counter!(STORE_ERRORS, "Failed store calls, by operation and kind");
    metrics::describe_gauge!(RESP_CONNECTIONS, "Open Redis-protocol connections");
    metrics::describe_counter!(
        RESP_PROTOCOL_ERRORS,
        "Redis-protocol requests refused as malformed"
    );
    metrics::describe_counter!(
        CONNECTIONS_REFUSED,
        "Connections refused or closed by a limit, by listener and reason"
    );
    metrics::describe_counter!(
        AUTH_FAILURES,
        "Requests with a missing or wrong token, by listener"
    );
}
