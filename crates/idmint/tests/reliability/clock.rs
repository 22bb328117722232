//! Scenario 2: clock steps, made with libfaketime in the real process (its wall clock only:
//! the monotonic clock runs on, as under an NTP step). The store is PostgreSQL, whose clock
//! judges lease expiry and is not faked.
//!
//! - A running node's clock stepped back 10 s under load: no duplicate, no stall, no request
//!   waits longer than `max_wait`, the divergence shows in `/metrics`.
//! - A node restarted with its clock 60 s behind its last run, under each clock policy:
//!   `fail` refuses to start, `wait` serves segments and answers snowflakes with
//!   `clock_behind` at once (readiness says so) until the clock is right again, `switch`
//!   serves snowflakes at once from another worker ID.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;

use crate::ledger::{Batch, Kind, Ledger};
use crate::load::{Clients, Load, MIXED};
use crate::node::{Node, NodeSpec};

const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A libfaketime offset file: what it holds is added to the wall clock of the processes
/// started with [`FakeClock::env`], read again within 2 s (libfaketime's cache of 1 s is
/// judged by whole seconds: a process that read it just after a second began keeps it until
/// the second after next).
struct FakeClock {
    file: PathBuf,
}

impl FakeClock {
    fn new(name: &str) -> Self {
        assert!(
            std::path::Path::new(LIBFAKETIME).exists(),
            "{LIBFAKETIME} is missing: install the faketime package (scripts/with-stores does)"
        );
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-reliability");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("faketime-{name}-{}", std::process::id()));
        let clock = Self { file };
        clock.set("+0");
        clock
    }

    /// Sets the offset, e.g. `-10s`, `-60`, `+0`.
    fn set(&self, offset: &str) {
        std::fs::write(&self.file, format!("{offset}\n")).unwrap();
    }

    fn env(&self) -> Vec<(String, String)> {
        [
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME_TIMESTAMP_FILE", self.file.to_str().unwrap()),
            ("FAKETIME_CACHE_DURATION", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }
}

/// `GET url`: status, JSON body, time taken.
async fn get(http: &reqwest::Client, url: &str) -> (u16, serde_json::Value, Duration) {
    let started = Instant::now();
    let response = http.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, body, started.elapsed())
}

/// The value of the unlabelled Prometheus series `name`.
async fn metric(http: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no series {name} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

fn ids_of(body: &serde_json::Value) -> Vec<u64> {
    body["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {body}"))
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect()
}

/// A running node's wall clock steps back 10 s under load.
pub fn step_back_while_running(store: &str) {
    let fake = FakeClock::new("step");
    let namespace = crate::fresh_namespace("clockstep");
    let mut spec = NodeSpec::new(
        "clock-step",
        store,
        &["--layout", LAYOUT, "--namespace", &namespace],
    );
    spec.env = fake.env();
    let mut node = Node::new(spec);
    node.start();
    let ledger = Arc::new(Ledger::default());
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["orders".into()],
            max_count: 100,
            pause: Duration::ZERO,
        },
        &ledger,
    );
    let runtime = crate::runtime();
    clients.spawn(&runtime, 0, &node, &MIXED);
    let http = reqwest::Client::new();
    let length = crate::phase(Duration::from_secs(3));
    std::thread::sleep(length);
    fake.set("-10s");
    // libfaketime reads the file again within 2 s; the clock ticker publishes within 1 ms.
    let divergence = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let divergence = metric(&http, &node.http(), "idmint_clock_divergence_ms").await;
            if divergence < -9_000.0 || Instant::now() > deadline {
                break divergence;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(
        (-10_500.0..=-9_000.0).contains(&divergence),
        "divergence after a 10 s step back: {divergence} ms"
    );
    std::thread::sleep(length);
    clients.stop(&runtime);
    node.stop_cleanly();
    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    println!(
        "reliability: clock stepped back 10 s while running: divergence {divergence} ms; {report}"
    );
    // The generators' clock never went back: nothing failed, nothing waited for it.
    assert_eq!(report.failed_total(), 0, "{report}");
    assert!(report.longest < Duration::from_secs(1), "{report}");
}

