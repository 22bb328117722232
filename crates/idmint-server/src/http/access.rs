//! Tokens on the HTTP front end: when tokens are configured, each group of routes but the
//! health checks gets [`require`] as a route layer with the scope it needs (see
//! `crate::auth`). A request without `Authorization: Bearer` is a 401, one with a token that
//! is not configured a 403; both also close the connection (`Connection: close`), so a
//! client guessing tokens pays a new connection per guess, under the listener's limits. A
//! valid token of the wrong scope is a 403 and keeps the connection. The grant goes into the
//! request's extensions, where [`TagPath`](super::params::TagPath) checks the tag.
//!
//! With no token configured the layer is not installed at all: open servers pay nothing.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONNECTION};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::state::AppState;
use crate::auth::{Grant, Need};

/// Lets the request through when its token grants `need`.
pub(crate) async fn require(
    State((state, need)): State<(AppState, Need)>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|header| bearer_token(header.as_bytes()));
    let Some(token) = token else {
        state.auth_failures.add("an HTTP client");
        return closing(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this route needs `Authorization: Bearer <token>`",
        ));
    };
    let Some(grant) = state.auth.check(token) else {
        state.auth_failures.add("an HTTP client");
        return closing(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the token is not valid",
        ));
    };
    if !grant.allows(need) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "the token `{}` may not use this route: it needs the {} scope",
                grant.name(),
                need.scope_name()
            ),
        )
        .into_response();
    }
    request.extensions_mut().insert::<Arc<Grant>>(grant);
    next.run(request).await
}

/// `error` with `Connection: close`.
fn closing(error: ApiError) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The token of a `Bearer` authorization (scheme case-insensitive).
fn bearer_token(header: &[u8]) -> Option<&[u8]> {
    let scheme = header.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = header.get(7..)?.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// The 403 of a tag outside the token's patterns.
pub(crate) fn tag_refused(grant: &Grant, tag: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        format!(
            "the token `{}` may not use the tag `{}`",
            grant.name(),
            super::errors::echo(tag)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_like_rfc_6750() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        assert_eq!(bearer_token(b"abc"), None);
    }
}
