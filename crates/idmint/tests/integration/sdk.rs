//! The client libraries (`crates/idmint-client`, `clients/python`) against three real
//! `idmint serve` nodes on one PostgreSQL store: clients of each language, two threads each,
//! draw segment IDs and snowflakes while one node is killed with SIGKILL and restarted. No ID
//! may be drawn twice, each thread's IDs must increase, and no call may fail once the
//! failover bound has passed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_client::{BlockingClient, ClientConfig, ConfigField};
use idmint_core::ErrorCode;

use crate::clients::{libraries, repo};
use crate::common::{free_port, FixedNode, Server};

const TOKEN: &str = "sdk-token-0123";
const TAG: &str = "sdk-orders";
/// When node 1 is killed, when it comes back, and when the clients stop, from the start.
const KILL_AT: Duration = Duration::from_secs(3);
const RESTART_AT: Duration = Duration::from_secs(6);
const RUN_FOR: Duration = Duration::from_secs(10);
/// Calls may fail only this long after the kill: a client's wait for a range (`max_wait`).
const FAILOVER_BOUND: Duration = Duration::from_secs(3);

/// A node with the admin token in `namespace` of `store`, on fixed ports (restartable).
fn start_node(store: &str, namespace: &str, name: &str) -> FixedNode {
    FixedNode::start(
        store,
        name,
        &["--admin-token", TOKEN, "--namespace", namespace],
    )
}

/// The node's Redis-protocol URL (the clients send the token themselves).
fn node_url(node: &FixedNode) -> String {
    format!("redis://{}", node.resp)
}

/// What one drawing thread saw.
#[derive(Default)]
struct Drawn {
    who: String,
    segment: Vec<u64>,
    snowflakes: Vec<u64>,
    /// Seconds from the start of each failed call.
    failures: Vec<f64>,
}

/// The nodes' URLs starting at node `first`: clients spread over the nodes.
fn rotated(urls: &[String], first: usize) -> Vec<String> {
    (0..urls.len())
        .map(|k| urls[(first + k) % urls.len()].clone())
        .collect()
}

/// A Rust client drawing on two threads until `stop`.
fn rust_client(name: String, nodes: Vec<String>, start: Instant) -> Vec<Drawn> {
    let config = ClientConfig::new(nodes)
        .with_token(TOKEN)
        .with_steps(50, 2_000)
        .with_target_lifetime(Duration::from_millis(200))
        .with_call_timeout(Duration::from_millis(500))
        .with_backoff(Duration::from_millis(200), Duration::from_secs(2))
        .with_max_wait(FAILOVER_BOUND);
    let client = Arc::new(BlockingClient::new(config).unwrap());
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let client = Arc::clone(&client);
            let who = format!("{name}-t{t}");
            std::thread::spawn(move || {
                let mut drawn = Drawn {
                    who,
                    ..Drawn::default()
                };
                let mut i = 0u64;
                while start.elapsed() < RUN_FOR {
                    match client.next(TAG) {
                        Ok(id) => drawn.segment.push(id),
                        Err(_) => drawn.failures.push(start.elapsed().as_secs_f64()),
                    }
                    if i.is_multiple_of(1_000) {
                        match client.snowflake() {
                            Ok(id) => drawn.snowflakes.push(id),
                            Err(_) => drawn.failures.push(start.elapsed().as_secs_f64()),
                        }
                    }
                    i += 1;
                    if i.is_multiple_of(100) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                drawn
            })
        })
        .collect();
    let drawn = threads.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!("{name}: {:?}", client.stats());
    drawn
}

/// Reads a file of little-endian u64.
fn read_u64s(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A Python client process (`tests/clients/python/sdk_driver.py`), two threads.
fn python_client(name: &str, nodes: &[String], out: &Path) -> std::process::Child {
    Command::new(&libraries().python)
        .arg(repo().join("tests/clients/python/sdk_driver.py"))
        .args(["--nodes", &nodes.join(","), "--token", TOKEN, "--tag", TAG])
        .args([
            "--threads",
            "2",
            "--seconds",
            &RUN_FOR.as_secs().to_string(),
        ])
        .args(["--max-step", "2000", "--target-lifetime-ms", "200"])
        .arg("--out")
        .arg(out)
        .args(["--name", name])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the Python client did not start")
}

/// What a Python client process drew, from its files and its `DONE` line.
fn python_drawn(
    name: &str,
    child: std::process::Child,
    out: &Path,
    start_offset: f64,
) -> Vec<Drawn> {
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{name} exited with {}: {text}",
        output.status
    );
    let done = text
        .lines()
        .find(|l| l.starts_with("DONE "))
        .unwrap_or_else(|| panic!("{name} printed no DONE line: {text}"));
    eprintln!("{done}");
    let field = |key: &str| {
        done.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= in {done}"))
            .to_owned()
    };
    let failed: u64 = field("failed").parse().unwrap();
    let last_failure: f64 = field("last_failure").parse().unwrap();
    (0..2)
        .map(|t| {
            let mut drawn = Drawn {
                who: format!("{name}-t{t}"),
                segment: read_u64s(&out.join(format!("{name}-t{t}.seg"))),
                snowflakes: read_u64s(&out.join(format!("{name}-t{t}.sf"))),
                failures: Vec::new(),
            };
            if t == 0 && failed > 0 {
                // The driver reports its last failure, in its own time: move it to ours.
                drawn.failures.push(last_failure + start_offset);
            }
            drawn
        })
        .collect()
}

