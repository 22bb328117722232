//! Hostile input against the real `idmint serve` binary (issue 5, scenario 5, the part that is
//! not fuzzing), over raw TCP sockets on both front ends.
//!
//! What it proves:
//! - every malformed, out-of-range, oversized or binary request gets a clear refusal: idmint's
//!   JSON error (`{"error": {"code", "message"}}` with a 4xx) once the request reaches a route,
//!   the HTTP parser's bare 4xx when it cannot even be parsed, a RESP `-ERR` reply, or a closed
//!   connection when nothing can be answered;
//! - after each of them a fresh connection still gets IDs, and the IDs stay unique and
//!   increasing;
//! - inputs that announce or carry huge sizes (a 1 GB bulk string, a 100 MB body, a 1 MiB
//!   header, 10,000 headers) are refused without the server's memory following them;
//! - slow clients (slowloris: partial requests trickled a byte at a time, and silent
//!   connections), 200 of them per protocol, neither delay other clients nor hold their
//!   connections forever: the server closes partial HTTP requests and partial RESP requests
//!   after its read timeout, while idle RESP connections stay open as with Redis.
//!
//! Timing is never asserted beyond "answered within [`ANSWER_WITHIN`]", far above what a healthy
//! server needs.

use crate::common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest any answer (or close) may take before a test calls the server stuck.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// How much the server's resident memory may grow across a group of oversized inputs.
const RSS_GROWTH_LIMIT_KIB: u64 = 64 * 1024;

/// The server's read timeout for a started request (`idmint_server::http::HEADER_READ_TIMEOUT`
/// and the RESP listener's partial-request timeout, both 30 s), plus a generous margin.
const PARTIAL_CLOSED_WITHIN: Duration = Duration::from_secs(30 + 20);

// ----------------------------------------------------------------------------------------------
// The server process

/// A running `idmint serve`, started here rather than with `common::Server` because the tests
/// need its PID (for its memory) and its log (to check it never panicked).
struct Node {
    child: Child,
    http: SocketAddr,
    resp: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Node {
    fn start(name: &str) -> Self {
        let mut child = common::idmint_command()
            .arg("serve")
            .args(["--store", &common::sqlite_url(name)])
            .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
            .args(["--node-name", name])
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (serving_tx, serving_rx) = mpsc::channel();
        let kept = Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("idmint serving") {
                    let _ = serving_tx.send(line.clone());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let serving = serving_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("idmint serve exited or hung before serving");
        let address = |key: &str| -> SocketAddr {
            serving
                .split_whitespace()
                .find_map(|word| word.strip_prefix(key))
                .unwrap_or_else(|| panic!("no `{key}` in {serving:?}"))
                .parse()
                .unwrap()
        };
        Self {
            http: address("http="),
            resp: address("resp="),
            child,
            log,
        }
    }

    /// Resident memory of the server process, from `/proc/PID/status`.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("no VmRSS in /proc/PID/status")
    }

    /// SIGTERM; the server must exit 0 within 20 s and must never have logged a panic.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "idmint serve did not stop within 20 s of SIGTERM"
            );
            thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "idmint serve exited with {status}");
        let log = self.log.lock().unwrap();
        let panics: Vec<&String> = log.iter().filter(|l| l.contains("panick")).collect();
        assert!(panics.is_empty(), "the server panicked: {panics:#?}");
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Fails unless the resident memory grew by less than [`RSS_GROWTH_LIMIT_KIB`]; returns the
/// growth, for the figures printed with `--nocapture`.
fn assert_rss_bounded(node: &Node, before_kib: u64, what: &str) -> i64 {
    let after_kib = node.rss_kib();
    let growth = after_kib as i64 - before_kib as i64;
    eprintln!("RSS {what}: {before_kib} KiB before, {after_kib} KiB after ({growth:+} KiB)");
    assert!(
        growth < RSS_GROWTH_LIMIT_KIB as i64,
        "{what}: RSS grew from {before_kib} KiB to {after_kib} KiB"
    );
    growth
}

// ----------------------------------------------------------------------------------------------
// Raw sockets

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(ANSWER_WITHIN)).unwrap();
    stream.set_write_timeout(Some(ANSWER_WITHIN)).unwrap();
    stream
}

/// Reads until the server closes the connection (a reset counts as a close: a server that
/// stops reading an oversized input may reset it). Fails when it neither answers nor closes
/// within [`ANSWER_WITHIN`].
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return received,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                return received
            }
            Err(e) => panic!(
                "the server neither answered nor closed within {ANSWER_WITHIN:?} ({e}); got {:?}",
                String::from_utf8_lossy(&received)
            ),
        }
    }
}

/// Sends `request` on a new connection and reads everything until the server closes it. The
/// request is written from another thread: a server may answer and close before reading all
/// of an oversized input, and its answer must be read meanwhile.
fn send_and_read_to_close(addr: SocketAddr, request: Vec<u8>) -> Vec<u8> {
    let mut stream = connect(addr);
    let mut writer = stream.try_clone().unwrap();
    let sending = thread::spawn(move || {
        let _ = writer.write_all(&request);
    });
    let received = read_to_close(&mut stream);
    let _ = sending.join();
    received
}

