//! The security suite: a real `idmint serve` probed as a hostile client and an operator would
//! (SECURITY.md's figures come from here; run with `--nocapture` to see them):
//!
//! - scoped tokens on both front ends, from a tokens file (clear and hashed) and a token
//!   file, reloaded on SIGHUP; nothing but health checks without one;
//! - silent connections filling the server: closed after the auth timeout, so real clients
//!   get in again; the per-address cap; refusals counted, their log bounded;
//! - token guessing: slowed, three tries per connection, its log bounded;
//! - a flood of new tags: stopped at `--max-tags`, metric series, `INFO`, memory and the
//!   shutdown bounded;
//! - settings files with secrets: errors never print them;
//! - TLS on both listeners, with real clients (redis-py over `rediss://`, Python's `urllib`
//!   over `https://`), and a certificate swapped on SIGHUP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{idmint_command, sqlite_url, Server};

pub(crate) const ADMIN: &str = "admin-secret-0123456789abcdef";
const ORDERS: &str = "orders-secret-0123456789abcdef";
const PROMETHEUS: &str = "prometheus-secret-0123456789ab";
const READ_WITHIN: Duration = Duration::from_secs(10);

/// A folder for this test's files.
pub(crate) fn folder(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("idmint-security")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tokens file: the admin token in the clear, the orders token (tags `orders`, `orders-*`)
/// by its SHA-256, the metrics token in the clear.
fn tokens_file(dir: &Path, orders: &str) -> PathBuf {
    let digest = idmint_server::auth::sha256_hex(orders.as_bytes());
    let text = format!(
        "[[token]]\nname = \"ops\"\nscope = \"admin\"\nsecret = \"{ADMIN}\"\n\n\
         [[token]]\nname = \"orders\"\nscope = \"mint\"\ntags = [\"orders\", \"orders-*\"]\nsha256 = \"{digest}\"\n\n\
         [[token]]\nname = \"prometheus\"\nscope = \"metrics\"\nsecret = \"{PROMETHEUS}\"\n"
    );
    let path = dir.join("tokens.toml");
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn address(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

/// `METHOD path` over a fresh connection, with the token when given: the status, the
/// response head and the body.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(READ_WITHIN)).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// A Redis-protocol connection speaking raw RESP, one reply line at a time.
pub(crate) struct Resp {
    pub(crate) reader: BufReader<TcpStream>,
}

impl Resp {
    pub(crate) fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(READ_WITHIN)).unwrap();
        Self {
            reader: BufReader::new(stream),
        }
    }

    /// Sends `args` as one command.
    pub(crate) fn send(&mut self, args: &[&str]) {
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
    }

    /// The next reply's first line (enough for integers, errors and simple strings); for a
    /// bulk string, its content. Empty when the server closed the connection.
    pub(crate) fn reply(&mut self) -> String {
        let mut line = String::new();
        if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
            return String::new();
        }
        if let Some(Ok(len)) = line.trim_end().strip_prefix('$').map(str::parse::<usize>) {
            let mut content = vec![0u8; len + 2];
            let _ = self.reader.read_exact(&mut content);
            content.truncate(len);
            return String::from_utf8_lossy(&content).into_owned();
        }
        line.trim_end().to_owned()
    }

    pub(crate) fn call(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.reply()
    }
}

