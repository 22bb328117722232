//! Response bodies of the hot routes, written by hand: one buffer sized up front, numbers
//! formatted by `itoa` straight into it, no intermediate strings. IDs are JSON strings
//! (JavaScript loses integers above 2^53).

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::Response;

/// Longest decimal `u64`.
const MAX_DIGITS: usize = 20;

/// Appends `n` in decimal.
#[inline]
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `{"ids":["1","2",...]}` for `count` IDs (a capacity hint; any number may follow).
pub(crate) fn ids_json(ids: impl Iterator<Item = u64>, count: u64) -> Vec<u8> {
    let capacity = usize::try_from(count)
        .unwrap_or(0)
        .saturating_mul(MAX_DIGITS + 3)
        .saturating_add(12);
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"ids\":[");
    let mut first = true;
    for id in ids {
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        push_decimal(&mut out, id);
        out.push(b'"');
    }
    out.extend_from_slice(b"]}");
    out
}

/// `{"ids":[...]}` with each ID in `form` when one is given (prefixes and digits of a form are
/// JSON-safe characters: no escaping), else [`ids_json`].
pub(crate) fn ids_json_in(
    ids: impl Iterator<Item = u64>,
    count: u64,
    form: Option<&idmint_core::IdForm>,
) -> Vec<u8> {
    let Some(form) = form else {
        return ids_json(ids, count);
    };
    let width = form.prefix().len() + form.width().max(MAX_DIGITS);
    texts_json(ids, count, width, |id, out| form.encode_into(id, out))
}

/// `{"ids":[...]}` with each of a dated tag's IDs in its text form (`20261123-000042`: digits
/// and a dash, nothing to escape).
pub(crate) fn dated_json(
    ids: impl Iterator<Item = u64>,
    count: u64,
    dating: &idmint_core::Dating,
) -> Vec<u8> {
    let width = dating.period().key_digits() as usize + dating.digits() as usize + 1;
    texts_json(ids, count, width, |id, out| out.push_str(&dating.text(id)))
}

/// `{"ids":[...]}` with each ID written as a JSON string by `write` (which must write only
/// characters JSON needs no escape for), about `width` characters each.
fn texts_json(
    ids: impl Iterator<Item = u64>,
    count: u64,
    width: usize,
    mut write: impl FnMut(u64, &mut String),
) -> Vec<u8> {
    let mut out = String::with_capacity(
        usize::try_from(count)
            .unwrap_or(0)
            .saturating_mul(width + 3)
            .saturating_add(12),
    );
    out.push_str("{\"ids\":[");
    for (i, id) in ids.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        write(id, &mut out);
        out.push('"');
    }
    out.push_str("]}");
    out.into_bytes()
}

/// `{"ids":[...]}` of 128-bit IDs in a text `form`, each written by `Id128Form::encode` straight
/// into the body (hex digits, base32 letters and dashes: nothing to escape); for
/// [`Id128Form::Bytes`](idmint_core::Id128Form::Bytes), the IDs' 16 bytes one after the other,
/// no JSON.
pub(crate) fn id128_body(
    ids: impl Iterator<Item = idmint_core::Id128>,
    count: u64,
    form: idmint_core::Id128Form,
) -> Vec<u8> {
    let count = usize::try_from(count).unwrap_or(0);
    let mut scratch = [0u8; idmint_core::id128::MAX_FORM_LEN];
    if !form.is_text() {
        let mut out = Vec::with_capacity(count.saturating_mul(16));
        for id in ids {
            out.extend_from_slice(form.encode(id, &mut scratch));
        }
        return out;
    }
    let mut out = Vec::with_capacity(
        count
            .saturating_mul(idmint_core::id128::MAX_FORM_LEN + 3)
            .saturating_add(12),
    );
    out.extend_from_slice(b"{\"ids\":[");
    for (i, id) in ids.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(form.encode(id, &mut scratch));
        out.push(b'"');
    }
    out.extend_from_slice(b"]}");
    out
}

