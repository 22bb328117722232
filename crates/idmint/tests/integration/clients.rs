//! The client compatibility suite: real Redis client libraries, installed from their
//! registries by `tests/clients/setup`, against a real `idmint serve` with an admin token.
//!
//! Each client program (`tests/clients/python/compat.py`, `tests/clients/node/compat.mjs`)
//! connects with the library's defaults plus the token and runs its checks (connect, `INCR`,
//! pipelines with and without `MULTI`/`EXEC`, a refused transaction that must take no ID,
//! the `IDMINT.*` commands, what clients probe), printing one line per event: `OK check`,
//! `FAIL check why`, `ID kind value`, and `RESTART`, on which this harness restarts the server
//! at the same addresses and answers `GO`, so the program checks that its clients reconnect.
//! Here every ID any program received must be unique within its kind, across the restart.
//! The Rust `redis` crate, `redis-cli -3` and `redis-benchmark -3` are driven from here.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::common::{sqlite_url, FixedNode};

const TOKEN: &str = "compat-token";

/// Where `tests/clients/setup` put the libraries.
pub(crate) struct Libraries {
    pub(crate) python: PathBuf,
    node_dir: PathBuf,
}

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Installs the client libraries once per test run (they are cached between runs).
pub(crate) fn libraries() -> &'static Libraries {
    static LIBRARIES: OnceLock<Libraries> = OnceLock::new();
    LIBRARIES.get_or_init(|| {
        let [python, node_dir] =
            crate::common::run_setup("tests/clients/setup", &["python", "node_dir"])
                .try_into()
                .expect("two values");
        Libraries {
            python: PathBuf::from(python),
            node_dir: PathBuf::from(node_dir),
        }
    })
}

/// A node with the admin token on a fresh SQLite file, on fixed ports (restartable).
fn start_node(name: &str) -> FixedNode {
    FixedNode::start(&sqlite_url(name), name, &["--admin-token", TOKEN])
}

/// The node's URL with the token, as the client programs take it.
fn node_url(node: &FixedNode) -> String {
    format!("redis://:{TOKEN}@{}/", node.resp)
}

/// What a client program reported.
#[derive(Default)]
struct Report {
    passed: Vec<String>,
    failed: Vec<String>,
    ids: BTreeMap<String, Vec<u64>>,
    done: bool,
}

impl Report {
    /// Every check passed, the program finished, and no ID came twice within a kind.
    fn assert_clean(&self, at_least: usize) {
        assert!(
            self.failed.is_empty(),
            "failed checks:\n{}",
            self.failed.join("\n")
        );
        assert!(
            self.done,
            "the program did not finish; passed: {:?}",
            self.passed
        );
        assert!(
            self.passed.len() >= at_least,
            "only {} checks passed: {:?}",
            self.passed.len(),
            self.passed
        );
        for (kind, ids) in &self.ids {
            let mut seen = HashSet::new();
            let twice: Vec<&u64> = ids.iter().filter(|id| !seen.insert(**id)).collect();
            assert!(twice.is_empty(), "{kind}: IDs received twice: {twice:?}");
        }
        let total: usize = self.ids.values().map(Vec::len).sum();
        assert!(total > 100, "only {total} IDs were reported");
    }
}

/// Runs a client program against `node`, restarting the server when it asks.
fn drive(mut program: Command, node: &mut FixedNode) -> Report {
    let host_port = node.resp.clone();
    let (host, port) = host_port.rsplit_once(':').unwrap_or_default();
    let mut child = program
        .env("IDMINT_HOST", host)
        .env("IDMINT_PORT", port)
        .env("IDMINT_TOKEN", TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the client program did not start");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut report = Report::default();
    for line in stdout.lines() {
        let line = line.unwrap();
        let mut words = line.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("OK"), Some(check), _) => report.passed.push(check.to_owned()),
            (Some("FAIL"), Some(check), why) => {
                report
                    .failed
                    .push(format!("{check}: {}", why.unwrap_or_default()));
            }
            (Some("ID"), Some(kind), Some(value)) => {
                let id = value.trim().parse().unwrap_or_else(|_| {
                    report
                        .failed
                        .push(format!("{kind}: `{value}` is not an ID"));
                    0
                });
                report.ids.entry(kind.to_owned()).or_default().push(id);
            }
            (Some("RESTART"), _, _) => {
                node.restart();
                writeln!(stdin, "GO").unwrap();
                stdin.flush().unwrap();
            }
            (Some("DONE"), _, _) => report.done = true,
            _ => eprintln!("client: {line}"),
        }
    }
    let status = child.wait().unwrap();
    assert!(
        status.success() || !report.failed.is_empty(),
        "the program exited with {status}"
    );
    report
}

#[test]
fn redis_py_sync_and_asyncio_on_resp2_and_resp3() {
    let libraries = libraries();
    let mut node = start_node("compat-python");
    let mut program = Command::new(&libraries.python);
    program.arg(repo().join("tests/clients/python/compat.py"));
    // 8 sync checks and 3 asyncio checks per protocol, then one reconnect per protocol.
    drive(program, &mut node).assert_clean(2 * (8 + 3) + 2);
}

#[test]
fn node_redis_and_ioredis_on_resp2_and_resp3() {
    let libraries = libraries();
    let mut node = start_node("compat-node");
    let mut program = Command::new("node");
    program.arg(libraries.node_dir.join("compat.mjs"));
    // 8 checks for each of six clients (node-redis 6 and 5 on RESP2 and RESP3, ioredis with
    // its default RESP3 and on RESP2), then one reconnect each.
    drive(program, &mut node).assert_clean(6 * 8 + 6);
}

