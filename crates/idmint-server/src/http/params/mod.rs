//! Request inputs: the query string, path parameters and JSON bodies, parsed by our own
//! extractors so every refusal is an [`ApiError`] (our JSON, a 400 or 413) and never axum's
//! plain-text rejection.
//!
//! The query string's parameters are `query.rs`'s, parsed there with no axum type; this file
//! holds the extractors: of the query (over that parsing, with this node's bounds), the path,
//! the caller's grant and the body.

use idmint_core::ErrorCode;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use idmint_core::Tag;
use serde::de::DeserializeOwned;

use super::errors::{echo, ApiError};
use super::state::AppState;
use super::BODY_LIMIT;
use crate::auth::Grant;

mod query;

pub(crate) use self::query::{
    parse_decimal, Bounds, CountQuery, DecodeQuery, FromQuery, Id128Query, LeafDecodeQuery,
    SizeQuery, SnowflakeQuery,
};

/// Extracts `T` from the query string.
#[derive(Debug)]
pub(crate) struct Params<T>(pub T);

impl<T: FromQuery> FromRequestParts<AppState> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        T::from_query(parts.uri.query().unwrap_or(""), &state.bounds).map(Params)
    }
}

/// The one path parameter of a route, percent-decoded.
async fn path_param<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    code: ErrorCode,
) -> Result<String, ApiError> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|_| ApiError::new(code, "the path parameter is not UTF-8 once percent-decoded"))?;
    Ok(params
        .iter()
        .next()
        .map(|(_, value)| value.to_owned())
        .unwrap_or_default())
}

/// The token a request came with (`access::require` put its grant in the extensions), or none
/// when no token is configured: whose quota a new tag counts against.
#[derive(Debug)]
pub(crate) struct Caller(Option<Arc<Grant>>);

impl Caller {
    /// What the tag cap and the quotas allow this caller.
    pub(crate) fn asker(&self) -> crate::ids::Asker<'_> {
        self.0
            .as_deref()
            .map_or(crate::ids::Asker::Operator, crate::ids::Asker::of)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Caller(parts.extensions.get::<Arc<Grant>>().cloned()))
    }
}

/// A validated tag from the path (`{tag}` or Leaf's `{key}`).
#[derive(Debug)]
pub(crate) struct TagPath(pub Tag);

impl<S: Send + Sync> FromRequestParts<S> for TagPath {
    type Rejection = ApiError;

    /// The tag, checked against the token's tag patterns when the request carries a grant
    /// (`access::require` put it there).
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let raw = path_param(parts, state, ErrorCode::InvalidTag).await?;
        let tag = Tag::new(&raw).map_err(ApiError::from)?;
        if let Some(grant) = parts.extensions.get::<Arc<Grant>>() {
            if !grant.allows_tag(tag.as_str().as_bytes()) {
                return Err(super::access::tag_refused(grant, tag.as_str()));
            }
        }
        Ok(TagPath(tag))
    }
}

/// A decimal ID as a path gives it, or the `invalid_id` refusal stating `0..=max`, the IDs
/// the route takes.
pub(crate) fn parse_id(raw: &str, max: u64) -> Result<u64, ApiError> {
    parse_decimal(raw).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidId,
            format!(
                "an ID is a decimal integer in 0..={max}, got `{}`",
                echo(raw)
            ),
        )
    })
}

/// The `{id}` of a path as given, for a form to read (`/v1/decode/{id}?format=base62`).
#[derive(Debug)]
pub(crate) struct IdText(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdText {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Ok(IdText(
            path_param(parts, state, ErrorCode::InvalidId).await?,
        ))
    }
}

/// A JSON body; an empty body is `T::default()`. Unknown fields are refused by `T`'s serde
/// attributes, a body over the limit is a 413.
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ErrorCode::PayloadTooLarge,
                        format!("the request body is larger than {BODY_LIMIT} bytes"),
                    )
                } else {
                    ApiError::new(ErrorCode::InvalidBody, rejection.body_text())
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|error| {
                ApiError::new(
                    ErrorCode::InvalidJson,
                    format!("the body is not valid here: {error}"),
                )
            })
    }
}
