//! The ID routes of `/v1`: snowflakes, segment IDs, contiguous leases, decoding.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use idmint_core::ErrorCode;

use super::encode;
use super::errors::ApiError;
use super::params::{
    Caller, CountQuery, DecodeQuery, Id128Query, IdText, Params, SizeQuery, SnowflakeQuery, TagPath,
};
use super::state::AppState;
use idmint_core::{DatedForm, Id128, Id128Form, Id128Kind};

use crate::ids::Ids;
use crate::telemetry;

/// `GET /v1/snowflake?count=N[&shard=K]` → `{"ids": ["..."]}`.
pub(crate) async fn snowflake(
    State(state): State<AppState>,
    Params(query): Params<SnowflakeQuery>,
) -> Result<Response, ApiError> {
    let count = state.count(query.count)?;
    let batch = state
        .ids
        .snowflakes(count, query.shard.unwrap_or(0))
        .await?;
    state.recorded.snowflakes(count);
    Ok(encode::json(encode::ids_json_in(
        batch.map(|id| state.ids.publish_snowflake(id)),
        count,
        query.form.as_deref(),
    )))
}

/// `GET /v1/uuid?count=N&format=F` → `{"ids": ["0192f3a1-7c2e-7a3b-8d4e-5f60718293a4"]}`:
/// UUIDv7s, canonical unless `format` names another form (`bytes`: the raw 16 bytes of each, as
/// `application/octet-stream`).
pub(crate) async fn uuid(
    State(state): State<AppState>,
    Params(query): Params<Id128Query>,
) -> Result<Response, ApiError> {
    id128(&state, Id128Kind::Uuid7, Id128Form::Uuid, query).await
}

/// `GET /v1/ulid?count=N&format=F` → `{"ids": ["01JDQ7Z0V4F6X8ZP7M2K3N4Q5R"]}`: ULIDs, in
/// their base32 text unless `format` names another form.
pub(crate) async fn ulid(
    State(state): State<AppState>,
    Params(query): Params<Id128Query>,
) -> Result<Response, ApiError> {
    id128(&state, Id128Kind::Ulid, Id128Form::Ulid, query).await
}

/// `count` 128-bit IDs of `kind` in the form asked (else `default_form`), as `/v1/snowflake`
/// answers: `{"ids": [...]}` whatever the count.
async fn id128(
    state: &AppState,
    kind: Id128Kind,
    default_form: Id128Form,
    query: Id128Query,
) -> Result<Response, ApiError> {
    let count = state.count(query.count)?;
    let form = query.form.unwrap_or(default_form);
    let body = state
        .ids
        .id128s(kind, count, |batch| encode::id128_body(batch, count, form))
        .await?;
    state.recorded.id128s(kind, count);
    Ok(if form.is_text() {
        encode::json(body)
    } else {
        encode::octets(body)
    })
}

/// `GET /v1/segment/{tag}?count=N` → `{"ids": ["..."]}`, ascending; a dated tag's in its form
/// (`20261123-000042`) unless `format` asks for another.
pub(crate) async fn segment(
    State(state): State<AppState>,
    TagPath(tag): TagPath,
    caller: Caller,
    Params(query): Params<CountQuery>,
) -> Result<Response, ApiError> {
    let count = state.count(query.count)?;
    let buffer = state.ids.segments().buffer(&tag, caller.asker()).await?;
    let runs = buffer.next_many(count).await?;
    telemetry::record_segment(&tag, count);
    if let (Some(dating), None) = (buffer.dating(), &query.form) {
        if dating.form() == DatedForm::Text {
            let ids = runs.into_iter().flatten();
            return Ok(encode::json(encode::dated_json(ids, count, dating)));
        }
    }
    let publisher = state.ids.tag_publisher(&tag);
    Ok(encode::json(encode::ids_json_in(
        runs.into_iter().flatten().map(|id| publisher.publish(id)),
        count,
        query.form.as_deref(),
    )))
}

