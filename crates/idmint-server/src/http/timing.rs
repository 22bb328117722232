//! Request latency: how long each HTTP request spends in the service, from hyper handing it
//! over to its response being ready (the token check included; reading the request and
//! writing the answer not), recorded to `idmint_http_request_seconds{routes}` with fixed
//! buckets ([`BUCKETS`]), so the series add up across nodes.
//!
//! The timer wraps the whole router once per connection, beside hyper, and picks the group of
//! routes from the path. Two other designs cost more, measured with callgrind on
//! `GET /v1/snowflake` (23,150 instructions a request without any timer):
//! - `axum::middleware::from_fn` boxed a future per request: about 2.6 µs of CPU each;
//! - a tower layer on each group of routes (`Router::layer`) boxed each route a second time,
//!   and a summary (the exporter's default) folds every sample into a sketch: +2,600
//!   instructions a request (11 %).
//!
//! The same wrapper counts the authentication failures (responses marked
//! [`AuthFailed`]) under the connection's client address, which the
//! router does not know: each request holds one handle on its connection's [`Connection`],
//! not shared with other connections, so the count costs a request nothing it did not pay
//! before.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use metrics::Histogram;

use super::access::AuthFailed;
use crate::tally::ListenerTallies;
use crate::telemetry::HTTP_REQUEST_SECONDS;

/// The histogram's bucket bounds, in seconds: a buffered ID is answered in microseconds, a
/// request that waits for the store in milliseconds, one that gives up after `max_wait` in
/// about a second.
pub const BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

/// The groups of routes, each a `routes` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routes {
    /// The ID routes, Leaf's included.
    Mint,
    /// `/v1/tags`, `/v1/workers`, `/v1/node`, `/v1/buffers`.
    Admin,
    /// `/metrics`.
    Metrics,
    /// Everything else: `/ui`, the probes, Leaf's monitor paths, unknown paths.
    Page,
}

impl Routes {
    /// The group of the route `path` leads to (as `router` lays the routes out).
    fn of(path: &str) -> Self {
        const MINT: [&str; 8] = [
            "/v1/snowflake",
            "/v1/uuid",
            "/v1/ulid",
            "/v1/segment/",
            "/v1/decode/",
            "/api/segment/get/",
            "/api/snowflake/get/",
            "/decodeSnowflakeId",
        ];
        if MINT.iter().any(|prefix| path.starts_with(prefix)) {
            Self::Mint
        } else if path == "/metrics" {
            Self::Metrics
        } else if path.starts_with("/v1/") {
            Self::Admin
        } else {
            Self::Page
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Mint => "mint",
            Self::Admin => "admin",
            Self::Metrics => "metrics",
            Self::Page => "page",
        }
    }
}

/// One histogram handle per group, registered once (a request does no label lookup).
#[derive(Clone)]
pub(crate) struct RequestTimers {
    histograms: [Histogram; 4],
}

impl RequestTimers {
    /// Registers the histograms with the global recorder (install it first).
    pub(crate) fn register() -> Self {
        let histogram =
            |routes: Routes| metrics::histogram!(HTTP_REQUEST_SECONDS, "routes" => routes.label());
        Self {
            histograms: [
                histogram(Routes::Mint),
                histogram(Routes::Admin),
                histogram(Routes::Metrics),
                histogram(Routes::Page),
            ],
        }
    }

    fn histogram(&self, routes: Routes) -> &Histogram {
        &self.histograms[routes as usize]
    }
}

/// What the requests of one connection share: the histograms, and the client's address with
/// the listener's tallies, to count its authentication failures.
pub(crate) struct Connection {
    pub(crate) timers: RequestTimers,
    pub(crate) peer: SocketAddr,
    pub(crate) tallies: Arc<ListenerTallies>,
}

/// `inner` (hyper's view of the router) with every request timed, and its authentication
/// failures counted under the client's address.
#[derive(Clone)]
pub(crate) struct Timed<S> {
    pub(crate) inner: S,
    pub(crate) connection: Arc<Connection>,
}

impl<S, B, R> hyper::service::Service<hyper::Request<B>> for Timed<S>
where
    S: hyper::service::Service<hyper::Request<B>, Response = hyper::Response<R>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = TimedCall<S::Future>;

    fn call(&self, request: hyper::Request<B>) -> Self::Future {
        let routes = Routes::of(request.uri().path());
        TimedCall {
            started: Instant::now(),
            routes,
            connection: Arc::clone(&self.connection),
            call: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// One timed request: records its latency when the inner call is ready, and counts an
    /// authentication failure. A call dropped before it ends (the client went away) records
    /// nothing.
    pub(crate) struct TimedCall<F> {
        #[pin]
        call: F,
        started: Instant,
        routes: Routes,
        connection: Arc<Connection>,
    }
}

impl<F, R, E> Future for TimedCall<F>
where
    F: Future<Output = Result<hyper::Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let output = std::task::ready!(this.call.poll(cx));
        let connection = &**this.connection;
        connection
            .timers
            .histogram(*this.routes)
            .record(this.started.elapsed().as_secs_f64());
        if let Ok(response) = &output {
            if response.extensions().get::<AuthFailed>().is_some() {
                connection.tallies.auth_failures.add(connection.peer);
            }
        }
        Poll::Ready(output)
    }
}

#[cfg(test)]
mod tests {
    use super::Routes;

    #[test]
    fn each_route_is_in_its_group() {
        for (path, routes) in [
            ("/v1/snowflake", Routes::Mint),
            ("/v1/uuid", Routes::Mint),
            ("/v1/ulid", Routes::Mint),
            ("/v1/segment/orders", Routes::Mint),
            ("/v1/segment/orders/lease", Routes::Mint),
            ("/v1/decode/42", Routes::Mint),
            ("/api/segment/get/orders", Routes::Mint),
            ("/api/snowflake/get/x", Routes::Mint),
            ("/decodeSnowflakeId", Routes::Mint),
            ("/metrics", Routes::Metrics),
            ("/v1/tags", Routes::Admin),
            ("/v1/tags/orders", Routes::Admin),
            ("/v1/workers", Routes::Admin),
            ("/v1/node", Routes::Admin),
            ("/v1/buffers", Routes::Admin),
            ("/ui", Routes::Page),
            ("/healthz", Routes::Page),
            ("/cache", Routes::Page),
            ("/nowhere", Routes::Page),
        ] {
            assert_eq!(Routes::of(path), routes, "{path}");
        }
    }
}
