//! Real processes against real stores: several processes allocating from one SQLite file at
//! once, and a process killed with SIGKILL (no graceful shutdown) whose successor must not
//! reissue anything, per backend.
//!
//! The test binary re-runs itself as the child: `child_entry` does nothing unless
//! `IDMINT_CHILD` names a role, and the parent reads what the child did from its stdout.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use idmint_core::layout::Layout;
use idmint_core::snowflake::Fence;
use idmint_core::store::{LeaseRequest, TagSettings};
use idmint_core::{ManualClock, SnowflakeConfig, SnowflakeGenerator, Tag};

/// HWM the crashing child confirms: 10 minutes ahead of 2026-11-21T00:00:00Z, as a node with a
/// fast clock (or borrowing far ahead) would leave behind.
const CRASH_HWM_MS: u64 = 1_795_219_200_000 + 600_000;

/// Spawns this test binary as a child in `role`, against `url` in `namespace`.
fn spawn_child(role: &str, url: &str, namespace: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash::child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IDMINT_CHILD", role)
        .env("IDMINT_CHILD_URL", url)
        .env("IDMINT_CHILD_NAMESPACE", namespace)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Reads the child's reports (`REPORT key value...`) until it exits, or, with
/// `until_ready`, until it says `READY` (a child that then waits to be killed).
fn read_reports(child: &mut Child, until_ready: bool) -> Vec<Vec<String>> {
    let stdout = child.stdout.take().unwrap();
    let mut reports = Vec::new();
    for line in BufReader::new(stdout).lines() {
        // libtest's own `test crash::child_entry ... ` may stand before the child's first line.
        let line = line.unwrap();
        if until_ready && line.ends_with("READY") {
            break;
        }
        if let Some(at) = line.find("REPORT ") {
            reports.push(line[at + 7..].split(' ').map(str::to_owned).collect());
        }
    }
    reports
}

/// Not a test of its own: the body of the child processes. Passes at once when run as a test.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var("IDMINT_CHILD") else {
        return;
    };
    let url = std::env::var("IDMINT_CHILD_URL").unwrap();
    let namespace = std::env::var("IDMINT_CHILD_NAMESPACE").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = idmint_store::open(&url, &common::options(&namespace))
            .await
            .unwrap();
        let tag = Tag::new("crash").unwrap();
        match role.as_str() {
            "allocate" => {
                for i in 0..300u64 {
                    let range = store.segments.allocate(&tag, 1 + i % 5).await.unwrap();
                    println!("REPORT range {} {}", range.start, range.end);
                }
            }
            "crash" => {
                let mut last = 0..0;
                for _ in 0..5 {
                    last = store.segments.allocate(&tag, 100).await.unwrap();
                }
                println!("REPORT max_id {}", last.end);
                let request = LeaseRequest {
                    node_name: "crashing-node".into(),
                    worker_count: 1,
                    worker_id: None,
                    ttl: Duration::from_millis(500),
                    id_space: None,
                    partition: idmint_core::store::Partition::WHOLE,
                };
                let lease = store.leases.acquire(&request).await.unwrap();
                let renewal = store
                    .leases
                    .renew(&lease, CRASH_HWM_MS, request.ttl)
                    .await
                    .unwrap();
                println!("REPORT lease {} {}", lease.worker_id, renewal.hwm_ms);
                println!("READY");
                // Wait to be killed: no graceful shutdown, no give-back, no release.
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            other => panic!("unknown child role {other}"),
        }
    });
}

