//! 128-bit IDs through the binary: `/v1/uuid` and `/v1/ulid` over HTTP, `IDMINT.UUID` and
//! `IDMINT.ULID` over the Redis protocol, in every form; strictly increasing across requests,
//! front ends and concurrent connections; read by the `uuid` crate, Python's `uuid` module and
//! `redis-cli`; bad input refused without taking an ID; both kinds decoded over HTTP and RESP;
//! and `--id128-node`: the leased worker in every ID, two nodes of one store never sharing an
//! ID, nor one node across a restart.

use std::collections::HashMap;
use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

use idmint_core::{Id128, Id128Form};
use redis::Value;

use crate::common::{sqlite_url, Server};
use crate::id_space::refused_serve;

/// `GET path` on `server`: status, content type and body.
async fn get(http: &reqwest::Client, server: &Server, path: &str) -> (u16, String, Vec<u8>) {
    let response = http
        .get(format!("{}{path}", server.http))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

/// The texts of a `{"ids": [...]}` body.
fn texts(body: &[u8]) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    value["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {value}"))
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect()
}

/// `GET /v1/{route}?query`'s IDs in a text form, parsed, checking each text has `form`'s shape.
async fn http_ids(http: &reqwest::Client, server: &Server, route: &str, query: &str) -> Vec<Id128> {
    let (status, content_type, body) = get(http, server, &format!("/v1/{route}?{query}")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(content_type, "application/json");
    texts(&body)
        .iter()
        .map(|text| Id128::parse(text).unwrap())
        .collect()
}

/// A RESP connection to `server`.
fn resp(server: &Server) -> redis::Connection {
    redis::Client::open(server.resp.as_str())
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Sends `args`: the reply, or the error reply's text.
fn call(conn: &mut redis::Connection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query::<Value>(conn).map_err(|error| error.to_string())
}

/// The bytes of a bulk-string reply.
fn bulk(value: &Value) -> Vec<u8> {
    match value {
        Value::BulkString(bytes) => bytes.clone(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// The IDs of a reply: one bulk string, or an array of them, read as `form` writes them.
fn resp_ids(value: &Value, form: Id128Form) -> Vec<Id128> {
    let read = |bytes: Vec<u8>| match form {
        Id128Form::Bytes => {
            assert_eq!(bytes.len(), 16);
            Id128::parse_bytes(&bytes).unwrap()
        }
        _ => {
            let text = String::from_utf8(bytes).unwrap();
            assert_eq!(form.render(Id128::parse(&text).unwrap()), text);
            Id128::parse(&text).unwrap()
        }
    };
    match value {
        Value::Array(items) => items.iter().map(|item| read(bulk(item))).collect(),
        other => vec![read(bulk(other))],
    }
}

/// A RESP2 map reply (field/value pairs) as texts.
fn map(value: Value) -> HashMap<String, String> {
    let Value::Array(items) = value else {
        panic!("not a flat map: {value:?}")
    };
    let text = |v: &Value| match v {
        Value::Int(n) => n.to_string(),
        other => String::from_utf8(bulk(other)).unwrap(),
    };
    items
        .chunks(2)
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect()
}

/// Whether `ids` are strictly increasing.
fn increasing(ids: &[Id128]) -> bool {
    ids.windows(2).all(|pair| pair[0] < pair[1])
}

/// `idmint_ids_issued_total{kind="KIND"}` on `server`'s `/metrics` (0 before the first).
async fn issued(http: &reqwest::Client, server: &Server, kind: &str) -> u64 {
    let (_, _, body) = get(http, server, "/metrics").await;
    let series = format!("idmint_ids_issued_total{{kind=\"{kind}\"}} ");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |value| value.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_every_form_as_snowflakes_are_answered() {
    let server = Server::start(&sqlite_url("id128-http"), "id128-http");
    let http = reqwest::Client::new();
    let mut all = Vec::new();
    for (route, own) in [("uuid", Id128Form::Uuid), ("ulid", Id128Form::Ulid)] {
        // The default: one ID in the route's own form, in {"ids": [...]} like /v1/snowflake.
        let (status, _, body) = get(&http, &server, &format!("/v1/{route}")).await;
        assert_eq!(status, 200);
        let one = texts(&body);
        assert_eq!(one.len(), 1);
        assert_eq!(own.render(Id128::parse(&one[0]).unwrap()), one[0]);
        for form in [Id128Form::Uuid, Id128Form::Ulid, Id128Form::Hex] {
            let query = format!("count=7&format={form}");
            let (_, _, body) = get(&http, &server, &format!("/v1/{route}?{query}")).await;
            let written = texts(&body);
            assert_eq!(written.len(), 7);
            let ids: Vec<Id128> = written.iter().map(|t| Id128::parse(t).unwrap()).collect();
            for (text, id) in written.iter().zip(&ids) {
                assert_eq!(&form.render(*id), text, "{route} {form}");
            }
            assert!(increasing(&ids));
            all.extend(ids);
        }
        // Bytes: 16 an ID, in order, as octets.
        let (status, content_type, body) =
            get(&http, &server, &format!("/v1/{route}?count=5&format=bytes")).await;
        assert_eq!(status, 200);
        assert_eq!(content_type, "application/octet-stream");
        assert_eq!(body.len(), 5 * 16);
        let ids: Vec<Id128> = body
            .chunks(16)
            .map(|chunk| Id128::parse_bytes(chunk).unwrap())
            .collect();
        assert!(increasing(&ids));
        all.extend(ids);
    }
    // UUIDv7s as the `uuid` crate reads them: version 7, RFC 9562's variant.
    for id in http_ids(&http, &server, "uuid", "count=50").await {
        let parsed = uuid::Uuid::parse_str(&Id128Form::Uuid.render(id)).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(parsed.as_bytes(), &id.to_bytes());
        assert!(id.is_uuid7());
    }
    // A ULID is not made a UUIDv7: its bits are its own.
    let ulids = http_ids(&http, &server, "ulid", "count=50&format=ulid").await;
    assert!(ulids.iter().any(|id| !id.is_uuid7()));
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), all.len());
    // HEAD takes nothing, as on /v1/snowflake.
    let before = issued(&http, &server, "uuidv7").await;
    let head = http
        .head(format!("{}/v1/uuid", server.http))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(issued(&http, &server, "uuidv7").await, before);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp_answers_like_idmint_snowflake_in_every_form() {
    let server = Server::start(&sqlite_url("id128-resp"), "id128-resp");
    let mut conn = resp(&server);
    for (command, own) in [
        ("IDMINT.UUID", Id128Form::Uuid),
        ("IDMINT.ULID", Id128Form::Ulid),
    ] {
        // No COUNT: one bulk string; COUNT n (even 1): an array.
        let one = call(&mut conn, &[command]).unwrap();
        assert!(matches!(one, Value::BulkString(_)), "{one:?}");
        assert_eq!(resp_ids(&one, own).len(), 1);
        let array = call(&mut conn, &[command, "COUNT", "1"]).unwrap();
        assert!(
            matches!(&array, Value::Array(items) if items.len() == 1),
            "{array:?}"
        );
        for form in [
            Id128Form::Uuid,
            Id128Form::Ulid,
            Id128Form::Hex,
            Id128Form::Bytes,
        ] {
            let name = form.as_str().to_uppercase();
            let reply = call(&mut conn, &[command, "FORMAT", &name, "COUNT", "9"]).unwrap();
            let ids = resp_ids(&reply, form);
            assert_eq!(ids.len(), 9);
            assert!(increasing(&ids), "{command} {form}");
            let single = call(&mut conn, &[command, "format", form.as_str()]).unwrap();
            let single = resp_ids(&single, form);
            assert!(ids[8] < single[0]);
        }
    }
    for id in resp_ids(
        &call(&mut conn, &["IDMINT.UUID", "COUNT", "20"]).unwrap(),
        Id128Form::Uuid,
    ) {
        assert!(id.is_uuid7());
    }
    // RESP3 answers the same bulk strings.
    let hello = redis::cmd("HELLO").arg(3).query::<Value>(&mut conn);
    assert!(hello.is_ok(), "{hello:?}");
    let reply = call(&mut conn, &["IDMINT.ULID", "COUNT", "3"]).unwrap();
    assert_eq!(resp_ids(&reply, Id128Form::Ulid).len(), 3);
    // In MULTI, queued and answered in EXEC's array.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("IDMINT.UUID")
        .cmd("IDMINT.ULID")
        .arg("COUNT")
        .arg(2);
    let (uuid, ulids): (Value, Value) = pipe.query(&mut conn).unwrap();
    assert_eq!(resp_ids(&uuid, Id128Form::Uuid).len(), 1);
    assert_eq!(resp_ids(&ulids, Id128Form::Ulid).len(), 2);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_increase_across_requests_front_ends_and_connections() {
    let server = Server::start(&sqlite_url("id128-order"), "id128-order");
    let http = reqwest::Client::new();
    // One global order: requests one after another, alternating HTTP and RESP.
    let mut conn = resp(&server);
    let mut sequence = Vec::new();
    for i in 0..300 {
        if i % 2 == 0 {
            sequence.extend(http_ids(&http, &server, "uuid", "count=3").await);
        } else {
            let reply = call(&mut conn, &["IDMINT.UUID", "COUNT", "3"]).unwrap();
            sequence.extend(resp_ids(&reply, Id128Form::Uuid));
        }
    }
    assert!(increasing(&sequence), "the sequence of requests went back");
    let mut ulids = Vec::new();
    for _ in 0..200 {
        let reply = call(&mut conn, &["IDMINT.ULID"]).unwrap();
        ulids.extend(resp_ids(&reply, Id128Form::Ulid));
    }
    assert!(increasing(&ulids));

    // Four connections at once: each sees its IDs increase in the order its replies came.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let url = server.resp.clone();
            std::thread::spawn(move || {
                let mut conn = redis::Client::open(url.as_str())
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let mut seen = Vec::new();
                for i in 0..400 {
                    let reply = if i % 3 == 0 {
                        call(&mut conn, &["IDMINT.UUID"]).unwrap()
                    } else {
                        call(&mut conn, &["IDMINT.UUID", "COUNT", "25"]).unwrap()
                    };
                    seen.extend(resp_ids(&reply, Id128Form::Uuid));
                }
                seen
            })
        })
        .collect();
    let mut all: HashSet<Id128> = sequence.iter().copied().collect();
    for thread in threads {
        let seen = thread.join().unwrap();
        assert!(increasing(&seen), "a connection saw its IDs go back");
        let count = seen.len();
        all.extend(seen);
        assert!(count > 0);
    }
    assert_eq!(all.len(), sequence.len() + 4 * (134 + 266 * 25));
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_reads_them_as_uuid_version_7_in_order() {
    let server = Server::start(&sqlite_url("id128-python"), "id128-python");
    let http = reqwest::Client::new();
    let mut written = Vec::new();
    for _ in 0..5 {
        let (_, _, body) = get(&http, &server, "/v1/uuid?count=20").await;
        written.extend(texts(&body));
    }
    let script = "import sys, uuid\n\
        ids = [uuid.UUID(t) for t in sys.argv[1:]]\n\
        assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids), ids\n\
        assert [str(u) for u in ids] == sys.argv[1:]\n\
        assert sorted(ids) == ids, 'not in order'\n\
        print(len(ids))\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .args(&written)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "100");
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_takes_no_id() {
    let server = Server::start(&sqlite_url("id128-bad"), "id128-bad");
    let http = reqwest::Client::new();
    let mut conn = resp(&server);
    // Issue one of each first, so their counters exist.
    http_ids(&http, &server, "uuid", "").await;
    http_ids(&http, &server, "ulid", "").await;
    call(&mut conn, &["IDMINT.UUID"]).unwrap();
    let counts = |http: reqwest::Client, server: &Server| {
        let server_http = server.http.clone();
        async move {
            let mut counts = Vec::new();
            for kind in ["uuidv7", "ulid"] {
                let body = http
                    .get(format!("{server_http}/metrics"))
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap();
                let series = format!("idmint_ids_issued_total{{kind=\"{kind}\"}} ");
                counts.push(
                    body.lines()
                        .find_map(|line| line.strip_prefix(&series))
                        .map(|v| v.trim().to_owned()),
                );
            }
            counts
        }
    };
    // The RESP counts reach the metrics as the connection's batch ends: one more command.
    call(&mut conn, &["PING"]).unwrap();
    let before = counts(http.clone(), &server).await;
    assert!(before.iter().all(Option::is_some), "{before:?}");

    for (path, code, names) in [
        ("/v1/uuid?count=0", "invalid_count", "count"),
        ("/v1/uuid?count=10001", "invalid_count", "count"),
        ("/v1/ulid?count=x", "invalid_count", "count"),
        ("/v1/uuid?format=nope", "invalid_format", "format"),
        (
            "/v1/ulid?format=uuid&format=hex",
            "invalid_format",
            "format",
        ),
        ("/v1/uuid?count=1&count=2", "invalid_count", "count"),
    ] {
        let (status, content_type, body) = get(&http, &server, path).await;
        assert_eq!(status, 400, "{path}");
        assert_eq!(content_type, "application/json", "{path}");
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], code, "{path}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{path}: {message}");
    }
    for (args, error) in [
        (
            &["IDMINT.UUID", "COUNT", "0"][..],
            "COUNT must be between 1 and 10000, got 0",
        ),
        (
            &["IDMINT.ULID", "COUNT", "10001"],
            "COUNT must be between 1 and 10000, got 10001",
        ),
        (
            &["IDMINT.UUID", "COUNT", "x"],
            "value is not an integer or out of range",
        ),
        (
            &["IDMINT.UUID", "FORMAT", "nope"],
            "FORMAT must be UUID, ULID, HEX or BYTES",
        ),
        (
            &["IDMINT.ULID", "FORMAT", "integer"],
            "FORMAT must be UUID, ULID, HEX or BYTES",
        ),
        (&["IDMINT.UUID", "SHARD", "1"], "syntax error"),
        (&["IDMINT.UUID", "COUNT"], "syntax error"),
        (&["IDMINT.ULID", "COUNT", "2", "FORMAT"], "syntax error"),
        (
            &["IDMINT.DECODE"],
            "wrong number of arguments for 'idmint.decode' command",
        ),
    ] {
        let refused = call(&mut conn, args).unwrap_err();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
    call(&mut conn, &["PING"]).unwrap();
    assert_eq!(counts(http.clone(), &server).await, before);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_reads_both_kinds_over_http_and_resp() {
    let server = Server::start(&sqlite_url("id128-decode"), "id128-decode");
    let http = reqwest::Client::new();
    let uuid = http_ids(&http, &server, "uuid", "").await[0];
    let ulid = http_ids(&http, &server, "ulid", "").await[0];
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let decode = |path: String| {
        let http = http.clone();
        let base = server.http.clone();
        async move {
            let response = http.get(format!("{base}{path}")).send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    // The canonical and hex forms read as their bits say; a UUIDv7 in ULID text needs the
    // kind named (26 characters are a ULID's own text).
    for (form, query) in [
        (Id128Form::Uuid, ""),
        (Id128Form::Hex, ""),
        (Id128Form::Ulid, "?kind=uuidv7"),
    ] {
        let (status, body) = decode(format!("/v1/decode/{}{query}", form.render(uuid))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["id"], Id128Form::Uuid.render(uuid));
        assert_eq!(body["kind"], "uuidv7");
        assert_eq!(body["version"], 7);
        assert_eq!(body["variant"], 2);
        assert_eq!(body["ms"], uuid.ms());
        assert!(uuid.ms().abs_diff(now_ms) < 60_000);
        assert!(body["time"].as_str().unwrap().ends_with('Z'));
        assert!(body["counter"].as_u64().unwrap() < 1 << 24);
        // No node field on a node without --id128-node.
        assert!(body.get("node").is_none(), "{body}");
    }
    let (_, body) = decode(format!("/v1/decode/{}", Id128Form::Ulid.render(ulid))).await;
    assert_eq!(body["kind"], "ulid", "{body}");
    assert!(body.get("version").is_none());
    assert_eq!(body["ms"], ulid.ms());
    // 26 characters read as a ULID even when the bits would pass for a UUIDv7's (1 in 64
    // ULIDs do): the text form says the kind.
    let (_, body) = decode(format!("/v1/decode/{}", Id128Form::Ulid.render(uuid))).await;
    assert_eq!(body["kind"], "ulid", "{body}");
    // `kind` reads it as asked.
    let (_, body) = decode(format!(
        "/v1/decode/{}?kind=ulid",
        Id128Form::Uuid.render(uuid)
    ))
    .await;
    assert_eq!(body["kind"], "ulid", "{body}");
    let (status, body) = decode(format!(
        "/v1/decode/{}?kind=nope",
        Id128Form::Uuid.render(uuid)
    ))
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &"invalid_argument".into())
    );
    let (status, body) = decode("/v1/decode/0192f3a1-7c2e-7a3b-8d4e-5f60718293aZ".into()).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &"invalid_id".into()),
        "{body}"
    );
    // A snowflake is decoded as before.
    let (_, body) = decode("/v1/decode/175928847299117063".into()).await;
    assert!(body["layout"].is_string(), "{body}");
    // Digits alone are never read as 128-bit, even 26 or 32 of them: the plain path refuses
    // zeros in front, and the padded decimal form reads them.
    for padded in [
        "00000000175928847299117063",
        "00000000000000175928847299117063",
    ] {
        let (status, body) = decode(format!("/v1/decode/{padded}")).await;
        assert_eq!((status, body.get("kind")), (400, None), "{body}");
        let (_, body) = decode(format!("/v1/decode/{padded}?format=decimal")).await;
        assert_eq!(body["id"], "175928847299117063", "{body}");
    }

    let mut conn = resp(&server);
    let fields = map(call(&mut conn, &["IDMINT.DECODE", &Id128Form::Uuid.render(uuid)]).unwrap());
    assert_eq!(fields["kind"], "uuidv7");
    assert_eq!(fields["version"], "7");
    assert_eq!(fields["variant"], "2");
    assert_eq!(fields["ms"], uuid.ms().to_string());
    assert_eq!(fields["id"], Id128Form::Uuid.render(uuid));
    let fields = map(call(&mut conn, &["IDMINT.DECODE", &Id128Form::Ulid.render(ulid)]).unwrap());
    assert_eq!(fields["kind"], "ulid");
    assert!(!fields.contains_key("version"));
    let fields = map(call(
        &mut conn,
        &[
            "IDMINT.DECODE",
            &Id128Form::Hex.render(uuid),
            "KIND",
            "ulid",
        ],
    )
    .unwrap());
    assert_eq!(fields["kind"], "ulid");
    // The 16 bytes, with KIND.
    let raw = redis::cmd("IDMINT.DECODE")
        .arg(&uuid.to_bytes()[..])
        .arg("KIND")
        .arg("UUID7")
        .query::<Value>(&mut conn)
        .unwrap();
    assert_eq!(map(raw)["id"], Id128Form::Uuid.render(uuid));
    for (args, error) in [
        (
            &["IDMINT.DECODE", "0192f3a1-7c2e-7a3b-8d4e-5f60718293aZ"][..],
            "not a 128-bit ID",
        ),
        (
            &["IDMINT.DECODE", "abc", "KIND", "uuidv7"],
            "not a 128-bit ID",
        ),
        (
            &["IDMINT.DECODE", "abc", "KIND", "nope"],
            "KIND must be UUIDV7 or ULID",
        ),
        (
            &["IDMINT.DECODE", "1", "KIND", "ulid", "TAG", "t"],
            "KIND reads a 128-bit ID",
        ),
    ] {
        let refused = call(&mut conn, args).unwrap_err();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
    server.stop();
}

/// The worker ID `server` leased, from its serving line.
fn worker_id(server: &Server) -> u32 {
    let at = server.serving.find("worker_id=").unwrap() + "worker_id=".len();
    server.serving[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_id128_node_ids_carry_the_worker_and_nodes_never_share_one() {
    let store = sqlite_url("id128-node");
    let flags = ["--id128-node", "true"];
    let a = Server::start_with(&store, "id128-node-a", &flags);
    let b = Server::start_with(&store, "id128-node-b", &flags);
    let (worker_a, worker_b) = (worker_id(&a), worker_id(&b));
    assert_ne!(worker_a, worker_b);
    let http = reqwest::Client::new();
    let mut seen = HashSet::new();
    for (server, worker) in [(&a, worker_a), (&b, worker_b)] {
        for route in ["uuid", "ulid"] {
            let ids = http_ids(&http, server, route, "count=1000").await;
            for id in &ids {
                // The default layout has no dc field: the node field is the worker ID's 10 bits.
                let kind = if route == "uuid" {
                    idmint_core::Id128Kind::Uuid7
                } else {
                    idmint_core::Id128Kind::Ulid
                };
                assert_eq!(id.decode(Some(kind), 10).unwrap().node, Some(worker));
                assert!(seen.insert(*id), "{id:?} given twice");
            }
        }
        let id = http_ids(&http, server, "uuid", "").await[0];
        let (_, _, body) = get(&http, server, &format!("/v1/decode/{id}")).await;
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["node"], worker, "{body}");
        let mut conn = resp(server);
        let reply = call(&mut conn, &["IDMINT.DECODE", &id.to_string()]).unwrap();
        assert_eq!(map(reply)["node"], worker.to_string());
    }
    b.stop();

    // A node restarted: nothing it gave before comes again.
    let mut node = crate::common::FixedNode::start(&store, "id128-node-a2", &flags);
    a.stop();
    for _ in 0..3 {
        let server = node.server.as_ref().unwrap();
        let mut conn = resp(server);
        for _ in 0..20 {
            let reply = call(&mut conn, &["IDMINT.UUID", "COUNT", "100"]).unwrap();
            for id in resp_ids(&reply, Id128Form::Uuid) {
                assert!(seen.insert(id), "{id:?} given again after a restart");
            }
        }
        node.restart();
    }
    if let Some(server) = node.server.take() {
        server.stop();
    }
}

#[test]
fn id128_node_is_refused_at_start_on_a_layout_too_wide() {
    let store = sqlite_url("id128-wide");
    let (code, log) = refused_serve(
        &store,
        "id128-wide",
        &[
            "--id128-node",
            "true",
            "--layout",
            "time:32@1s,dc:10,worker:15,seq:6",
        ],
    );
    assert_ne!(code, 0);
    assert!(log.contains("id128-node"), "{log}");
    assert!(log.contains("25 bits"), "{log}");
}

#[test]
fn redis_cli_reads_a_ulid() {
    let server = Server::start(&sqlite_url("id128-cli"), "id128-cli");
    let port = server
        .resp
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap();
    let out = Command::new("redis-cli")
        .args(["-p", port, "IDMINT.ULID"])
        .output()
        .expect("redis-cli is installed (scripts/with-stores or apt install redis-tools)");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let text = text.trim();
    assert_eq!(text.len(), 26, "{text}");
    assert_eq!(Id128Form::Ulid.render(Id128::parse(text).unwrap()), text);
    let out = Command::new("redis-cli")
        .args(["-p", port, "IDMINT.UUID", "COUNT", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let ids: Vec<Id128> = text
        .lines()
        .map(|l| Id128::parse(l.trim()).unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] < ids[1]);
    server.stop();
}

/// Sends `signal` (`-STOP`, `-CONT`) to `server`'s process.
fn signal(server: &Server, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// With `--id128-node`, a node frozen past its lease and the node that then takes its worker ID
/// put the same node field in their IDs; they never share a millisecond: the new holder starts
/// above the frozen one's high-water mark, and the frozen one, once it wakes, gives no ID past
/// the mark it was granted (it waits, then answers `hwm_not_granted`, as for snowflakes).
#[tokio::test(flavor = "multi_thread")]
async fn with_id128_node_a_frozen_holder_and_the_next_never_share_a_millisecond() {
    let store = sqlite_url("id128-fence");
    let flags = [
        "--id128-node",
        "true",
        "--worker-id",
        "0",
        "--lease-ttl",
        "2s",
        "--lease-renew",
        "500ms",
        "--hwm-lead",
        "2s",
        "--max-wait",
        "3s",
        "--worker-wait",
        "10s",
    ];
    let a = Server::start_with(&store, "id128-fence-a", &flags);
    let http = reqwest::Client::new();
    let mut from_a = http_ids(&http, &a, "ulid", "count=100").await;
    signal(&a, "-STOP");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let b = Server::start_with(&store, "id128-fence-b", &flags);
    let from_b = http_ids(&http, &b, "ulid", "count=100").await;
    signal(&a, "-CONT");
    // Whatever the woken node still gives (before it learns its lease is gone) is below the
    // new holder's IDs; the rest is refused.
    for _ in 0..5 {
        let (status, _, body) = get(&http, &a, "/v1/ulid?count=10").await;
        match status {
            200 => from_a.extend(texts(&body).iter().map(|t| Id128::parse(t).unwrap())),
            503 => {}
            other => panic!("{other}: {}", String::from_utf8_lossy(&body)),
        }
    }
    for id in from_a.iter().chain(&from_b) {
        assert_eq!(
            id.decode(Some(idmint_core::Id128Kind::Ulid), 10)
                .unwrap()
                .node,
            Some(0)
        );
    }
    let a_last = from_a.iter().map(|id| id.ms()).max().unwrap();
    let b_first = from_b.iter().map(|id| id.ms()).min().unwrap();
    assert!(
        a_last < b_first,
        "A gave ms {a_last}, B {b_first}: the same node field in one ms"
    );
    b.stop();
    // The node that lost its lease cannot write its last mark back: it stops with an error, as
    // any node whose lease was taken does.
    signal(&a, "-KILL");
}
