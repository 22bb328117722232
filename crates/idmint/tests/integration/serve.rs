//! `idmint serve` as a real process, driven over HTTP and the Redis protocol, stopped with
//! SIGTERM and restarted: on the embedded store and on PostgreSQL.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::{ids_of, Server};

/// The IDs of a `{"ids": [...]}` answer to `GET url`.
async fn get_ids(http: &reqwest::Client, url: &str) -> Vec<u64> {
    let body: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
    ids_of(&body)
}

/// Round trips over both protocols, a graceful stop, and a restart that continues the tag.
async fn serves_and_restarts_without_gap(store: String) {
    let server = Server::start(&store, "serve-test");
    let http = reqwest::Client::new();
    let snowflakes = get_ids(&http, &format!("{}/v1/snowflake?count=5", server.http)).await;
    assert_eq!(snowflakes.len(), 5);
    assert!(snowflakes.windows(2).all(|w| w[0] < w[1]));
    let segment = get_ids(&http, &format!("{}/v1/segment/orders?count=3", server.http)).await;
    // Bad input: a 400 with the JSON error body; Leaf's path answers plain text.
    let bad = http
        .get(format!("{}/v1/snowflake?count=0", server.http))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: serde_json::Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_count");
    let leaf = http
        .get(format!("{}/api/snowflake/get/any", server.http))
        .send()
        .await
        .unwrap();
    assert!(leaf.text().await.unwrap().parse::<u64>().unwrap() > snowflakes[4]);
    // Metrics: IDs issued, store latency per operation, clock divergence.
    let metrics = http
        .get(format!("{}/metrics", server.http))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for series in [
        "idmint_ids_issued_total{kind=\"snowflake\"} 6",
        "idmint_store_call_seconds",
        "op=\"allocate\"",
        "idmint_clock_divergence_ms",
        "idmint_lease_held 1",
    ] {
        assert!(
            metrics.contains(series),
            "no `{series}` in /metrics:\n{metrics}"
        );
    }
    let client = redis::Client::open(server.resp.as_str()).unwrap();
    let mut resp = client.get_multiplexed_async_connection().await.unwrap();
    let next: u64 = redis::cmd("INCR")
        .arg("orders")
        .query_async(&mut resp)
        .await
        .unwrap();
    assert_eq!(next, segment[2] + 1);
    // A pipeline of 50 INCRs answers in order, contiguously.
    let mut pipe = redis::pipe();
    for _ in 0..50 {
        pipe.cmd("INCR").arg("orders");
    }
    let pipelined: Vec<u64> = pipe.query_async(&mut resp).await.unwrap();
    assert_eq!(pipelined, (next + 1..=next + 50).collect::<Vec<_>>());
    let next = next + 50;
    drop(resp);
    server.stop();

    // Graceful stop gave the tail back: a restart continues the tag right after.
    let again = Server::start(&store, "serve-test");
    let client = redis::Client::open(again.resp.as_str()).unwrap();
    let mut resp = client.get_multiplexed_async_connection().await.unwrap();
    let after: u64 = redis::cmd("INCR")
        .arg("orders")
        .query_async(&mut resp)
        .await
        .unwrap();
    assert_eq!(
        after,
        next + 1,
        "a gap or an overlap across a graceful restart"
    );
    drop(resp);
    again.stop();
}

#[tokio::test]
async fn serves_on_the_embedded_store() {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-serve-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "serve-{}-{}.db",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    serves_and_restarts_without_gap(format!("sqlite://{}", file.display())).await;
}

#[tokio::test]
async fn serves_on_postgres() {
    let url = std::env::var("IDMINT_TEST_POSTGRES_URL")
        .expect("IDMINT_TEST_POSTGRES_URL is not set: run the tests through scripts/test");
    serves_and_restarts_without_gap(url).await;
}