/// `{"start":"S","end":"E"}`.
pub(crate) fn range_json(start: u64, end: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * MAX_DIGITS + 24);
    out.extend_from_slice(b"{\"start\":\"");
    push_decimal(&mut out, start);
    out.extend_from_slice(b"\",\"end\":\"");
    push_decimal(&mut out, end);
    out.extend_from_slice(b"\"}");
    out
}

/// `id` as plain text, for Leaf's routes.
pub(crate) fn plain_id(id: u64) -> Response {
    let mut out = Vec::with_capacity(MAX_DIGITS);
    push_decimal(&mut out, id);
    with_type(out, PLAIN)
}

/// The content type of the JSON routes.
pub(crate) const JSON: &str = "application/json";

/// The content type of `format=bytes`: the raw 16 bytes of each 128-bit ID.
pub(crate) const OCTETS: &str = "application/octet-stream";

/// A 200 with raw bytes.
pub(crate) fn octets(body: Vec<u8>) -> Response {
    with_type(body, OCTETS)
}

/// The content type of Leaf's plain-text IDs.
pub(crate) const PLAIN: &str = "text/plain; charset=utf-8";

/// A 200 with a JSON body.
pub(crate) fn json(body: Vec<u8>) -> Response {
    with_type(body, JSON)
}

/// The answer to `HEAD` on a route that mints: 200 with the content type a `GET` would have,
/// no body, and no ID taken (a `HEAD` must not change anything; load balancers and link
/// checkers send them freely). Not cacheable, like every ID answer.
pub(crate) fn head_only(content_type: &'static str) -> Response {
    let mut response = with_type(Vec::new(), content_type);
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    response
}

fn with_type(body: Vec<u8>, content_type: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(n: u64) -> String {
        let mut out = Vec::new();
        push_decimal(&mut out, n);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn decimals_match_the_standard_library() {
        let mut samples = vec![
            0,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            u64::MAX,
            u64::MAX - 1,
        ];
        let mut power = 1u64;
        while let Some(next) = power.checked_mul(10) {
            samples.extend([power - 1, power, power + 1, next - 1]);
            power = next;
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.extend([x, x >> (x % 64)]);
        }
        for n in samples {
            assert_eq!(decimal(n), n.to_string());
        }
    }

    #[test]
    fn bodies_are_valid_json() {
        let body = ids_json([1u64, 22, u64::MAX].into_iter(), 3);
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(
            value,
            serde_json::json!({"ids": ["1", "22", "18446744073709551615"]})
        );
        assert_eq!(ids_json(std::iter::empty(), 0), br#"{"ids":[]}"#);
        let range: serde_json::Value =
            serde_json::from_slice(&range_json(5, 15)).unwrap_or_default();
        assert_eq!(range, serde_json::json!({"start": "5", "end": "15"}));
    }

    #[test]
    fn id128_bodies_are_json_of_the_forms_or_the_raw_bytes() {
        use idmint_core::{Id128, Id128Form};
        let ids = [
            Id128::from_u128(0x0192_f3a1_7c2e_7a3b_8d4e_5f60_7182_93a4),
            Id128::from_u128(u128::MAX >> 2),
        ];
        for form in [Id128Form::Uuid, Id128Form::Ulid, Id128Form::Hex] {
            let body = id128_body(ids.into_iter(), 2, form);
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let expected: Vec<String> = ids.iter().map(|id| form.render(*id)).collect();
            assert_eq!(value, serde_json::json!({ "ids": expected }), "{form}");
        }
        let bytes = id128_body(ids.into_iter(), 2, Id128Form::Bytes);
        assert_eq!(bytes.len(), 32);
        assert_eq!(bytes[..16], ids[0].to_bytes());
        assert_eq!(bytes[16..], ids[1].to_bytes());
        assert_eq!(
            id128_body(std::iter::empty(), 0, Id128Form::Uuid),
            br#"{"ids":[]}"#
        );
    }
}
