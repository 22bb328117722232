//! `GET /metrics`: the Prometheus text of the recorder given in
//! [`HttpOptions::metrics`](super::HttpOptions), with the gauges that describe the ID service
//! computed at scrape time, so they cost nothing between scrapes. The names are
//! `crate::telemetry`'s.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use idmint_core::ErrorCode;

use super::errors::ApiError;
use super::state::AppState;
use crate::ids::Ids;
use crate::telemetry::{
    tag_label, CLOCK_DIVERGENCE_MS, LEASE_HELD, LEASE_HWM_LEAD_MS, OTHER_TAGS,
    SEGMENT_BUFFERED_IDS, SEGMENT_BUFFER_SECONDS, SEGMENT_RATE, SEGMENT_STEP, SNOWFLAKE_LEAD_MS,
    STORE_PROBE_MS, STORE_UP, WORKER_ID,
};

/// How long a scrape waits for each store of a set (they are asked at once).
const STORE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Sets the gauges that describe the ID service now.
fn refresh_gauges(ids: &Ids) {
    let keeper = ids.keeper();
    metrics::gauge!(LEASE_HELD).set(if keeper.is_held() { 1.0 } else { 0.0 });
    metrics::gauge!(WORKER_ID).set(keeper.lease().worker_id as f64);
    metrics::gauge!(SNOWFLAKE_LEAD_MS).set(keeper.generator().lead_ms() as f64);
    metrics::gauge!(LEASE_HWM_LEAD_MS).set(keeper.generator().granted_lead_ms() as f64);
    metrics::gauge!(CLOCK_DIVERGENCE_MS).set(ids.clock().divergence_ms() as f64);
    // The tags beyond `METRIC_TAGS` are summed into one series (their shortest buffer time,
    // their largest step), so a scrape stays small whatever the number of tags.
    let mut other: Option<TagGauges> = None;
    for buffer in ids.segments().buffers() {
        let buffered = buffer.remaining();
        let gauges = TagGauges {
            seconds: match buffer.outage_budget() {
                Some(budget) => budget.as_secs_f64(),
                None if buffered > 0 => f64::INFINITY,
                None => 0.0,
            },
            buffered: buffered as f64,
            step: buffer.step() as f64,
            rate: buffer.rate_per_sec(),
        };
        let label = tag_label(buffer.tag());
        if label == OTHER_TAGS {
            other = Some(other.map_or(gauges, |sum| sum.merge(gauges)));
        } else {
            gauges.set(label);
        }
    }
    if let Some(other) = other {
        other.set(OTHER_TAGS.to_owned());
    }
}

/// The scrape-time gauges of one tag (or of the tags summed as `(other)`).
#[derive(Debug, Clone, Copy)]
struct TagGauges {
    seconds: f64,
    buffered: f64,
    step: f64,
    rate: f64,
}

impl TagGauges {
    fn merge(self, more: Self) -> Self {
        Self {
            seconds: self.seconds.min(more.seconds),
            buffered: self.buffered + more.buffered,
            step: self.step.max(more.step),
            rate: self.rate + more.rate,
        }
    }

    fn set(self, tag: String) {
        metrics::gauge!(SEGMENT_BUFFER_SECONDS, "tag" => tag.clone()).set(self.seconds);
        metrics::gauge!(SEGMENT_BUFFERED_IDS, "tag" => tag.clone()).set(self.buffered);
        metrics::gauge!(SEGMENT_STEP, "tag" => tag.clone()).set(self.step);
        metrics::gauge!(SEGMENT_RATE, "tag" => tag).set(self.rate);
    }
}

/// `GET /metrics`: the Prometheus text format; 404 when the server runs without metrics.
pub(crate) async fn render(State(state): State<AppState>) -> Result<Response, ApiError> {
    let Some(handle) = &state.prometheus else {
        return Err(ApiError::new(
            ErrorCode::MetricsDisabled,
            "metrics are not enabled on this server",
        ));
    };
    refresh_gauges(&state.ids);
    if let Some(set) = &state.ids.store().set {
        for store in set.probe(STORE_PROBE_TIMEOUT).await {
            let label = store.index.to_string();
            metrics::gauge!(STORE_UP, "store" => label.clone()).set(if store.up {
                1.0
            } else {
                0.0
            });
            if let Some(ms) = store.latency_ms {
                metrics::gauge!(STORE_PROBE_MS, "store" => label).set(ms as f64);
            }
        }
    }
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}