/// A burst of first uses over the I/O threads makes the store's pool open connections while
/// requests run. The graceful stop after it must still give every tail back and release the
/// worker lease: it once drew connections opened on an I/O thread's runtime, stopped by then,
/// so give-backs failed (gaps) and the release failed (the worker ID stayed held until expiry).
#[tokio::test]
async fn a_burst_of_new_tags_then_a_clean_stop_on_postgres() {
    let url = std::env::var("IDMINT_TEST_POSTGRES_URL")
        .expect("IDMINT_TEST_POSTGRES_URL is not set: run the tests through scripts/test");
    let args = ["--io-threads", "2"];
    let tags: Vec<String> = (0..64)
        .map(|i| format!("burst-{}-{i}", std::process::id()))
        .collect();
    let server = Server::start_with(&url, "burst-test", &args);
    let http = reqwest::Client::new();
    let mut calls = tokio::task::JoinSet::new();
    for (i, tag) in tags.iter().enumerate() {
        let (client, url) = (
            http.clone(),
            format!("{}/v1/segment/{tag}?count=2", server.http),
        );
        calls.spawn(async move { (i, get_ids(&client, &url).await) });
        let (client, url) = (http.clone(), format!("{}/v1/workers", server.http));
        calls.spawn(async move {
            let status = client.get(url).send().await.unwrap().status();
            assert_eq!(status, 200);
            (usize::MAX, Vec::new())
        });
    }
    let mut last = vec![0; tags.len()];
    while let Some(done) = calls.join_next().await {
        let (i, ids) = done.unwrap();
        if let Some(id) = ids.last() {
            last[i] = *id;
        }
    }
    assert!(last.iter().all(|id| *id > 0));
    server.stop();

    let again = Server::start_with(&url, "burst-test", &args);
    for (tag, last) in tags.iter().zip(last) {
        let ids = get_ids(&http, &format!("{}/v1/segment/{tag}?count=1", again.http)).await;
        assert_eq!(ids, [last + 1], "tag {tag}: its tail was not given back");
    }
    again.stop();
}

/// `GET url`, with the admin token when given: the status and the JSON body.
async fn get_json(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> (u16, serde_json::Value) {
    let mut request = http.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Every error status with its JSON body, the admin token over HTTP and `AUTH` over the Redis
/// protocol, and Leaf's three paths, on the real binary and `store`.
async fn errors_auth_and_leaf_paths(store: String) {
    let token = "s3cret";
    let server = Server::start_with(&store, "errors-test", &["--admin-token", token]);
    let http = reqwest::Client::new();
    let base = server.http.clone();
    let error_of = |status: u16, code: &'static str, path: &'static str| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let (got, body) = get_json(&http, &format!("{base}{path}"), Some(token)).await;
            assert_eq!(got, status, "GET {path}: {body}");
            assert_eq!(body["error"]["code"], code, "GET {path}: {body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "GET {path}: {body}"
            );
        }
    };
    error_of(400, "invalid_count", "/v1/snowflake?count=0").await;
    error_of(400, "invalid_count", "/v1/snowflake?count=10001").await;
    error_of(400, "invalid_count", "/v1/segment/orders?count=abc").await;
    error_of(400, "invalid_tag", "/v1/segment/bad%0Atag").await;
    error_of(400, "invalid_id", "/v1/decode/not-a-number").await;
    error_of(404, "not_found", "/v2/nothing-here").await;
    // With a token configured, nothing but the health checks is served without it.
    for path in [
        "/v1/tags",
        "/v1/workers",
        "/v1/snowflake",
        "/v1/segment/orders",
        "/v1/decode/1",
        "/api/segment/get/orders",
        "/api/snowflake/get/any",
        "/decodeSnowflakeId?snowflakeId=1",
        "/metrics",
    ] {
        let (status, body) = get_json(&http, &format!("{base}{path}"), None).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (401, &"unauthorized".into()),
            "{path}"
        );
        let (status, body) = get_json(&http, &format!("{base}{path}"), Some("wrong")).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (403, &"forbidden".into()),
            "{path}"
        );
    }
    for path in ["/healthz", "/readyz"] {
        let (status, body) = get_json(&http, &format!("{base}{path}"), None).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // With the token: a tag created, then listed with its step; the worker lease listed.
    let created = http
        .put(format!("{base}/v1/tags/invoices?step=500"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{}", created.status());
    let (status, tags) = get_json(&http, &format!("{base}/v1/tags"), Some(token)).await;
    assert!(
        status == 200 && tags.to_string().contains("invoices"),
        "{tags}"
    );
    let (status, workers) = get_json(&http, &format!("{base}/v1/workers"), Some(token)).await;
    assert_eq!(status, 200, "{workers}");

    // Leaf's paths: plain-text IDs, and the decoded parts of one.
    let text = |path: String| {
        let http = http.clone();
        async move {
            let request = http.get(path).bearer_auth(token);
            request.send().await.unwrap().text().await.unwrap()
        }
    };
    let segment: u64 = text(format!("{base}/api/segment/get/invoices"))
        .await
        .parse()
        .unwrap();
    let next: u64 = text(format!("{base}/api/segment/get/invoices"))
        .await
        .parse()
        .unwrap();
    assert_eq!(next, segment + 1);
    let snowflake: u64 = text(format!("{base}/api/snowflake/get/any"))
        .await
        .parse()
        .unwrap();
    let decoded: serde_json::Value = serde_json::from_str(
        &text(format!("{base}/decodeSnowflakeId?snowflakeId={snowflake}")).await,
    )
    .unwrap();
    let (_, ours) = get_json(&http, &format!("{base}/v1/decode/{snowflake}"), Some(token)).await;
    assert_eq!(decoded["id"], snowflake.to_string(), "{decoded}");
    assert_eq!(
        decoded["workerId"].as_str(),
        Some(ours["worker"].to_string().as_str()),
        "{decoded} {ours}"
    );

    // Redis protocol: nothing but the connection commands before AUTH, then everything.
    let client = redis::Client::open(server.resp.as_str()).unwrap();
    let mut resp = client.get_multiplexed_async_connection().await.unwrap();
    let refused: redis::RedisResult<u64> = redis::cmd("INCR")
        .arg("invoices")
        .query_async(&mut resp)
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("NOAUTH")),
        "{refused:?}"
    );
    let bad: redis::RedisResult<String> =
        redis::cmd("AUTH").arg("wrong").query_async(&mut resp).await;
    assert!(bad.is_err(), "{bad:?}");
    let ok: String = redis::cmd("AUTH")
        .arg(token)
        .query_async(&mut resp)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let incr: u64 = redis::cmd("INCR")
        .arg("invoices")
        .query_async(&mut resp)
        .await
        .unwrap();
    assert_eq!(incr, next + 1);
    let unknown: redis::RedisResult<String> = redis::cmd("FLUSHALL").query_async(&mut resp).await;
    assert!(
        unknown
            .as_ref()
            .is_err_and(|e| e.to_string().contains("unknown command")),
        "{unknown:?}"
    );
    drop(resp);
    server.stop();
}

