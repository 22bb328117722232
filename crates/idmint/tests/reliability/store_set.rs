//! Scenario 8 (issue 14): no single point of failure. Three nodes on a set of three stores of
//! different backends (PostgreSQL, MariaDB, and a redis-server of the scenario's own, so it
//! can be killed), each node's home a different store, clients on every node, and on node 2
//! two more drawing one tag fast enough that its buffer lasts only seconds. The Redis
//! store is frozen (SIGSTOP), then killed (SIGKILL) while frozen, together for longer than the
//! HWM lead and than that buffer; then started again on its data. Every ID is checked; the figures (time to move,
//! failed requests, the longest request) go to RELIABILITY.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{Node, NodeSpec};
use crate::own_redis::OwnRedis;

/// 32 worker IDs: about ten per store.
const LAYOUT: &str = "time:41@1ms,worker:5,seq:12";

/// Runs the scenario and checks every ID.
pub fn one_store_lost(postgres: &str, mariadb: &str) {
    let mut redis = OwnRedis::start("reliability-set");
    let namespace = crate::fresh_namespace("set");
    let redis_url = redis.url();
    let mut nodes: Vec<Node> = (0..3)
        .map(|home| {
            let home = home.to_string();
            let args = [
                "--store",
                mariadb,
                "--store",
                &redis_url,
                "--home-store",
                &home,
                "--layout",
                LAYOUT,
                "--namespace",
                &namespace,
                "--default-step",
                "100",
            ];
            Node::new(NodeSpec::new(&format!("set-node-{home}"), postgres, &args))
        })
        .collect();
    for node in &mut nodes {
        node.start();
    }
    let ledger = Arc::new(Ledger::default());
    let mut clients = Clients::new(Load::steady(), &ledger);
    let runtime = crate::runtime();
    for (index, node) in nodes.iter().enumerate() {
        clients.spawn(&runtime, index, node, &MIXED);
    }
    // On node 2, a tag drawn in counts of up to 2,000 without pause: its buffer lasts a few
    // seconds, so during the outage its ranges must come from the other stores.
    let mut drainers = Clients::new(
        Load {
            snowflakes: false,
            tags: vec!["drained".into()],
            max_count: 2_000,
            pause: Duration::ZERO,
        },
        &ledger,
    );
    drainers.spawn(&runtime, 2, &nodes[2], &MIXED[..2]);
    std::thread::sleep(Duration::from_secs(3));
    let before = ledger.report();
    let http = reqwest::Client::new();
    let buffer_seconds = runtime
        .block_on(crate::outage::tag_metric(
            &http,
            &nodes[2].http(),
            "idmint_segment_buffer_seconds",
            "drained",
        ))
        .unwrap_or(f64::NAN);

    // The store goes silent: node 2 (its home) must move; the others are not touched.
    let frozen = crate::outage::Frozen::freeze(redis.pid());
    let frozen_at = Instant::now();
    let freeze = crate::phase(Duration::from_secs(6));
    let killed_for = crate::phase(Duration::from_secs(8));
    let mut moved_after = None;
    let mut at_move = None;
    while frozen_at.elapsed() < freeze + killed_for {
        if moved_after.is_none() && nodes[2].logged("moved to another store of the set") {
            moved_after = Some(frozen_at.elapsed());
            at_move = Some(ledger.report());
        }
        if frozen_at.elapsed() >= freeze && redis.is_running() {
            // Killed while frozen: the store is gone, not just slow.
            redis.kill9();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let moved_after = moved_after.expect("node 2 never moved off the lost store");
    let at_move = at_move.unwrap_or_default();
    let during = ledger.report();

    // The store comes back on its data: nothing special is needed.
    redis.restart();
    std::thread::sleep(Duration::from_secs(4));
    drainers.stop(&runtime);
    clients.stop(&runtime);
    for node in &mut nodes {
        node.stop_cleanly();
    }
    // The frozen process was killed; thawing its PID is harmless.
    drop(frozen);

    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    let failed_after_move = report.failed_total() - at_move.failed_total();
    println!(
        "reliability: store set (PostgreSQL + MariaDB + Redis, Redis frozen {freeze:?} then killed \
         {killed_for:?}, restarted; node 2's drained tag had {buffer_seconds:.1} s of buffer): \
         node 2 moved {:.1} s after the freeze; {} requests during the outage; failed before the \
         move {}, after it {failed_after_move}; {report}",
        moved_after.as_secs_f64(),
        during.requests - before.requests,
        at_move.failed_total() - before.failed_total(),
    );
    assert_eq!(
        before.failed_total(),
        0,
        "failures before the outage: {before}"
    );
    assert_eq!(failed_after_move, 0, "failures after the move: {report}");
    assert!(
        report.ids > 10_000,
        "too little load to mean anything: {report}"
    );
}
