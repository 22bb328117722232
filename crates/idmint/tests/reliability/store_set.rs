//! Scenario 6 (issue 14): no single point of failure. Three nodes on a set of three stores of
//! different backends (PostgreSQL, MariaDB, and a redis-server of the scenario's own, so it
//! can be killed), each node's home a different store, clients on every node. The Redis
//! store is frozen (SIGSTOP), then killed (SIGKILL) while frozen, together for longer than the
//! HWM lead; then started again on its data. Every ID is checked; the figures (time to move,
//! failed requests, the longest request) go to RELIABILITY.md.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{free_port, Node, NodeSpec};

/// 32 worker IDs: about ten per store.
const LAYOUT: &str = "time:41@1ms,worker:5,seq:12";

/// A redis-server that the scenario freezes, kills and starts again on the same port and data.
struct Redis {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Redis {
    fn start() -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("reliability-set-redis-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = Self {
            port: free_port(),
            dir,
            child: None,
        };
        redis.spawn();
        redis
    }

    /// Starts redis-server on the port and folder (append-only file, fsync always: the
    /// durability the Redis store requires, so a restart finds every write).
    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (installed by scripts/with-stores)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("redis-server runs").id()
    }

    /// SIGKILL (works on a stopped process too).
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill9();
    }
}

/// Runs the scenario and checks every ID.
pub fn one_store_lost(postgres: &str, mariadb: &str) {
    let mut redis = Redis::start();
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
    let mut clients = Clients::new(
        Load {
            snowflakes: true,
            tags: vec!["orders".into(), "users".into()],
            max_count: 20,
            pause: Duration::from_millis(2),
        },
        &ledger,
    );
    let runtime = crate::runtime();
    for (index, node) in nodes.iter().enumerate() {
        clients.spawn(&runtime, index, node, &MIXED);
    }
    std::thread::sleep(Duration::from_secs(3));
    let before = ledger.report();

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
        if frozen_at.elapsed() >= freeze && redis.child.is_some() {
            // Killed while frozen: the store is gone, not just slow.
            redis.kill9();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let moved_after = moved_after.expect("node 2 never moved off the lost store");
    let at_move = at_move.unwrap_or_default();
    let during = ledger.report();

    // The store comes back on its data: nothing special is needed.
    redis.spawn();
    std::thread::sleep(Duration::from_secs(4));
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
         {killed_for:?}, restarted): node 2 moved {:.1} s after the freeze; {} requests during the \
         outage; failed before the move {}, after it {failed_after_move}; {report}",
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