/// The value of the metric line starting with `series` in `/metrics` (0 when absent).
pub(crate) fn metric(addr: SocketAddr, series: &str) -> f64 {
    let (status, _, body) = http(addr, "GET", "/metrics", Some(ADMIN));
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter(|line| line.starts_with(series))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn hangup(server: &Server) {
    let status = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn scoped_tokens_guard_both_front_ends_and_reload_on_sighup() {
    let dir = folder("scopes");
    let tokens = tokens_file(&dir, ORDERS);
    let admin_file = dir.join("admin.token");
    std::fs::write(&admin_file, "second-admin-0123456789abcdef\n").unwrap();
    let server = Server::start_with(
        &sqlite_url("security-scopes"),
        "scopes",
        &[
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--admin-token-file",
            admin_file.to_str().unwrap(),
        ],
    );
    let web = address(&server.http);
    // Health checks are open; everything else wants a token.
    assert_eq!(http(web, "GET", "/healthz", None).0, 200);
    assert_eq!(http(web, "GET", "/readyz", None).0, 200);
    let (status, head, body) = http(web, "GET", "/v1/snowflake", None);
    assert_eq!(status, 401, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{head}"
    );
    // Each scope, on the routes it may and may not use.
    for (method, path, token, expected) in [
        ("GET", "/v1/snowflake", ORDERS, 200),
        ("GET", "/v1/segment/orders", ORDERS, 200),
        ("GET", "/v1/segment/orders-eu?count=3", ORDERS, 200),
        ("POST", "/v1/segment/orders/lease?size=10", ORDERS, 200),
        ("GET", "/api/segment/get/orders-us", ORDERS, 200),
        ("GET", "/api/snowflake/get/any", ORDERS, 200),
        ("GET", "/v1/decode/1", ORDERS, 200),
        ("GET", "/v1/segment/payments", ORDERS, 403),
        ("POST", "/v1/segment/payments/lease?size=10", ORDERS, 403),
        ("GET", "/api/segment/get/Orders", ORDERS, 403),
        ("GET", "/v1/tags", ORDERS, 403),
        ("PUT", "/v1/tags/orders-new", ORDERS, 403),
        ("GET", "/metrics", ORDERS, 403),
        ("GET", "/metrics", PROMETHEUS, 200),
        ("GET", "/v1/snowflake", PROMETHEUS, 403),
        ("GET", "/v1/segment/payments", ADMIN, 200),
        ("GET", "/v1/tags", ADMIN, 200),
        ("GET", "/v1/workers", ADMIN, 200),
        ("GET", "/metrics", ADMIN, 200),
        ("GET", "/v1/tags", "second-admin-0123456789abcdef", 200),
        ("GET", "/v1/snowflake", "not-a-token", 403),
    ] {
        let (status, _, body) = http(web, method, path, Some(token));
        assert_eq!(status, expected, "{method} {path} with {token}: {body}");
    }
    // A wrong token also closes the connection; a wrong scope does not.
    let (_, head, _) = http(web, "GET", "/v1/snowflake", Some("not-a-token"));
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );

    // The Redis protocol: the same tokens, the same scopes.
    let mut resp = Resp::connect(address(&server.resp));
    assert_eq!(resp.call(&["PING"]), "+PONG");
    assert!(resp.call(&["INCR", "orders"]).starts_with("-NOAUTH"));
    assert_eq!(resp.call(&["AUTH", ORDERS]), "+OK");
    assert!(resp.call(&["INCR", "orders"]).starts_with(':'));
    assert!(resp.call(&["INCRBY", "orders-eu", "5"]).starts_with(':'));
    assert!(resp.call(&["IDMINT.SNOWFLAKE"]).starts_with(':'));
    for refused in [
        &["INCR", "payments"][..],
        &["IDMINT.NEXT", "payments", "COUNT", "2"],
        &["GET", "payments"],
        &["INFO"],
        &["CONFIG", "GET", "*"],
    ] {
        let reply = resp.call(refused);
        assert!(reply.starts_with("-NOPERM"), "{refused:?}: {reply}");
    }
    // Inside a transaction a refused command dooms it, as in Redis.
    assert_eq!(resp.call(&["MULTI"]), "+OK");
    assert!(resp.call(&["INCR", "payments"]).starts_with("-NOPERM"));
    assert!(resp.call(&["EXEC"]).starts_with("-EXECABORT"));
    // Another token on the same connection: the new grant, with nothing cached from the old.
    assert_eq!(resp.call(&["AUTH", "prometheus", PROMETHEUS]), "+OK");
    assert!(resp.call(&["INCR", "orders"]).starts_with("-NOPERM"));
    assert!(resp.call(&["INFO", "server"]).contains("Server"));
    // The user name, when given, must be the token's or `default`.
    assert!(resp
        .call(&["AUTH", "ops", ORDERS])
        .starts_with("-WRONGPASS"));
    assert_eq!(resp.call(&["AUTH", "default", ADMIN]), "+OK");
    assert!(resp.call(&["CONFIG", "GET", "maxclients"]).starts_with('*'));

    // A new tokens file, then SIGHUP: the orders token stops at once, on HTTP and on Redis
    // connections that authenticated with it before.
    let mut before_reload = Resp::connect(address(&server.resp));
    assert_eq!(before_reload.call(&["AUTH", ORDERS]), "+OK");
    assert!(before_reload.call(&["INCR", "orders"]).starts_with(':'));
    tokens_file(&dir, "rotated-orders-secret-0123456789");
    hangup(&server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while http(web, "GET", "/v1/snowflake", Some(ORDERS)).0 != 403 {
        assert!(
            Instant::now() < deadline,
            "the old token still works after SIGHUP"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let rotated = "rotated-orders-secret-0123456789";
    assert_eq!(http(web, "GET", "/v1/snowflake", Some(rotated)).0, 200);
    let reply = before_reload.call(&["INCR", "orders"]);
    assert!(reply.starts_with("-NOAUTH"), "{reply}");
    assert_eq!(before_reload.call(&["AUTH", rotated]), "+OK");
    assert!(before_reload.call(&["INCR", "orders"]).starts_with(':'));
    assert!(server
        .log()
        .iter()
        .any(|line| line.contains("tokens reloaded")));
    server.stop();
}

#[test]
fn silent_connections_no_longer_lock_clients_out() {
    const LIMIT: usize = 100;
    let server = Server::start_with(
        &sqlite_url("security-lockout"),
        "lockout",
        &[
            "--admin-token",
            ADMIN,
            "--max-connections",
            &LIMIT.to_string(),
            "--max-connections-per-address",
            "0",
            "--auth-timeout",
            "1s",
        ],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    let started = Instant::now();
    let silent: Vec<TcpStream> = (0..LIMIT)
        .flat_map(|_| [TcpStream::connect(web), TcpStream::connect(redis)])
        .map(Result::unwrap)
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // The listeners are full: a real client is refused, with each protocol's answer.
    let mut refused = Resp::connect(redis);
    assert_eq!(refused.reply(), "-ERR max number of clients reached");
    assert_eq!(http(web, "GET", "/healthz", None).0, 503);
    // Within the auth timeout (plus a margin) the silent ones are closed, and clients get in.
    let mut client = loop {
        let mut client = Resp::connect(redis);
        if client.call(&["AUTH", ADMIN]) == "+OK" {
            break client;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still locked out after {:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let locked_out_for = started.elapsed();
    assert!(client.call(&["INCR", "orders"]).starts_with(':'));
    assert_eq!(http(web, "GET", "/v1/snowflake", Some(ADMIN)).0, 200);
    eprintln!(
        "{LIMIT} silent connections per listener: clients locked out for {locked_out_for:?} \
         (auth timeout 1 s)"
    );
    drop(silent);
    let refusals = metric(
        web,
        "idmint_connections_refused_total{listener=\"resp\",reason=\"max_connections\"}",
    );
    let closed = metric(
        web,
        "idmint_connections_refused_total{listener=\"resp\",reason=\"auth_timeout\"}",
    );
    assert!(
        refusals >= 1.0 && closed >= LIMIT as f64,
        "{refusals} refused, {closed} closed"
    );
    let log = server.log();
    let lines = log
        .iter()
        .filter(|l| l.contains("connections closed: not authenticated"))
        .count();
    assert!(
        lines <= 4,
        "{lines} log lines for {closed} closed connections"
    );
    server.stop();

    // The per-address cap: one address gets so many, then a clear refusal.
    let server = Server::start_with(
        &sqlite_url("security-per-address"),
        "per-address",
        &["--max-connections-per-address", "20"],
    );
    let redis = address(&server.resp);
    let held: Vec<Resp> = (0..20)
        .map(|_| {
            let mut resp = Resp::connect(redis);
            assert_eq!(resp.call(&["PING"]), "+PONG");
            resp
        })
        .collect();
    let mut one_more = Resp::connect(redis);
    let reply = one_more.reply();
    assert!(
        reply.contains("this address has 20 connections open"),
        "{reply}"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(Resp::connect(redis).call(&["PING"]), "+PONG");
    server.stop();
}

#[test]
fn token_guessing_is_slowed_and_its_log_bounded() {
    let server = Server::start_with(
        &sqlite_url("security-guessing"),
        "guessing",
        &["--admin-token", ADMIN, "--max-connections-per-address", "0"],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    const CONNECTIONS: usize = 20;
    const GUESSES: usize = 1_000;
    let started = Instant::now();
    let guessers: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut resp = Resp::connect(redis);
                let mut pipeline = String::new();
                for g in 0..GUESSES {
                    let guess = format!("guess-{c}-{g}");
                    pipeline.push_str(&format!(
                        "*2\r\n$4\r\nAUTH\r\n${}\r\n{guess}\r\n",
                        guess.len()
                    ));
                }
                let _ = resp.reader.get_mut().write_all(pipeline.as_bytes());
                let mut answered = 0;
                while resp.reply().starts_with("-WRONGPASS") {
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    let answered: Vec<usize> = guessers.into_iter().map(|g| g.join().unwrap()).collect();
    let elapsed = started.elapsed();
    // Three tries per connection, then it is closed; the tries are slowed (0.2 + 0.4 + 0.6 s).
    assert!(answered.iter().all(|&n| n == 3), "{answered:?}");
    assert!(elapsed >= Duration::from_millis(1_100), "{elapsed:?}");
    // Over HTTP each wrong token costs a connection.
    for _ in 0..200 {
        assert_eq!(http(web, "GET", "/v1/snowflake", Some("guess")).0, 403);
    }
    let failures = metric(web, "idmint_auth_failures_total");
    assert_eq!(failures, (3 * CONNECTIONS + 200) as f64);
    let log = server.log();
    let lines = log
        .iter()
        .filter(|l| l.contains("authentication failed") || l.contains("too many wrong tokens"))
        .count();
    eprintln!(
        "{CONNECTIONS} connections pipelining {GUESSES} wrong AUTHs each, then 200 HTTP requests \
         with a wrong token: {} guesses answered in {elapsed:?}, {failures} counted, {lines} log \
         lines",
        3 * CONNECTIONS
    );
    assert!(lines <= 6, "{lines} log lines:\n{}", log.join("\n"));
    // The right token still works.
    let mut resp = Resp::connect(redis);
    assert_eq!(resp.call(&["AUTH", ADMIN]), "+OK");
    server.stop();
}

#[test]
fn a_tag_flood_stops_at_the_cap_with_memory_metrics_and_shutdown_bounded() {
    // The default cap; the flood comes over CONNECTIONS connections, each pipelining its share.
    const CAP: usize = 10_000;
    const ASKED: usize = 12_000;
    const CONNECTIONS: usize = 32;
    let server = Server::start_with(&sqlite_url("security-tags"), "tags", &[]);
    let (web, redis) = (address(&server.http), address(&server.resp));
    let before = rss_kib(server.pid());
    let started = Instant::now();
    let (ok, capped) = incr_flood(
        redis,
        None,
        "flood",
        ASKED,
        CONNECTIONS,
        "-ERR too_many_tags",
    );
    let flood_took = started.elapsed();
    assert_eq!((ok, capped), (CAP, ASKED - CAP));
    let (status, _, body) = http(web, "GET", "/v1/segment/one-more", None);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("too_many_tags"), "{body}");
    // Metric series and INFO stay small whatever the number of tags.
    let (_, _, metrics) = http(web, "GET", "/metrics", None);
    let series = metrics.lines().filter(|l| !l.starts_with('#')).count();
    let tag_labels: std::collections::HashSet<&str> = metrics
        .lines()
        .filter_map(|l| l.split("tag=\"").nth(1)?.split('"').next())
        .collect();
    assert!(tag_labels.len() <= 101, "{} tag labels", tag_labels.len());
    let mut resp = Resp::connect(redis);
    resp.send(&["INFO"]);
    let mut header = String::new();
    resp.reader.read_line(&mut header).unwrap();
    let info_len: usize = header.trim_end().trim_start_matches('$').parse().unwrap();
    assert!(info_len < 32 * 1024, "INFO is {info_len} bytes");
    let after = rss_kib(server.pid());
    let pid = server.pid();
    let stopping = Instant::now();
    server.stop();
    let stop_took = stopping.elapsed();
    eprintln!(
        "{ASKED} new tags asked over {CONNECTIONS} connections, default --max-tags ({CAP}): {ok} served, {capped} \
         refused too_many_tags, in {flood_took:?}; RSS {before} -> {after} KiB; /metrics {} \
         bytes, {series} series, {} tag labels; INFO {info_len} bytes; SIGTERM to exit \
         {stop_took:?} (pid {pid})",
        metrics.len(),
        tag_labels.len()
    );
    assert!(
        after - before < 64 * 1024,
        "RSS grew {} KiB",
        after - before
    );
    assert!(stop_took < Duration::from_secs(10), "{stop_took:?}");
}

#[test]
fn settings_files_with_secrets_are_never_quoted_in_errors() {
    let dir = folder("quoted");
    let config = dir.join("idmint.toml");
    std::fs::write(
        &config,
        "admin_token = \"t0ken-in-a-file-0123456789\"\nstore = \"postgres://u:pa55word@db/x\"\nclock_policy = \"t0ken-in-a-file-0123456789\"\n",
    )
    .unwrap();
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        "[[token]]\nname = \"a\"\nscope = \"t0ken-in-a-file-0123456789\"\nsecret = \"t0ken-in-a-file-0123456789\"\n",
    )
    .unwrap();
    for args in [
        vec!["serve", "--config", config.to_str().unwrap()],
        vec!["serve", "--tokens-file", tokens.to_str().unwrap()],
    ] {
        let output = idmint_command()
            .args(&args)
            .args(["--data-dir", dir.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("line 3"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("t0ken") && !stderr.contains("pa55word"),
            "{args:?}: {stderr}"
        );
    }
}

/// A CA and a server certificate for 127.0.0.1 signed by it, written as PEM files.
pub(crate) fn certificates(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Subjects that differ, or the leaf reads as self-signed.
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("idmint test CA {name}"));
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "idmint test server");
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// Runs `tests/clients/python/tls_check.py` against the server with `ca`: its output lines.
fn python_tls_check(server: &Server, ca: &Path) -> String {
    let python = &crate::clients::libraries().python;
    let script = crate::clients::repo().join("tests/clients/python/tls_check.py");
    let output = Command::new(python)
        .arg(script)
        .arg(server.resp.replace("redis://", "rediss://"))
        .arg(server.http.replace("http://", "https://"))
        .arg(ca)
        .arg(ADMIN)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn tls_clients_of_both_protocols_connect_and_mint() {
    let dir = folder("tls");
    let (ca, cert, key) = certificates(&dir, "first");
    let server = Server::start_with(
        &sqlite_url("security-tls"),
        "tls",
        &[
            "--admin-token",
            ADMIN,
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let out = python_tls_check(&server, &ca);
    for check in [
        "OK rediss incr",
        "OK rediss snowflake",
        "OK https snowflake",
        "OK https segment",
    ] {
        assert!(out.contains(check), "{check} missing:\n{out}");
    }
    // Plain TCP gets no ID from a TLS port.
    let mut plain = Resp::connect(address(&server.resp));
    plain.send(&["PING"]);
    assert!(!plain.reply().starts_with("+PONG"));
    // A new certificate from another CA, then SIGHUP: new connections get it.
    let (new_ca, new_cert, new_key) = certificates(&dir, "second");
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    hangup(&server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server
        .log()
        .iter()
        .any(|l| l.contains("TLS certificate reloaded"))
    {
        assert!(Instant::now() < deadline, "no reload logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let with_old_ca = python_tls_check(&server, &ca);
    assert!(with_old_ca.contains("FAIL rediss"), "{with_old_ca}");
    let with_new_ca = python_tls_check(&server, &new_ca);
    assert!(with_new_ca.contains("OK https snowflake"), "{with_new_ca}");
    // A broken file on reload keeps the certificate in use.
    std::fs::write(&key, "not a key").unwrap();
    hangup(&server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server
        .log()
        .iter()
        .any(|l| l.contains("TLS certificate not reloaded"))
    {
        assert!(Instant::now() < deadline, "no failed reload logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(python_tls_check(&server, &new_ca).contains("OK rediss incr"));
    server.stop();
}

/// A secret the PostgreSQL driver does not read (it knows no `sslpassword`) and so names in
/// its own warning, value and all: what must show nowhere.
const SSL_SECRET: &str = "Zq-ssl-S3cret-77";

/// The test PostgreSQL server's URL with the password moved into the query string (the
/// driver reads it there too) and an `sslpassword` beside it.
fn postgres_url_with_query_secrets() -> String {
    let url = crate::starting::postgres_url();
    let (userinfo, place) = url
        .strip_prefix("postgres://")
        .and_then(|rest| rest.split_once('@'))
        .unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    format!(
        "postgres://{user}@{place}?password={password}&sslpassword={SSL_SECRET}&sslmode=disable"
    )
}

/// Whether `text` shows either credential of [`postgres_url_with_query_secrets`].
fn shows_a_secret(text: &str) -> bool {
    let password = crate::starting::postgres_url();
    let password = password
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .unwrap();
    text.contains(SSL_SECRET) || text.contains(&format!("password={password}"))
}

#[test]
fn store_credentials_show_in_no_log_route_or_error() {
    let dir = folder("credentials");
    let secret_url = postgres_url_with_query_secrets();
    // A store set from a file: the PostgreSQL store with its secrets, and a SQLite one.
    let store_file = dir.join("stores");
    let namespace = crate::starting::fresh_namespace("creds");
    std::fs::write(
        &store_file,
        format!("{secret_url}\n{}\n", sqlite_url("security-credentials")),
    )
    .unwrap();
    let tokens = tokens_file(&dir, ORDERS);
    let server = Server::start_without_store(
        "credentials",
        &[
            "--store-file",
            store_file.to_str().unwrap(),
            "--namespace",
            &namespace,
            "--tokens-file",
            tokens.to_str().unwrap(),
        ],
        &[],
    );
    let web = address(&server.http);
    assert_eq!(http(web, "GET", "/v1/snowflake", Some(ADMIN)).0, 200);
    // The log: the store is named, its credentials are not.
    let startup = server.startup.join("\n");
    assert!(startup.contains("store opened"), "{startup}");
    assert!(startup.contains("password=***"), "{startup}");
    // `/v1/node` (admin) shows the URL without its credentials.
    let (status, _, node) = http(web, "GET", "/v1/node", Some(ADMIN));
    assert_eq!(status, 200, "{node}");
    assert!(node.contains("sslpassword=***"), "{node}");
    // `/readyz` without a token: ready, and nothing about the stores or the worker.
    let (status, _, brief) = http(web, "GET", "/readyz", None);
    assert_eq!((status, brief.as_str()), (200, r#"{"status":"ready"}"#));
    let (status, _, minting) = http(web, "GET", "/readyz", Some(ORDERS));
    assert_eq!((status, minting.as_str()), (200, r#"{"status":"ready"}"#));
    // A wrong token gets the same, and its connection closed like anywhere else.
    let (status, head, wrong) = http(web, "GET", "/readyz", Some("not-a-token"));
    assert_eq!((status, wrong.as_str()), (200, r#"{"status":"ready"}"#));
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    // The metrics and admin scopes see the details, credentials still hidden.
    for token in [PROMETHEUS, ADMIN] {
        let (status, _, full) = http(web, "GET", "/readyz", Some(token));
        assert_eq!(status, 200, "{full}");
        let full: serde_json::Value = serde_json::from_str(&full).unwrap();
        assert!(full["worker_id"].is_u64(), "{full}");
        assert_eq!(full["stores"].as_array().unwrap().len(), 2, "{full}");
        assert!(!shows_a_secret(&full.to_string()), "{full}");
    }
    let (_, _, workers) = http(web, "GET", "/v1/workers", Some(ADMIN));
    server.stop();
    for (what, text) in [
        ("the start-up log", startup.as_str()),
        ("/v1/node", node.as_str()),
        ("/v1/workers", workers.as_str()),
    ] {
        assert!(!shows_a_secret(text), "{what} shows a secret:\n{text}");
    }

    // Start-up errors: a store that cannot be reached, one whose URL does not parse, one
    // whose password was written without percent-encoding; from the flag and from the file.
    let (_, query) = secret_url.split_once('?').unwrap();
    let closed = format!("postgres://u@127.0.0.1:1/db?{query}");
    let unparsable = format!("postgres://u:{SSL_SECRET}@[::1/db");
    let unencoded = format!("postgres://u:12/{SSL_SECRET}@127.0.0.1:1/db");
    for url in [closed, unparsable, unencoded] {
        std::fs::write(&store_file, format!("{url}\n")).unwrap();
        for args in [
            vec!["--store", url.as_str()],
            vec!["--store-file", store_file.to_str().unwrap()],
        ] {
            let output = idmint_command()
                .args(["serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
                .args(["--worker-wait", "0s", "--store-call-timeout", "2s"])
                .args(&args)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!output.status.success(), "{url}: started");
            assert!(stderr.contains("error:"), "{url}: {stderr}");
            assert!(!shows_a_secret(&stderr), "{url}: {stderr}");
        }
    }
}

#[test]
fn the_store_url_comes_from_a_file_or_the_environment() {
    let dir = folder("store-file");
    // SQLite, from a file with a trailing line break.
    let file = dir.join("store");
    std::fs::write(&file, format!("{}\n", sqlite_url("security-store-file"))).unwrap();
    let server =
        Server::start_without_store("store-file", &["--store-file", file.to_str().unwrap()], &[]);
    assert_eq!(
        http(address(&server.http), "GET", "/v1/segment/a", None).0,
        200
    );
    server.stop();
    // The operator's commands read the same file.
    let output = idmint_command()
        .args(["id-space", "show", "--store-file", file.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("security-store-file"), "{stdout}");
    // PostgreSQL, the file named by the variable.
    std::fs::write(&file, format!("{}\n", postgres_url_with_query_secrets())).unwrap();
    let namespace = crate::starting::fresh_namespace("storefile");
    let server = Server::start_without_store(
        "store-file-pg",
        &["--namespace", &namespace],
        &[("IDMINT_STORE_FILE", file.to_str().unwrap())],
    );
    assert_eq!(
        http(address(&server.http), "GET", "/v1/segment/a", None).0,
        200
    );
    assert!(!shows_a_secret(&server.startup.join("\n")));
    server.stop();
    // Both ways at once is refused, as is a file with no URL.
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").unwrap();
    for (args, expected) in [
        (
            vec![
                "--store",
                "sqlite://./x.db",
                "--store-file",
                file.to_str().unwrap(),
            ],
            "error: --store-file: is set together with --store",
        ),
        (
            vec!["--store-file", empty.to_str().unwrap()],
            "holds no store URL",
        ),
    ] {
        let output = idmint_command().arg("serve").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn an_admin_token_file_of_two_lines_is_refused_at_start() {
    let dir = folder("two-lines");
    let file = dir.join("admin.token");
    std::fs::write(&file, "first-token-0123456789\nsecond-token-0123456789\n").unwrap();
    let mut child = idmint_command()
        .args(["serve", "--admin-token-file", file.to_str().unwrap()])
        .args(["--data-dir", dir.to_str().unwrap()])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .spawn()
        .unwrap();
    // A server that accepted the file would serve on: it is stopped, and the test fails.
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: --admin-token-file: ") && stderr.contains("holds 2 lines"),
        "{stderr}"
    );
    assert!(!stderr.contains("token-0123456789"), "{stderr}");
}

/// The sum of the `count` fields of the log lines of `listener` saying `what`, and whether
/// each names a client address.
fn reported(log: &[String], listener: &str, what: &str) -> (u64, bool) {
    let lines: Vec<&String> = log
        .iter()
        .filter(|l| l.contains(what) && l.contains(&format!("listener=\"{listener}\"")))
        .collect();
    let count = lines
        .iter()
        .filter_map(|l| {
            l.split(" count=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    let named = !lines.is_empty()
        && lines
            .iter()
            .all(|l| l.contains("the last from 127.0.0.1:") && l.contains("last_peer=127.0.0.1:"));
    (count, named)
}

#[test]
fn the_end_of_a_burst_of_wrong_tokens_is_logged_with_the_address() {
    let server = Server::start_with(
        &sqlite_url("security-burst"),
        "burst",
        &["--admin-token", ADMIN, "--max-connections-per-address", "0"],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    const HTTP_FAILURES: u64 = 40;
    const RESP_CONNECTIONS: u64 = 4;
    for _ in 0..HTTP_FAILURES {
        assert_eq!(http(web, "GET", "/v1/tags", Some("wrong")).0, 403);
    }
    let guessers: Vec<_> = (0..RESP_CONNECTIONS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut resp = Resp::connect(redis);
                (0..3).all(|_| resp.call(&["AUTH", "wrong"]).starts_with("-WRONGPASS"))
            })
        })
        .collect();
    assert!(guessers.into_iter().all(|g| g.join().unwrap()));
    // Then silence: the rest of the burst is logged on the timer, within its interval.
    let silent_since = Instant::now();
    let deadline = silent_since + Duration::from_secs(12);
    loop {
        let log = server.log();
        let http_seen = reported(&log, "http", "authentication failed");
        let resp_seen = reported(&log, "resp", "authentication failed");
        if http_seen == (HTTP_FAILURES, true) && resp_seen == (3 * RESP_CONNECTIONS, true) {
            eprintln!(
                "a burst of {HTTP_FAILURES} wrong HTTP tokens and {} wrong AUTHs: all counted \
                 in the log {:?} after it ended",
                3 * RESP_CONNECTIONS,
                silent_since.elapsed()
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 12 s of silence: http {http_seen:?}, resp {resp_seen:?}:\n{}",
            log.join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    server.stop();
}

#[test]
fn a_log_written_to_a_pipe_has_no_colour_codes() {
    // `NO_COLOR` empty does not turn colour off (no-color.org): only the pipe does.
    let server = Server::start_with_env(
        &sqlite_url("security-colour"),
        "colour",
        &["--admin-token", ADMIN],
        &[("NO_COLOR", "")],
    );
    assert_eq!(
        http(address(&server.http), "GET", "/v1/tags", Some("wrong")).0,
        403
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server
        .log()
        .iter()
        .any(|l| l.contains("authentication failed"))
    {
        assert!(Instant::now() < deadline, "no warning logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut all = server.startup.clone();
    all.push(server.serving.clone());
    all.extend(server.log());
    server.stop();
    assert!(
        all.iter().all(|line| !line.contains("\u{1b}[")),
        "colour codes in a piped log:\n{}",
        all.join("\n")
    );
}

/// `asked` new tags `PREFIX-N` created by `INCR` over `connections` connections (after `AUTH
/// token` when given), each pipelining its share; returns how many were served and how many
/// refused with a reply starting `refusal` (any other reply fails the test).
pub(crate) fn incr_flood(
    redis: SocketAddr,
    token: Option<&'static str>,
    prefix: &'static str,
    asked: usize,
    connections: usize,
    refusal: &'static str,
) -> (usize, usize) {
    let floods: Vec<_> = (0..connections)
        .map(|c| {
            std::thread::spawn(move || {
                let mut resp = Resp::connect(redis);
                // What is measured is the cap, memory and shutdown, not latency: on a loaded
                // machine (other tests, a build) a reply may wait for SQLite longer than the
                // usual bound.
                let patient = Some(Duration::from_secs(120));
                resp.reader.get_ref().set_read_timeout(patient).unwrap();
                if let Some(token) = token {
                    assert_eq!(resp.call(&["AUTH", token]), "+OK");
                }
                let mut pipeline = String::new();
                for t in (c..asked).step_by(connections) {
                    let tag = format!("{prefix}-{t}");
                    pipeline.push_str(&format!("*2\r\n$4\r\nINCR\r\n${}\r\n{tag}\r\n", tag.len()));
                }
                resp.reader
                    .get_mut()
                    .write_all(pipeline.as_bytes())
                    .unwrap();
                let (mut ok, mut refused) = (0, 0);
                for _ in (c..asked).step_by(connections) {
                    let reply = resp.reply();
                    if reply.starts_with(':') {
                        ok += 1;
                    } else if reply.starts_with(refusal) {
                        refused += 1;
                    } else {
                        panic!("unexpected reply {reply}");
                    }
                }
                (ok, refused)
            })
        })
        .collect();
    floods
        .into_iter()
        .map(|f| f.join().unwrap())
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}