/// Each thread's IDs strictly increase, and no ID is drawn twice over all threads.
fn check(all: &[Drawn], what: &str, ids: impl Fn(&Drawn) -> &Vec<u64>) -> usize {
    let mut every = Vec::new();
    for drawn in all {
        let list = ids(drawn);
        if let Some(w) = list.windows(2).find(|w| w[0] >= w[1]) {
            panic!("{}: {what} IDs went from {} to {}", drawn.who, w[0], w[1]);
        }
        every.extend_from_slice(list);
    }
    every.sort_unstable();
    let duplicates = every.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(duplicates, 0, "{duplicates} {what} IDs were drawn twice");
    every.len()
}

#[test]
fn clients_of_both_languages_draw_through_a_node_killed_and_restarted() {
    let url = std::env::var("IDMINT_TEST_POSTGRES_URL")
        .expect("IDMINT_TEST_POSTGRES_URL is not set: run the tests through scripts/test");
    let namespace = namespace("sdk");
    let out =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sdk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let _ = libraries();

    let mut nodes: Vec<FixedNode> = (0..3)
        .map(|i| start_node(&url, &namespace, &format!("sdk-{i}")))
        .collect();
    let urls: Vec<String> = nodes.iter().map(node_url).collect();
    let start = Instant::now();
    let pythons: Vec<_> = (0..4)
        .map(|c| {
            let name = format!("py{c}");
            let child = python_client(&name, &rotated(&urls, c % 3), &out);
            (name, child, start.elapsed().as_secs_f64())
        })
        .collect();
    let rusts: Vec<_> = (0..4)
        .map(|c| {
            let nodes = rotated(&urls, c % 3);
            std::thread::spawn(move || rust_client(format!("rs{c}"), nodes, start))
        })
        .collect();

    std::thread::sleep(KILL_AT.saturating_sub(start.elapsed()));
    nodes[1].kill();
    let killed_at = start.elapsed().as_secs_f64();
    std::thread::sleep(RESTART_AT.saturating_sub(start.elapsed()));
    nodes[1].start_again();

    let mut all: Vec<Drawn> = rusts.into_iter().flat_map(|r| r.join().unwrap()).collect();
    for (name, child, offset) in pythons {
        all.extend(python_drawn(&name, child, &out, offset));
    }
    let segment = check(&all, "segment", |d| &d.segment);
    let snowflakes = check(&all, "snowflake", |d| &d.snowflakes);
    let failures: Vec<(String, f64)> = all
        .iter()
        .flat_map(|d| d.failures.iter().map(|&t| (d.who.clone(), t)))
        .collect();
    eprintln!(
        "8 clients (4 Rust, 4 Python; 2 threads each) over 3 nodes, node 1 killed at \
         {killed_at:.1} s and restarted at {:.1} s: {segment} segment IDs and {snowflakes} \
         snowflakes, 0 duplicates; failed calls: {failures:?}",
        RESTART_AT.as_secs_f64()
    );
    let bound = killed_at + FAILOVER_BOUND.as_secs_f64();
    let late: Vec<_> = failures.iter().filter(|(_, t)| *t > bound).collect();
    assert!(
        late.is_empty(),
        "calls failed after the failover bound: {late:?}"
    );
    let per_client: HashMap<&str, usize> = all.iter().fold(HashMap::new(), |mut m, d| {
        *m.entry(&d.who[..3]).or_default() += d.segment.len();
        m
    });
    assert!(per_client.values().all(|&n| n > 1_000), "{per_client:?}");
    for node in &mut nodes {
        node.stop();
    }
}

/// A namespace of this run's own, so the test shares the database with others.
fn namespace(label: &str) -> String {
    idmint_test_support::namespace(label)
}

