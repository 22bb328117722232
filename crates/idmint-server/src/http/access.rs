//! Tokens on the HTTP front end: when tokens are configured, each group of routes but the
//! health checks gets [`require`] as a route layer with the scope it needs (see
//! `crate::auth`). A request without `Authorization: Bearer` is a 401, one with a token that
//! is not configured a 403; both also close the connection (`Connection: close`), so a
//! client guessing tokens pays a new connection per guess, under the listener's limits. A
//! valid token of the wrong scope is a 403 and keeps the connection. The grant goes into the
//! request's extensions, where [`TagPath`](super::params::TagPath) checks the tag.
//!
//! The 401 and the 403 of a token that is not valid carry [`AuthFailed`] in their extensions:
//! the connection, which knows the client's address, counts and logs them (see
//! `timing::Timed`), so the log names who failed without the request paying to carry the
//! address.
//!
//! With no token configured the layer is not installed at all: open servers pay nothing.

use idmint_core::ErrorCode;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONNECTION};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::state::AppState;
use crate::auth::{Grant, Need};

/// Marks a response to a missing or wrong token: an authentication failure, counted and
/// logged with the client's address by the connection that sends it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AuthFailed;

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
        return refused_token(
            ApiError::new(
                ErrorCode::Unauthorized,
                "this route needs `Authorization: Bearer <token>`",
            )
            .into_response(),
        );
    };
    let Some(grant) = state.auth.check(token) else {
        return refused_token(
            ApiError::new(ErrorCode::Forbidden, "the token is not valid").into_response(),
        );
    };
    if !grant.allows(need) {
        return ApiError::new(
            ErrorCode::Forbidden,
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

/// `response` to a missing or wrong token: marked [`AuthFailed`], with `Connection: close`.
pub(crate) fn refused_token(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response.extensions_mut().insert(AuthFailed);
    response
}

/// The token of a `Bearer` authorization (scheme case-insensitive).
pub(crate) fn bearer_token(header: &[u8]) -> Option<&[u8]> {
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
        ErrorCode::Forbidden,
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