/// Reads until `lines` CRLF-terminated lines have arrived (RESP replies).
fn read_lines(stream: &mut TcpStream, lines: usize) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while received.windows(2).filter(|w| w == b"\r\n").count() < lines {
        let n = stream
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("no reply within {ANSWER_WITHIN:?}: {e}"));
        assert!(
            n > 0,
            "closed before {lines} lines: {:?}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

// ----------------------------------------------------------------------------------------------
// HTTP

/// A response as read off the socket.
#[derive(Debug)]
struct HttpReply {
    /// `None` when the server closed without answering.
    status: Option<u16>,
    head: String,
    body: Vec<u8>,
}

impl HttpReply {
    fn parse(raw: &[u8]) -> Self {
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            return Self {
                status: None,
                head: String::from_utf8_lossy(raw).into_owned(),
                body: Vec::new(),
            };
        };
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let status = head
            .strip_prefix("HTTP/1.")
            .and_then(|rest| rest.get(2..5))
            .and_then(|code| code.parse().ok());
        let mut reply = Self {
            status,
            head,
            body: Vec::new(),
        };
        let rest = &raw[end + 4..];
        reply.body = if reply.header("transfer-encoding") == Some("chunked") {
            dechunk(rest)
        } else if let Some(len) = reply.header("content-length") {
            let len: usize = len.parse().unwrap();
            rest[..len.min(rest.len())].to_vec()
        } else {
            rest.to_vec()
        };
        reply
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {self:?} body {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        let data = &rest[eol + 2..];
        body.extend_from_slice(&data[..size.min(data.len())]);
        rest = data.get(size + 2..).unwrap_or_default();
    }
    body
}

/// `METHOD target` with `headers` (each ending in CRLF) and `body`, on a connection the client
/// asks to close after the answer.
fn request(method: &str, target: &[u8], headers: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(target.len() + headers.len() + body.len() + 64);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: idmint\r\nConnection: close\r\n");
    out.extend_from_slice(headers);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn get(target: &str) -> Vec<u8> {
    request("GET", target.as_bytes(), b"", b"")
}

/// What the server must answer to one hostile request.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// idmint's JSON error with this status and code.
    Json(u16, &'static str),
    /// The same, or a close with no answer: for inputs the server stops reading, whose answer
    /// a reset may destroy before the client reads it.
    JsonOrClosed(u16, &'static str),
    /// Refused by the HTTP parser before any route: this status, an empty body, and the
    /// connection closed.
    Parser(u16),
    /// The same, or a close with no answer.
    ParserOrClosed(u16),
    /// Any 4xx, or a close with no answer.
    Refused,
    /// Served: 2xx.
    Served,
}

fn check_http(reply: &HttpReply, expect: Expect, what: &str) {
    let closed_unanswered = reply.status.is_none() && reply.body.is_empty();
    match expect {
        Expect::JsonOrClosed(..) | Expect::ParserOrClosed(_) | Expect::Refused
            if closed_unanswered => {}
        Expect::Json(status, code) | Expect::JsonOrClosed(status, code) => {
            assert_eq!(reply.status, Some(status), "{what}: {reply:?}");
            assert_eq!(
                reply.header("content-type"),
                Some("application/json"),
                "{what}: {reply:?}"
            );
            let body = reply.json();
            assert_eq!(body["error"]["code"], code, "{what}: {body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(!message.is_empty(), "{what}: no message in {body}");
        }
        Expect::Parser(status) | Expect::ParserOrClosed(status) => {
            assert_eq!(reply.status, Some(status), "{what}: {reply:?}");
            assert!(reply.body.is_empty(), "{what}: {reply:?}");
            assert_eq!(
                reply.header("connection"),
                Some("close"),
                "{what}: {reply:?}"
            );
        }
        Expect::Refused => {
            let status = reply.status.unwrap_or(0);
            assert!((400..500).contains(&status), "{what}: {reply:?}");
        }
        Expect::Served => {
            let status = reply.status.unwrap_or(0);
            assert!((200..300).contains(&status), "{what}: {reply:?}");
        }
    }
}

fn ids_of(reply: &HttpReply) -> Vec<u64> {
    reply.json()["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {reply:?}"))
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect()
}

/// IDs seen so far in one test, and the last `INCR hostile`: both must only grow.
#[derive(Default)]
struct Seen {
    ids: HashSet<u64>,
    last_incr: i64,
}

impl Seen {
    /// Adds a run of snowflakes: strictly increasing, none seen before.
    fn add(&mut self, ids: &[u64], what: &str) {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{what}: IDs not increasing"
        );
        for &id in ids {
            assert!(
                i64::try_from(id).is_ok_and(|id| id > 0),
                "{what}: ID {id} is not a positive i64"
            );
            assert!(self.ids.insert(id), "{what}: ID {id} issued twice");
        }
    }
}

/// A fresh connection on each protocol still gets IDs: 5 snowflakes over HTTP, `PING` and
/// `INCR hostile` over RESP.
fn assert_serving(node: &Node, seen: &mut Seen, after: &str) {
    let reply = HttpReply::parse(&send_and_read_to_close(
        node.http,
        get("/v1/snowflake?count=5"),
    ));
    assert_eq!(
        reply.status,
        Some(200),
        "after {after}: HTTP no longer serves: {reply:?}"
    );
    let ids = ids_of(&reply);
    assert_eq!(ids.len(), 5);
    seen.add(&ids, after);

    let mut resp = connect(node.resp);
    resp.write_all(b"PING\r\nINCR hostile\r\n").unwrap();
    let replies = read_lines(&mut resp, 2);
    let (pong, incr) = replies.split_once("\r\n").unwrap();
    assert_eq!(pong, "+PONG", "after {after}: RESP no longer serves");
    let next: i64 = incr
        .trim_end()
        .strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("after {after}: INCR answered {incr:?}"));
    assert!(
        next > seen.last_incr,
        "after {after}: INCR went from {} to {next}",
        seen.last_incr
    );
    seen.last_incr = next;
}

// ----------------------------------------------------------------------------------------------
// HTTP: bad parameters reach the routes and get idmint's JSON errors

#[test]
fn http_bad_parameters_get_json_errors() {
    let node = Node::start("hostile-http-params");
    let mut seen = Seen::default();
    assert_serving(&node, &mut seen, "start");
    let mut cases: Vec<(&str, String, Expect)> = Vec::new();
    let mut add = |method: &'static str, targets: &[&str], expect: Expect| {
        cases.extend(targets.iter().map(|t| (method, t.to_string(), expect)));
    };
    add(
        "GET",
        &[
            "/v1/snowflake?count=0",
            "/v1/snowflake?count=-1",
            "/v1/snowflake?count=10001",
            "/v1/snowflake?count=1e3",
            "/v1/snowflake?count=",
            "/v1/snowflake?count",
            "/v1/snowflake?count=abc",
            "/v1/snowflake?count=0x10",
            "/v1/snowflake?count=+5",
            "/v1/snowflake?count=%205",
            "/v1/snowflake?count=1%00",
            "/v1/snowflake?count=99999999999999999999",
            "/v1/snowflake?count=18446744073709551615",
            "/v1/snowflake?count=18446744073709551616",
            "/v1/snowflake?count=%31%30%30%30%31",
            "/v1/snowflake?count=1&count=2",
            "/v1/segment/hostile?count=0",
            "/v1/segment/hostile?count=10001",
            "/v1/segment/hostile?count=-3",
        ],
        Expect::Json(400, "invalid_count"),
    );
    // The default layout has no shard field.
    add(
        "GET",
        &[
            "/v1/snowflake?shard=1",
            "/v1/snowflake?shard=-1",
            "/v1/snowflake?shard=99999999999999999999",
        ],
        Expect::Json(400, "invalid_shard"),
    );
    add(
        "GET",
        &["/v1/snowflake?count=%FF", "/v1/snowflake?unused=%FF%FE"],
        Expect::Json(400, "invalid_query"),
    );
    // Tags: not UTF-8 once decoded, too long, NUL, CRLF, other control characters, a space
    // at either end. (Any other text is a tag: spaces, slashes, non-ASCII, quotes; see
    // text_tags.rs.)
    let tag_129 = format!("/v1/segment/{}", "t".repeat(129));
    let leaf_200 = format!("/api/segment/get/{}", "t".repeat(200));
    add(
        "GET",
        &[
            "/v1/segment/%FF",
            "/v1/segment/%C0%AF",
            &tag_129,
            &leaf_200,
            "/v1/segment/a%00b",
            "/v1/segment/%00",
            "/v1/segment/a%0D%0Ab",
            "/v1/segment/a%09b",
            "/v1/segment/a%7F",
            "/v1/segment/%20a",
            "/v1/segment/a%20",
            "/api/segment/get/%00",
        ],
        Expect::Json(400, "invalid_tag"),
    );
    add(
        "POST",
        &["/v1/segment/a%0Ab/lease?size=1"],
        Expect::Json(400, "invalid_tag"),
    );
    add(
        "POST",
        &[
            "/v1/segment/hostile/lease",
            "/v1/segment/hostile/lease?size=0",
            "/v1/segment/hostile/lease?size=1000001",
            "/v1/segment/hostile/lease?size=99999999999999999999",
        ],
        Expect::Json(400, "invalid_size"),
    );
    add(
        "GET",
        &[
            "/v1/decode/-1",
            "/v1/decode/abc",
            "/v1/decode/99999999999999999999",
            "/v1/decode/18446744073709551615",
            "/v1/decode/9223372036854775808",
            "/decodeSnowflakeId",
            "/decodeSnowflakeId?snowflakeId=x",
        ],
        Expect::Json(400, "invalid_id"),
    );
    add(
        "GET",
        &["/v1/segment/a/b", "/nope", "*"],
        Expect::Json(404, "not_found"),
    );
    for method in ["DELETE", "get", "BREW"] {
        add(
            method,
            &["/v1/snowflake"],
            Expect::Json(405, "method_not_allowed"),
        );
    }
    add(
        "GET",
        &["/v1/segment/hostile/lease?size=1"],
        Expect::Json(405, "method_not_allowed"),
    );
    // Accepted edge cases: the limits themselves, an absolute-form target.
    let tag_128 = format!("/v1/segment/{}?count=2", "t".repeat(128));
    add(
        "GET",
        &[
            "/v1/snowflake?count=10000",
            "/v1/segment/hostile?count=10000",
            "http://elsewhere/v1/snowflake?count=2",
            &tag_128,
        ],
        Expect::Served,
    );
    for (method, target, expect) in cases {
        let what = format!("{method} {target}");
        let bytes = request(method, target.as_bytes(), b"", b"");
        let reply = HttpReply::parse(&send_and_read_to_close(node.http, bytes));
        check_http(&reply, expect, &what);
        if matches!(expect, Expect::Served) && target.contains("snowflake") {
            let ids = ids_of(&reply);
            assert!(!ids.is_empty(), "{what}");
            seen.add(&ids, &what);
        }
        assert_serving(&node, &mut seen, &what);
    }
    eprintln!("{} snowflakes checked unique", seen.ids.len());
    node.stop();
}

