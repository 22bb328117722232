//! Every request's latency, by route: `idmint_http_request_seconds{route}`.
//!
//! The histograms are made once, one per route pattern, so a request pays a clock read, a
//! short scan of the patterns and one record; no label is built and no registry is searched
//! per request.

use std::sync::OnceLock;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics::Histogram;

use idmint_core::clock::Stopwatch;

use crate::telemetry::HTTP_REQUEST_SECONDS;

/// The route patterns the router serves (a pattern missing here is recorded as `other`).
const ROUTES: [&str; 14] = [
    "/v1/snowflake",
    "/v1/segment/{tag}",
    "/v1/segment/{tag}/lease",
    "/v1/decode/{id}",
    "/api/segment/get/{key}",
    "/api/snowflake/get/{key}",
    "/decodeSnowflakeId",
    "/v1/tags",
    "/v1/tags/{tag}",
    "/v1/workers",
    "/metrics",
    "/healthz",
    "/readyz",
    "other",
];

fn timers() -> &'static [(&'static str, Histogram)] {
    static TIMERS: OnceLock<Vec<(&'static str, Histogram)>> = OnceLock::new();
    TIMERS.get_or_init(|| {
        ROUTES
            .iter()
            .map(|&route| {
                (
                    route,
                    metrics::histogram!(HTTP_REQUEST_SECONDS, "route" => route),
                )
            })
            .collect()
    })
}

/// The middleware: times the rest of the request.
pub(super) async fn time(request: Request, next: Next) -> Response {
    let stopwatch = Stopwatch::start();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    let pattern = route.as_ref().map_or("other", MatchedPath::as_str);
    let timers = timers();
    let timer = timers
        .iter()
        .find(|(r, _)| *r == pattern)
        .or_else(|| timers.last());
    if let Some((_, histogram)) = timer {
        histogram.record(stopwatch.elapsed().as_secs_f64());
    }
    response
}