/// `POST /v1/segment/{tag}/lease?size=N` → `{"start": "S", "end": "E"}`: the IDs `S..E` (end
/// exclusive) are the client's to issue.
pub(crate) async fn lease(
    State(state): State<AppState>,
    TagPath(tag): TagPath,
    caller: Caller,
    Params(query): Params<SizeQuery>,
) -> Result<Response, ApiError> {
    let size = state.lease_size(query.size)?;
    if state.ids.is_permuted() {
        return Err(ApiError::new(ErrorCode::Permuted, Ids::RUNS_REFUSED));
    }
    let run = state.ids.segment_lease(&tag, size, caller.asker()).await?;
    if run.end.saturating_sub(run.start) != size {
        return Err(ApiError::new(
            ErrorCode::Internal,
            format!(
                "the segment buffer returned {}..{} for a lease of {size}",
                run.start, run.end
            ),
        ));
    }
    telemetry::record_segment(&tag, size);
    Ok(encode::json(encode::range_json(run.start, run.end)))
}

/// `GET /v1/decode/{id}` → the ID taken apart with this node's layout; with `tag=T`, the
/// segment ID of `T` it was handed out for (`{"id", "tag", "plain_id"}`), or for a dated tag
/// its period and counter (`{"id", "tag", "text", "period", "counter"}`, the ID given in
/// either form).
pub(crate) async fn decode(
    State(state): State<AppState>,
    IdText(text): IdText,
    Params(query): Params<DecodeQuery>,
) -> Result<Response, ApiError> {
    if query.kind.is_some() || (!query.names_64_bit() && Id128::is_text_shaped(text.as_bytes())) {
        let id = Id128::parse(&text)?;
        let kind = query.kind.or(Id128Kind::of_text(text.as_bytes()));
        return Ok(Json(decoded_id128(&state, id, kind)?).into_response());
    }
    if let Some(tag) = &query.tag {
        let info = state.ids.store().segments.tag_info(tag).await?;
        if let Some(dating) = info.and_then(|info| info.dating) {
            let id = match &query.form {
                Some(form) => form.decode(&text)?,
                None => dating.read(&text)?,
            };
            let (key, counter) = dating.split(id);
            return Ok(Json(serde_json::json!({
                "id": id.to_string(),
                "tag": tag.as_str(),
                "text": dating.text(id),
                "period": key.to_string(),
                "counter": counter,
            }))
            .into_response());
        }
    }
    let id = match &query.form {
        Some(form) => form.decode(&text)?,
        // A tag's IDs are below its end; a snowflake fits the layout's bits.
        None if query.tag.is_some() => {
            super::params::parse_id(&text, idmint_core::store::MAX_SEGMENT_ID)?
        }
        None => super::params::parse_id(&text, state.bounds.max_id)?,
    };
    if let Some(tag) = &query.tag {
        let plain = state.ids.tag_publisher(tag).restore(id);
        return Ok(Json(serde_json::json!({
            "id": id.to_string(),
            "tag": tag.as_str(),
            "plain_id": plain.to_string(),
        }))
        .into_response());
    }
    Ok(Json(state.ids.decode(id)?).into_response())
}

/// A 128-bit ID taken apart, as `/v1/decode/{id}` answers it, its fields in this order.
#[derive(serde::Serialize)]
struct DecodedId128 {
    /// The canonical text, whatever form was given.
    id: String,
    kind: Id128Kind,
    ms: u64,
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<u8>,
    counter: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<u32>,
}

/// A 128-bit ID taken apart as `kind` (else as its version and variant bits say), with this
/// node's node field when it gives its IDs one.
fn decoded_id128(
    state: &AppState,
    id: Id128,
    kind: Option<Id128Kind>,
) -> Result<DecodedId128, ApiError> {
    let decoded = id.decode(kind, state.ids.id128_node_bits())?;
    Ok(DecodedId128 {
        id: Id128Form::Uuid.render(id),
        kind: decoded.kind,
        ms: decoded.ms,
        time: decoded.time,
        version: decoded.version,
        variant: decoded.variant,
        counter: decoded.counter,
        node: decoded.node,
    })
}
