//! `GET /healthz` (the process runs) and `GET /readyz` (it can serve: no store call reported
//! damaged data since the start, the worker lease is held, the clock is not behind the
//! snowflakes already issued, and the store answers).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::encode;
use super::errors::ApiError;
use super::state::AppState;

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

/// `GET /readyz` → 200 `{"status":"ready","worker_id":n}` (with a store set, also `"stores"`:
/// each store's place, URL, whether it is the home store, up, latency and error), or 503 with
/// the reason. A set is ready while any of its stores answers.
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Response, ApiError> {
    let not_ready =
        |code, message: String| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message);
    if let Some(reason) = state.ids.store_corrupt() {
        return Err(not_ready(
            "store_corrupt",
            format!(
                "the store reported damaged data (not ready until restarted; restore the \
                 store from a backup): {reason}"
            ),
        ));
    }
    let keeper = state.ids.keeper();
    if let Some(error) = keeper.retired() {
        return Err(not_ready(
            "id_space_changed",
            format!("{error} (not ready until restarted)"),
        ));
    }
    if !keeper.is_held() {
        return Err(not_ready(
            "lease_not_held",
            "this node holds no confirmed worker lease".into(),
        ));
    }
    let behind_ms = state.ids.snowflake_clock_behind_ms();
    if behind_ms > 0 {
        return Err(not_ready(
            "clock_behind",
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
                "store_unavailable",
                format!("no store of the set answers: {}", why.join("; ")),
            ));
        }
        let stores = stores_json(&stores);
        return Ok(Json(serde_json::json!({
            "status": "ready",
            "worker_id": keeper.lease().worker_id,
            "stores": stores,
        }))
        .into_response());
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
                "store_unavailable",
                format!("the store failed: {error}"),
            ))
        }
        Err(_) => {
            return Err(not_ready(
                "store_unavailable",
                format!(
                    "the store did not answer within {} s",
                    STORE_PROBE_TIMEOUT.as_secs()
                ),
            ))
        }
    }
    Ok(Json(serde_json::json!({
        "status": "ready",
        "worker_id": keeper.lease().worker_id,
    }))
    .into_response())
}
