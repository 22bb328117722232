//! Admin routes: tags (`GET /v1/tags`, `GET|PUT /v1/tags/{tag}`) and worker leases
//! (`GET /v1/workers`). With tokens configured they need one of the admin scope (`access`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use idmint_core::segment::MAX_SEGMENT_LEN;
use idmint_core::store::Partition;
use idmint_core::store::{TagInfo, TagSettings, TagUpdate, MAX_SEGMENT_ID};
use idmint_core::ErrorCode;
use idmint_core::{DatedForm, Dating, Error, Tag};
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
    /// A dated tag's period, zone, counter digits and form.
    #[serde(skip_serializing_if = "Option::is_none")]
    dating: Option<Dating>,
}

impl From<TagInfo> for TagView {
    fn from(info: TagInfo) -> Self {
        Self {
            tag: info.tag,
            max_id: info.max_id.to_string(),
            step: info.step,
            description: info.description,
            updated_at_ms: info.updated_at_ms,
            dating: info.dating,
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
        None => Err(Error::UnknownTag {
            tag: tag.to_string(),
        }
        .into()),
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
    /// Makes a new tag dated: `day`, `month` or `year`. Only when the tag is created, like
    /// the three after it.
    period: Option<String>,
    /// The IANA zone a dated tag's periods are judged in (default `UTC`).
    time_zone: Option<String>,
    /// Digits of a dated tag's counter (default 6).
    digits: Option<u32>,
    /// How a dated tag's IDs are shown: `text` (default, `20261123-000042`) or `numeric`.
    form: Option<String>,
}

/// A dated tag's counter digits when none are given.
const DEFAULT_DIGITS: u32 = 6;

impl TagBody {
    /// The dating asked for, if any: refused, naming the field, when a part is bad or is given
    /// without `period`.
    fn dating(&self) -> Result<Option<Dating>, ApiError> {
        let Some(period) = &self.period else {
            let stray = [
                ("time_zone", self.time_zone.is_some()),
                ("digits", self.digits.is_some()),
                ("form", self.form.is_some()),
            ];
            return match stray.iter().find(|(_, given)| *given) {
                Some((name, _)) => Err(ApiError::new(
                    ErrorCode::InvalidDating,
                    format!("`{name}` makes sense only with `period` (day, month or year)"),
                )),
                None => Ok(None),
            };
        };
        let dated = || -> idmint_core::Result<Dating> {
            let zone = Dating::zone(self.time_zone.as_deref().unwrap_or("UTC"))?;
            let form = match &self.form {
                Some(form) => form.parse()?,
                None => DatedForm::Text,
            };
            Dating::new(
                period.parse()?,
                zone,
                self.digits.unwrap_or(DEFAULT_DIGITS),
                form,
            )
        };
        dated()
            .map(Some)
            .map_err(|error| ApiError::new(ErrorCode::InvalidDating, error.to_string()))
    }

    fn validate(&self) -> Result<(), ApiError> {
        if let Some(step) = self.step {
            if !(1..=MAX_SEGMENT_LEN).contains(&step) {
                return Err(ApiError::new(
                    ErrorCode::InvalidStep,
                    format!("`step` must be in 1..={MAX_SEGMENT_LEN}, got {step}"),
                ));
            }
        }
        if let Some(description) = &self.description {
            if description.len() > MAX_DESCRIPTION {
                return Err(ApiError::new(
                    ErrorCode::InvalidDescription,
                    format!("`description` is longer than {MAX_DESCRIPTION} bytes"),
                ));
            }
        }
        if let Some(first_id) = self.first_id {
            if !(1..MAX_SEGMENT_ID).contains(&first_id) {
                return Err(ApiError::new(
                    ErrorCode::InvalidFirstId,
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
    let existing = store.tag_info(&tag).await?;
    if existing.is_none() {
        let dating = body.dating()?;
        if dating.is_some() {
            refuse_dated(&state, &body)?;
        }
        let defaults = TagSettings::default();
        let settings = TagSettings {
            step: body.step.unwrap_or(defaults.step),
            description: body.description.clone().unwrap_or_default(),
            first_id: body.first_id.unwrap_or(defaults.first_id),
            dating,
        };
        match store.create_tag(&tag, &settings).await {
            Ok(info) => return Ok((StatusCode::CREATED, Json(TagView::from(info))).into_response()),
            // Created by someone else meanwhile: update it like any existing tag.
            Err(Error::TagExists { .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    // The same dating again (a provisioning script run twice) is no change of it.
    let same_dating = body.first_id.is_none()
        && body.period.is_some()
        && existing.is_some_and(|info| {
            body.dating()
                .ok()
                .flatten()
                .is_some_and(|asked| info.dating == Some(asked))
        });
    if let Some(field) = body.creation_only().filter(|_| !same_dating) {
        return Err(ApiError::new(
            ErrorCode::TagExists,
            format!("tag `{tag}` already exists: `{field}` can only be set when it is created"),
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
            .ok_or_else(|| Error::UnknownTag {
                tag: tag.to_string(),
            })?
    } else {
        store.update_tag(&tag, &update).await?
    };
    // This node's running buffer takes the new step at its next fetch; other nodes take it
    // when they next build the tag's buffer.
    state.ids.segments().set_step(&tag, info.step);
    Ok(Json(TagView::from(info)).into_response())
}

impl TagBody {
    /// The first field given that only a new tag takes.
    fn creation_only(&self) -> Option<&'static str> {
        [
            ("first_id", self.first_id.is_some()),
            ("period", self.period.is_some()),
            ("time_zone", self.time_zone.is_some()),
            ("digits", self.digits.is_some()),
            ("form", self.form.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

/// Refuses a dated tag where it cannot be served: on a permuted namespace (the permutation
/// would hide the date it exists to show), on a store set (each store would count the period
/// on its own), or with `first_id` (a dated tag counts from 1 every period).
fn refuse_dated(state: &AppState, body: &TagBody) -> Result<(), ApiError> {
    let reason = if state.ids.is_permuted() {
        "this namespace hands out its IDs permuted, which would hide the date of a dated tag"
    } else if state.ids.store().set.is_some() {
        "a dated tag needs a single store: a store set cannot date its IDs"
    } else if body.first_id.is_some() {
        "a dated tag's counter starts at 1 every period: `first_id` does not apply"
    } else {
        return Ok(());
    };
    Err(ApiError::new(ErrorCode::InvalidDating, reason))
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