// ----------------------------------------------------------------------------------------------
// HTTP: requests the parser refuses, and bytes that are not HTTP at all

/// `GET target` as raw bytes.
fn get_raw(target: &[u8]) -> Vec<u8> {
    request("GET", target, b"", b"")
}

/// `GET /v1/snowflake` with more `headers`.
fn get_with(headers: &[u8]) -> Vec<u8> {
    request("GET", b"/v1/snowflake", headers, b"")
}

#[test]
fn http_malformed_requests_are_refused() {
    let node = Node::start("hostile-http-malformed");
    let mut seen = Seen::default();
    #[rustfmt::skip]
    let refused_by_the_parser = [
        // Bytes that are not allowed in a URI, UTF-8 or not.
        ("raw 0xFF in the path", get_raw(b"/v1/segment/a\xffb")),
        ("raw 0xFF in the query", get_raw(b"/v1/snowflake?count=\xff")),
        ("raw 0xFE 0xFF, unused", get_raw(b"/v1/snowflake?x=\xfe\xff")),
        ("raw NUL in the path", get_raw(b"/v1/snow\x00flake")),
        ("raw space in the target", get_raw(b"/v1/segment/a b")),
        ("raw CR in the target", get_raw(b"/v1/segment/a\rb")),
        // Request lines that are not HTTP/1.x.
        ("garbage", b"GARBAGE\r\n\r\n".to_vec()),
        ("binary garbage", b"\x00\x01\x02\x03\xff\xfe\xfd\r\n\r\n".to_vec()),
        ("HTTP/0.9", b"GET /v1/snowflake\r\n\r\n".to_vec()),
        ("HTTP/0.9, one line", b"GET /v1/snowflake\r\n".to_vec()),
        ("HTTP/9.9", b"GET /v1/snowflake HTTP/9.9\r\nHost: x\r\n\r\n".to_vec()),
        ("double spaces", b"GET  /v1/snowflake  HTTP/1.1\r\n\r\n".to_vec()),
        ("a bare method", b"GET\r\n\r\n".to_vec()),
        ("a TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec()),
        // Headers the parser cannot accept.
        ("a header without a colon", get_with(b"Bad Header\r\n")),
        ("a folded header", get_with(b"X-A: a\r\n  folded\r\n")),
        ("a NUL in a header value", get_with(b"X-A: a\x00b\r\n")),
        ("Content-Length: abc", get_with(b"Content-Length: abc\r\n")),
        ("Content-Length: -1", get_with(b"Content-Length: -1\r\n")),
        ("Content-Length over u64", get_with(b"Content-Length: 99999999999999999999\r\n")),
        ("two Content-Lengths", get_with(b"Content-Length: 1\r\nContent-Length: 2\r\n")),
        ("Transfer-Encoding: gzip", get_with(b"Transfer-Encoding: gzip\r\n")),
    ];
    let cases = refused_by_the_parser
        .into_iter()
        .map(|(what, bytes)| (what, bytes, Expect::Parser(400)))
        .chain([
            // HTTP/2 is not served: refused or closed.
            (
                "an HTTP/2 preface",
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
                Expect::Refused,
            ),
            // Accepted: header values that are not UTF-8 (no route reads them).
            (
                "non-UTF-8 header values",
                get_with(b"X-A: \xff\xfe\r\nUser-Agent: \xc0\r\n"),
                Expect::Served,
            ),
        ]);
    for (what, bytes, expect) in cases {
        let reply = HttpReply::parse(&send_and_read_to_close(node.http, bytes));
        check_http(&reply, expect, what);
        assert_serving(&node, &mut seen, what);
    }
    node.stop();
}

// ----------------------------------------------------------------------------------------------
// HTTP: oversized bodies, headers and targets; memory stays bounded

#[test]
fn http_oversized_input_is_refused_with_bounded_memory() {
    let node = Node::start("hostile-http-oversized");
    let mut seen = Seen::default();
    assert_serving(&node, &mut seen, "start");
    let mib = 1024 * 1024;
    let put =
        |headers: &str, body: &[u8]| request("PUT", b"/v1/tags/big", headers.as_bytes(), body);
    let chunked = "Transfer-Encoding: chunked\r\n";
    let json_70k = [&b"{\"description\":\""[..], &vec![b'd'; 70_000], b"\"}"].concat();
    let chunk_32k = [&b"8000\r\n"[..], &vec![b' '; 0x8000], b"\r\n"].concat();
    let chunked_2mib = [chunk_32k.repeat(64), b"0\r\n\r\n".to_vec()].concat();
    let headers = |n: usize| -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("X-H{i}: v\r\n").into_bytes())
            .collect()
    };
    let big_header = [&b"X-Big: "[..], &vec![b'a'; mib], b"\r\n"].concat();
    let target = |len: usize| [&b"/v1/snowflake?pad="[..], &vec![b'a'; len]].concat();
    let json_70k_length = format!("Content-Length: {}\r\n", json_70k.len());
    let get_100mb = [
        get_with(b"Content-Length: 100000000\r\n"),
        vec![b'a'; 4 * mib],
    ]
    .concat();
    let too_large = Expect::JsonOrClosed(413, "payload_too_large");
    let head_too_large = Expect::ParserOrClosed(431);
    let bad_body = Expect::Json(400, "invalid_body");
    #[rustfmt::skip]
    let cases = [
        // Bodies over the 64 KiB limit: sent with their length, announced only, chunked.
        ("a 70 KB JSON body", put(&json_70k_length, &json_70k), too_large),
        // Nothing to reset the connection: the 413 always arrives.
        ("Content-Length 100 TB, 1 byte sent", put("Content-Length: 100000000000000\r\n", b"{"),
            Expect::Json(413, "payload_too_large")),
        ("Content-Length 100 MB on a GET, 4 MiB sent", get_100mb, too_large),
        ("a 2 MiB chunked body", put(chunked, &chunked_2mib), too_large),
        ("a chunk size over u64", put(chunked, b"FFFFFFFFFFFFFFFFFFFFFF\r\n"), bad_body),
        ("a chunk size that is not hex", put(chunked, b"zz\r\nabc\r\n0\r\n\r\n"), bad_body),
        ("a body that is not JSON", put("Content-Length: 4\r\n", b"\xff\xfe\xfd\xfc"),
            Expect::Json(400, "invalid_json")),
        // Heads over 64 KiB or with more than 100 headers; targets over 64 KiB.
        ("a 1 MiB header", get_with(&big_header), head_too_large),
        ("10,000 headers", get_with(&headers(10_000)), head_too_large),
        ("102 headers", get_with(&headers(100)), head_too_large),
        ("a 100 KB target", get_raw(&target(100_000)), head_too_large),
        ("a 1 MiB target", get_raw(&target(mib)), head_too_large),
        ("1 MiB of blank lines", b"\r\n".repeat(mib / 2), head_too_large),
    ];
    let before = node.rss_kib();
    // Each input several times, so that a leak would show.
    for round in 0..4 {
        for (what, bytes, expect) in &cases {
            let reply = HttpReply::parse(&send_and_read_to_close(node.http, bytes.clone()));
            check_http(&reply, *expect, what);
            if round == 0 {
                eprintln!("{what}: {:?}", reply.status);
            }
        }
        assert_serving(&node, &mut seen, "oversized input");
    }
    // Huge but allowed counts: 20 requests of 10,000 IDs each.
    for _ in 0..20 {
        let bytes = get_raw(b"/v1/snowflake?count=10000");
        let ids = ids_of(&HttpReply::parse(&send_and_read_to_close(node.http, bytes)));
        assert_eq!(ids.len(), 10_000);
        seen.add(&ids, "count=10000");
    }
    assert_rss_bounded(&node, before, "across oversized HTTP input");
    assert_serving(&node, &mut seen, "oversized input");
    eprintln!("{} snowflakes checked unique", seen.ids.len());
    node.stop();
}

