//! Every error leaves the server as `{"error": {"code": "...", "message": "..."}}` with a
//! status.
//!
//! [`ApiError`] is the one error type of the handlers. Its code is an [`ErrorCode`] (from
//! [`Error::code`] for the ID service's errors) and its status comes from the code alone, in
//! [`status`]. Responses the handlers never see
//! (the body limit's 413, the timeout's 503, anything else a layer answers) are rewritten into
//! the same shape by [`json_errors`], so a client never has to parse axum's plain text.

use std::borrow::Cow;

use axum::body::Body;
use axum::http::header::{ALLOW, CONNECTION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use idmint_core::{Error, ErrorCode};

use super::{BODY_LIMIT, REQUEST_TIMEOUT};
use crate::telemetry;

/// Longest piece of client input echoed back in a message.
const ECHO_LIMIT: usize = 96;

/// An error on its way to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: Cow<'static, str>,
    /// The message with the store driver's error behind it, for the log only.
    detail: Option<String>,
}

/// Marks a response whose body is already our JSON error, so [`json_errors`] leaves it alone.
#[derive(Debug, Clone, Copy)]
struct JsonErrorBody;

impl ApiError {
    /// An error with `code`, answered with the code's [`status`].
    pub(crate) fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: status(code),
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// The same error with another status: `/readyz` answers every reason it is not ready
    /// with 503, and [`json_errors`] keeps the status of the response it rewrites.
    pub(crate) fn with_status(self, status: StatusCode) -> Self {
        Self { status, ..self }
    }

    /// The error as an open probe answers it: the status and the code, and a message that
    /// names only the code (the original one can tell a host, a user or a worker ID); the log
    /// still gets the original.
    pub(crate) fn in_short(self) -> Self {
        let Self {
            status,
            code,
            message,
            detail,
        } = self;
        Self {
            status,
            code,
            message: Cow::Owned(format!(
                "not ready: {code} (the details need a token of the metrics or admin scope)"
            )),
            detail: Some(detail.unwrap_or_else(|| message.into_owned())),
        }
    }

    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    #[cfg(test)]
    pub(crate) fn code(&self) -> ErrorCode {
        self.code
    }
}

