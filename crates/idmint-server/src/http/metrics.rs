//! Metrics: what the HTTP front end records, and `GET /metrics`.
//!
//! Counters go to the global `metrics` recorder (install the Prometheus recorder before
//! building the router, and pass its handle in [`HttpOptions::metrics`](super::HttpOptions)).
//! Gauges that describe the ID service are computed at scrape time, so they cost nothing
//! between scrapes. The names are public constants so other front ends record the same series.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use idmint_core::Tag;
use metrics::Counter;

use super::errors::ApiError;
use super::state::AppState;
use crate::ids::Ids;

/// Counter: IDs handed out, labels `kind` (`snowflake` or `segment`) and, for segments, `tag`.
pub const IDS_ISSUED: &str = "idmint_ids_issued_total";
/// Counter: error responses of the HTTP front end, label `code` (the `error.code` of the body).
pub const HTTP_ERRORS: &str = "idmint_http_errors_total";
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
/// Gauge: how far the snowflake generator runs ahead of the clock (borrowed time), in ms.
pub const SNOWFLAKE_LEAD_MS: &str = "idmint_snowflake_lead_ms";

/// Gauge: the wall clock minus the generators' clock, in ms (negative after a step back).
pub const CLOCK_DIVERGENCE_MS: &str = "idmint_clock_divergence_ms";

/// Handles registered once, for the hot path.
#[derive(Debug)]
pub(crate) struct Recorded {
    snowflakes: Counter,
}

impl Recorded {
    /// Registers the hot-path counters with the global recorder and describes every metric.
    pub(crate) fn register() -> Self {
        metrics::describe_counter!(IDS_ISSUED, "IDs handed out, by kind and tag");
        metrics::describe_counter!(HTTP_ERRORS, "HTTP error responses, by error code");
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
            SNOWFLAKE_LEAD_MS,
            metrics::Unit::Milliseconds,
            "How far the snowflake generator runs ahead of the clock"
        );
        Self {
            snowflakes: metrics::counter!(IDS_ISSUED, "kind" => "snowflake"),
        }
    }

    /// Counts `n` snowflakes.
    #[inline]
    pub(crate) fn snowflakes(&self, n: u64) {
        self.snowflakes.increment(n);
    }
}

/// Counts `n` segment IDs of `tag`.
pub(crate) fn record_segment(tag: &Tag, n: u64) {
    metrics::counter!(IDS_ISSUED, "kind" => "segment", "tag" => tag.as_str().to_owned())
        .increment(n);
}

/// Counts an error response.
pub(crate) fn record_error(code: &'static str) {
    metrics::counter!(HTTP_ERRORS, "code" => code).increment(1);
}

/// Sets the gauges that describe the ID service now.
fn refresh_gauges(ids: &Ids) {
    let keeper = ids.keeper();
    metrics::gauge!(LEASE_HELD).set(if keeper.is_held() { 1.0 } else { 0.0 });
    metrics::gauge!(WORKER_ID).set(keeper.lease().worker_id as f64);
    metrics::gauge!(SNOWFLAKE_LEAD_MS).set(keeper.generator().lead_ms() as f64);
    metrics::gauge!(CLOCK_DIVERGENCE_MS).set(ids.clock().divergence_ms() as f64);
    for buffer in ids.segments().buffers() {
        let tag = buffer.tag().as_str().to_owned();
        let buffered = buffer.remaining();
        let seconds = match buffer.outage_budget() {
            Some(budget) => budget.as_secs_f64(),
            None if buffered > 0 => f64::INFINITY,
            None => 0.0,
        };
        metrics::gauge!(SEGMENT_BUFFER_SECONDS, "tag" => tag.clone()).set(seconds);
        metrics::gauge!(SEGMENT_BUFFERED_IDS, "tag" => tag.clone()).set(buffered as f64);
        metrics::gauge!(SEGMENT_STEP, "tag" => tag.clone()).set(buffer.step() as f64);
        metrics::gauge!(SEGMENT_RATE, "tag" => tag).set(buffer.rate_per_sec());
    }
}

/// `GET /metrics`: the Prometheus text format; 404 when the server runs without metrics.
pub(crate) async fn render(State(state): State<AppState>) -> Result<Response, ApiError> {
    let Some(handle) = &state.prometheus else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "metrics_disabled",
            "metrics are not enabled on this server",
        ));
    };
    refresh_gauges(&state.ids);
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}
