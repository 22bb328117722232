//! Scenario 7: the ID space changed between two phases of load. Two nodes mint under SIGKILL
//! chaos; then one is killed and the other stopped, the namespace moves to an earlier epoch
//! through `idmint id-space change` (refused while the killed node's lease is live, then
//! accepted), and both come back under the new epoch and mint again under chaos. Every ID of
//! both phases goes into one ledger: no duplicate anywhere, and every snowflake of the second
//! phase above every one of the first.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;
use idmint_test_support::lease_timing::LeaseTiming;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{kill_at_random, Node, NodeSpec};

/// Eight worker IDs for two nodes that keep dying.
const LAYOUT: &str = "time:41@1ms,worker:3,seq:12";
/// The first phase's epoch, and the second's, a day earlier (so above: every ID of a given
/// moment is larger).
const EPOCH_MS: u64 = 1_735_689_600_000;
const EARLIER_EPOCH_MS: u64 = EPOCH_MS - 86_400_000;

/// Runs the scenario on `store` and checks every ID.
pub fn changed_between_phases(label: &str, store: &str) {
    let namespace = crate::fresh_namespace(label);
    let args = |epoch: u64| -> Vec<String> {
        [
            "--layout",
            LAYOUT,
            "--epoch",
            &epoch.to_string(),
            "--namespace",
            &namespace,
            "--default-step",
            "100",
        ]
        .iter()
        .chain(&LeaseTiming::SHORT.flags())
        .map(|a| a.to_string())
        .collect()
    };
    let mut nodes: Vec<Node> = (0..2)
        .map(|i| {
            let mut spec = NodeSpec::new(&format!("node-{i}"), store, &[]);
            spec.args = args(EPOCH_MS);
            Node::new(spec)
        })
        .collect();
    let ledger = Arc::new(Ledger::default());
    let runtime = crate::runtime();
    let length = crate::phase(Duration::from_secs(5));

    let kills_before = phase(&mut nodes, &ledger, &runtime, length);
    let first = ledger
        .snowflake_bounds(0)
        .expect("the first phase minted snowflakes");
    let boundary = ledger.batch_count();
    nodes[0].kill9();
    nodes[1].stop_cleanly();

    // The killed node's lease stays live up to its TTL: the change waits for it.
    let change = |epoch: u64| {
        Command::new(env!("CARGO_BIN_EXE_idmint"))
            .args([
                "id-space",
                "change",
                "--store",
                store,
                "--namespace",
                &namespace,
            ])
            .args(["--epoch", &epoch.to_string()])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let started = Instant::now();
    let mut refusals = 0;
    loop {
        let out = change(EARLIER_EPOCH_MS);
        if out.status.success() {
            break;
        }
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("still hold worker leases"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{err}");
        refusals += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    // A later epoch now lies below what was issued: refused.
    let back = change(EPOCH_MS);
    assert!(!back.status.success());
    assert!(String::from_utf8_lossy(&back.stderr).contains("would overlap"));

    for node in &mut nodes {
        node.spec_mut().args = args(EARLIER_EPOCH_MS);
    }
    let kills_after = phase(&mut nodes, &ledger, &runtime, length);
    for node in &mut nodes {
        node.stop_cleanly();
    }

    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    let second = ledger
        .snowflake_bounds(boundary)
        .expect("the second phase minted snowflakes");
    println!(
        "reliability: ID space changed on {label}: {kills_before}+{kills_after} SIGKILLs, change \
         refused {refusals} times while a lease was live; first phase {first:?}, second \
         {second:?}; {report}"
    );
    assert!(
        second.0 > first.1,
        "the second phase issued {}, not above the first phase's {}",
        second.0,
        first.1
    );
    assert!(
        report.ids > 5_000,
        "too little load to mean anything: {report}"
    );
}

/// One phase: the nodes started, clients on each, a node killed and restarted every 1 to 2 s,
/// then the clients stopped (the nodes keep running). Returns the number of kills.
fn phase(
    nodes: &mut [Node],
    ledger: &Arc<Ledger>,
    runtime: &tokio::runtime::Runtime,
    length: Duration,
) -> usize {
    for node in nodes.iter_mut() {
        node.start();
    }
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["orders".into()],
            max_count: 50,
            pause: Duration::from_millis(1),
        },
        ledger,
    );
    for (index, node) in nodes.iter().enumerate() {
        clients.spawn(runtime, index, node, &MIXED);
    }
    let started = Instant::now();
    let kills = kill_at_random(nodes, 0x2545_F491_4F6C_DD1D, || started.elapsed() < length);
    std::thread::sleep(Duration::from_secs(1));
    clients.stop(runtime);
    kills
}
