//! Scenario 4: lease loss. Node A is frozen with SIGSTOP past its lease TTL; node B, started
//! with A's worker ID as its static `--worker-id`, takes it over (the store refuses B while A's
//! lease lives, so B waits for it to expire: `--worker-wait`, one lease TTL by default); A is
//! thawed. A must notice (its renewal fails on the stale fencing token),
//! say so on `/readyz`, and continue on another worker ID, while nothing either node handed
//! out repeats: B starts above the HWM A had confirmed, and A never passed it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;
use idmint_test_support::lease_timing::LeaseTiming;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, Protocol};
use crate::node::{Node, NodeSpec};

const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// `GET /readyz`: the status and the worker ID or error code.
async fn readyz(http: &reqwest::Client, node: &str) -> (u16, serde_json::Value) {
    match http.get(format!("{node}/readyz")).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.json().await.unwrap_or_default())
        }
        Err(_) => (0, serde_json::Value::Null),
    }
}

/// Runs the scenario on `store`.
pub fn frozen_past_ttl(label: &str, store: &str) {
    let namespace = crate::fresh_namespace("lease");
    let mut timing = vec!["--layout", LAYOUT, "--namespace", &namespace];
    timing.extend(LeaseTiming::SHORT_LEAD.flags());
    let mut a = Node::new(NodeSpec::new("lease-a", store, &timing));
    a.start();
    let runtime = crate::runtime();
    let http = reqwest::Client::new();
    let (status, body) = runtime.block_on(readyz(&http, &a.http()));
    assert_eq!(status, 200, "{body}");
    let worker = body["worker_id"].as_u64().unwrap();

    let ledger = Arc::new(Ledger::default());
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["orders".into()],
            max_count: 100,
            pause: Duration::from_millis(1),
        },
        &ledger,
    );
    clients.spawn(&runtime, 0, &a, &[Protocol::Http, Protocol::Resp]);
    std::thread::sleep(crate::phase(Duration::from_secs(2)));

    // A freezes; B asks for A's worker ID until the store hands it over (after A's TTL). B
    // waits for that itself (its --worker-wait is the TTL, and A's lease was last renewed before
    // B started); the loop only covers a slow start.
    a.freeze();
    let frozen_at = Instant::now();
    let mut b_args: Vec<&str> = timing.to_vec();
    let worker_text = worker.to_string();
    b_args.extend(["--worker-id", &worker_text]);
    let mut b = Node::new(NodeSpec::new("lease-b", store, &b_args));
    let mut refusals = 0;
    loop {
        match b.try_start() {
            Ok(()) => break,
            Err(log) => {
                assert!(
                    log.contains("held by live node"),
                    "B failed otherwise: {log}"
                );
                refusals += 1;
                assert!(
                    frozen_at.elapsed() < Duration::from_secs(20),
                    "B never got worker {worker}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    let taken_after = frozen_at.elapsed();
    clients.spawn(&runtime, 1, &b, &[Protocol::Http, Protocol::Resp]);
    std::thread::sleep(Duration::from_secs(1));

    // A thaws: it must report the loss, then serve again on another worker ID.
    a.thaw();
    let (saw_not_ready, new_worker) = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut saw_not_ready = false;
        loop {
            let (status, body) = readyz(&http, &a.http()).await;
            if status == 503 {
                assert_eq!(body["error"]["code"], "lease_not_held", "{body}");
                saw_not_ready = true;
            } else if status == 200 && body["worker_id"].as_u64() != Some(worker) {
                break (saw_not_ready, body["worker_id"].as_u64().unwrap());
            }
            assert!(
                Instant::now() < deadline,
                "A never re-acquired: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    std::thread::sleep(crate::phase(Duration::from_secs(2)));
    clients.stop(&runtime);
    assert!(
        a.logged("worker lease lost"),
        "A did not log the loss:\n{}",
        a.log_text()
    );
    a.stop_cleanly();
    b.stop_cleanly();
    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    println!(
        "reliability: lease loss on {label}: B took worker {worker} {} ms after A froze (having waited for A's lease to expire; {refusals} failed starts); A saw the loss (readyz 503 seen: {saw_not_ready}) and moved to worker {new_worker}; {report}",
        taken_after.as_millis()
    );
    // Whether a poll every 5 ms lands in the window between A noticing the loss and A holding
    // another worker ID is timing: on Redis that window can be a few ms, and a busy machine
    // missed it once in CI. What must hold is above: A logged the loss, and every 503 it gave
    // in that window said `lease_not_held`.
    assert!(
        b.logged("waiting for this worker lease to expire") && b.logged("holder=lease-a"),
        "B did not wait for A's lease:\n{}",
        b.log_text()
    );
}
