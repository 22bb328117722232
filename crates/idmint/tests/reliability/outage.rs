//! Scenario 3: the store stops answering while nodes serve. The store server is frozen with
//! SIGSTOP (with every child process, for PostgreSQL): connections hang rather than fail, the
//! hardest kind of outage for a client, and the server comes back with its data intact on
//! SIGCONT.
//!
//! - 30 s under a load the buffers cover (segment buffers of many seconds, an HWM raised a
//!   minute ahead): not one failed request.
//! - Longer than the buffers (a consumer that drains the segments, an HWM only 3 s ahead):
//!   clear 503 and `-ERR`/`-TRYAGAIN` replies within the bounded waits, never a wrong or
//!   repeated ID; service resumes by itself within 5 s of the store's return.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;
use idmint_test_support::lease_timing::LeaseTiming;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{signal, Node, NodeSpec};

const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// A store server frozen by SIGSTOP: the process and its children (PostgreSQL's backends).
pub struct Frozen {
    pids: Vec<u32>,
}

impl Frozen {
    /// Freezes `pid` first (so it starts no new child), then its children.
    pub fn freeze(pid: u32) -> Self {
        signal(pid, "STOP");
        let mut pids = vec![pid];
        for child in children_of(pid) {
            signal(child, "STOP");
            pids.push(child);
        }
        Self { pids }
    }

    /// Thaws the children, then the parent.
    pub fn thaw(mut self) {
        self.thaw_all();
    }

    fn thaw_all(&mut self) {
        for pid in self.pids.drain(..).rev() {
            // A child may have gone meanwhile; the parent must not stay frozen.
            let _ = std::process::Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

impl Drop for Frozen {
    /// A failing test must not leave the shared store frozen for the tests after it.
    fn drop(&mut self) {
        self.thaw_all();
    }
}

/// The PIDs whose parent is `pid`, from `/proc`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the command name (which may hold spaces): state, then ppid.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, rest)| rest) else {
            continue;
        };
        if rest.split_whitespace().nth(1) == Some(pid.to_string().as_str()) {
            children.push(child);
        }
    }
    children
}

/// A PID from the environment that `scripts/with-stores` sets.
fn store_pid(variable: &str) -> u32 {
    crate::store_url(variable).parse().unwrap()
}

/// The value of `name{tag="TAG"}` in `/metrics`, if present.
pub async fn tag_metric(http: &reqwest::Client, base: &str, name: &str, tag: &str) -> Option<f64> {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let prefix = format!("{name}{{tag=\"{tag}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.trim().parse().ok())
}

/// 30 s of frozen store under a load the buffers cover: zero failed requests.
pub fn covered_by_buffers(label: &str, store: &str, pid_variable: &str) {
    let pid = store_pid(pid_variable);
    let namespace = crate::fresh_namespace("outage");
    let mut node = Node::new(NodeSpec::new(
        "outage-covered",
        store,
        &[
            "--layout",
            LAYOUT,
            "--namespace",
            &namespace,
            "--hwm-lead",
            "60s",
        ],
    ));
    node.start();
    let runtime = crate::runtime();
    let ledger = Arc::new(Ledger::default());
    let tags = vec!["orders".to_owned(), "users".to_owned()];
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: tags.clone(),
            max_count: 20,
            pause: Duration::from_millis(2),
        },
        &ledger,
    );
    clients.spawn(&runtime, 0, &node, &MIXED);

    // Warm up until every tag's buffer lasts well past the outage at the observed rate.
    let outage = crate::phase(Duration::from_secs(30));
    let http = reqwest::Client::new();
    let budgets = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut budgets = Vec::new();
            for tag in &tags {
                let seconds =
                    tag_metric(&http, &node.http(), "idmint_segment_buffer_seconds", tag).await;
                budgets.push(seconds.unwrap_or(0.0));
            }
            let enough = outage.as_secs_f64() * 1.5;
            if budgets.iter().all(|&b| b > enough) || Instant::now() > deadline {
                break budgets;
            }
        }
    });
    assert!(
        budgets.iter().all(|&b| b > outage.as_secs_f64()),
        "the buffers never covered {outage:?}: {budgets:?} s"
    );
    let before = ledger.report();
    assert_eq!(
        before.failed_total(),
        0,
        "failures before the outage: {before}"
    );

    let frozen = Frozen::freeze(pid);
    std::thread::sleep(outage);
    let during = ledger.report();
    frozen.thaw();
    std::thread::sleep(Duration::from_secs(3));
    clients.stop(&runtime);
    node.stop_cleanly();
    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    println!(
        "reliability: {label} frozen {outage:?} under load (buffers {budgets:.0?} s): {} requests during the outage; {report}",
        during.requests - before.requests
    );
    assert_eq!(report.failed_total(), 0, "{report}");
    assert!(
        during.requests - before.requests > 1_000,
        "no load during the outage"
    );
}

/// A frozen store for longer than the buffers last: clear errors, no wrong ID, and service
/// back within 5 s of the store's return.
pub fn longer_than_buffers(label: &str, store: &str, pid_variable: &str) {
    let pid = store_pid(pid_variable);
    let namespace = crate::fresh_namespace("longoutage");
    let mut node = Node::new(NodeSpec::new(
        "outage-long",
        store,
        &[
            ["--layout", LAYOUT, "--namespace", &namespace].as_slice(),
            &LeaseTiming::OUTAGE.flags(),
        ]
        .concat(),
    ));
    node.start();
    let runtime = crate::runtime();
    let ledger = Arc::new(Ledger::default());
    // Large counts drain a segment buffer within a second or two.
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["drained".to_owned()],
            max_count: 10_000,
            pause: Duration::ZERO,
        },
        &ledger,
    );
    clients.spawn(&runtime, 0, &node, &MIXED);
    std::thread::sleep(Duration::from_secs(2));

    let outage = crate::phase(Duration::from_secs(12));
    let frozen = Frozen::freeze(pid);
    std::thread::sleep(outage);
    let during = ledger.report();
    frozen.thaw();
    let thawed = Instant::now();
    // Both kinds of ID flow again, by themselves.
    let http = reqwest::Client::new();
    let resumed = runtime.block_on(async {
        for path in ["/v1/snowflake?count=5", "/v1/segment/drained?count=5"] {
            loop {
                let response = http.get(format!("{}{path}", node.http())).send().await;
                if matches!(&response, Ok(r) if r.status() == 200) {
                    break;
                }
                assert!(
                    thawed.elapsed() < Duration::from_secs(10),
                    "{path} did not resume within 10 s of the store's return"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        thawed.elapsed()
    });
    std::thread::sleep(Duration::from_secs(1));
    clients.stop(&runtime);
    node.stop_cleanly();
    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    println!(
        "reliability: {label} frozen {outage:?}, longer than the buffers: resumed {} ms after the store's return; {report}",
        resumed.as_millis()
    );
    assert!(
        resumed < Duration::from_secs(5),
        "resumed after {resumed:?}"
    );
    // The outage was felt, as clear errors of the bounded waits, never as a hung request.
    assert!(
        during.failed_total() > 0,
        "the outage went unnoticed: {during}"
    );
    for code in report.failed.keys() {
        assert!(
            code.contains("503")
                || code.starts_with("resp ERR")
                || code.starts_with("resp TRYAGAIN"),
            "unexpected failure {code}: {report}"
        );
    }
    // Every wait is bounded by max_wait (1 s); 1 s more covers the request itself on a loaded
    // machine. (Waits summed from timer pauses once stretched this to 2.5 s.)
    assert!(report.longest < Duration::from_secs(2), "{report}");
}
