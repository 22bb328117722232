//! Permuted IDs (`--permutation-key-file`) through the binary, on every backend: every path
//! that hands out an ID (HTTP, Leaf's API, the Redis protocol's fast and slow paths, batches,
//! text forms) hands out the permuted value, never the plain one; the values restore with the
//! key to the plain IDs in the order they were issued; runs of consecutive IDs are refused;
//! the key is pinned in the store, so a node without it or with another one is refused and
//! issues nothing; a restart with the key goes on above everything issued; and `idmint decode`
//! needs the pinned key.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use idmint_core::Permutation;
use redis::Value;

use crate::common::{ids_of, sqlite_url, Server};
use crate::id_space::{
    decode, get_json, namespace, on_every_store, refused_serve, run, server_url,
};
use crate::security::folder;

/// Snowflakes over HTTP per restart: enough that an ordered run of public values is out of
/// the question (1 in 100!).
const BATCH: u64 = 100;

/// A key from `idmint permutation-key`, written to `dir/name` and read back.
fn new_key(dir: &Path, name: &str) -> (PathBuf, Permutation) {
    let (code, out, err) = run(&["permutation-key"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.len(), 33, "32 hex digits and a line end: {out:?}");
    let path = dir.join(name);
    std::fs::write(&path, &out).unwrap();
    (path, Permutation::from_hex(&out).unwrap())
}

/// A RESP reply as text: integers and bulk strings as their digits.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::Int(n) => n.to_string(),
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        other => format!("{other:?}"),
    }
}

/// Sends `args`: the reply, or the error reply as `-CODE detail`.
pub(crate) fn call(conn: &mut redis::Connection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query::<Value>(conn)
        .map_err(|error| match error.code() {
            Some(code) => format!("-{code} {}", error.detail().unwrap_or_default()),
            None => panic!("{args:?}: {error}"),
        })
}

/// The IDs of a RESP reply: one integer or an array of them.
fn resp_ids(reply: Result<Value, String>) -> Vec<u64> {
    fn of(value: &Value) -> Vec<u64> {
        match value {
            Value::Array(items) => items.iter().flat_map(of).collect(),
            other => vec![text(other)
                .parse()
                .unwrap_or_else(|_| panic!("not an ID: {other:?}"))],
        }
    }
    of(&reply.unwrap())
}

/// Everything one node hands out, in the order it handed it out: snowflakes and segment IDs
/// of tag `orders`.
struct Issued {
    snowflakes: Vec<u64>,
    segments: Vec<u64>,
}

/// Takes IDs from `server` through every path, checks the refusals of runs, and returns what
/// it got, in order.
async fn take_everywhere(server: &Server) -> Issued {
    let http = reqwest::Client::new();
    let mut snowflakes = Vec::new();
    let mut segments = Vec::new();
    let body = get_json(&http, server, &format!("/v1/snowflake?count={BATCH}")).await;
    snowflakes.extend(ids_of(&body));
    let body = get_json(&http, server, "/v1/segment/orders?count=50").await;
    segments.extend(ids_of(&body));
    let leaf = |path: &str| format!("{}{path}", server.http);
    for (path, into) in [
        ("/api/segment/get/orders", &mut segments),
        ("/api/snowflake/get/any", &mut snowflakes),
    ] {
        let answer = http.get(leaf(path)).send().await.unwrap();
        into.push(answer.text().await.unwrap().trim().parse().unwrap());
    }
    let lease = http
        .post(leaf("/v1/segment/orders/lease?size=10"))
        .send()
        .await
        .unwrap();
    assert_eq!(lease.status(), 409);
    let body: serde_json::Value = lease.json().await.unwrap();
    assert_eq!(body["error"]["code"], "permuted", "{body}");

    let client = redis::Client::open(server.resp.as_str()).unwrap();
    let mut conn = client.get_connection().unwrap();
    // INCR twice and IDMINT.SNOWFLAKE twice: the second of each takes the fast path.
    for args in [
        &["INCR", "orders"][..],
        &["INCR", "orders"],
        &["IDMINT.NEXT", "orders", "COUNT", "5"],
        &["INCRBY", "orders", "1"],
    ] {
        segments.extend(resp_ids(call(&mut conn, args)));
    }
    for args in [
        &["IDMINT.SNOWFLAKE"][..],
        &["IDMINT.SNOWFLAKE"],
        &["IDMINT.SNOWFLAKE", "COUNT", "5"],
    ] {
        snowflakes.extend(resp_ids(call(&mut conn, args)));
    }
    for args in [
        &["INCRBY", "orders", "5"][..],
        &["IDMINT.RANGE", "orders", "5"],
    ] {
        let refused = call(&mut conn, args).unwrap_err();
        assert!(refused.starts_with("-ERR permuted"), "{args:?}: {refused}");
    }
    let counter = call(&mut conn, &["GET", "orders"]).unwrap_err();
    assert!(counter.contains("permuted"), "{counter}");
    let info = text(&call(&mut conn, &["INFO", "idmint"]).unwrap());
    assert!(info.contains("ids_permuted:1"), "{info}");
    Issued {
        snowflakes,
        segments,
    }
}

