//! Admin routes: tags (`GET /v1/tags`, `GET|PUT /v1/tags/{tag}`) and worker leases
//! (`GET /v1/workers`). With tokens configured they need one of the admin scope (`access`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use idmint_core::segment::MAX_SEGMENT_LEN;
use idmint_core::store::Partition;
use idmint_core::store::{TagInfo, TagSettings, TagUpdate, MAX_SEGMENT_ID};
use idmint_core::{Error, Tag};
use serde::{Deserialize, Serialize};

use super::errors::ApiError;
use super::params::{JsonBody, TagPath};
use super::state::AppState;

/// Longest description accepted, in bytes.
const MAX_DESCRIPTION: usize = 1_024;

/// A tag as the API shows it: `max_id` is a string like every ID.
#[derive(Debug, Serialize)]
struct TagView {
    tag: Tag,
    /// The next ID the store will hand out.
    max_id: String,
    step: u64,
    description: String,
    updated_at_ms: u64,
}

impl From<TagInfo> for TagView {
    fn from(info: TagInfo) -> Self {
        Self {
            tag: info.tag,
            max_id: info.max_id.to_string(),
            step: info.step,
            description: info.description,
            updated_at_ms: info.updated_at_ms,
        }
    }
}

/// `GET /v1/tags` → `{"tags": [...]}`.
pub(crate) async fn list_tags(State(state): State<AppState>) -> Result<Response, ApiError> {
    let tags = state.ids.store().segments.list_tags().await?;
    let tags: Vec<TagView> = tags.into_iter().map(TagView::from).collect();
    Ok(Json(serde_json::json!({ "tags": tags })).into_response())
}

/// `GET /v1/tags/{tag}` → the tag; 404 when it does not exist.
pub(crate) async fn tag_info(
    State(state): State<AppState>,
    TagPath(tag): TagPath,
) -> Result<Response, ApiError> {
    match state.ids.store().segments.tag_info(&tag).await? {
        Some(info) => Ok(Json(TagView::from(info)).into_response()),
        None => Err(Error::UnknownTag(tag.to_string()).into()),
    }
}

/// The body of `PUT /v1/tags/{tag}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TagBody {
    step: Option<u64>,
    description: Option<String>,
    /// Only when the tag is created.
    first_id: Option<u64>,
}

impl TagBody {
    fn validate(&self) -> Result<(), ApiError> {
        if let Some(step) = self.step {
            if !(1..=MAX_SEGMENT_LEN).contains(&step) {
                return Err(ApiError::bad_request(
                    "invalid_step",
                    format!("`step` must be in 1..={MAX_SEGMENT_LEN}, got {step}"),
                ));
            }
        }
        if let Some(description) = &self.description {
            if description.len() > MAX_DESCRIPTION {
                return Err(ApiError::bad_request(
                    "invalid_description",
                    format!("`description` is longer than {MAX_DESCRIPTION} bytes"),
                ));
            }
        }
        if let Some(first_id) = self.first_id {
            if !(1..MAX_SEGMENT_ID).contains(&first_id) {
                return Err(ApiError::bad_request(
                    "invalid_first_id",
                    format!("`first_id` must be in 1..{MAX_SEGMENT_ID}, got {first_id}"),
                ));
            }
        }
        Ok(())
    }
}

/// `PUT /v1/tags/{tag}` with `{"step": n?, "description": "..."?, "first_id": n?}`: creates the
/// tag if it does not exist (201, with the default step unless given), else changes its step
/// or description (200). `first_id` on an existing tag is a 409.
pub(crate) async fn put_tag(
    State(state): State<AppState>,
    TagPath(tag): TagPath,
    JsonBody(body): JsonBody<TagBody>,
) -> Result<Response, ApiError> {
    body.validate()?;
    let store = &state.ids.store().segments;
    if store.tag_info(&tag).await?.is_none() {
        let defaults = TagSettings::default();
        let settings = TagSettings {
            step: body.step.unwrap_or(defaults.step),
            description: body.description.clone().unwrap_or_default(),
            first_id: body.first_id.unwrap_or(defaults.first_id),
        };
        match store.create_tag(&tag, &settings).await {
            Ok(info) => return Ok((StatusCode::CREATED, Json(TagView::from(info))).into_response()),
            // Created by someone else meanwhile: update it like any existing tag.
            Err(Error::TagExists(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    if body.first_id.is_some() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "tag_exists",
            format!("tag `{tag}` already exists: `first_id` can only be set when it is created"),
        ));
    }
    let update = TagUpdate {
        step: body.step,
        description: body.description,
    };
    let info = if update == TagUpdate::default() {
        store
            .tag_info(&tag)
            .await?
            .ok_or_else(|| Error::UnknownTag(tag.to_string()))?
    } else {
        store.update_tag(&tag, &update).await?
    };
    // This node's running buffer takes the new step at its next fetch; other nodes take it
    // when they next build the tag's buffer.
    state.ids.segments().set_step(&tag, info.step);
    Ok(Json(TagView::from(info)).into_response())
}

/// `GET /v1/workers` → `{"workers": [...], "node": {"worker_id": n, "held": bool}}`: every worker
/// lease with its HWM, and the one this node holds. With a store set, each lease also names its
/// `store` (the one that leases its worker ID), and `"stores"` gives each store's state; the
/// leases of a store that does not answer are missing.
pub(crate) async fn workers(State(state): State<AppState>) -> Result<Response, ApiError> {
    let store = state.ids.store();
    let leases = store.leases.list_leases().await?;
    let keeper = state.ids.keeper();
    let node =
        serde_json::json!({ "worker_id": keeper.lease().worker_id, "held": keeper.is_held() });
    let Some(set) = &store.set else {
        return Ok(Json(serde_json::json!({ "workers": leases, "node": node })).into_response());
    };
    let count = set.len() as u64;
    let workers: Vec<serde_json::Value> = leases
        .iter()
        .map(|lease| {
            let mut row = serde_json::json!(lease);
            row["store"] = Partition::of_worker(lease.worker_id, count).into();
            row
        })
        .collect();
    let stores = set.probe(super::health::STORE_PROBE_TIMEOUT).await;
    Ok(Json(serde_json::json!({
        "workers": workers,
        "node": node,
        "stores": super::health::stores_json(&stores),
    }))
    .into_response())
}