#[test]
fn a_client_gives_unused_ids_back_on_close_and_names_what_went_wrong() {
    let store = crate::common::sqlite_url("sdk-close");
    let node = start_node(&store, "idmint", "sdk-close");
    let config = || {
        // Ranges of 100: the last two are adjacent in the node's segment of 1,000.
        ClientConfig::new([node_url(&node)])
            .with_token(TOKEN)
            .with_steps(100, 100)
            .with_max_wait(Duration::from_secs(1))
    };
    let client = BlockingClient::new(config()).unwrap();
    let ids: Vec<u64> = (0..250).map(|_| client.next("closing").unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let flakes = client.snowflakes(100).unwrap();
    assert!(flakes.windows(2).all(|w| w[0] < w[1]));
    for n in [0, 10_001] {
        let error = client.snowflakes(n).unwrap_err();
        assert!(
            matches!(error, idmint_client::Error::Refused { .. }),
            "{error}"
        );
    }
    let other = client.next("closing-too").unwrap();
    let last = *ids.last().unwrap();
    assert_eq!(
        client.close(),
        2,
        "the tags' unused IDs were not given back"
    );
    assert!(client.stats().given_back > 0, "{:?}", client.stats());
    eprintln!("{:?}", client.stats());
    assert!(matches!(
        client.next("closing"),
        Err(idmint_client::Error::Closed)
    ));
    drop(client);
    // The node hands out what came back: no gap after the last ID the client drew.
    let mut redis = redis::Client::open(format!("redis://:{TOKEN}@{}/", node.resp))
        .unwrap()
        .get_connection()
        .unwrap();
    let next: u64 = redis::cmd("INCR").arg("closing").query(&mut redis).unwrap();
    assert_eq!(next, last + 1, "drew {:?}..", &ids[..5]);
    let next: u64 = redis::cmd("INCR")
        .arg("closing-too")
        .query(&mut redis)
        .unwrap();
    assert_eq!(next, other + 1);

    // Snowflake batches that age past the bound before they arrive still serve their caller.
    let quick = ClientConfig::new([node_url(&node)])
        .with_token(TOKEN)
        .with_snowflakes(8, Duration::from_micros(1));
    let client = BlockingClient::new(quick).unwrap();
    let flakes: Vec<u64> = (0..20).map(|_| client.snowflake().unwrap()).collect();
    assert!(flakes.windows(2).all(|w| w[0] < w[1]));
    drop(client);

    // A client that asks for more than the node's --max-count learns the node's limit.
    let large = config().with_steps(20_000, 50_000);
    let client = BlockingClient::new(large).unwrap();
    let ids: Vec<u64> = (0..25_000).map(|_| client.next("large").unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(client.stats().ranges >= 3, "{:?}", client.stats());
    drop(client);

    // A bad tag and a wrong token are refusals, answered at once, not after max_wait.
    let client = BlockingClient::new(config()).unwrap();
    let started = Instant::now();
    let error = client.next("bad\u{1}tag").unwrap_err();
    assert!(
        matches!(error, idmint_client::Error::Refused { .. }),
        "{error}"
    );
    assert_eq!(error.code(), Some(ErrorCode::InvalidTag), "{error}");
    let wrong = BlockingClient::new(config().with_token("wrong")).unwrap();
    let error = wrong.next("t").unwrap_err();
    assert!(
        matches!(error, idmint_client::Error::Refused { .. }),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // No node answering: Unavailable within the bounded wait, never a made-up ID.
    let nowhere = format!("redis://127.0.0.1:{}", free_port());
    let none =
        BlockingClient::new(ClientConfig::new([nowhere]).with_max_wait(Duration::from_millis(700)))
            .unwrap();
    let started = Instant::now();
    let error = none.next("t").unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let error = none.snowflake().unwrap_err();
    assert!(
        matches!(error, idmint_client::Error::Unavailable { .. }),
        "{error}"
    );
    // A configuration that cannot work is refused, naming the field.
    let error = BlockingClient::new(ClientConfig::new(["http://x"]))
        .err()
        .unwrap();
    assert!(
        matches!(&error, idmint_client::Error::Config { source } if source.field == ConfigField::Nodes),
        "{error}"
    );
}

/// The Python client knows exactly the codes the nodes answer with: its `ERROR_CODES` is
/// idmint-core's `ErrorCode::ALL`, in the same order (read from the installed package).
#[test]
fn the_python_client_knows_every_error_code() {
    let output = Command::new(&libraries().python)
        .args([
            "-c",
            "import idmint_client; print('\\n'.join(idmint_client.ERROR_CODES))",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let python: Vec<&str> = stdout.lines().collect();
    let rust: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
    assert_eq!(
        python, rust,
        "clients/python's ERROR_CODES against ErrorCode::ALL"
    );
}

/// A node with TLS and a token: the Rust client trusts the operator's CA and mints.
#[test]
fn the_rust_client_reaches_a_node_over_tls() {
    let dir = crate::security::folder("sdk-tls");
    let (ca, cert, key) = crate::security::certificates(&dir, "sdk");
    let flags = [
        "--admin-token",
        TOKEN,
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let server = Server::start_with(&crate::common::sqlite_url("sdk-tls"), "sdk-tls", &flags);
    let node = server.resp.replace("redis://", "rediss://");
    let config = ClientConfig::new([node.clone()])
        .with_token(TOKEN)
        .with_ca_pem(std::fs::read(&ca).unwrap());
    let client = BlockingClient::new(config).unwrap();
    let first = client.next("tls").unwrap();
    assert!(client.next("tls").unwrap() > first);
    assert!(client.snowflake().unwrap() > 0);
    drop(client);
    // Without the CA the node's certificate is not trusted: a failure, never an ID.
    let untrusting = ClientConfig::new([node])
        .with_token(TOKEN)
        .with_max_wait(Duration::from_millis(500));
    let client = BlockingClient::new(untrusting).unwrap();
    assert!(client.next("tls").is_err());
    drop(client);
    server.stop();
}