#[tokio::test]
async fn errors_auth_and_leaf_paths_on_the_embedded_store() {
    errors_auth_and_leaf_paths(common::sqlite_url("errors-auth-leaf")).await;
}

#[tokio::test]
async fn errors_auth_and_leaf_paths_on_postgres() {
    let url = std::env::var("IDMINT_TEST_POSTGRES_URL")
        .expect("IDMINT_TEST_POSTGRES_URL is not set: run the tests through scripts/test");
    errors_auth_and_leaf_paths(url).await;
}

/// Settings come from the flag, else the `IDMINT_*` variable, else the `--config` file, else
/// the default: checked on what the running binary reports.
#[tokio::test]
async fn flags_win_over_variables_which_win_over_the_file() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-serve-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("precedence-{}.toml", std::process::id()));
    // The file's store could not be opened: the flag's must be the one used.
    std::fs::write(
        &file,
        "store = \"sqlite:///nonexistent/folder/idmint.db\"\n\
         layout = \"time:41@1ms,dc:2,worker:8,seq:12\"\n\
         datacenter = 1\n\
         node_name = \"from-file\"\n",
    )
    .unwrap();
    let store = common::sqlite_url("precedence");
    let server = Server::start_with_env(
        &store,
        "from-flag",
        &["--config", file.to_str().unwrap()],
        &[("IDMINT_DATACENTER", "2"), ("IDMINT_NODE_NAME", "from-env")],
    );
    let line = &server.serving;
    assert!(
        line.contains("layout=time:41@1ms,dc:2,worker:8,seq:12"),
        "{line}"
    );
    assert!(line.contains("datacenter=2"), "{line}");
    assert!(line.contains("node=from-flag"), "{line}");
    // The datacenter is in the IDs too.
    let http = reqwest::Client::new();
    let id = get_ids(&http, &format!("{}/v1/snowflake", server.http)).await[0];
    let (_, decoded) = get_json(&http, &format!("{}/v1/decode/{id}", server.http), None).await;
    assert_eq!(decoded["dc"], 2, "{decoded}");
    server.stop();
}

/// A SIGTERM sent the moment a node says it serves stops it gracefully (exit 0, lease
/// released): the handlers are installed before anything is served. They were installed when
/// the stop future was first polled, a moment after, and a loaded CI machine once killed a node
/// that way (signal 15) in the test of its log's colours.
#[test]
fn a_sigterm_as_the_node_starts_serving_stops_it_gracefully() {
    let store = common::sqlite_url("serve-sigterm-at-start");
    for _ in 0..5 {
        Server::start(&store, "sigterm-at-start").stop();
    }
}