/// The status of each code. Retryable errors (a bounded wait ran out, the store is down, the
/// lease is being replaced: [`ErrorCode::is_retryable`]) are 503, and so is a dated tag's used-up
/// period, which lifts by itself too (but only at the next period: no `Retry-After`); bad input
/// is 400; a missing tag or route 404; an existing tag, or one whose IDs are used up
/// (`tag_exhausted`: the request conflicts with the tag's state, and only a new tag helps), 409;
/// what the client cannot fix and retrying will not cure (an exhausted layout, a clock before
/// the epoch, a store refusing its own data or damaged) is 500.
pub(crate) fn status(code: ErrorCode) -> StatusCode {
    use ErrorCode as C;
    match code {
        C::InvalidArgument
        | C::InvalidShard
        | C::InvalidId
        | C::InvalidTag
        | C::InvalidFormat
        | C::InvalidCount
        | C::InvalidSize
        | C::InvalidQuery
        | C::InvalidJson
        | C::InvalidBody
        | C::InvalidStep
        | C::InvalidDescription
        | C::InvalidFirstId
        | C::InvalidDating
        | C::BadRequest => StatusCode::BAD_REQUEST,
        C::Unauthorized => StatusCode::UNAUTHORIZED,
        C::Forbidden => StatusCode::FORBIDDEN,
        C::UnknownTag | C::NotFound | C::MetricsDisabled => StatusCode::NOT_FOUND,
        C::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        C::TagExists | C::TagExhausted | C::TooManyTags | C::TagQuota | C::Dated | C::Permuted => {
            StatusCode::CONFLICT
        }
        C::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        C::PeriodUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        C::InvalidLayout
        | C::InvalidEpoch
        | C::LayoutExhausted
        | C::ClockBeforeEpoch
        | C::StoreInvalid
        | C::StoreCorrupt
        | C::WorkerHeld
        | C::IdSpaceMismatch
        | C::IdSpaceUnrecorded
        | C::IdSpaceRefused
        | C::IdSpaceChanged
        | C::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        // The retryable ones, and a code added to the core later: its retryability decides.
        _ if code.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let detail = std::error::Error::source(&error).map(|_| error.with_causes());
        Self {
            detail,
            ..Self::new(error.code(), error.to_string())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        telemetry::record_http_error(self.code.as_str());
        // A dated tag's used-up period is the tag's state, not the node's trouble: counted in
        // the metrics, not logged once per refused request.
        if self.status.is_server_error() && self.code != ErrorCode::PeriodUnavailable {
            tracing::warn!(
                status = %self.status,
                code = self.code.as_str(),
                message = self.detail.as_deref().unwrap_or(&self.message),
                "request failed"
            );
        }
        let envelope = serde_json::json!({
            "error": { "code": self.code.as_str(), "message": self.message }
        });
        let body = serde_json::to_vec(&envelope).unwrap_or_else(|_| {
            br#"{"error":{"code":"internal","message":"error not serializable"}}"#.to_vec()
        });
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // Retrying in a second helps a store or lease in trouble; a used-up period lifts only
        // at the next one, which the message names.
        if self.status == StatusCode::SERVICE_UNAVAILABLE
            && self.code != ErrorCode::PeriodUnavailable
        {
            headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response.extensions_mut().insert(JsonErrorBody);
        response
    }
}

/// `text` cut to [`ECHO_LIMIT`] characters, for messages that quote client input.
pub(crate) fn echo(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(ECHO_LIMIT) {
        Some((end, _)) => Cow::Owned(format!("{}...", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

/// The fallback of unknown paths: 404 with our JSON body.
pub(crate) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!("no route for {method} {}", echo(uri.path())),
    )
}

/// The fallback of known paths asked with another method: 405 with our JSON body (axum adds
/// the `Allow` header).
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed on {}", echo(uri.path())),
    )
}

/// Rewrites any error response that is not ours yet (the body limit's 413, the timeout's 503,
/// a rejection of a layer) into our JSON shape, keeping its status and `Allow` header.
///
/// A 413 also gets `Connection: close`: the unread body is still in the socket, so the server
/// drops the connection after answering, and a client that pooled it would fail its next
/// request on it (reqwest reports `IncompleteMessage`). Saying so lets clients open a new one.
pub(crate) async fn json_errors(response: Response) -> Response {
    let status = response.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        let mut response = rewrite_error(response);
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    rewrite_error(response)
}

/// The body of [`json_errors`]: our JSON shape for a foreign error response.
fn rewrite_error(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.extensions().get::<JsonErrorBody>().is_some()
    {
        return response;
    }
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the request body is larger than {BODY_LIMIT} bytes"),
        ),
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::REQUEST_TIMEOUT => ApiError::new(
            ErrorCode::Timeout,
            format!(
                "the request did not complete within {} s",
                REQUEST_TIMEOUT.as_secs()
            ),
        ),
        StatusCode::NOT_FOUND => ApiError::new(ErrorCode::NotFound, "not found"),
        StatusCode::METHOD_NOT_ALLOWED => {
            ApiError::new(ErrorCode::MethodNotAllowed, "method not allowed")
        }
        _ if status.is_client_error() => ApiError::new(
            ErrorCode::BadRequest,
            status.canonical_reason().unwrap_or("bad request"),
        ),
        _ => ApiError::new(
            ErrorCode::Internal,
            status.canonical_reason().unwrap_or("internal error"),
        ),
    };
    let mut fixed = error.with_status(status).into_response();
    if let Some(allow) = response.headers().get(ALLOW) {
        fixed.headers_mut().insert(ALLOW, allow.clone());
    }
    fixed
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