// ----------------------------------------------------------------------------------------------
// RESP: malformed frames, bad commands and arguments

/// What the server must answer to one hostile RESP request.
#[derive(Debug, Clone, Copy)]
enum RespExpect {
    /// `-ERR Protocol error: ...` starting with this text, then the connection is closed.
    ProtocolError(&'static str),
    /// An error reply starting with this text; the connection stays usable.
    Error(&'static str),
    /// Closed without a reply.
    Closed,
}

fn check_resp(node: &Node, request: &[u8], expect: RespExpect, what: &str) {
    match expect {
        RespExpect::ProtocolError(text) => {
            let reply = send_and_read_to_close(node.resp, request.to_vec());
            let reply = String::from_utf8_lossy(&reply);
            let expected = format!("-ERR Protocol error: {text}");
            assert!(
                reply.starts_with(&expected),
                "{what}: expected {expected:?}, got {reply:?}"
            );
            assert_eq!(
                reply.matches("\r\n").count(),
                1,
                "{what}: one line, then close: {reply:?}"
            );
        }
        RespExpect::Error(text) => {
            let mut stream = connect(node.resp);
            stream.write_all(request).unwrap();
            let reply = read_lines(&mut stream, 1);
            assert!(
                reply.starts_with(text) && reply.ends_with("\r\n"),
                "{what}: expected {text:?}, got {reply:?}"
            );
            assert_eq!(reply.matches("\r\n").count(), 1, "{what}: {reply:?}");
            // The same connection still works.
            stream.write_all(b"PING\r\n").unwrap();
            assert_eq!(read_lines(&mut stream, 1), "+PONG\r\n", "{what}");
        }
        RespExpect::Closed => {
            let reply = send_and_read_to_close(node.resp, request.to_vec());
            assert!(
                reply.is_empty(),
                "{what}: {:?}",
                String::from_utf8_lossy(&reply)
            );
        }
    }
}

/// A RESP array of bulk strings.
fn array(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[test]
fn resp_bad_frames_and_commands_are_refused() {
    let node = Node::start("hostile-resp");
    let mut seen = Seen::default();
    assert_serving(&node, &mut seen, "start");
    // Refused by the codec: `-ERR Protocol error: <text>...`, then the connection is closed.
    #[rustfmt::skip]
    let protocol_errors: &[(&[u8], &str)] = &[
        // Bad lengths.
        (b"*-5\r\n", "invalid multibulk length -5: negative"),
        (b"*-1\r\n", "null multibulk"),
        (b"*0\r\n", "empty multibulk request"),
        (b"*abc\r\n", "invalid multibulk length"),
        (b"*01\r\n$4\r\nPING\r\n", "invalid multibulk length"),
        (b"*99999999999999999999\r\n", "invalid multibulk length"),
        (b"*1\r\n$-2\r\n", "invalid bulk length -2: negative"),
        (b"*1\r\n$-1\r\n", "null bulk"),
        (b"*1\r\n$x\r\n", "invalid bulk length"),
        (b"*1\r\n$99999999999999999999\r\n", "invalid bulk length"),
        // Announced sizes far over the limits: refused from the header.
        (b"*2\r\n$4\r\nECHO\r\n$1073741824\r\n", "bulk length 1073741824 exceeds the limit"),
        (b"*1000000000\r\n", "multibulk length 1000000000 exceeds the limit"),
        (b"*2147483648\r\n", "multibulk length 2147483648 exceeds the limit"),
        // Other types, nesting, line endings.
        (b"*1\r\n+PING\r\n", "expected '$', got '+'"),
        (b"*1\r\n:1\r\n", "expected '$', got ':'"),
        (b"*2\r\n*1\r\n$4\r\nPING\r\n", "nested arrays are not allowed"),
        (b"*1\n$4\nPING\n", "invalid multibulk length"),
        (b"*1\r\n$4\r\nPINGxx", "expected CRLF after the bulk string data"),
        (b"*1\rx", "expected CRLF after the length header"),
        // Inline commands.
        (b"INCR \"abc\r\n", "unbalanced quotes"),
        (b"INCR 'abc\r\n", "unbalanced quotes"),
        (b"INCR \"a\"b\r\n", "unbalanced quotes"),
    ];
    let arg_64k = vec![b'x'; 64 * 1024];
    let arg_40k = vec![b'x'; 40 * 1024];
    let over_1mib: Vec<&[u8]> = std::iter::once(&b"ECHO"[..])
        .chain(std::iter::repeat_n(arg_64k.as_slice(), 17))
        .collect();
    let gb_bulk = [&b"*1\r\n$1073741824\r\n"[..], &vec![b'x'; 4 << 20]].concat();
    let inline_70k = vec![b'A'; 70_000];
    let inline_args = [&b"PING"[..], &b" a".repeat(2000), b"\r\n"].concat();
    let too_big_inline = "too big inline request";
    #[rustfmt::skip]
    let big_protocol_errors = [
        ("a 1 GB bulk, then 4 MiB of it", gb_bulk, "bulk length 1073741824 exceeds the limit"),
        ("a request over 1 MiB", array(&over_1mib), "request larger than the limit"),
        ("a request over 64 KiB", array(&[b"ECHO", &arg_40k, &arg_40k]), "request larger than the limit"),
        ("*1 nested 100,000 times", b"*1\r\n".repeat(100_000), "nested arrays are not allowed"),
        ("a 70 KB inline line", [inline_70k.as_slice(), b"\r\n"].concat(), too_big_inline),
        ("a 70 KB inline line, no newline", inline_70k, too_big_inline),
        ("80 KB of blank lines", b"\r\n".repeat(40_000), too_big_inline),
        ("2,000 inline arguments", inline_args, "too many arguments"),
    ];
    // Refused by the command: an error reply starting with <text>; the connection stays.
    let tag_129 = format!("INCR {}\r\n", "t".repeat(129));
    #[rustfmt::skip]
    let command_errors: &[(&[u8], &str)] = &[
        // Unknown commands, binary garbage.
        (b"FOO bar\r\n", "-ERR unknown command 'FOO'"),
        (b"SET a b\r\n", "-ERR unknown command 'SET'"),
        (b"*1\r\n$0\r\n\r\n", "-ERR unknown command ''"),
        (b"$1073741824\r\n", "-ERR unknown command '$1073741824'"),
        (b"\x00\x01\x02\xff\xfe\r\n", r"-ERR unknown command '\x00\x01\x02\xff\xfe'"),
        (&[0xff; 1000], "-ERR unknown command"),
        // Wrong arities.
        (b"INCR\r\n", "-ERR wrong number of arguments for 'incr' command"),
        (b"INCR a b\r\n", "-ERR wrong number of arguments for 'incr' command"),
        (b"INCRBY t\r\n", "-ERR wrong number of arguments for 'incrby' command"),
        (b"IDMINT.NEXT\r\n", "-ERR wrong number of arguments for 'idmint.next' command"),
        (b"IDMINT.DECODE\r\n", "-ERR wrong number of arguments for 'idmint.decode' command"),
        (b"ECHO\r\n", "-ERR wrong number of arguments for 'echo' command"),
        // Bad numbers for INCRBY, COUNT, SHARD and IDMINT.DECODE.
        (b"INCRBY t x\r\n", "-ERR value is not an integer or out of range"),
        (b"INCRBY t 1.5\r\n", "-ERR value is not an integer or out of range"),
        (b"INCRBY t 99999999999999999999\r\n", "-ERR value is not an integer or out of range"),
        (b"INCRBY t 0\r\n", "-ERR increment must be between 1 and 10000, got 0"),
        (b"INCRBY t -1\r\n", "-ERR increment must be between 1 and 10000, got -1"),
        (b"INCRBY t 10001\r\n", "-ERR increment must be between 1 and 10000, got 10001"),
        (b"IDMINT.SNOWFLAKE COUNT 0\r\n", "-ERR COUNT must be between 1 and 10000, got 0"),
        (b"IDMINT.SNOWFLAKE COUNT -1\r\n", "-ERR COUNT must be between 1 and 10000, got -1"),
        (b"IDMINT.SNOWFLAKE COUNT 10001\r\n", "-ERR COUNT must be between 1 and 10000, got 10001"),
        (b"IDMINT.SNOWFLAKE COUNT x\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.SNOWFLAKE COUNT \"\"\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.SNOWFLAKE COUNT\r\n", "-ERR syntax error"),
        (b"IDMINT.SNOWFLAKE FOO 1\r\n", "-ERR syntax error"),
        (b"IDMINT.SNOWFLAKE SHARD -1\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.SNOWFLAKE SHARD x\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.SNOWFLAKE SHARD 1\r\n", "-ERR invalid argument `shard`"),
        (b"IDMINT.NEXT t COUNT 0\r\n", "-ERR COUNT must be between 1 and 10000, got 0"),
        (b"IDMINT.NEXT t COUNT\r\n", "-ERR syntax error"),
        (b"IDMINT.DECODE x\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.DECODE 99999999999999999999\r\n", "-ERR value is not an integer or out of range"),
        (b"IDMINT.DECODE 18446744073709551615\r\n", "-ERR invalid argument `id`"),
        // Bad tags: too long, a space at an end, NUL, 0xFF (not UTF-8), CRLF (shown escaped),
        // empty, DEL, a tab.
        (tag_129.as_bytes(), "-ERR invalid tag"),
        (b"INCR \" a\"\r\n", "-ERR invalid tag ` a`"),
        (b"INCR \"a\\x00b\"\r\n", "-ERR invalid tag"),
        (b"INCR \"\\xff\"\r\n", "-ERR invalid tag"),
        (b"*2\r\n$4\r\nINCR\r\n$4\r\na\r\nb\r\n", "-ERR invalid tag `a\\r\\nb`"),
        (b"*2\r\n$4\r\nINCR\r\n$0\r\n\r\n", "-ERR invalid tag ``"),
        (b"IDMINT.NEXT \"x\\x7f\"\r\n", "-ERR invalid tag"),
        (b"INCRBY \"a\\tb\" 5\r\n", "-ERR invalid tag"),
    ];
    let before = node.rss_kib();
    let protocol = protocol_errors.iter().map(|&(bytes, text)| {
        (
            String::from_utf8_lossy(bytes).into_owned(),
            bytes.to_vec(),
            RespExpect::ProtocolError(text),
        )
    });
    let big = big_protocol_errors
        .into_iter()
        .map(|(what, bytes, text)| (what.to_owned(), bytes, RespExpect::ProtocolError(text)));
    let command = command_errors.iter().map(|&(bytes, text)| {
        // A line of 0xFF bytes needs its line ending.
        let bytes = if bytes.ends_with(b"\n") {
            bytes.to_vec()
        } else {
            [bytes, b"\r\n"].concat()
        };
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            bytes,
            RespExpect::Error(text),
        )
    });
    // HTTP on the Redis port is closed unanswered, as Redis does.
    let http = std::iter::once((
        "an HTTP POST".to_owned(),
        b"POST / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        RespExpect::Closed,
    ));
    for (what, bytes, expect) in protocol.chain(big).chain(command).chain(http) {
        check_resp(&node, &bytes, expect, &what);
        assert_serving(&node, &mut seen, &what);
    }
    assert_rss_bounded(&node, before, "across malformed RESP input");

    // Commands before a bad frame are answered first; nothing after it.
    let reply = send_and_read_to_close(node.resp, b"PING\r\n*-5\r\nPING\r\n".to_vec());
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "+PONG\r\n-ERR Protocol error: invalid multibulk length -5: negative\r\n"
    );
    node.stop();
}

/// 100 clients each stalled in the middle of a 60 KiB request, and 100 each stalled near the
/// end of a 970 KB one: the first are held (at most 64 KiB each) and answered once they
/// finish; the second are refused at the first header past the server's 64 KiB request limit,
/// instead of holding a megabyte each. Memory stays bounded, others are served.
#[test]
fn resp_many_partial_requests_hold_bounded_memory() {
    let node = Node::start("hostile-resp-partial");
    let mut seen = Seen::default();
    assert_serving(&node, &mut seen, "start");
    let before = node.rss_kib();
    let under_limit = [&b"*2\r\n$4\r\nECHO\r\n$61440\r\n"[..], &[b'p'; 61_439]].concat();
    let mut stalled = Vec::new();
    for _ in 0..100 {
        let mut stream = connect(node.resp);
        stream.write_all(&under_limit).unwrap();
        stalled.push(stream);
    }
    // 16 elements: ECHO and 15 arguments of 65,000 bytes, the last one 5,000 bytes short.
    let mut near_mib = b"*16\r\n$4\r\nECHO\r\n".to_vec();
    for _ in 0..15 {
        near_mib.extend_from_slice(b"$65000\r\n");
        near_mib.extend_from_slice(&[b'q'; 65_000]);
        near_mib.extend_from_slice(b"\r\n");
    }
    near_mib.truncate(near_mib.len() - 5_002);
    let mut refused = Vec::new();
    for _ in 0..100 {
        let stream = connect(node.resp);
        let mut writer = stream.try_clone().unwrap();
        let request = near_mib.clone();
        let sending = thread::spawn(move || {
            let _ = writer.write_all(&request);
        });
        refused.push((stream, sending));
    }
    for (mut stream, sending) in refused {
        let reply = String::from_utf8_lossy(&read_to_close(&mut stream)).into_owned();
        assert_eq!(
            reply,
            "-ERR Protocol error: request larger than the limit of 65536 bytes\r\n"
        );
        let _ = sending.join();
    }
    assert_rss_bounded(
        &node,
        before,
        "with 100 requests stalled at 60 KiB, 100 at 970 KB",
    );
    assert_serving(&node, &mut seen, "partial requests");
    // The stalled ones complete and are answered.
    for stream in &mut stalled {
        stream.write_all(b"p\r\n").unwrap();
        let reply = read_lines(stream, 2);
        assert!(reply.starts_with("$61440\r\nppp"), "{:?}", &reply[..20]);
    }
    node.stop();
}

/// 50 pipelined `IDMINT.SNOWFLAKE COUNT 10000` sent without reading the replies: the server
/// stops when the socket is full instead of buffering 10 MB of replies, then delivers 500,000
/// unique increasing IDs once the client reads.
#[test]
fn resp_huge_pipelined_counts_are_bounded_and_unique() {
    let node = Node::start("hostile-resp-counts");
    let mut seen = Seen::default();
    let before = node.rss_kib();
    let mut stream = connect(node.resp);
    let mut writer = stream.try_clone().unwrap();
    let requests = 50;
    let sending = thread::spawn(move || {
        writer
            .write_all(&b"IDMINT.SNOWFLAKE COUNT 10000\r\n".repeat(requests))
            .unwrap();
    });
    thread::sleep(Duration::from_secs(1));
    assert_rss_bounded(&node, before, "with 50 x 10,000 IDs pipelined, unread");
    let mut reader = BufReader::new(&mut stream);
    let mut line = String::new();
    for _ in 0..requests {
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "*10000\r\n");
        let mut ids = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            line.clear();
            reader.read_line(&mut line).unwrap();
            ids.push(line.trim_end().strip_prefix(':').unwrap().parse().unwrap());
        }
        seen.add(&ids, "COUNT 10000");
    }
    sending.join().unwrap();
    assert_eq!(seen.ids.len(), 500_000);
    assert_serving(&node, &mut seen, "huge pipelined counts");
    node.stop();
}

