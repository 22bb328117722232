//! The tests of `errors.rs`: each error and code has its status and code, the message is the
//! error's text, foreign error responses are rewritten as our JSON, input echoed is cut.

use std::time::Duration;

use super::*;

fn every_variant() -> Vec<Error> {
    vec![
        Error::InvalidLayout {
            spec: "x".into(),
            reason: "r".into(),
        },
        Error::InvalidEpoch {
            epoch: "x".into(),
            reason: "r".into(),
        },
        Error::InvalidArgument {
            name: "shard",
            reason: "r".into(),
        },
        Error::InvalidArgument {
            name: "id",
            reason: "r".into(),
        },
        Error::InvalidArgument {
            name: "n",
            reason: "r".into(),
        },
        Error::InvalidTag { tag: "a b".into() },
        Error::LayoutExhausted {
            ends_at: "2100-01-01T00:00:00Z".into(),
        },
        Error::ClockBeforeEpoch {
            now_ms: 1,
            epoch_ms: 2,
        },
        Error::ClockBehind {
            behind_ms: 5,
            waited: Duration::from_millis(20),
        },
        Error::HwmNotGranted {
            tick: 10,
            granted: 9,
        },
        Error::SegmentUnavailable {
            tag: "t".into(),
            waited: Duration::from_secs(1),
            cause: "timeout".into(),
        },
        Error::store_unavailable("down"),
        Error::store_conflict("race"),
        Error::store_invalid("bad row"),
        Error::LeaseLost { worker_id: 3 },
        Error::GeneratorClosed,
        Error::NoWorkerFree { worker_count: 4 },
        Error::WorkerHeld {
            worker_id: 1,
            holder: "n".into(),
        },
        Error::UnknownTag { tag: "t".into() },
        Error::TagExists { tag: "t".into() },
        Error::ClockBehindHwm {
            worker_id: 2,
            behind_ms: 60_000,
        },
        Error::WorkerWaitRanOut {
            cause: Box::new(Error::NoWorkerFree { worker_count: 4 }),
            waited: Duration::from_secs(10),
            first_to_expire: None,
        },
        Error::WorkerWaitRanOut {
            cause: Box::new(Error::WorkerHeld {
                worker_id: 1,
                holder: "n".into(),
            }),
            waited: Duration::ZERO,
            first_to_expire: None,
        },
        Error::TagExhausted { tag: "t".into() },
        Error::store_corrupt("database disk image is malformed"),
    ]
}

#[test]
fn every_variant_has_its_status_and_code() {
    let expected: Vec<(u16, &str)> = vec![
        (500, "invalid_layout"),
        (500, "invalid_epoch"),
        (400, "invalid_shard"),
        (400, "invalid_id"),
        (400, "invalid_argument"),
        (400, "invalid_tag"),
        (500, "layout_exhausted"),
        (500, "clock_before_epoch"),
        (503, "clock_behind"),
        (503, "hwm_not_granted"),
        (503, "segment_unavailable"),
        (503, "store_unavailable"),
        (503, "store_conflict"),
        (500, "store_invalid"),
        (503, "lease_lost"),
        (503, "shutting_down"),
        (503, "no_worker_free"),
        (500, "worker_held"),
        (404, "unknown_tag"),
        (409, "tag_exists"),
        (503, "clock_behind"),
        (503, "no_worker_free"),
        (500, "worker_held"),
        (409, "tag_exhausted"),
        (500, "store_corrupt"),
    ];
    let got: Vec<(u16, &str)> = every_variant()
        .iter()
        .map(|e| {
            let api = ApiError::from(e.clone());
            (api.status().as_u16(), api.code().as_str())
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn exactly_the_retryable_errors_are_503() {
    for error in every_variant() {
        let status = ApiError::from(error.clone()).status();
        assert_eq!(
            status == StatusCode::SERVICE_UNAVAILABLE,
            error.is_retryable(),
            "{error:?}"
        );
    }
}

#[test]
fn every_code_has_a_status_and_the_retryable_ones_503() {
    for &code in ErrorCode::ALL {
        let status = status(code);
        assert!(
            status.is_client_error() || status.is_server_error(),
            "{code}"
        );
        if code.is_retryable() {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{code}");
        }
    }
    assert_eq!(
        status(ErrorCode::PeriodUnavailable),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(!ErrorCode::PeriodUnavailable.is_retryable());
}

#[test]
fn the_message_is_the_error_text() {
    let api = ApiError::from(Error::UnknownTag {
        tag: "orders".into(),
    });
    assert_eq!(api.status(), StatusCode::NOT_FOUND);
    assert_eq!(api.code(), ErrorCode::UnknownTag);
    assert_eq!(api.message, "unknown tag `orders`");
}

async fn fixed(status: StatusCode, allow: Option<&'static str>) -> (Response, serde_json::Value) {
    let mut plain = Response::new(Body::from("length limit exceeded"));
    *plain.status_mut() = status;
    if let Some(allow) = allow {
        plain
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static(allow));
    }
    let (parts, body) = json_errors(plain).await.into_parts();
    let bytes = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let value = serde_json::from_slice(&bytes).unwrap_or_default();
    (Response::from_parts(parts, Body::empty()), value)
}

#[tokio::test]
async fn plain_error_responses_are_rewritten_as_json() {
    let (response, body) = fixed(StatusCode::PAYLOAD_TOO_LARGE, None).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        response.headers().get(CONTENT_TYPE),
        Some(&HeaderValue::from_static("application/json"))
    );
    assert_eq!(body["error"]["code"], "payload_too_large");
    let (response, body) = fixed(StatusCode::SERVICE_UNAVAILABLE, None).await;
    assert_eq!(body["error"]["code"], "timeout");
    assert_eq!(
        response.headers().get(RETRY_AFTER),
        Some(&HeaderValue::from_static("1"))
    );
    let (response, body) = fixed(StatusCode::METHOD_NOT_ALLOWED, Some("GET,HEAD")).await;
    assert_eq!(body["error"]["code"], "method_not_allowed");
    assert_eq!(
        response.headers().get(ALLOW),
        Some(&HeaderValue::from_static("GET,HEAD"))
    );
    let (_, body) = fixed(StatusCode::UNSUPPORTED_MEDIA_TYPE, None).await;
    assert_eq!(body["error"]["code"], "bad_request");
    let (_, body) = fixed(StatusCode::BAD_GATEWAY, None).await;
    assert_eq!(body["error"]["code"], "internal");
}

#[tokio::test]
async fn our_errors_and_successes_pass_untouched() {
    let ours = ApiError::new(ErrorCode::InvalidCount, "nope").into_response();
    let (parts, body) = json_errors(ours).await.into_parts();
    assert_eq!(parts.status, StatusCode::BAD_REQUEST);
    let bytes = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    assert_eq!(
        &bytes[..],
        br#"{"error":{"code":"invalid_count","message":"nope"}}"#
    );
    let ok = json_errors(Response::new(Body::from("fine"))).await;
    let bytes = axum::body::to_bytes(ok.into_body(), 64)
        .await
        .unwrap_or_default();
    assert_eq!(&bytes[..], b"fine");
}

#[test]
fn echo_cuts_long_input_on_a_char_boundary() {
    assert_eq!(echo("short"), "short");
    let long = "é".repeat(200);
    let cut = echo(&long);
    assert_eq!(cut.chars().count(), ECHO_LIMIT + 3);
    assert!(cut.ends_with("..."));
}
