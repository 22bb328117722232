//! The end of a layout (issue 5, scenario 6), against the real `idmint serve` binary.
//!
//! A layout is given an epoch such that its time field runs out a few seconds after the test
//! starts. Clients fetch snowflakes continuously over HTTP (JSON and Leaf's plain text) and the
//! Redis protocol, before and across the end. What it proves:
//! - before the end, every ID is positive as an `i64`, fits the layout's 32 bits, decodes to a
//!   time before the end, strictly increases per client, and is unique across clients;
//! - from the end on, every call is an error (HTTP 500 `layout_exhausted`, RESP
//!   `-ERR layout exhausted: ...`) naming the end date: never a negative, wrapped or repeated
//!   ID, and no ID after a client's first error;
//! - the rest of the node is unaffected: segment IDs are still served, the worker lease is
//!   still renewed (its high-water mark goes on rising past the end without overflow or
//!   panic), and SIGTERM still stops the process with exit status 0;
//! - `idmint layout` prints the end date, and `idmint serve` refuses a layout that has already
//!   run out (non-zero exit, the end date in the message) before it opens the store, so it
//!   takes no worker lease.

use crate::common;

use std::collections::HashSet;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat};
use common::Server;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpStream;

/// 16 bits of milliseconds: the layout lasts 65.536 s from its epoch. 32 bits in all.
const LAYOUT: &str = "time:16@1ms,worker:4,seq:12";
const TIME_SHIFT: u32 = 16;
const SPAN_MS: u64 = 1 << 16;

/// How far after the test's start the layout runs out: time for the server to start and serve.
const ENDS_IN: Duration = Duration::from_secs(8);

/// How long the clients go on after the end: past two lease renewals (every 2 s by default).
const AFTER_END: Duration = Duration::from_secs(5);

/// Latest a success may be received after the end: the server and the test read the same
/// clock, so this only absorbs scheduling.
const END_MARGIN: Duration = Duration::from_secs(1);

/// IDs per call.
const COUNT: usize = 50;

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn rfc3339(ms: u64) -> String {
    DateTime::from_timestamp_millis(i64::try_from(ms).unwrap())
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The layout's epoch and end (ms since 1970), and the end as an `Instant` of this process.
struct Schedule {
    epoch_ms: u64,
    end_ms: u64,
    end: Instant,
}

impl Schedule {
    fn ending_in(ends_in: Duration) -> Self {
        let now = now_ms();
        let end_ms = now + u64::try_from(ends_in.as_millis()).unwrap();
        Self {
            epoch_ms: end_ms - SPAN_MS,
            end_ms,
            end: Instant::now() + ends_in,
        }
    }

    fn end_date(&self) -> String {
        rfc3339(self.end_ms)
    }
}

/// What one call got.
#[derive(Debug)]
enum Answer {
    Ids(Vec<u64>),
    /// The error as the client saw it: `500 layout_exhausted: message` or the `-ERR` line.
    Error(String),
}

/// One client's calls, in order, with when each answer arrived.
#[derive(Debug)]
struct Log {
    client: &'static str,
    answers: Vec<(Instant, Answer)>,
}

/// `GET /v1/snowflake?count=50` (JSON) or, with `leaf`, `GET /api/snowflake/get/end` (one ID,
/// plain text), on one keep-alive connection, until `until`.
async fn http_client(base: String, leaf: bool, until: Instant) -> Log {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let url = if leaf {
        format!("{base}/api/snowflake/get/end")
    } else {
        format!("{base}/v1/snowflake?count={COUNT}")
    };
    let mut answers = Vec::new();
    while Instant::now() < until {
        let response = client.get(&url).send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let answer = match (status, leaf) {
            (200, true) => Answer::Ids(vec![text.trim().parse().unwrap()]),
            (200, false) => {
                let body: Value = serde_json::from_str(&text).unwrap();
                Answer::Ids(
                    body["ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|id| id.as_str().unwrap().parse().unwrap())
                        .collect(),
                )
            }
            _ => {
                let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
                    panic!("{status} with a body that is not JSON ({e}): {text}")
                });
                Answer::Error(format!(
                    "{status} {}: {}",
                    body["error"]["code"].as_str().unwrap(),
                    body["error"]["message"].as_str().unwrap()
                ))
            }
        };
        answers.push((Instant::now(), answer));
    }
    Log {
        client: if leaf { "HTTP Leaf" } else { "HTTP JSON" },
        answers,
    }
}

/// The next line of a RESP reply, within 10 s.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut Lines<R>) -> String {
    tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("no RESP reply within 10 s")
        .unwrap()
        .expect("RESP connection closed")
}