/// A node restarted with its clock 60 s behind its last run, under each policy.
pub fn restart_behind_under_each_policy(store: &str) {
    let fake = FakeClock::new("restart");
    let namespace = crate::fresh_namespace("clockrestart");
    let layout = Layout::parse(LAYOUT).unwrap();
    let base_args = ["--layout", LAYOUT, "--namespace", &namespace];
    let mut spec = NodeSpec::new("clock-restart", store, &base_args);
    spec.env = fake.env();
    let mut node = Node::new(spec);
    let http = reqwest::Client::new();
    let runtime = crate::runtime();
    let ledger = Ledger::default();
    let record = |incarnation: u64, ids: Vec<u64>| {
        let batch = Batch {
            node: 0,
            incarnation,
            client: 0,
            kind: Kind::Snowflake,
            ids,
        };
        ledger.ok(batch, Duration::ZERO);
    };
    let snowflakes = |node: &Node| {
        runtime.block_on(get(
            &http,
            &format!("{}/v1/snowflake?count=1000", node.http()),
        ))
    };
    let worker_of = |id: u64| layout.decode(id).unwrap().worker.unwrap();

    // A first run on the right clock, stopped gracefully: its worker's HWM is now.
    node.start();
    let (status, body, _) = snowflakes(&node);
    assert_eq!(status, 200, "{body}");
    let first = ids_of(&body);
    let first_worker = worker_of(first[0]);
    let first_last = *first.last().unwrap();
    record(0, first);
    node.stop_cleanly();

    // The clock is now 60 s behind that run.
    fake.set("-60");
    let with_policy = |policy: &str| {
        let mut args: Vec<String> = base_args.iter().map(|a| a.to_string()).collect();
        args.extend(["--clock-policy".to_owned(), policy.to_owned()]);
        args
    };

    // fail: the node refuses to start, saying why.
    node.spec_mut().args = with_policy("fail");
    let log = node.try_start().expect_err("policy fail started anyway");
    assert!(log.starts_with("exited with exit status: 1"), "{log}");
    assert!(log.contains("clock policy `fail`"), "{log}");
    assert!(log.contains(&format!("worker {first_worker}")), "{log}");

    // wait: the node serves, but not snowflakes, and says so at once.
    node.spec_mut().args = with_policy("wait");
    node.start();
    let (status, body, took) = snowflakes(&node);
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("clock_behind")),
        "{body}"
    );
    assert!(
        took < Duration::from_secs(1),
        "a clock_behind answer took {took:?}"
    );
    let (status, body, _) = runtime.block_on(get(&http, &format!("{}/readyz", node.http())));
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("clock_behind")),
        "{body}"
    );
    let (status, body, _) = runtime.block_on(get(
        &http,
        &format!("{}/v1/segment/orders?count=3", node.http()),
    ));
    assert_eq!(status, 200, "segments do not need the clock: {body}");
    let lead = runtime.block_on(metric(&http, &node.http(), "idmint_snowflake_lead_ms"));
    assert!(lead > 58_000.0, "lead {lead} ms");
    // The clock is put right: snowflakes resume by themselves, above the first run's.
    fake.set("+0");
    let resumed = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, body, _) =
                get(&http, &format!("{}/v1/snowflake?count=1000", node.http())).await;
            if status == 200 {
                break ids_of(&body);
            }
            assert!(
                Instant::now() < deadline,
                "snowflakes did not resume: {body}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert_eq!(worker_of(resumed[0]), first_worker);
    assert!(resumed[0] > first_last);
    record(2, resumed);
    let (status, _, _) = runtime.block_on(get(&http, &format!("{}/readyz", node.http())));
    assert_eq!(status, 200);
    node.stop_cleanly();

    // switch: 60 s behind again; the node takes another worker ID and serves at once.
    fake.set("-60");
    node.spec_mut().args = with_policy("switch");
    node.start();
    let (status, body, _) = snowflakes(&node);
    assert_eq!(status, 200, "{body}");
    let switched = ids_of(&body);
    assert_ne!(worker_of(switched[0]), first_worker);
    record(3, switched);
    let (status, _, _) = runtime.block_on(get(&http, &format!("{}/readyz", node.http())));
    assert_eq!(status, 200);
    node.stop_cleanly();
    assert!(node.logged("the clock is behind this worker ID's high-water mark"));

    let report = ledger.check(&layout);
    println!("reliability: restart 60 s behind: fail refused, wait answered clock_behind then resumed, switch moved off worker {first_worker}; {report}");
}