/// Asserts `values` strictly increase.
fn increasing(values: &[u64], what: &str) {
    for pair in values.windows(2) {
        assert!(pair[0] < pair[1], "{what}: {} then {}", pair[0], pair[1]);
    }
}

async fn permuted_ids_hide_order_and_keep_their_key(store: String) {
    let dir = folder(&namespace("perm"));
    let (key_file, raw_key) = new_key(&dir, "a.key");
    let (other_file, _) = new_key(&dir, "b.key");
    let key_path = key_file.to_str().unwrap();
    let ns = namespace("perm");
    // Snowflakes in the namespace's permutation, each tag's IDs in its own.
    let key = raw_key.derive(b"namespace", ns.as_bytes());
    let orders = key.derive(b"tag", b"orders");
    let flags = ["--namespace", &ns, "--permutation-key-file", key_path];

    let first = Server::start_with(&store, "node-a", &flags);
    assert!(
        first.serving.contains(&key.fingerprint()),
        "{}",
        first.serving
    );
    let issued = take_everywhere(&first).await;
    // The text forms carry the permuted value too, and decode back to it.
    let http = reqwest::Client::new();
    let body = get_json(&http, &first, "/v1/snowflake?count=3&format=base62").await;
    let text_id = body["ids"][0].as_str().unwrap().to_owned();
    let decoded = get_json(
        &http,
        &first,
        &format!("/v1/decode/{text_id}?format=base62"),
    )
    .await;
    let public: u64 = decoded["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        decoded["plain_id"].as_str().unwrap(),
        key.restore(public).to_string(),
        "{decoded}"
    );
    let sample = issued.snowflakes[7];
    let decoded = decode(&first, sample).await;
    assert_eq!(decoded["id"], sample.to_string(), "{decoded}");
    assert_eq!(decoded["plain_id"], key.restore(sample).to_string());
    let worker = decoded["worker"].as_u64().unwrap();
    let segment = issued.segments[3];
    let decoded = get_json(&http, &first, &format!("/v1/decode/{segment}?tag=orders")).await;
    assert_eq!(decoded["plain_id"], "4", "{decoded}");
    let mut conn = redis::Client::open(first.resp.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let reply = call(
        &mut conn,
        &["IDMINT.DECODE", &segment.to_string(), "TAG", "orders"],
    );
    let Ok(Value::Array(fields)) = reply else {
        panic!("IDMINT.DECODE ... TAG: {reply:?}");
    };
    assert_eq!(fields.last(), Some(&Value::Int(4)), "{fields:?}");
    // Each tag has its own permutation: the first ID of another tag is not orders' first.
    let body = get_json(&http, &first, "/v1/segment/invoices?count=1").await;
    assert_ne!(ids_of(&body)[0], issued.segments[0]);
    first.stop();

    // Public values: all distinct, never the plain ones' order; restored, the plain IDs in the
    // order they were issued, segment IDs consecutive from 1.
    let public: HashSet<u64> = issued
        .snowflakes
        .iter()
        .chain(&issued.segments)
        .copied()
        .collect();
    assert_eq!(
        public.len(),
        issued.snowflakes.len() + issued.segments.len()
    );
    let descents = issued.snowflakes.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(
        descents > 10,
        "{descents} descents in {:?}",
        issued.snowflakes
    );
    let plain_flakes: Vec<u64> = issued
        .snowflakes
        .iter()
        .map(|&id| key.restore(id))
        .collect();
    increasing(&plain_flakes, "restored snowflakes");
    let plain_segments: Vec<u64> = issued
        .segments
        .iter()
        .map(|&id| orders.restore(id))
        .collect();
    assert_eq!(
        plain_segments,
        (1..=plain_segments.len() as u64).collect::<Vec<_>>()
    );

    // Without the key, or with another, the node is refused before it takes a worker ID.
    for (extra, why) in [
        (vec!["--namespace", &ns], "no key"),
        (
            vec![
                "--namespace",
                &ns,
                "--permutation-key-file",
                other_file.to_str().unwrap(),
            ],
            "another key",
        ),
    ] {
        let (code, log) = refused_serve(&store, "node-b", &extra);
        assert_eq!(code, 2, "{why}: {log}");
        assert!(log.contains("permutation key"), "{why}: {log}");
        assert!(!log.contains("worker lease acquired"), "{why}: {log}");
    }
    // `id-space change` keeps the key; a key cannot be changed at all.
    let (code, out, err) = run(&[
        "id-space",
        "change",
        "--store",
        &store,
        "--namespace",
        &ns,
        "--epoch",
        "2024-01-01",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&key.fingerprint()), "{out}");

    // A restart with the key goes on: above every plain ID, no public value twice.
    let second = Server::start_with(&store, "node-a", &flags);
    let again = take_everywhere(&second).await;
    second.stop();
    let restored: Vec<u64> = again.snowflakes.iter().map(|&id| key.restore(id)).collect();
    assert!(restored[0] > *plain_flakes.last().unwrap());
    increasing(&restored, "snowflakes after the restart");
    let next: Vec<u64> = again
        .segments
        .iter()
        .map(|&id| orders.restore(id))
        .collect();
    assert!(next[0] > *plain_segments.last().unwrap());
    increasing(&next, "segment IDs after the restart");
    for id in again.snowflakes.iter().chain(&again.segments) {
        assert!(!public.contains(id), "{id} handed out twice");
    }

    // `idmint decode` with the store wants the pinned key.
    let sample_text = sample.to_string();
    let base = [
        "decode",
        &sample_text,
        "--store",
        &store,
        "--namespace",
        &ns,
        "--json",
    ];
    let (code, out, err) = run(&[&base[..], &["--permutation-key-file", key_path]].concat());
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["plain_id"], key.restore(sample).to_string(), "{json}");
    assert_eq!(json["worker"].as_u64(), Some(worker), "{json}");
    // A segment ID, offline: its number in the tag.
    let segment_text = issued.segments[5].to_string();
    let (code, out, err) = run(&[
        "decode",
        &segment_text,
        "--tag",
        "orders",
        "--namespace",
        &ns,
        "--json",
        "--permutation-key-file",
        key_path,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"plain_id\": \"6\""), "{out}");
    // Offline, with the layout (the default here) instead of the store.
    let (code, out, err) = run(&[
        "decode",
        &sample_text,
        "--json",
        "--namespace",
        &ns,
        "--permutation-key-file",
        key_path,
    ]);
    assert_eq!(code, 0, "{err}");
    let offline: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(offline["plain_id"], json["plain_id"], "{offline}");
    assert_eq!(offline["unix_ms"], json["unix_ms"], "{offline}");
    let (code, _, err) = run(&base);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--permutation-key-file") && err.contains("give its key"),
        "{err}"
    );
    let other = other_file.to_str().unwrap();
    let (code, _, err) = run(&[&base[..], &["--permutation-key-file", other]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pins"), "{err}");
}

/// A namespace that handed out plain IDs never takes a key: its node is refused.
async fn a_plain_namespace_takes_no_key(store: String) {
    let dir = folder(&namespace("plainkey"));
    let (key_file, _) = new_key(&dir, "a.key");
    let ns = namespace("plain");
    let plain = Server::start_with(&store, "node-a", &["--namespace", &ns]);
    let http = reqwest::Client::new();
    assert!(!ids_of(&get_json(&http, &plain, "/v1/snowflake?count=5").await).is_empty());
    plain.stop();
    let (code, log) = refused_serve(
        &store,
        "node-a",
        &[
            "--namespace",
            &ns,
            "--permutation-key-file",
            key_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("permutation key"), "{log}");
}

/// The Rust client on a node that hands out permuted IDs: every snowflake handed out in the
/// node's order (restored, they increase), none skipped, even one per batch; segment IDs are
/// refused at once with the reason, not retried until `max_wait`.
#[test]
fn the_rust_client_hands_out_permuted_snowflakes_and_refuses_runs() {
    use idmint_client::{BlockingClient, ClientConfig};
    use std::time::{Duration, Instant};

    let dir = folder("client-permuted");
    let (key_file, raw_key) = new_key(&dir, "a.key");
    let key = raw_key.derive(b"namespace", b"idmint");
    let server = Server::start_with(
        &sqlite_url("client-permuted"),
        "client-permuted",
        &["--permutation-key-file", key_file.to_str().unwrap()],
    );
    for batch in [1, 64] {
        let config = ClientConfig::new([server.resp.clone()])
            .with_snowflakes(batch, Duration::from_secs(1))
            .with_max_wait(Duration::from_secs(10));
        let client = BlockingClient::new(config).unwrap();
        let mut ids = Vec::new();
        for _ in 0..100 {
            ids.extend(client.snowflakes(3).unwrap());
        }
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 300);
        let restored: Vec<u64> = ids.iter().map(|&id| key.restore(id)).collect();
        increasing(&restored, "the client's snowflakes, restored");
        assert!(ids.windows(2).filter(|w| w[0] > w[1]).count() > 50);
        let started = Instant::now();
        let error = client.next("orders").unwrap_err().to_string();
        assert!(started.elapsed() < Duration::from_secs(5), "{error}");
        assert!(
            error.contains("permuted") && error.contains("IDMINT.NEXT"),
            "{error}"
        );
    }
    server.stop();
}

/// On a permuted node, decoding (which gives the plain ID: its time, its position) needs the
/// admin scope: a mint token, even one limited to some tags, gets 403 and `-NOPERM`.
#[test]
fn decoding_permuted_ids_needs_the_admin_scope() {
    let dir = folder("permuted-scopes");
    let (key_file, _) = new_key(&dir, "a.key");
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        "[[token]]\nname = \"ops\"\nscope = \"admin\"\nsecret = \"admin-secret-0123456789abcdef\"\n\n\
         [[token]]\nname = \"app\"\nscope = \"mint\"\ntags = [\"orders\"]\n\
         secret = \"mint-secret-0123456789abcdef\"\n",
    )
    .unwrap();
    let server = Server::start_with(
        &sqlite_url("permuted-scopes"),
        "permuted-scopes",
        &[
            "--permutation-key-file",
            key_file.to_str().unwrap(),
            "--tokens-file",
            tokens.to_str().unwrap(),
        ],
    );
    let http = crate::security::address(&server.http);
    let mint = Some("mint-secret-0123456789abcdef");
    let (status, _, body) = crate::security::http(http, "GET", "/v1/snowflake", mint);
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = json["ids"][0].as_str().unwrap().to_owned();
    for path in [
        format!("/v1/decode/{id}"),
        format!("/decodeSnowflakeId?snowflakeId={id}"),
    ] {
        let (status, _, body) = crate::security::http(http, "GET", &path, mint);
        assert_eq!(status, 403, "{path}: {body}");
        let (status, _, body) =
            crate::security::http(http, "GET", &path, Some("admin-secret-0123456789abcdef"));
        assert_eq!(status, 200, "{path}: {body}");
    }
    let mut resp = crate::security::Resp::connect(crate::security::address(&server.resp));
    assert_eq!(resp.call(&["AUTH", "mint-secret-0123456789abcdef"]), "+OK");
    let refused = resp.call(&["IDMINT.DECODE", &id]);
    assert!(
        refused.starts_with("-NOPERM") && refused.contains("admin"),
        "{refused}"
    );
    server.stop();
}