/// `IDMINT.SNOWFLAKE COUNT 50` on one connection, until `until`.
async fn resp_client(addr: String, until: Instant) -> Log {
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut answers = Vec::new();
    while Instant::now() < until {
        write
            .write_all(format!("IDMINT.SNOWFLAKE COUNT {COUNT}\r\n").as_bytes())
            .await
            .unwrap();
        let first = next_line(&mut lines).await;
        let answer = if let Some(len) = first.strip_prefix('*') {
            let len: usize = len.parse().unwrap();
            let mut ids = Vec::with_capacity(len);
            for _ in 0..len {
                let line = next_line(&mut lines).await;
                let id: i64 = line.strip_prefix(':').unwrap().parse().unwrap();
                // A negative integer would be the sign of a wrapped ID: refuse to hide it.
                ids.push(u64::try_from(id).unwrap_or_else(|_| panic!("negative ID {id}")));
            }
            Answer::Ids(ids)
        } else {
            Answer::Error(first)
        };
        answers.push((Instant::now(), answer));
    }
    Log {
        client: "RESP",
        answers,
    }
}

/// Checks one client's answers; adds its IDs to `seen`. Returns (IDs, errors).
fn check_log(log: &Log, schedule: &Schedule, seen: &mut HashSet<u64>) -> (usize, usize) {
    let client = log.client;
    let end_date = schedule.end_date();
    let mut last_id = 0;
    let mut first_error: Option<usize> = None;
    let mut ids = 0;
    for (index, (at, answer)) in log.answers.iter().enumerate() {
        match answer {
            Answer::Ids(batch) => {
                assert!(
                    first_error.is_none(),
                    "{client}: IDs {batch:?} after an error (call {index})"
                );
                assert!(
                    *at < schedule.end + END_MARGIN,
                    "{client}: IDs received {:?} after the end: {batch:?}",
                    at.duration_since(schedule.end)
                );
                for &id in batch {
                    assert!(id > last_id, "{client}: {id} after {last_id}");
                    last_id = id;
                    assert!(
                        i64::try_from(id).is_ok_and(|id| id > 0),
                        "{client}: {id} is not a positive i64"
                    );
                    let tick = id >> TIME_SHIFT;
                    assert!(
                        tick < SPAN_MS,
                        "{client}: {id} has bits above the layout's 32"
                    );
                    assert!(
                        schedule.epoch_ms + tick < schedule.end_ms,
                        "{client}: {id} decodes after the end"
                    );
                    assert!(seen.insert(id), "{client}: {id} issued twice");
                    ids += 1;
                }
            }
            Answer::Error(error) => {
                first_error.get_or_insert(index);
                let expected_http = format!(
                    "500 layout_exhausted: layout exhausted: its time field ran out at {end_date}"
                );
                let expected_resp =
                    format!("-ERR layout exhausted: its time field ran out at {end_date}");
                assert!(
                    *error == expected_http || *error == expected_resp,
                    "{client}: unexpected error {error:?} (call {index})"
                );
            }
        }
    }
    let errors = first_error.map_or(0, |first| log.answers.len() - first);
    assert!(ids > 0, "{client}: no ID before the end");
    assert!(errors > 0, "{client}: no error after the end");
    (ids, errors)
}