/// The Rust `redis` crate: a plain connection, the multiplexed async connection, `atomic()`
/// pipelines, RESP3, and the connection manager across a server restart.
#[test]
fn the_rust_redis_crate_sync_async_atomic_and_resp3() {
    let mut node = start_node("compat-rust");
    let mut seen: HashSet<u64> = HashSet::new();
    let mut fresh = |ids: &[u64]| {
        for id in ids {
            assert!(seen.insert(*id), "ID {id} received twice");
        }
    };
    for protocol in ["", "?protocol=resp3"] {
        let url = format!("{}{protocol}", node_url(&node));
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_connection().unwrap();

        let first: u64 = redis::cmd("INCR").arg("rust").query(&mut conn).unwrap();
        let (a, b): (u64, u64) = redis::pipe()
            .cmd("INCR")
            .arg("rust")
            .cmd("INCR")
            .arg("rust")
            .query(&mut conn)
            .unwrap();
        let (c, snowflakes): (u64, Vec<u64>) = redis::pipe()
            .atomic()
            .cmd("INCR")
            .arg("rust")
            .cmd("IDMINT.SNOWFLAKE")
            .arg("COUNT")
            .arg(3)
            .query(&mut conn)
            .unwrap();
        assert_eq!([a, b, c], [first + 1, first + 2, first + 3]);
        assert_eq!(snowflakes.len(), 3);
        fresh(&[first, a, b, c]);
        fresh(&snowflakes);

        // A transaction the server refuses takes no ID.
        let refused: redis::RedisResult<(u64, u64)> = redis::pipe()
            .atomic()
            .cmd("INCR")
            .arg("rust")
            .cmd("NO.SUCH.COMMAND")
            .query(&mut conn);
        assert!(refused.is_err());
        let next: u64 = redis::cmd("INCR").arg("rust").query(&mut conn).unwrap();
        assert_eq!(next, c + 1);
        fresh(&[next]);

        let decoded: BTreeMap<String, redis::Value> = redis::cmd("IDMINT.DECODE")
            .arg(snowflakes[0])
            .query(&mut conn)
            .unwrap();
        assert!(decoded.contains_key("worker") && decoded.contains_key("seq"));
        let counter: String = redis::cmd("GET").arg("rust").query(&mut conn).unwrap();
        assert_eq!(counter, next.to_string());
        let info: redis::InfoDict = redis::cmd("INFO")
            .arg("replication")
            .query(&mut conn)
            .unwrap();
        assert_eq!(info.get::<String>("role").as_deref(), Some("master"));

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ids: Vec<u64> = runtime.block_on(async {
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            // Fifty commands in flight at once on the one multiplexed connection.
            let mut calls = tokio::task::JoinSet::new();
            for _ in 0..50 {
                let mut conn = conn.clone();
                calls.spawn(async move {
                    redis::cmd("INCR")
                        .arg("rust")
                        .query_async::<u64>(&mut conn)
                        .await
                });
            }
            let mut ids: Vec<u64> = calls
                .join_all()
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
            let batch: Vec<u64> = redis::cmd("IDMINT.NEXT")
                .arg("rust")
                .arg("COUNT")
                .arg(10)
                .query_async(&mut conn)
                .await
                .unwrap();
            ids.extend(batch);
            ids
        });
        assert_eq!(ids.len(), 60);
        fresh(&ids);
    }

    // The connection manager reconnects after a restart.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = redis::Client::open(node_url(&node).as_str()).unwrap();
    let mut manager = runtime
        .block_on(redis::aio::ConnectionManager::new(client))
        .unwrap();
    let before: u64 = runtime
        .block_on(redis::cmd("INCR").arg("rust").query_async(&mut manager))
        .unwrap();
    node.restart();
    let after = runtime.block_on(async {
        for _ in 0..50 {
            match redis::cmd("INCR")
                .arg("rust")
                .query_async::<u64>(&mut manager)
                .await
            {
                Ok(id) => return id,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        }
        panic!("the connection manager did not reconnect");
    });
    assert!(after > before);
    fresh(&[before, after]);
}

/// `redis-cli -3` shows RESP3 replies; `redis-benchmark -3` runs `INCR` on every connection.
#[test]
fn redis_cli_and_redis_benchmark_speak_resp3() {
    let node = start_node("compat-cli");
    let cli = |args: &[&str]| {
        let output = Command::new("redis-cli")
            .args([
                "-3",
                "-h",
                "127.0.0.1",
                "-p",
                node.port(),
                "-a",
                TOKEN,
                "--no-auth-warning",
            ])
            .args(args)
            .output()
            .expect("redis-cli did not run");
        assert!(output.status.success(), "redis-cli {args:?} failed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let hello = cli(&["HELLO", "3"]);
    assert!(hello.contains("proto") && hello.contains('3'), "{hello}");
    let id = cli(&["IDMINT.SNOWFLAKE"]);
    let id = id.trim().trim_start_matches("(integer) ");
    // As a terminal shows it (`--no-raw`): a map, `1# "id" => (integer) ...`.
    let decoded = cli(&["--no-raw", "IDMINT.DECODE", id]);
    assert!(
        decoded.contains("1# \"id\" => (integer)") && decoded.contains("\"worker\" =>"),
        "a map: {decoded}"
    );
    assert_eq!(cli(&["--no-raw", "GET", "unknown-tag"]).trim(), "(nil)");

    let output = Command::new("redis-benchmark")
        .args(["-3", "-h", "127.0.0.1", "-p", node.port(), "-a", TOKEN])
        .args(["-n", "20000", "-c", "10", "-P", "4", "-q", "INCR", "bench"])
        .output()
        .expect("redis-benchmark did not run");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("requests per second"),
        "{text}"
    );
    let counter = cli(&["GET", "bench"]);
    let counter: u64 = counter.trim().trim_matches('"').parse().unwrap();
    assert!(counter >= 20_000, "{counter}");
}
