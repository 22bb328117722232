//! Tags of any UTF-8 text, as Leaf takes any string key (issue 27: `订单` and `a b` were
//! refused with `invalid_tag`): through HTTP (percent-encoded in the path, Leaf's route too)
//! and the Redis protocol (binary-safe), on every store, one sequence per tag whichever front
//! end takes from it, listed as written, and in `/metrics` as valid Prometheus text. Refused:
//! 129 bytes, control characters, a space at either end, and over RESP bytes that are not
//! UTF-8.

use crate::common::{self, path_segment, sqlite_url, Server};
use crate::id_space::{namespace, server_url};
use crate::security::{address, http};

/// The tags taken: CJK, an inner space, slashes, an emoji, HTML, a quote and a backslash
/// (escaped in metrics labels), exactly 128 bytes.
fn accepted() -> Vec<String> {
    let at_limit = format!("{}ab", "订".repeat(42));
    assert_eq!(at_limit.len(), 128);
    vec![
        "订单".to_owned(),
        "a b".to_owned(),
        "tag/with/slash".to_owned(),
        "🦀".to_owned(),
        "<b>x</b>&".to_owned(),
        "q\\\"b\\".to_owned(), // q \ " b \: the exporter once dropped a `\` before a `"`
        at_limit,
    ]
}

async fn tags_of_any_text_are_served_on_both_front_ends(store: String) {
    let ns = namespace("text");
    let server = Server::start_with(&store, "text-node", &["--namespace", &ns]);
    let web = address(&server.http);
    let mut resp = redis::Client::open(server.resp.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    for name in accepted() {
        let path = format!("/v1/segment/{}?count=3", path_segment(&name));
        let (status, _, body) = http(web, "GET", &path, None);
        assert_eq!(status, 200, "{name:?}: {body}");
        let ids = common::ids_of(&serde_json::from_str(&body).unwrap());
        assert_eq!(ids.len(), 3, "{name:?}: {body}");
        let leaf = format!("/api/segment/get/{}", path_segment(&name));
        let (status, _, body) = http(web, "GET", &leaf, None);
        assert_eq!(status, 200, "{name:?}: {body}");
        let from_leaf: u64 = body.trim().parse().unwrap();
        let from_resp: u64 = redis::cmd("INCR")
            .arg(name.as_bytes())
            .query(&mut resp)
            .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        // One sequence, whichever front end takes from it.
        assert!(ids[2] < from_leaf && from_leaf < from_resp, "{name:?}");
    }
    // Listed as written.
    let (status, _, body) = http(web, "GET", "/v1/tags", None);
    assert_eq!(status, 200, "{body}");
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = listed["tags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tag"].as_str())
        .collect();
    for name in accepted() {
        assert!(names.contains(&name.as_str()), "{name:?} not in {names:?}");
    }

    // Refused on both front ends, and nothing created.
    let over = format!("{}abc", "订".repeat(42));
    for name in [over.as_str(), "a\nb", "a\0", "\t", " a", "a "] {
        let path = format!("/v1/segment/{}", path_segment(name));
        let (status, _, body) = http(web, "GET", &path, None);
        assert_eq!(status, 400, "{name:?}: {body}");
        assert!(body.contains("\"invalid_tag\""), "{name:?}: {body}");
        let refused = redis::cmd("INCR")
            .arg(name.as_bytes())
            .query::<i64>(&mut resp)
            .unwrap_err();
        assert!(
            refused.to_string().contains("invalid tag"),
            "{name:?}: {refused}"
        );
    }
    let refused = redis::cmd("INCR")
        .arg(&b"a\xffb"[..])
        .query::<i64>(&mut resp)
        .unwrap_err();
    assert!(refused.to_string().contains("invalid tag"), "{refused}");
    let (_, _, body) = http(web, "GET", "/v1/tags", None);
    let count = serde_json::from_str::<serde_json::Value>(&body).unwrap()["tags"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(count, accepted().len(), "{body}");

    // In /metrics, each tag is a label of valid Prometheus text that reads back as the tag.
    let (status, _, metrics) = http(web, "GET", "/metrics", None);
    assert_eq!(status, 200);
    let mut labelled = std::collections::HashSet::new();
    for line in metrics
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let labels = prometheus_labels(line).unwrap_or_else(|| panic!("not valid: {line:?}"));
        labelled.extend(
            labels
                .into_iter()
                .filter(|(k, _)| k == "tag")
                .map(|(_, v)| v),
        );
    }
    for name in accepted() {
        assert!(
            labelled.contains(&name),
            "{name:?} not a label: {labelled:?}"
        );
    }
    server.stop();
}

/// The labels of one sample line of the Prometheus text format, values unescaped (`\\`, `\"`,
/// `\n`), or `None` when the line is not a valid sample.
fn prometheus_labels(line: &str) -> Option<Vec<(String, String)>> {
    let (name_end, mut rest) = match line.find(['{', ' ']) {
        Some(at) => (at, &line[at..]),
        None => return None,
    };
    if name_end == 0 {
        return None;
    }
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = after;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = rest.find("=\"")?;
            let key = rest[..eq].trim_start_matches(',').to_owned();
            let mut value = String::new();
            let mut chars = rest[eq + 2..].char_indices();
            let end = loop {
                let (at, c) = chars.next()?;
                match c {
                    '"' => break eq + 2 + at + 1,
                    '\\' => match chars.next()?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        _ => return None,
                    },
                    '\n' => return None,
                    c => value.push(c),
                }
            };
            labels.push((key, value));
            rest = &rest[end..];
        }
    }
    let value = rest.strip_prefix(' ')?.split(' ').next()?;
    (value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value)).then_some(labels)
}

macro_rules! on_every_store {
    ($test:ident) => {
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$test(super::sqlite_url("text-tags")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$test(super::server_url("IDMINT_TEST_POSTGRES_URL")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                super::$test(super::server_url("IDMINT_TEST_MYSQL_URL")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$test(super::server_url("IDMINT_TEST_REDIS_URL")).await;
            }
        }
    };
}

on_every_store!(tags_of_any_text_are_served_on_both_front_ends);