/// A layout narrower than 63 bits (js-safe's 53) cannot take a key: permuted IDs use all 63.
#[test]
fn a_narrow_layout_takes_no_key() {
    let dir = folder("permuted-js-safe");
    let (key_file, _) = new_key(&dir, "a.key");
    let (code, log) = refused_serve(
        &sqlite_url("permuted-js-safe"),
        "node-a",
        &[
            "--layout",
            "js-safe",
            "--permutation-key-file",
            key_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("--permutation-key-file") && log.contains("63"),
        "{log}"
    );
}

/// Key files that cannot be a key stop the node with the setting named and the text unquoted.
#[test]
fn bad_key_files_are_refused_without_being_quoted() {
    let dir = folder("bad-key-files");
    let secret = "correct-horse-battery-staple-000";
    for (name, content) in [
        ("short", "abc"),
        ("words", secret),
        ("zeros", &"0".repeat(32)[..]),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let (code, log) = refused_serve(
            &sqlite_url("bad-key"),
            "node-a",
            &["--permutation-key-file", path.to_str().unwrap()],
        );
        assert_eq!(code, 2, "{name}: {log}");
        assert!(log.contains("--permutation-key-file"), "{name}: {log}");
        assert!(!log.contains(secret), "{name}: {log}");
    }
}

on_every_store!(permuted, permuted_ids_hide_order_and_keep_their_key);
on_every_store!(plain_takes_no_key, a_plain_namespace_takes_no_key);
