//! `GET /healthz` (the process runs) and `GET /readyz` (it can serve: no store call reported
//! damaged data since the start, the worker lease is held, the clock is not behind the
//! snowflakes already issued, and the store answers).
//!
//! Both are open, for load balancers and orchestrators, so with tokens configured they say
//! only whether the node is ready and, when not, the reason's code: the details (the worker
//! ID, each store of a set with its URL, host, user and port, the store's error) map the
//! deployment, and are given only to a token of the metrics or admin scope. The status codes
//! are the same either way. A token that is not valid gets the short answer, is counted and
//! logged as an authentication failure and closes the connection, as on every other route:
//! the probe is no cheaper way to guess tokens. A node with no token configured serves every
//! route to everyone, and `/readyz` with its details.

use idmint_core::ErrorCode;
use std::time::Duration;

use axum::extract::State;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::access;
use super::encode;
use super::errors::ApiError;
use super::state::AppState;
use crate::auth::Need;

/// How long `/readyz` waits for the store.
pub(crate) const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The stores of a set as `/readyz` and `/v1/workers` show them.
pub(crate) fn stores_json(stores: &[idmint_store::StoreState]) -> Vec<serde_json::Value> {
    stores
        .iter()
        .map(|s| {
            serde_json::json!({
                "index": s.index,
                "url": s.url,
                "home": s.home,
                "up": s.up,
                "latency_ms": s.latency_ms,
                "error": s.error,
            })
        })
        .collect()
}

/// `GET /healthz` → 200 `{"status":"ok"}`.
pub(crate) async fn healthz() -> Response {
    encode::json(br#"{"status":"ok"}"#.to_vec())
}

/// What the caller of `/readyz` may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Audience {
    /// A token of the metrics or admin scope, or a node without tokens: everything.
    Operator,
    /// No token, or one of the mint scope: ready or not, and the reason's code.
    Anyone,
    /// A token that is not valid: as [`Audience::Anyone`], and the connection is closed.
    Refused,
}

impl Audience {
    fn of(state: &AppState, headers: &HeaderMap) -> Self {
        if !state.auth.required() {
            return Self::Operator;
        }
        let Some(token) = headers
            .get(AUTHORIZATION)
            .and_then(|header| access::bearer_token(header.as_bytes()))
        else {
            return Self::Anyone;
        };
        match state.auth.check(token) {
            Some(grant) if grant.allows(Need::Metrics) => Self::Operator,
            Some(_) => Self::Anyone,
            None => Self::Refused,
        }
    }
}

/// `GET /readyz` → 200 `{"status":"ready"}`, or 503 with the reason's code. To a token of the
/// metrics or admin scope (or on a node without tokens) the 200 also gives `"worker_id"` and,
/// with a store set, `"stores"` (each store's place, URL, whether it is the home store, up,
/// latency and error), and the 503 the reason in words. A set is ready while any of its
/// stores answers.
pub(crate) async fn readyz(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let audience = Audience::of(&state, &headers);
    let answer = match readiness(&state).await {
        Ok(details) if audience == Audience::Operator => Json(details).into_response(),
        Ok(_) => encode::json(br#"{"status":"ready"}"#.to_vec()),
        Err(error) if audience == Audience::Operator => error.into_response(),
        Err(error) => error.in_short().into_response(),
    };
    if audience == Audience::Refused {
        access::refused_token(answer)
    } else {
        answer
    }
}

/// The node's readiness with every detail: the 200's body, or the 503.
async fn readiness(state: &AppState) -> Result<serde_json::Value, ApiError> {
    let not_ready = |code, message: String| {
        ApiError::new(code, message).with_status(StatusCode::SERVICE_UNAVAILABLE)
    };
    if let Some(reason) = state.ids.store_corrupt() {
        return Err(not_ready(
            ErrorCode::StoreCorrupt,
            format!(
                "the store reported damaged data (not ready until restarted; restore the \
                 store from a backup): {reason}"
            ),
        ));
    }
    let keeper = state.ids.keeper();
    if let Some(error) = keeper.retired() {
        return Err(not_ready(
            ErrorCode::IdSpaceChanged,
            format!("{error} (not ready until restarted)"),
        ));
    }
    if !keeper.is_held() {
        return Err(not_ready(
            ErrorCode::LeaseNotHeld,
            "this node holds no confirmed worker lease".into(),
        ));
    }
    let behind_ms = state.ids.snowflake_clock_behind_ms();
    if behind_ms > 0 {
        return Err(not_ready(
            ErrorCode::ClockBehind,
            format!(
                "the clock is {behind_ms} ms behind the snowflakes worker {} already issued; \
                 snowflakes resume when it catches up",
                keeper.lease().worker_id
            ),
        ));
    }
    if let Some(set) = &state.ids.store().set {
        // A set serves while any of its stores answers.
        let stores = set.probe(STORE_PROBE_TIMEOUT).await;
        if !stores.iter().any(|store| store.up) {
            let why: Vec<String> = stores
                .iter()
                .map(|s| {
                    format!(
                        "{} ({}): {}",
                        s.index,
                        s.url,
                        s.error.as_deref().unwrap_or("down")
                    )
                })
                .collect();
            return Err(not_ready(
                ErrorCode::StoreUnavailable,
                format!("no store of the set answers: {}", why.join("; ")),
            ));
        }
        let stores = stores_json(&stores);
        return Ok(serde_json::json!({
            "status": "ready",
            "worker_id": keeper.lease().worker_id,
            "stores": stores,
        }));
    }
    let segments = &state.ids.store().segments;
    let probe = async {
        match &state.probe_tag {
            Some(tag) => segments.tag_info(tag).await.map(drop),
            None => segments.list_tags().await.map(drop),
        }
    };
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, probe).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            return Err(not_ready(
                ErrorCode::StoreUnavailable,
                format!("the store failed: {error}"),
            ))
        }
        Err(_) => {
            return Err(not_ready(
                ErrorCode::StoreUnavailable,
                format!(
                    "the store did not answer within {} s",
                    STORE_PROBE_TIMEOUT.as_secs()
                ),
            ))
        }
    }
    Ok(serde_json::json!({
        "status": "ready",
        "worker_id": keeper.lease().worker_id,
    }))
}
