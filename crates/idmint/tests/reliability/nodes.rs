//! Scenario 1: three nodes on one store, clients on every node over HTTP and the Redis
//! protocol, and every couple of seconds one node killed with SIGKILL and started again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;
use idmint_test_support::lease_timing::LeaseTiming;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{kill_at_random, Node, NodeSpec};

/// Eight worker IDs for three nodes that keep dying: expired worker IDs are taken over
/// often, so the fenced HWM is what keeps the IDs apart.
const LAYOUT: &str = "time:41@1ms,worker:3,seq:12";

/// Runs the scenario on `store` and checks every ID.
pub fn killed_and_restarted(label: &str, store: &str) {
    let namespace = crate::fresh_namespace(label);
    let mut args = vec!["--layout", LAYOUT, "--namespace", &namespace];
    args.extend(["--default-step", "100"]);
    args.extend(LeaseTiming::SHORT.flags());
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::new(NodeSpec::new(&format!("node-{i}"), store, &args)))
        .collect();
    for node in &mut nodes {
        node.start();
    }
    let ledger = Arc::new(Ledger::default());
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["orders".into(), "users".into()],
            max_count: 50,
            pause: Duration::from_millis(1),
        },
        &ledger,
    );
    let runtime = crate::runtime();
    for (index, node) in nodes.iter().enumerate() {
        clients.spawn(&runtime, index, node, &MIXED);
    }

    // The chaos: a pseudo-random node killed every 1 to 2 s, back 200 ms later.
    let length = crate::phase(Duration::from_secs(12));
    let started = Instant::now();
    let kills = kill_at_random(&mut nodes, 0x9E37_79B9_7F4A_7C15, || {
        started.elapsed() < length
    });
    // Let every node serve a while after the last restart, then stop the clients.
    std::thread::sleep(Duration::from_secs(2));
    clients.stop(&runtime);
    for node in &mut nodes {
        node.stop_cleanly();
    }

    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    println!("reliability: nodes on {label}: {kills} SIGKILLs in {length:?}; {report}");
    assert!(
        report.ids > 10_000,
        "too little load to mean anything: {report}"
    );
}