// ----------------------------------------------------------------------------------------------
// Slow clients

/// One slow client: its socket, the bytes it still has to trickle, and when the server closed
/// it.
struct Slow {
    stream: TcpStream,
    what: &'static str,
    trickle: Vec<u8>,
    closed_after: Option<Duration>,
}

impl Slow {
    /// Connects and sends the first `sent` bytes of `request` at once; the rest trickles.
    fn open(addr: SocketAddr, what: &'static str, request: &[u8], sent: usize) -> Self {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(&request[..sent]).unwrap();
        stream.set_nonblocking(true).unwrap();
        Self {
            stream,
            what,
            trickle: request[sent..].iter().rev().copied().collect(),
            closed_after: None,
        }
    }

    /// Sends one more byte, if any is left and the connection is open.
    fn trickle_one(&mut self) {
        if self.closed_after.is_some() {
            return;
        }
        if let Some(&byte) = self.trickle.last() {
            match self.stream.write(&[byte]) {
                Ok(1) => {
                    self.trickle.pop();
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => {} // the close shows in `poll_closed`
            }
        }
    }

    /// Notes whether the server has closed the connection (anything it sent first, such as a
    /// 408 or a `-ERR`, is read and dropped).
    fn poll_closed(&mut self, since: Instant) {
        if self.closed_after.is_some() {
            return;
        }
        let mut buf = [0u8; 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        self.closed_after = Some(since.elapsed());
    }
}

/// 250 slow HTTP clients (a request line, headers or blank lines trickled a byte at a time,
/// silent connections) and 200 RESP ones (a request trickled, idle connections): other clients are
/// answered all along; the server closes every slow HTTP connection and every partial RESP
/// request after its read timeout, and keeps idle RESP connections, which still answer.
#[test]
fn slow_and_silent_clients_do_not_hold_the_server() {
    let node = Node::start("hostile-slowloris");
    let mut seen = Seen::default();
    assert_serving(&node, &mut seen, "start");
    let before = node.rss_kib();
    let started = Instant::now();
    let line = b"GET /v1/snowflake?count=1 HTTP/1.1\r\nHost: slow\r\n";
    let endless_header = [line.as_slice(), b"X-Slow: ", &[b'a'; 1000]].concat();
    let partial_resp = [b"*2\r\n$4\r\nINCR\r\n$1000\r\n".as_slice(), &[b'a'; 1000]].concat();
    let mut http_slow = Vec::new();
    let mut resp_slow = Vec::new();
    let mut resp_idle = Vec::new();
    for i in 0..100 {
        let what = "HTTP request line trickled";
        http_slow.push(Slow::open(node.http, what, &endless_header, 5 + i % 10));
        let what = "RESP request trickled";
        resp_slow.push(Slow::open(node.resp, what, &partial_resp, 3 + i % 10));
    }
    for i in 0..50 {
        let what = "HTTP blank lines trickled";
        http_slow.push(Slow::open(
            node.http,
            what,
            &b"\r\n".repeat(500),
            2 + i % 10,
        ));
    }
    for i in 0..50 {
        let what = "HTTP headers trickled";
        http_slow.push(Slow::open(
            node.http,
            what,
            &endless_header,
            line.len() + i % 5,
        ));
        http_slow.push(Slow::open(node.http, "HTTP silent", b"", 0));
    }
    for _ in 0..50 {
        // Never a byte: closed after the auth timeout (5 s), so they cannot lock clients out.
        resp_slow.push(Slow::open(node.resp, "RESP silent", b"", 0));
    }
    for _ in 0..100 {
        // A client that said something, then waits: kept, as Redis keeps it.
        resp_idle.push(Slow::open(node.resp, "RESP idle", b"PING\r\n", 6));
    }
    let opened = node.rss_kib();
    eprintln!(
        "500 slow connections opened in {:?}; RSS {before} KiB before, {opened} KiB with them",
        started.elapsed()
    );

    // Trickle a byte per connection every 250 ms; meanwhile other clients must be served.
    let mut longest_answer = Duration::ZERO;
    loop {
        for slow in http_slow.iter_mut().chain(resp_slow.iter_mut()) {
            slow.trickle_one();
            slow.poll_closed(started);
        }
        let asked = Instant::now();
        assert_serving(&node, &mut seen, "slow clients");
        longest_answer = longest_answer.max(asked.elapsed());
        let open = http_slow
            .iter()
            .chain(&resp_slow)
            .filter(|s| s.closed_after.is_none())
            .count();
        if open == 0 || started.elapsed() > PARTIAL_CLOSED_WITHIN {
            break;
        }
        thread::sleep(Duration::from_millis(250));
    }
    eprintln!("longest answer to a normal client among slow ones: {longest_answer:?}");
    for slow in http_slow.iter().chain(&resp_slow) {
        assert!(
            slow.closed_after.is_some(),
            "{}: still open after {:?}; the server never times a started request out",
            slow.what,
            started.elapsed()
        );
    }
    let latest = |what: &str| {
        http_slow
            .iter()
            .chain(&resp_slow)
            .filter(|s| s.what == what)
            .filter_map(|s| s.closed_after)
            .max()
    };
    for what in [
        "HTTP request line trickled",
        "HTTP headers trickled",
        "HTTP blank lines trickled",
        "HTTP silent",
        "RESP request trickled",
        "RESP silent",
    ] {
        eprintln!("{what}: all closed by {:?}", latest(what));
    }

    // Idle RESP connections are kept, as Redis keeps them, and still answer.
    for idle in &mut resp_idle {
        idle.poll_closed(started);
        assert!(
            idle.closed_after.is_none(),
            "an idle RESP connection was closed"
        );
    }
    for idle in resp_idle.iter_mut().take(10) {
        idle.stream.set_nonblocking(false).unwrap();
        idle.stream.set_read_timeout(Some(ANSWER_WITHIN)).unwrap();
        idle.stream.write_all(b"PING\r\n").unwrap();
        assert_eq!(read_lines(&mut idle.stream, 1), "+PONG\r\n");
    }
    drop(resp_idle);
    assert_rss_bounded(&node, before, "with 500 slow connections");
    assert_serving(&node, &mut seen, "slow clients");
    node.stop();
}

/// A number the node cannot read states the range it accepts: this node's `--max-count` and
/// `--max-lease-size`, the layout's shards and IDs (issue 27: `count=abc` said
/// `0..=18446744073709551615`, `u64`'s range, whatever the node takes).
#[tokio::test]
async fn http_number_refusals_state_the_accepted_range() {
    let store = common::sqlite_url("hostile-ranges");
    let layout = "time:41@1ms,shard:4,worker:6,seq:12";
    let server = common::Server::start_with(
        &store,
        "ranges",
        &[
            "--layout",
            layout,
            "--max-count",
            "500",
            "--max-lease-size",
            "700",
        ],
    );
    let client = reqwest::Client::new();
    let cases = [
        (
            "GET",
            "/v1/snowflake?count=abc",
            "invalid_count",
            "in 1..=500, got `abc`",
        ),
        (
            "GET",
            "/v1/snowflake?count=99999999999999999999",
            "invalid_count",
            "in 1..=500,",
        ),
        (
            "GET",
            "/v1/snowflake?count=501",
            "invalid_count",
            "in 1..=500, got 501",
        ),
        (
            "GET",
            "/v1/segment/t?count=-1",
            "invalid_count",
            "in 1..=500, got `-1`",
        ),
        (
            "GET",
            "/v1/snowflake?shard=x",
            "invalid_shard",
            "in 0..=15, got `x`",
        ),
        (
            "POST",
            "/v1/segment/t/lease?size=x",
            "invalid_size",
            "in 1..=700, got `x`",
        ),
        (
            "POST",
            "/v1/segment/t/lease?size=701",
            "invalid_size",
            "in 1..=700, got 701",
        ),
        (
            "GET",
            "/v1/snowflake?format=base62&width=x",
            "invalid_format",
            "in 0..=32, got `x`",
        ),
        (
            "GET",
            "/v1/decode/abc",
            "invalid_id",
            "in 0..=9223372036854775807, got `abc`",
        ),
        (
            "GET",
            "/decodeSnowflakeId?snowflakeId=x",
            "invalid_id",
            "in 0..=9223372036854775807, got `x`",
        ),
    ];
    for (method, target, code, says) in cases {
        let url = format!("{}{target}", server.http);
        let request = match method {
            "POST" => client.post(&url),
            _ => client.get(&url),
        };
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 400, "{target}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{target}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{target}: {message}");
        assert!(
            !message.contains("18446744073709551615"),
            "{target}: {message}"
        );
    }
    server.stop();
}
