//! The HTTP front end against a real SQLite store, over a real socket, driven by reqwest:
//! every route, every error status and body, Leaf's paths, health, metrics, and many
//! concurrent clients never sharing an ID.

use std::collections::HashSet;
use std::sync::Arc;

use idmint_core::{Clock, SystemClock};
use idmint_server::auth::Auth;
use idmint_server::http::{self, HttpOptions};

use crate::common::{ids_config, prometheus, sqlite_url};
use idmint_server::ids::{Asker, Ids};
use idmint_store::StoreOptions;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// 41 bits of time, 6 of worker, 4 of shard, 12 of sequence.
const LAYOUT: &str = "time:41@1ms,worker:6,shard:4,seq:12";
const TOKEN: &str = "s3cret-token";

struct Setup {
    admin_token: Option<&'static str>,
    auto_create_tags: bool,
    metrics: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            admin_token: None,
            auto_create_tags: true,
            metrics: true,
        }
    }
}

struct Server {
    base: String,
    client: reqwest::Client,
    ids: Arc<Ids>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Server {
    async fn start(setup: Setup) -> Self {
        let metrics = setup.metrics.then(|| prometheus().clone());
        let mut config = ids_config(LAYOUT, "http-test");
        config.segments.auto_create_tags = setup.auto_create_tags;
        let store = idmint_store::open(&sqlite_url("http"), &StoreOptions::default())
            .await
            .unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let ids = Ids::start(config, store, clock).await.unwrap();
        let options = HttpOptions {
            auth: Arc::new(setup.admin_token.map_or_else(Auth::default, Auth::admin)),
            max_count: 10_000,
            max_lease_size: 100_000,
            metrics,
        };
        let router = http::router(Arc::clone(&ids), options);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(http::serve(listener, router, async {
            let _ = stopped.await;
        }));
        Self {
            base,
            client: reqwest::Client::new(),
            ids,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn send(&self, method: Method, path: &str) -> reqwest::Response {
        self.client
            .request(method, format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }

    /// `GET path`, with the token when the server has one.
    async fn get(&self, path: &str) -> reqwest::Response {
        self.admin(Method::GET, path).send().await.unwrap()
    }

    fn admin(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
    }

    /// Stops serving (graceful), then the ID service.
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap().unwrap();
        self.ids.shutdown().await.unwrap();
    }
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// 200 with a JSON body.
async fn ok_json(response: reqwest::Response) -> Value {
    let status = response.status();
    let ct = content_type(&response);
    let text = response.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(ct.starts_with("application/json"), "{ct}");
    serde_json::from_str(&text).unwrap()
}

/// An error with exactly `{"error": {"code", "message"}}`.
async fn assert_error(
    response: reqwest::Response,
    status: u16,
    code: &str,
) -> reqwest::header::HeaderMap {
    let got = response.status().as_u16();
    let headers = response.headers().clone();
    let ct = content_type(&response);
    let text = response.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    assert!(ct.starts_with("application/json"), "{ct}: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let outer = body.as_object().unwrap();
    assert_eq!(outer.len(), 1, "{text}");
    let error = body["error"].as_object().unwrap();
    assert_eq!(error.len(), 2, "{text}");
    assert_eq!(error["code"], code, "{text}");
    assert!(!error["message"].as_str().unwrap().is_empty(), "{text}");
    headers
}

/// The `ids` of a `{"ids": [...]}` body, parsed from their strings.
fn ids_of(body: &Value) -> Vec<u64> {
    body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect()
}

fn assert_increasing(ids: &[u64]) {
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflakes_round_trip() {
    let server = Server::start(Setup::default()).await;
    let one = ids_of(&ok_json(server.get("/v1/snowflake").await).await);
    assert_eq!(one.len(), 1);
    let many = ids_of(&ok_json(server.get("/v1/snowflake?count=500").await).await);
    assert_eq!(many.len(), 500);
    assert_increasing(&many);
    assert!(many[0] > one[0]);
    let max = ids_of(&ok_json(server.get("/v1/snowflake?count=10000").await).await);
    assert_eq!(max.len(), 10_000);
    assert_increasing(&max);
    assert!(max[0] > many[499]);

    // The shard lands in its field, as decoding shows.
    let sharded = ids_of(&ok_json(server.get("/v1/snowflake?count=3&shard=5").await).await);
    let worker = server.ids.keeper().lease().worker_id;
    for id in sharded {
        let decoded = ok_json(server.get(&format!("/v1/decode/{id}")).await).await;
        assert_eq!(decoded["id"], id.to_string());
        assert_eq!(decoded["shard"], 5);
        assert_eq!(decoded["worker"], worker);
        assert!(decoded["unix_ms"].as_u64().unwrap() > 1_600_000_000_000);
        assert!(decoded["time"].as_str().unwrap().ends_with('Z'));
        assert!(decoded["seq"].is_u64());
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_and_decode_refuse_bad_input() {
    let server = Server::start(Setup::default()).await;
    for query in [
        "count=0",
        "count=10001",
        "count=abc",
        "count=-1",
        "count=",
        "count=1&count=2",
    ] {
        assert_error(
            server.get(&format!("/v1/snowflake?{query}")).await,
            400,
            "invalid_count",
        )
        .await;
    }
    // 4 shard bits: 16 does not fit.
    for query in [
        "shard=abc",
        "shard=16",
        "shard=-3",
        "shard=99999999999999999999",
    ] {
        assert_error(
            server.get(&format!("/v1/snowflake?{query}")).await,
            400,
            "invalid_shard",
        )
        .await;
    }
    assert_error(
        server.get("/v1/snowflake?count=%FF").await,
        400,
        "invalid_query",
    )
    .await;
    for id in ["abc", "-1", "1.5", "99999999999999999999", "%FF"] {
        assert_error(
            server.get(&format!("/v1/decode/{id}")).await,
            400,
            "invalid_id",
        )
        .await;
    }
    // Bit 63 is outside the 63-bit layout.
    assert_error(
        server.get(&format!("/v1/decode/{}", u64::MAX)).await,
        400,
        "invalid_id",
    )
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_and_leases_round_trip() {
    let server = Server::start(Setup::default()).await;
    let first = ids_of(&ok_json(server.get("/v1/segment/orders").await).await);
    assert_eq!(first.len(), 1);
    assert!(first[0] >= 1);
    let batch = ids_of(&ok_json(server.get("/v1/segment/orders?count=2500").await).await);
    assert_eq!(batch.len(), 2500);
    assert_increasing(&batch);
    assert!(batch[0] > first[0]);

    let lease = ok_json(
        server
            .send(Method::POST, "/v1/segment/orders/lease?size=700")
            .await,
    )
    .await;
    let start: u64 = lease["start"].as_str().unwrap().parse().unwrap();
    let end: u64 = lease["end"].as_str().unwrap().parse().unwrap();
    assert_eq!(end - start, 700);
    assert!(start > batch[2499]);
    let after = ids_of(&ok_json(server.get("/v1/segment/orders?count=3").await).await);
    assert!(after[0] >= end, "a leased ID was handed out again");

    // Another tag is its own sequence.
    let other = ids_of(&ok_json(server.get("/v1/segment/user.id:v2?count=2").await).await);
    assert_eq!(other.len(), 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_refuse_bad_input() {
    let server = Server::start(Setup::default()).await;
    let long = "x".repeat(129);
    for tag in ["a%0Ab", "%FF", "%20a", "a%00", long.as_str()] {
        assert_error(
            server.get(&format!("/v1/segment/{tag}")).await,
            400,
            "invalid_tag",
        )
        .await;
        assert_error(
            server
                .send(Method::POST, &format!("/v1/segment/{tag}/lease?size=1"))
                .await,
            400,
            "invalid_tag",
        )
        .await;
    }
    for query in ["count=0", "count=10001", "count=x"] {
        assert_error(
            server.get(&format!("/v1/segment/t?{query}")).await,
            400,
            "invalid_count",
        )
        .await;
    }
    for query in ["", "?size=0", "?size=100001", "?size=many"] {
        assert_error(
            server
                .send(Method::POST, &format!("/v1/segment/t/lease{query}"))
                .await,
            400,
            "invalid_size",
        )
        .await;
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_answer_json() {
    let server = Server::start(Setup::default()).await;
    assert_error(server.get("/nope").await, 404, "not_found").await;
    assert_error(server.get("/v1/snowflake/extra").await, 404, "not_found").await;
    assert_error(server.get("/v1/segment/").await, 404, "not_found").await;
    assert_error(server.send(Method::DELETE, "/nope").await, 404, "not_found").await;
    let headers = assert_error(
        server.send(Method::POST, "/v1/snowflake").await,
        405,
        "method_not_allowed",
    )
    .await;
    let allow = headers
        .get(reqwest::header::ALLOW)
        .unwrap()
        .to_str()
        .unwrap();
    assert!(allow.contains("GET"), "{allow}");
    let headers = assert_error(
        server.get("/v1/segment/t/lease?size=1").await,
        405,
        "method_not_allowed",
    )
    .await;
    assert_eq!(headers.get(reqwest::header::ALLOW).unwrap(), "POST");
    assert_error(
        server.send(Method::DELETE, "/v1/tags/t").await,
        405,
        "method_not_allowed",
    )
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_routes_need_the_token() {
    let server = Server::start(Setup {
        admin_token: Some(TOKEN),
        ..Setup::default()
    })
    .await;
    for (method, path) in [
        (Method::GET, "/v1/tags"),
        (Method::GET, "/v1/tags/t"),
        (Method::PUT, "/v1/tags/t"),
        (Method::GET, "/v1/workers"),
    ] {
        let headers =
            assert_error(server.send(method.clone(), path).await, 401, "unauthorized").await;
        assert_eq!(
            headers.get(reqwest::header::WWW_AUTHENTICATE).unwrap(),
            "Bearer"
        );
        let basic = server
            .client
            .request(method.clone(), format!("{}{path}", server.base))
            .header("authorization", "Basic dXNlcjpwYXNz")
            .send()
            .await
            .unwrap();
        assert_error(basic, 401, "unauthorized").await;
        let wrong = server
            .client
            .request(method, format!("{}{path}", server.base))
            .bearer_auth("not-the-token")
            .send()
            .await
            .unwrap();
        assert_error(wrong, 403, "forbidden").await;
    }
    // With a token configured, the ID routes want it too; the health checks do not.
    assert_error(
        server.send(Method::GET, "/v1/snowflake").await,
        401,
        "unauthorized",
    )
    .await;
    ok_json(server.send(Method::GET, "/healthz").await).await;
    ok_json(server.get("/v1/snowflake").await).await;
    ok_json(server.admin(Method::GET, "/v1/tags").send().await.unwrap()).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_without_a_token_is_the_status_and_the_code_only() {
    let server = Server::start(Setup {
        admin_token: Some(TOKEN),
        ..Setup::default()
    })
    .await;
    let brief = ok_json(server.send(Method::GET, "/readyz").await).await;
    assert_eq!(brief, serde_json::json!({"status": "ready"}));
    let full = ok_json(server.get("/readyz").await).await;
    assert_eq!(full["worker_id"], server.ids.keeper().lease().worker_id);
    // Not ready: the same status, code and Retry-After either way; the reason in words only
    // with the token.
    server.ids.shutdown().await.unwrap();
    let message = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let retry = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .cloned();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("lease_not_held"))
        );
        assert_eq!(retry.unwrap(), "1");
        body["error"]["message"].as_str().unwrap().to_owned()
    };
    let open = message(server.send(Method::GET, "/readyz").await).await;
    assert_eq!(
        open,
        "not ready: lease_not_held (the details need a token of the metrics or admin scope)"
    );
    let detailed = message(server.get("/readyz").await).await;
    assert!(detailed.contains("no confirmed worker lease"), "{detailed}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_created_updated_and_listed() {
    let server = Server::start(Setup {
        admin_token: Some(TOKEN),
        ..Setup::default()
    })
    .await;
    let put = |path: &'static str, body: &'static str| {
        let server = &server;
        async move {
            server
                .admin(Method::PUT, path)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };

    let created = put(
        "/v1/tags/invoices",
        r#"{"step": 50, "description": "invoice numbers", "first_id": 1000}"#,
    )
    .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["tag"], "invoices");
    assert_eq!(created["step"], 50);
    assert_eq!(created["max_id"], "1000");
    assert_eq!(created["description"], "invoice numbers");

    let ids = ids_of(&ok_json(server.get("/v1/segment/invoices?count=3").await).await);
    assert_eq!(ids, vec![1000, 1001, 1002]);

    let updated = ok_json(put("/v1/tags/invoices", r#"{"step": 80}"#).await).await;
    assert_eq!(updated["step"], 80);
    // The node's running buffer of the tag takes the new step for its next fetches.
    let invoices = idmint_core::Tag::new("invoices").unwrap();
    let buffer = server
        .ids
        .segments()
        .buffer(&invoices, Asker::Operator)
        .await
        .unwrap();
    assert_eq!(buffer.current().min_step(), 80);
    assert_eq!(updated["description"], "invoice numbers");
    let updated = ok_json(put("/v1/tags/invoices", r#"{"description": "renamed"}"#).await).await;
    assert_eq!(updated["step"], 80);
    assert_eq!(updated["description"], "renamed");
    // An empty body creates with the defaults, or leaves an existing tag as it is.
    let defaults = put("/v1/tags/plain", "").await;
    assert_eq!(defaults.status(), StatusCode::CREATED);
    let unchanged = ok_json(put("/v1/tags/plain", "  ").await).await;
    assert_eq!(unchanged["step"], 1000);

    let one = ok_json(
        server
            .admin(Method::GET, "/v1/tags/invoices")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(one["step"], 80);
    assert!(one["max_id"].as_str().unwrap().parse::<u64>().unwrap() > 1002);
    let all = ok_json(server.admin(Method::GET, "/v1/tags").send().await.unwrap()).await;
    let names: Vec<&str> = all["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["invoices", "plain"]);

    assert_error(
        server
            .admin(Method::GET, "/v1/tags/missing")
            .send()
            .await
            .unwrap(),
        404,
        "unknown_tag",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", r#"{"first_id": 5}"#).await,
        409,
        "tag_exists",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", "{not json").await,
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", r#"{"stepp": 5}"#).await,
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", r#"{"step": "5"}"#).await,
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", r#"{"step": 0}"#).await,
        400,
        "invalid_step",
    )
    .await;
    assert_error(
        put("/v1/tags/invoices", r#"{"first_id": 0}"#).await,
        400,
        "invalid_first_id",
    )
    .await;
    assert_error(put("/v1/tags/bad%0Atag", "{}").await, 400, "invalid_tag").await;
    let huge = server
        .admin(Method::PUT, "/v1/tags/invoices")
        .body(format!(r#"{{"description": "{}"}}"#, "d".repeat(80 * 1024)))
        .send()
        .await
        .unwrap();
    // The unread body stays in the socket: the server says it closes the connection, so the
    // client does not reuse it for the next request.
    assert_eq!(huge.headers()["connection"], "close");
    assert_error(huge, 413, "payload_too_large").await;

    let workers = ok_json(
        server
            .admin(Method::GET, "/v1/workers")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let worker = server.ids.keeper().lease().worker_id;
    assert_eq!(workers["node"]["worker_id"], worker);
    assert_eq!(workers["node"]["held"], true);
    let mine = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["worker_id"] == worker)
        .unwrap();
    assert_eq!(mine["node_name"], "http-test");
    assert_eq!(mine["live"], true);
    assert!(mine["hwm_ms"].as_u64().unwrap() > 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tags_are_404_when_auto_create_is_off() {
    let server = Server::start(Setup {
        auto_create_tags: false,
        ..Setup::default()
    })
    .await;
    assert_error(server.get("/v1/segment/nope").await, 404, "unknown_tag").await;
    assert_error(
        server
            .send(Method::POST, "/v1/segment/nope/lease?size=5")
            .await,
        404,
        "unknown_tag",
    )
    .await;
    assert_error(
        server.get("/api/segment/get/nope").await,
        404,
        "unknown_tag",
    )
    .await;
    // Admin routes are open without a token; creating the tag makes it usable.
    let created = server
        .client
        .put(format!("{}/v1/tags/nope", server.base))
        .body(r#"{"step": 10}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let ids = ids_of(&ok_json(server.get("/v1/segment/nope?count=2").await).await);
    assert_eq!(ids, vec![1, 2]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_paths_answer_like_leaf() {
    let server = Server::start(Setup::default()).await;
    let mut previous = 0u64;
    for _ in 0..3 {
        let response = server.get("/api/segment/get/leaf-tag").await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(content_type(&response).starts_with("text/plain"));
        let id: u64 = response.text().await.unwrap().parse().unwrap();
        assert!(id > previous);
        previous = id;
    }
    let response = server.get("/api/snowflake/get/anything").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(content_type(&response).starts_with("text/plain"));
    let text = response.text().await.unwrap();
    assert!(text.bytes().all(|b| b.is_ascii_digit()), "{text}");
    let snowflake: u64 = text.parse().unwrap();

    let decoded = ok_json(
        server
            .get(&format!("/decodeSnowflakeId?snowflakeId={snowflake}"))
            .await,
    )
    .await;
    let worker = server.ids.keeper().lease().worker_id;
    assert_eq!(decoded["workerId"], worker.to_string());
    assert!(decoded["sequenceId"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .is_ok());
    let unix_ms = decoded["unix_ms"].as_u64().unwrap();
    let timestamp = decoded["timestamp"].as_str().unwrap();
    assert!(
        timestamp.starts_with(&format!("{unix_ms}(")) && timestamp.ends_with(')'),
        "{timestamp}"
    );
    assert_eq!(decoded["id"], snowflake.to_string());

    assert_error(server.get("/decodeSnowflakeId").await, 400, "invalid_id").await;
    assert_error(
        server.get("/decodeSnowflakeId?snowflakeId=x").await,
        400,
        "invalid_id",
    )
    .await;
    assert_error(
        server.get("/api/segment/get/bad%09key").await,
        400,
        "invalid_tag",
    )
    .await;
    assert_error(server.get("/api/snowflake/get/").await, 404, "not_found").await;

    // Leaf's mappings name no method: every one but TRACE mints (and HEAD never does).
    for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
        let response = server
            .send(method.clone(), "/api/segment/get/leaf-tag")
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{method}");
        let id: u64 = response.text().await.unwrap().parse().unwrap();
        assert_eq!(id, previous + 1, "{method}");
        previous = id;
    }
    let options = server.send(Method::OPTIONS, "/api/snowflake/get/x").await;
    assert_eq!(options.status(), StatusCode::OK);
    assert_eq!(
        options.headers().get(reqwest::header::ALLOW).unwrap(),
        "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS"
    );
    assert_error(
        server
            .send(Method::TRACE, "/api/segment/get/leaf-tag")
            .await,
        405,
        "method_not_allowed",
    )
    .await;
    let next = plain_id(&server, "/api/segment/get/leaf-tag").await;
    assert_eq!(next, previous + 1, "OPTIONS or TRACE took an ID");
    server.stop().await;
}

/// The ID a Leaf route answers as plain text.
async fn plain_id(server: &Server, path: &str) -> u64 {
    let text = server.get(path).await.text().await.unwrap();
    text.parse()
        .unwrap_or_else(|_| panic!("{path} answered {text}"))
}

/// `HEAD` answers with the headers of a `GET` and never takes an ID, on every route that
/// mints (a `GET` serves `HEAD` by default, which would burn an ID per probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_never_takes_an_id() {
    let server = Server::start(Setup::default()).await;
    let first = ok_json(server.get("/v1/segment/probed").await).await;
    let first: u64 = first["ids"][0].as_str().unwrap().parse().unwrap();
    let snowflake = plain_id(&server, "/api/snowflake/get/x").await;
    for path in [
        "/v1/segment/probed",
        "/v1/segment/never-created",
        "/v1/snowflake",
        "/v1/snowflake?count=100",
        "/api/segment/get/probed",
        "/api/snowflake/get/x",
    ] {
        for _ in 0..2 {
            let response = server.send(Method::HEAD, path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert!(!content_type(&response).is_empty(), "{path}");
            assert!(response.bytes().await.unwrap().is_empty(), "{path}");
        }
    }
    let next = ok_json(server.get("/v1/segment/probed").await).await;
    assert_eq!(
        next["ids"][0],
        (first + 1).to_string(),
        "HEAD took segment IDs"
    );
    let later = plain_id(&server, "/api/snowflake/get/x").await;
    assert!(later > snowflake);
    // HEAD created no tag either.
    let tags: Vec<String> = server
        .ids
        .segments()
        .buffers()
        .iter()
        .map(|b| b.tag().to_string())
        .collect();
    assert!(!tags.iter().any(|t| t == "never-created"), "{tags:?}");
    server.stop().await;
}

/// The last segment ID there is: `MAX_SEGMENT_ID - 1`.
const LAST_ID: u64 = 9_223_372_036_854_775_806;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_is_served_to_its_last_id_then_409_tag_exhausted() {
    let server = Server::start(Setup {
        admin_token: Some(TOKEN),
        ..Setup::default()
    })
    .await;
    let put = |body: String| {
        let server = &server;
        async move {
            server
                .admin(Method::PUT, "/v1/tags/end")
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    // A tag cannot start with nothing left; it can start with 5 IDs left.
    let none_left = format!(r#"{{"first_id": {}}}"#, LAST_ID + 1);
    assert_error(put(none_left).await, 400, "invalid_first_id").await;
    let created = put(format!(r#"{{"first_id": {}}}"#, LAST_ID - 4)).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["max_id"], (LAST_ID - 4).to_string());
    // Updating its step is fine; `first_id` on an existing tag is still a conflict.
    assert_eq!(
        ok_json(put(r#"{"step": 10}"#.into()).await).await["step"],
        10
    );
    assert_error(put(r#"{"first_id": 1}"#.into()).await, 409, "tag_exists").await;

    // Requests that need more than is left fail whole and take nothing.
    let lease = "/v1/segment/end/lease?size=6";
    assert_error(
        server.admin(Method::POST, lease).send().await.unwrap(),
        409,
        "tag_exhausted",
    )
    .await;
    assert_error(
        server.get("/v1/segment/end?count=6").await,
        409,
        "tag_exhausted",
    )
    .await;
    let ids = ids_of(&ok_json(server.get("/v1/segment/end?count=2").await).await);
    assert_eq!(ids, vec![LAST_ID - 4, LAST_ID - 3]);
    let run = ok_json(
        server
            .admin(Method::POST, "/v1/segment/end/lease?size=2")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(run["start"], (LAST_ID - 2).to_string());
    assert_eq!(run["end"], LAST_ID.to_string());
    let leaf = server.get("/api/segment/get/end").await;
    assert_eq!(leaf.status(), StatusCode::OK);
    assert_eq!(leaf.text().await.unwrap(), LAST_ID.to_string());

    // Then every route says so, at once, in the usual JSON body.
    let exhausted = server.get("/v1/segment/end").await;
    let text = exhausted.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], "tag_exhausted", "{text}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`end`") && message.contains(&LAST_ID.to_string()),
        "{message}"
    );
    assert_error(server.get("/v1/segment/end").await, 409, "tag_exhausted").await;
    assert_error(
        server.get("/api/segment/get/end").await,
        409,
        "tag_exhausted",
    )
    .await;
    let lease = "/v1/segment/end/lease?size=1";
    assert_error(
        server.admin(Method::POST, lease).send().await.unwrap(),
        409,
        "tag_exhausted",
    )
    .await;
    let info = ok_json(
        server
            .admin(Method::GET, "/v1/tags/end")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(info["max_id"], (LAST_ID + 1).to_string());
    // A used-up tag says nothing about the node: it stays ready, other tags are served.
    ok_json(server.get("/readyz").await).await;
    ok_json(server.get("/v1/segment/other").await).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_shutdown() {
    let server = Server::start(Setup::default()).await;
    let health = ok_json(server.get("/healthz").await).await;
    assert_eq!(health, serde_json::json!({"status": "ok"}));
    let ready = ok_json(server.get("/readyz").await).await;
    ok_json(server.get("/v1/segment/any").await).await;
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["worker_id"], server.ids.keeper().lease().worker_id);

    // Once the ID service has released its lease: not ready, and snowflakes are a 503.
    server.ids.shutdown().await.unwrap();
    let headers = assert_error(server.get("/readyz").await, 503, "lease_not_held").await;
    assert_eq!(headers.get(reqwest::header::RETRY_AFTER).unwrap(), "1");
    assert_error(server.get("/v1/snowflake").await, 503, "shutting_down").await;
    assert_error(
        server.get("/v1/segment/any").await,
        503,
        "segment_unavailable",
    )
    .await;
    ok_json(server.get("/healthz").await).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_ids_and_errors() {
    let server = Server::start(Setup::default()).await;
    ok_json(server.get("/v1/snowflake?count=7").await).await;
    ok_json(server.get("/v1/segment/metered?count=4").await).await;
    assert_error(
        server.get("/v1/snowflake?count=0").await,
        400,
        "invalid_count",
    )
    .await;
    let response = server.get("/metrics").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(content_type(&response).starts_with("text/plain"));
    let text = response.text().await.unwrap();
    for needle in [
        "idmint_ids_issued_total{kind=\"snowflake\"}",
        "idmint_ids_issued_total{kind=\"segment\",tag=\"metered\"} 4",
        "idmint_http_errors_total{code=\"invalid_count\"}",
        "idmint_segment_buffer_seconds{tag=\"metered\"}",
        "idmint_segment_buffered_ids{tag=\"metered\"}",
        "idmint_lease_held 1",
        "idmint_worker_id",
        "# HELP idmint_ids_issued_total",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    server.stop().await;

    let bare = Server::start(Setup {
        metrics: false,
        ..Setup::default()
    })
    .await;
    assert_error(bare.get("/metrics").await, 404, "metrics_disabled").await;
    bare.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_never_share_an_id() {
    const CLIENTS: usize = 8;
    const REQUESTS: usize = 500;
    let server = Arc::new(Server::start(Setup::default()).await);
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let server = Arc::clone(&server);
        tasks.push(tokio::spawn(async move {
            let (mut snowflakes, mut segments) = (Vec::new(), Vec::new());
            for i in 0..REQUESTS {
                if (client + i) % 2 == 0 {
                    let body = ok_json(server.get("/v1/snowflake?count=3").await).await;
                    snowflakes.extend(ids_of(&body));
                } else {
                    let body = ok_json(server.get("/v1/segment/shared?count=3").await).await;
                    segments.extend(ids_of(&body));
                }
            }
            (snowflakes, segments)
        }));
    }
    let (mut snowflakes, mut segments) = (HashSet::new(), HashSet::new());
    let (mut snowflake_count, mut segment_count) = (0, 0);
    for task in tasks {
        let (s, g) = task.await.unwrap();
        // Each client sees its own IDs in increasing order.
        assert_increasing(&s);
        assert_increasing(&g);
        snowflake_count += s.len();
        segment_count += g.len();
        snowflakes.extend(s);
        segments.extend(g);
    }
    assert_eq!(snowflake_count, CLIENTS * REQUESTS / 2 * 3);
    assert_eq!(segment_count, CLIENTS * REQUESTS / 2 * 3);
    assert_eq!(
        snowflakes.len(),
        snowflake_count,
        "a snowflake was handed out twice"
    );
    assert_eq!(
        segments.len(),
        segment_count,
        "a segment ID was handed out twice"
    );
    let server = Arc::into_inner(server).unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_in_text_forms_and_back() {
    use idmint_core::{IdForm, Radix};
    let server = Server::start(Setup::default()).await;
    let texts = |body: &Value| -> Vec<String> {
        let ids = body["ids"].as_array().unwrap().iter();
        ids.map(|v| v.as_str().unwrap().to_owned()).collect()
    };
    // Snowflakes in base62 with a prefix: full width, sorted as text as they were minted.
    let body = ok_json(
        server
            .get("/v1/snowflake?count=50&format=base62&prefix=u_")
            .await,
    )
    .await;
    let got = texts(&body);
    let form = IdForm::new(Radix::Base62).with_prefix("u_").unwrap();
    assert!(
        got.iter().all(|t| t.len() == 13 && t.starts_with("u_")),
        "{got:?}"
    );
    let ids: Vec<u64> = got.iter().map(|t| form.decode(t).unwrap()).collect();
    assert_increasing(&ids);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, got);
    // Segment IDs as padded decimal, and base32 at the shortest.
    let body = ok_json(
        server
            .get("/v1/segment/forms?count=3&format=decimal&width=6")
            .await,
    )
    .await;
    assert_eq!(texts(&body), ["000001", "000002", "000003"]);
    let body = ok_json(server.get("/v1/segment/forms?format=BASE32&width=0").await).await;
    assert_eq!(texts(&body), ["4"]);
    // The decoder reads what it wrote.
    let decoded = ok_json(
        server
            .get(&format!("/v1/decode/{}?format=base62&prefix=u_", got[0]))
            .await,
    )
    .await;
    assert_eq!(decoded["id"], ids[0].to_string());
    // Refusals.
    for (path, code) in [
        ("/v1/snowflake?format=base64", "invalid_format"),
        ("/v1/snowflake?prefix=u_", "invalid_format"),
        ("/v1/snowflake?format=base62&width=99", "invalid_format"),
        (
            "/v1/snowflake?format=base62&prefix=%C3%A9",
            "invalid_format",
        ),
        (
            "/v1/snowflake?format=base62&format=base36",
            "invalid_format",
        ),
        ("/v1/segment/forms?format=base62&width=x", "invalid_format"),
        ("/v1/decode/zz!?format=base62", "invalid_id"),
        ("/v1/decode/v_0?format=base62&prefix=u_", "invalid_id"),
        ("/v1/decode/zzzzzzzzzzzz?format=base62", "invalid_id"),
    ] {
        assert_error(server.get(path).await, 400, code).await;
    }
    server.stop().await;
}
