//! `idmint serve` as a real process, driven over HTTP and the Redis protocol, stopped with
//! SIGTERM and restarted: on the embedded store and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::Server;

/// The IDs of a `{"ids": [...]}` answer to `GET url`.
async fn get_ids(http: &reqwest::Client, url: &str) -> Vec<u64> {
    let body: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
    ids_of(&body)
}

fn ids_of(body: &serde_json::Value) -> Vec<u64> {
    body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect()
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
