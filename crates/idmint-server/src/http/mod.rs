//! The HTTP front end (axum) of the ID service.
//!
//! [`router`] builds the routes over an [`Ids`] service; [`serve`] runs them on a listener
//! until a shutdown signal, finishing in-flight requests.
//!
//! # Routes
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /v1/snowflake?count=N[&shard=K]` | `{"ids": ["..."]}`, count `1..=max_count` (default 1) |
//! | `GET /v1/uuid?count=N[&format=F]` | `{"ids": ["..."]}`: UUIDv7s, increasing, `F` one of `uuid` (default), `ulid`, `hex`, `bytes` (then `application/octet-stream`, 16 bytes an ID) |
//! | `GET /v1/ulid?count=N[&format=F]` | the same as ULIDs (`F` default `ulid`) |
//! | `GET /v1/segment/{tag}?count=N` | `{"ids": ["..."]}`, ascending |
//! | `POST /v1/segment/{tag}/lease?size=N` | `{"start": "S", "end": "E"}`, `E - S == N`, end exclusive |
//! | `GET /v1/decode/{id}[?tag=T]` | the decoded ID (`id`, `layout`, `time`, `unix_ms`, `tick`, fields, and `plain_id` on a permuted node); with `tag`, the plain value of that tag's segment ID (admin scope on a permuted node, mint otherwise); a 128-bit ID (36, 32 or 26 characters, or any with `kind=uuidv7\|ulid`): `id`, `kind`, `ms`, `time`, `version`, `variant`, `counter`, `node` |
//! | `GET /v1/tags` (admin) | `{"tags": [{"tag", "max_id", "step", "description", "updated_at_ms"}]}` |
//! | `GET /v1/tags/{tag}` (admin) | the tag, 404 when unknown |
//! | `PUT /v1/tags/{tag}` (admin) | body `{"step"?, "description"?, "first_id"?}`: 201 created, 200 updated |
//! | `GET /v1/workers` (admin) | `{"workers": [leases with hwm_ms], "node": {"worker_id", "held"}}`; with a store set, each lease's `store` and `"stores"` (each store's state) |
//! | `GET /healthz` | 200 `{"status":"ok"}` |
//! | `GET /readyz` | 200 when the worker lease is held and the store answers (with a store set: any of its stores) and has shown no damage, else 503. With tokens configured, only `{"status":"ready"}` or the error's code; to a metrics or admin token also `worker_id`, `"stores"` (each one's state) and the reason in words (see `health`) |
//! | `GET /metrics` | Prometheus text (404 without a metrics handle) |
//! | `GET /api/segment/get/{key}` | Leaf: next ID of tag `key`, plain text |
//! | `GET /api/snowflake/get/{key}` | Leaf: a snowflake, plain text |
//! | `GET /decodeSnowflakeId?snowflakeId=ID` | Leaf: `timestamp`, `workerId`, `sequenceId` + ours |
//!
//! The Leaf routes answer `POST`, `PUT`, `DELETE` and `PATCH` like `GET`, as Leaf's
//! controllers do, and `OPTIONS` with their `Allow` list. `HEAD` never takes an ID: on the
//! routes that mint it answers 200 with the headers and no body.
//!
//! IDs are JSON strings: JavaScript loses integers above 2^53. `/v1/snowflake`,
//! `/v1/segment/{tag}` and `/v1/decode/{id}` also take `format=decimal|base62|base36|base32`,
//! `prefix=P` and `width=N`: the IDs as text in that form (`idmint_core::form`), or the ID to
//! decode as written in it.
//!
//! # Tokens
//!
//! With tokens configured ([`HttpOptions::auth`]), every route but `/healthz` and `/readyz`
//! (which answer anyone, in short) needs `Authorization: Bearer TOKEN`: the ID routes (the Leaf ones included) a token of the
//! mint scope whose tag patterns match the tag, `/metrics` the metrics scope, the admin routes
//! the admin scope (which also does everything else). See `access`.
//!
//! # Errors
//!
//! Always `{"error": {"code": "...", "message": "..."}}`. The codes are
//! [`idmint_core::ErrorCode`]'s, and the status follows from the code (`errors::status`), but
//! for `/readyz`, which answers 503 whatever keeps it from being ready:
//!
//! | Status | Codes |
//! |---|---|
//! | 400 | `invalid_format`, `invalid_count`, `invalid_shard`, `invalid_size`, `invalid_id`, `invalid_tag`, `invalid_query`, `invalid_json`, `invalid_body`, `invalid_step`, `invalid_description`, `invalid_first_id`, `invalid_dating`, `invalid_argument`, `bad_request` (another status 4xx of the HTTP machinery keeps its status) |
//! | 401 / 403 | `unauthorized` (no Bearer token) / `forbidden` (a token that is not valid, of another scope, or not for the tag) |
//! | 404 | `not_found` (route), `unknown_tag` (tag absent, auto-create off), `metrics_disabled` |
//! | 405 | `method_not_allowed` (with `Allow`) |
//! | 409 | `tag_exists`, `tag_exhausted` (the tag's IDs up to 9223372036854775806 are used up, or too few are left for the `count` or `size` asked: none is taken then), `too_many_tags` (the node serves `--max-tags` tags already, or all but the admin reserve `--admin-tag-reserve` for a non-admin token), `tag_quota` (the token has its `max_tags` tags: in the store, or loaded on this node), `dated` (a range kept by the client, of a dated tag), `permuted` (a run of consecutive IDs, on a node that permutes them) |
//! | 413 | `payload_too_large` (body over [`BODY_LIMIT`]) |
//! | 503 | retryable, with `Retry-After: 1`: `store_unavailable`, `segment_unavailable`, `clock_behind`, `hwm_not_granted`, `store_conflict`, `lease_lost`, `shutting_down`, `no_worker_free`, `timeout` (admin route over [`REQUEST_TIMEOUT`]), `lease_not_held` (readyz), `store_corrupt` (readyz, until restart), `too_many_connections` (over [`MAX_CONNECTIONS`], then closed), `id_space_changed` (readyz, until restarted); without `Retry-After`: `period_unavailable` (a dated tag's period is used up: it lifts at the next one) |
//! | 500 | `layout_exhausted`, `clock_before_epoch`, `store_invalid`, `store_corrupt` (the store's data is damaged: restore it from a backup), `invalid_layout`, `invalid_epoch`, `worker_held`, `internal` |
//!
//! Requests the HTTP parser refuses never reach a route, so they get hyper's bare answer (an
//! empty body, then the connection is closed): `400` for a malformed request line or header
//! (bytes that are not allowed in a URI, such as raw non-UTF-8, HTTP/0.9, a bad
//! `Content-Length`), `414` for a target too long, `431` for a head over [`MAX_HEADER_SIZE`]
//! bytes or with more than 100 headers. A connection that has not sent a complete head within
//! [`HEADER_READ_TIMEOUT`] is closed without an answer (see [`serve_with`]).
//!
//! # Metrics
//!
//! Recorded to the global `metrics` recorder; names in [`metrics`]:
//! - `idmint_ids_issued_total{kind="snowflake"}`, `{kind="uuidv7"}`, `{kind="ulid"}` and
//!   `{kind="segment",tag="..."}` (counters);
//! - `idmint_http_errors_total{code="..."}` (counter);
//! - `idmint_http_request_seconds{routes="mint"|"admin"|"metrics"|"page"}` (histogram, see
//!   `timing`);
//! - at scrape time: `idmint_segment_buffer_seconds{tag}` (outage budget),
//!   `idmint_segment_buffered_ids{tag}`, `idmint_segment_step{tag}`,
//!   `idmint_segment_rate_per_second{tag}`, `idmint_lease_held` (0/1), `idmint_worker_id`,
//!   `idmint_snowflake_lead_ms` (gauges).
//!
//! Per-tag series exist for the first 100 tags used (`telemetry::METRIC_TAGS`); the others
//! share `tag="(other)"`, so the scrape stays small whatever the number of tags.
//!
//! Clock divergence is not reachable from [`Ids`] (it does not expose its clock), so the
//! composition root exports it if it wants it.

mod access;
mod admin;
mod dashboard;
mod encode;
mod errors;
mod health;
mod issue;
mod leaf;
mod listener;
mod metrics;
mod params;
mod state;
pub mod timing;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

pub use self::listener::{
    serve, serve_with, ConnectionOptions, HEADER_READ_TIMEOUT, MAX_CONNECTIONS, MAX_HEADER_SIZE,
};
use self::state::AppState;
use crate::auth::{Auth, Need};
use crate::ids::Ids;

/// Largest request body accepted (the only body is `PUT /v1/tags/{tag}`'s JSON).
pub const BODY_LIMIT: usize = 64 * 1024;

/// Longest an admin request may take (they wait on the store with no bound of their own). The
/// ID routes need none: the ID service bounds their waits (`max_wait`, about a second).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How the HTTP front end behaves.
#[derive(Clone)]
pub struct HttpOptions {
    /// The tokens; with none configured (the default) every route is open.
    pub auth: Arc<Auth>,
    /// Most IDs one request may ask for (`count`). Default 10,000.
    pub max_count: u64,
    /// Largest `size` of a lease. Default 1,000,000 (the segment buffers' default `max_step`;
    /// a larger size is refused by the buffer anyway).
    pub max_lease_size: u64,
    /// The handle of the installed Prometheus recorder; `/metrics` answers 404 without it.
    pub metrics: Option<PrometheusHandle>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            auth: Arc::new(Auth::default()),
            max_count: 10_000,
            max_lease_size: 1_000_000,
            metrics: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("auth", &self.auth)
            .field("max_count", &self.max_count)
            .field("max_lease_size", &self.max_lease_size)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// A Leaf route with the methods Leaf's controllers answer: their `@RequestMapping` names
/// none, so Spring serves `GET`, `POST`, `PUT`, `DELETE` and `PATCH` alike (all mint), `HEAD`
/// (which here takes no ID) and `OPTIONS` (the `Allow` list); `TRACE` is refused, as Spring
/// Boot refuses it.
fn leaf_methods<H, T>(handler: H) -> MethodRouter<AppState>
where
    H: axum::handler::Handler<T, AppState> + Clone,
    T: 'static,
{
    get(handler.clone())
        .post(handler.clone())
        .put(handler.clone())
        .delete(handler.clone())
        .patch(handler)
        .head(|| async { encode::head_only(encode::PLAIN) })
        .options(|| async { leaf::options() })
}

/// Every route over `ids`, with the JSON error fallbacks, the body limit and the timeout.
///
/// Install the global `metrics` recorder before calling this: the hot-path counters are
/// registered here, once.
pub fn router(ids: Arc<Ids>, options: HttpOptions) -> Router {
    let state = AppState::new(ids, options);
    // With tokens, each group of routes checks its scope; without, nothing is installed.
    let scoped = |routes: Router<AppState>, need: Need| {
        if state.auth.required() {
            routes.route_layer(axum::middleware::from_fn_with_state(
                (state.clone(), need),
                access::require,
            ))
        } else {
            routes
        }
    };
    // The admin routes wait on the store with no bound of their own: they get the timeout.
    // The ID routes' waits are bounded by the ID service (`max_wait`), and `/readyz` bounds
    // its probe, so the hot path pays for no timer.
    let admin = Router::new()
        .route("/v1/tags", get(admin::list_tags))
        .route("/v1/tags/{tag}", get(admin::tag_info).put(admin::put_tag))
        .route("/v1/workers", get(admin::workers))
        .route("/v1/node", get(dashboard::node))
        .route("/v1/buffers", get(dashboard::buffers))
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ));
    let mint = Router::new()
        .route(
            "/v1/snowflake",
            get(issue::snowflake).head(|| async { encode::head_only(encode::JSON) }),
        )
        .route(
            "/v1/uuid",
            get(issue::uuid).head(|| async { encode::head_only(encode::JSON) }),
        )
        .route(
            "/v1/ulid",
            get(issue::ulid).head(|| async { encode::head_only(encode::JSON) }),
        )
        .route(
            "/v1/segment/{tag}",
            get(issue::segment).head(|| async { encode::head_only(encode::JSON) }),
        )
        .route("/v1/segment/{tag}/lease", post(issue::lease))
        .route("/api/segment/get/{key}", leaf_methods(leaf::segment))
        .route("/api/snowflake/get/{key}", leaf_methods(leaf::snowflake));
    // Decoding a permuted ID restores its plain value (its time, its position): on a permuted
    // namespace that is the operator's, not every minting client's.
    let decoding = Router::new()
        .route("/v1/decode/{id}", get(issue::decode))
        .route("/decodeSnowflakeId", leaf_methods(leaf::decode));
    let decoding_need = if state.ids.is_permuted() {
        Need::Admin
    } else {
        Need::Mint
    };
    let metrics = Router::new().route("/metrics", get(metrics::render));
    let health = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/ui", get(dashboard::page))
        .route("/cache", get(dashboard::leaf_cache))
        .route("/db", get(dashboard::leaf_db));
    Router::new()
        .merge(scoped(mint, Need::Mint))
        .merge(scoped(decoding, decoding_need))
        .merge(scoped(metrics, Need::Metrics))
        .merge(scoped(admin, Need::Admin))
        .merge(health)
        .fallback(errors::not_found)
        .method_not_allowed_fallback(errors::method_not_allowed)
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(axum::middleware::map_response(errors::json_errors))
        .with_state(state)
}