/// Four processes allocate from one SQLite file at the same time: their ranges never overlap
/// and tile the sequence.
#[tokio::test]
async fn four_processes_share_one_sqlite_file_without_overlap() {
    let url = common::sqlite_url();
    let namespace = common::fresh_namespace();
    let store = idmint_store::open(&url, &common::options(&namespace))
        .await
        .unwrap();
    let tag = Tag::new("crash").unwrap();
    store
        .segments
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    let children: Vec<Child> = (0..4)
        .map(|_| spawn_child("allocate", &url, &namespace))
        .collect();
    let mut ranges = Vec::new();
    for (index, mut child) in children.into_iter().enumerate() {
        for report in read_reports(&mut child, false) {
            let (start, end) = (
                report[1].parse::<u64>().unwrap(),
                report[2].parse::<u64>().unwrap(),
            );
            ranges.push((start, end, index));
        }
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(ranges.len(), 4 * 300);
    ranges.sort_unstable();
    // The processes really ran at once: their ranges interleave, not four blocks in a row.
    let switches = ranges.windows(2).filter(|w| w[0].2 != w[1].2).count();
    assert!(
        switches > 3,
        "only {switches} switches between processes: they did not overlap in time"
    );
    assert_eq!(ranges[0].0, 1);
    for pair in ranges.windows(2) {
        assert_eq!(
            pair[0].1, pair[1].0,
            "gap or overlap: {:?} then {:?}",
            pair[0], pair[1]
        );
    }
    let info = store.segments.tag_info(&tag).await.unwrap().unwrap();
    assert_eq!(info.max_id, ranges.last().unwrap().1);
}

/// A process is killed mid-flight; its successor continues above everything it could have
/// issued: segments at or above its `max_id`, snowflakes strictly above its confirmed HWM.
async fn nothing_is_reissued_after_a_kill(url: String) {
    let namespace = common::fresh_namespace();
    let store = idmint_store::open(&url, &common::options(&namespace))
        .await
        .unwrap();
    let tag = Tag::new("crash").unwrap();
    store
        .segments
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();

    let mut child = spawn_child("crash", &url, &namespace);
    let reports = read_reports(&mut child, true);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let max_id: u64 = reports[0][1].parse().unwrap();
    let (worker_id, hwm_ms): (u64, u64) = (
        reports[1][1].parse().unwrap(),
        reports[1][2].parse().unwrap(),
    );
    assert_eq!(hwm_ms, CRASH_HWM_MS);

    // A new process (a fresh connection pool) continues at or above the dead one's max_id.
    let reopened = idmint_store::open(&url, &common::options(&namespace))
        .await
        .unwrap();
    let next = reopened.segments.allocate(&tag, 10).await.unwrap();
    assert!(
        next.start >= max_id,
        "range {next:?} below the crashed node's max_id {max_id}"
    );

    // Once the dead node's lease expires, its worker ID goes to the next node with its HWM...
    tokio::time::sleep(Duration::from_millis(800)).await;
    let request = LeaseRequest {
        node_name: "successor".into(),
        worker_count: 1,
        worker_id: None,
        ttl: Duration::from_secs(30),
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
    };
    let lease = reopened.leases.acquire(&request).await.unwrap();
    assert_eq!((lease.worker_id, lease.hwm_ms), (worker_id, CRASH_HWM_MS));

    // ...and a generator on it starts strictly above that HWM, though its clock is 10 min behind.
    let layout = Layout::parse("twitter").unwrap();
    let clock = ManualClock::shared(CRASH_HWM_MS - 600_000);
    let config = SnowflakeConfig::default().with_max_lead(Duration::from_secs(3_600));
    let fence = Fence::from_hwm_ms(&layout, lease.hwm_ms, u64::MAX);
    let generator = SnowflakeGenerator::builder(layout.clone())
        .worker(lease.worker_id)
        .clock(clock)
        .config(config)
        .fence(fence)
        .build()
        .unwrap();
    let first = layout.decode(generator.next_id().unwrap()).unwrap();
    assert!(
        first.unix_ms > CRASH_HWM_MS,
        "first ID at {} is not above the HWM {CRASH_HWM_MS}",
        first.unix_ms
    );
}

#[tokio::test]
async fn sqlite_nothing_is_reissued_after_a_kill() {
    nothing_is_reissued_after_a_kill(common::sqlite_url()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_nothing_is_reissued_after_a_kill() {
    nothing_is_reissued_after_a_kill(common::server_url("IDMINT_TEST_POSTGRES_URL")).await;
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn mysql_nothing_is_reissued_after_a_kill() {
    nothing_is_reissued_after_a_kill(common::server_url("IDMINT_TEST_MYSQL_URL")).await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_nothing_is_reissued_after_a_kill() {
    nothing_is_reissued_after_a_kill(common::server_url("IDMINT_TEST_REDIS_URL")).await;
}
