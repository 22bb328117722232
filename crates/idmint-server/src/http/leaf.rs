//! Meituan Leaf's routes, so Leaf users switch by changing a URL.
//!
//! - `GET /api/segment/get/{key}`: the next segment ID of tag `key`, plain-text decimal;
//! - `GET /api/snowflake/get/{key}`: a snowflake, plain-text decimal (`key` is ignored, as in
//!   Leaf);
//! - `GET /decodeSnowflakeId?snowflakeId=ID`: Leaf's fields (`timestamp`, `workerId`,
//!   `sequenceId`, strings as Leaf returns them) followed by idmint's decoded fields.
//!
//! Errors keep idmint's JSON shape and statuses (Leaf answers 500 with a Java stack trace or,
//! for decoding, 200 with `errorMsg`), so clients see a failure as a failure.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use idmint_core::DecodedId;
use idmint_core::ErrorCode;
use serde::Serialize;

use super::encode;
use super::errors::ApiError;
use super::params::{Caller, LeafDecodeQuery, Params, TagPath};
use super::state::AppState;
use crate::telemetry;

/// `GET /api/segment/get/{key}`.
pub(crate) async fn segment(
    State(state): State<AppState>,
    TagPath(tag): TagPath,
    caller: Caller,
) -> Result<Response, ApiError> {
    let runs = state.ids.segment_ids(&tag, 1, caller.asker()).await?;
    let id = runs.first().map(|run| run.start).ok_or_else(empty)?;
    telemetry::record_segment(&tag, 1);
    Ok(encode::plain_id(state.ids.tag_publisher(&tag).publish(id)))
}

/// `GET /api/snowflake/get/{key}`.
pub(crate) async fn snowflake(State(state): State<AppState>) -> Result<Response, ApiError> {
    let id = state.ids.snowflakes(1, 0).await?.next().ok_or_else(empty)?;
    state.recorded.snowflakes(1);
    Ok(encode::plain_id(state.ids.publish_snowflake(id)))
}

/// `OPTIONS` on a Leaf route: the methods Spring lists for a mapping that names none.
pub(crate) fn options() -> Response {
    let mut response = StatusCode::OK.into_response();
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS"),
    );
    response
}

fn empty() -> ApiError {
    ApiError::new(ErrorCode::Internal, "the generator returned no ID")
}

/// Leaf's decoding, then ours.
#[derive(Debug, Serialize)]
struct LeafDecoded {
    /// `"<unix ms>(<yyyy-MM-dd HH:mm:ss.SSS>)"`, UTC (Leaf uses the server's zone).
    timestamp: String,
    #[serde(rename = "workerId")]
    worker_id: String,
    #[serde(rename = "sequenceId")]
    sequence_id: String,
    #[serde(flatten)]
    decoded: DecodedId,
}

impl LeafDecoded {
    fn new(decoded: DecodedId) -> Self {
        // "2019-09-06T01:35:00.834Z" → "2019-09-06 01:35:00.834"
        let time = decoded.time.strip_suffix('Z').unwrap_or(&decoded.time);
        let time = time.replacen('T', " ", 1);
        Self {
            timestamp: format!("{}({time})", decoded.unix_ms),
            worker_id: decoded.worker.unwrap_or(0).to_string(),
            sequence_id: decoded.seq.to_string(),
            decoded,
        }
    }
}

/// `GET /decodeSnowflakeId?snowflakeId=ID`.
pub(crate) async fn decode(
    State(state): State<AppState>,
    Params(query): Params<LeafDecodeQuery>,
) -> Result<Response, ApiError> {
    let id = query.snowflake_id.ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidId,
            "`snowflakeId` is required: ?snowflakeId=ID",
        )
    })?;
    Ok(Json(LeafDecoded::new(state.ids.decode(id)?)).into_response())
}

#[cfg(test)]
mod tests {
    use idmint_core::Layout;

    use super::*;

    #[test]
    fn leaf_fields_match_leaf_formats() {
        let layout = Layout::parse("time:41@1ms,worker:10,seq:12").ok();
        let Some(layout) = layout else {
            panic!("the layout does not parse");
        };
        let id = (1_000u64 << 22) | (39 << 12) | 3_448;
        let decoded = layout.decode(id).ok();
        let Some(decoded) = decoded else {
            panic!("the ID does not decode");
        };
        let unix_ms = decoded.unix_ms;
        let value = serde_json::to_value(LeafDecoded::new(decoded)).unwrap_or_default();
        assert_eq!(value["workerId"], "39");
        assert_eq!(value["sequenceId"], "3448");
        assert_eq!(value["worker"], 39);
        assert_eq!(value["seq"], 3448);
        assert_eq!(value["id"], id.to_string());
        let timestamp = value["timestamp"].as_str().unwrap_or_default();
        assert!(
            timestamp.starts_with(&format!("{unix_ms}(")) && timestamp.ends_with(')'),
            "{timestamp}"
        );
        assert!(
            !timestamp.contains('T') && !timestamp.contains('Z'),
            "{timestamp}"
        );
    }
}
