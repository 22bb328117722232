//! What the operator's page (`/ui`) shows, and the page itself.
//!
//! - `GET /v1/node` (admin): this node at a glance: its name, layout and the date its IDs end,
//!   the worker ID and how far the store-confirmed high-water mark is ahead of the clock, the
//!   generators' clock against the wall clock, the store.
//! - `GET /v1/buffers` (admin): one row per tag this node serves from memory: the range being
//!   handed out and the position in it, whether the next range is loaded, the adaptive step,
//!   the rate and how long the buffer lasts at it. Node-local, like Leaf's `/cache`.
//! - `GET /ui`: one page, embedded in the binary, that polls those routes (and `/v1/workers`,
//!   `/metrics`, `/v1/decode`). It holds no data, so it is open; with tokens configured it asks
//!   for one. Leaf's monitor paths lead to it: `/cache` to the tags, `/db` to the workers.

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use idmint_core::layout::format_ms_rfc3339;
use serde::Serialize;

use super::state::AppState;

/// The page: HTML, styles and script in one file.
const PAGE: &str = include_str!("dashboard.html");

/// `GET /ui`.
pub(crate) async fn page() -> Response {
    (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
        .into_response()
}

/// Leaf's `/cache`: the tags view.
pub(crate) async fn leaf_cache() -> Redirect {
    Redirect::to("/ui#tags")
}

/// Leaf's `/db`: the workers view (idmint's store rows of note are the leases).
pub(crate) async fn leaf_db() -> Redirect {
    Redirect::to("/ui#workers")
}

#[derive(Serialize)]
struct Node {
    node_name: String,
    layout: String,
    /// When the layout's time field runs out (RFC 3339, UTC).
    layout_ends: String,
    /// Whether IDs are handed out permuted (`--permutation-key-file`).
    ids_permuted: bool,
    worker_id: u64,
    lease_held: bool,
    /// The store-confirmed high-water mark minus the clock.
    hwm_lead_ms: i64,
    /// Time the generator borrowed from the future.
    generator_lead_ms: u64,
    /// Wall clock minus the generators' clock.
    clock_divergence_ms: i64,
    store: String,
    tags_loaded: usize,
}

/// `GET /v1/node`.
pub(crate) async fn node(State(state): State<AppState>) -> Json<impl Serialize> {
    let ids = &state.ids;
    let keeper = ids.keeper();
    let lease = keeper.lease();
    let generator = keeper.generator();
    let layout = ids.layout();
    Json(Node {
        node_name: keeper.node_name().to_owned(),
        layout: layout.spec(),
        layout_ends: format_ms_rfc3339(layout.tick_start_ms(layout.max_tick())),
        ids_permuted: ids.is_permuted(),
        worker_id: lease.worker_id,
        lease_held: keeper.is_held(),
        hwm_lead_ms: generator.granted_lead_ms(),
        generator_lead_ms: generator.lead_ms(),
        clock_divergence_ms: ids.clock().divergence_ms(),
        store: ids.store().display_url.clone(),
        tags_loaded: ids.segments().len(),
    })
}

#[derive(Serialize)]
struct BufferRow {
    tag: String,
    /// `[start, end)` of the range being handed out, as strings (IDs exceed 2^53).
    current: [String; 2],
    /// The tag's counter: the last ID handed out here.
    position: Option<String>,
    next_ready: bool,
    next: Option<[String; 2]>,
    step: u64,
    min_step: u64,
    rate_per_sec: f64,
    /// How long the IDs held last at the observed rate; `null` before any was used.
    seconds_left: Option<f64>,
    buffered: u64,
}

/// `GET /v1/buffers`: the busiest tags first.
pub(crate) async fn buffers(State(state): State<AppState>) -> Json<impl Serialize> {
    let pair = |r: &std::ops::Range<u64>| [r.start.to_string(), r.end.to_string()];
    let mut rows: Vec<BufferRow> = state
        .ids
        .segments()
        .buffers()
        .iter()
        .map(|buffer| {
            let holdings = buffer.holdings();
            BufferRow {
                tag: buffer.tag().as_str().to_owned(),
                current: pair(&holdings.current),
                position: buffer.counter().map(|c| c.to_string()),
                next_ready: holdings.next.is_some(),
                next: holdings.next.as_ref().map(pair),
                step: buffer.step(),
                min_step: buffer.min_step(),
                rate_per_sec: buffer.rate_per_sec(),
                seconds_left: buffer.outage_budget().map(|d| d.as_secs_f64()),
                buffered: buffer.remaining(),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.rate_per_sec.total_cmp(&a.rate_per_sec));
    Json(serde_json::json!({ "buffers": rows }))
}
