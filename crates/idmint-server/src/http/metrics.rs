//! `GET /metrics`: the Prometheus text of the recorder given in
//! [`HttpOptions::metrics`](super::HttpOptions), with the gauges that describe the ID service
//! computed at scrape time, so they cost nothing between scrapes. The names are
//! `crate::telemetry`'s.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::state::AppState;
use crate::ids::Ids;
use crate::telemetry::{
    CLOCK_DIVERGENCE_MS, LEASE_HELD, SEGMENT_BUFFERED_IDS, SEGMENT_BUFFER_SECONDS, SEGMENT_RATE,
    SEGMENT_STEP, SNOWFLAKE_LEAD_MS, WORKER_ID,
};

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