/// The worker leases as `/v1/workers` lists them: (worker ID, HWM ms).
async fn hwms(http: &reqwest::Client, base: &str) -> Vec<(u64, u64)> {
    let workers: Value = http
        .get(format!("{base}/v1/workers"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["worker_id"].as_u64().unwrap(),
                w["hwm_ms"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Runs `idmint` with `args`; it must exit on its own within 60 s.
fn run_idmint(args: &[&str]) -> Output {
    let mut child = common::idmint_command()
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("idmint {args:?} did not exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `idmint serve` with a layout that has run out: it must exit with status 2 (a setting to
/// change), in one line under the flag to change (`--epoch` when given) naming the end and the
/// way on, and must not have opened the store (no worker lease taken for nothing).
fn assert_serve_refuses(store: &str, layout: &str, epoch: Option<&str>, end_date: &str) {
    let mut args = vec!["serve", "--store", store, "--http", "127.0.0.1:0"];
    args.extend(["--resp", "127.0.0.1:0", "--layout", layout]);
    if let Some(epoch) = epoch {
        args.extend(["--epoch", epoch]);
    }
    let output = run_idmint(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{layout}: stderr:\n{stderr}");
    let flag = if epoch.is_some() { "epoch" } else { "layout" };
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{layout}: {stderr}");
    assert!(
        errors[0].starts_with(&format!("error: --{flag}: "))
            && errors[0].contains(&format!("ran out at {end_date}"))
            && errors[0].contains("give a later epoch, e.g. --epoch "),
        "{layout}: {stderr}"
    );
    assert!(
        !stderr.contains("store opened") && !stderr.contains("idmint serving"),
        "{layout}: the store was opened for a layout that ran out:\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snowflakes_end_with_errors_never_with_a_wrapped_id() {
    let schedule = Schedule::ending_in(ENDS_IN);
    let epoch = schedule.epoch_ms.to_string();
    let end_date = schedule.end_date();

    // `idmint layout` says when it runs out.
    let output = run_idmint(&["layout", "--layout", LAYOUT, "--epoch", &epoch]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("runs out:") && l.contains(&end_date)),
        "{text}"
    );

    let store = common::sqlite_url("layout-end");
    let server = Server::start_with(
        &store,
        "layout-end",
        &["--layout", LAYOUT, "--epoch", &epoch],
    );
    let resp_addr = server
        .resp
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let until = schedule.end + AFTER_END;
    let clients = vec![
        tokio::spawn(http_client(server.http.clone(), false, until)),
        tokio::spawn(http_client(server.http.clone(), true, until)),
        tokio::spawn(resp_client(resp_addr.clone(), until)),
        tokio::spawn(resp_client(resp_addr.clone(), until)),
    ];

    // Meanwhile, after the end: the lease keeper goes on raising the HWM past the end.
    let http = reqwest::Client::new();
    tokio::time::sleep_until((schedule.end + Duration::from_millis(500)).into()).await;
    let early = hwms(&http, &server.http).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let late = hwms(&http, &server.http).await;
    assert_eq!(early.len(), 1, "{early:?}");
    assert_eq!(early[0].0, late[0].0);
    assert!(
        late[0].1 > early[0].1 && early[0].1 > schedule.end_ms,
        "the HWM did not rise past the end: {early:?} then {late:?} (end {})",
        schedule.end_ms
    );

    let mut seen = HashSet::new();
    for client in clients {
        let log = client.await.unwrap();
        let (ids, errors) = check_log(&log, &schedule, &mut seen);
        eprintln!(
            "{}: {ids} IDs before the end, {errors} errors after it",
            log.client
        );
    }
    eprintln!("{} IDs, all unique; layout ended at {end_date}", seen.len());

    // The rest of the node still works: segment IDs, health, the lease, decoding.
    let segment: Value = http
        .get(format!("{}/v1/segment/after-end?count=3", server.http))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        segment["ids"].as_array().map(Vec::len),
        Some(3),
        "{segment}"
    );
    let mut resp = TcpStream::connect(&resp_addr).await.unwrap();
    resp.write_all(b"INCR after-end\r\nIDMINT.SNOWFLAKE\r\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(resp).lines();
    let incr = lines.next_line().await.unwrap().unwrap();
    assert_eq!(incr, ":4", "INCR after the end");
    let snowflake = lines.next_line().await.unwrap().unwrap();
    assert_eq!(
        snowflake,
        format!("-ERR layout exhausted: its time field ran out at {end_date}")
    );
    let health = http
        .get(format!("{}/healthz", server.http))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let ready = http
        .get(format!("{}/readyz", server.http))
        .send()
        .await
        .unwrap();
    eprintln!(
        "/readyz after the end: {} {}",
        ready.status(),
        ready.text().await.unwrap()
    );
    let metrics = http
        .get(format!("{}/metrics", server.http))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("idmint_lease_held 1"), "{metrics}");
    let last = *seen.iter().max().unwrap();
    let decoded: Value = http
        .get(format!("{}/v1/decode/{last}", server.http))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        decoded["unix_ms"].as_u64().unwrap() < schedule.end_ms,
        "{decoded}"
    );
    server.stop();

    // Started again after the end: refused.
    assert_serve_refuses(&store, LAYOUT, Some(&epoch), &end_date);
}

#[test]
fn a_layout_that_already_ran_out_is_refused_at_start() {
    let store = common::sqlite_url("layout-ran-out");
    // A custom layout that ran out a second ago.
    let schedule = Schedule::ending_in(Duration::ZERO);
    let epoch = (schedule.epoch_ms - 1_000).to_string();
    let end_date = rfc3339(schedule.end_ms - 1_000);
    let output = run_idmint(&["layout", "--layout", LAYOUT, "--epoch", &epoch]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("runs out:") && l.contains(&end_date) && l.contains("ran out")),
        "{text}"
    );
    assert_serve_refuses(&store, LAYOUT, Some(&epoch), &end_date);
    // A preset that ran out in 2024.
    assert_serve_refuses(&store, "uid-generator", None, "2024-11-20T21:24:16.000Z");
}
