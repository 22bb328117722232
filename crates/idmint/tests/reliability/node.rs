//! A real `idmint serve` process that a scenario starts, kills, freezes and restarts on the
//! same ports, so its clients reconnect to the same addresses.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a node is started; kept for its restarts.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// `--node-name`.
    pub name: String,
    /// `--store`.
    pub store: String,
    /// More `idmint serve` flags.
    pub args: Vec<String>,
    /// Extra environment (e.g. libfaketime's).
    pub env: Vec<(String, String)>,
}

impl NodeSpec {
    /// A node called `name` on `store` with `args`.
    pub fn new(name: &str, store: &str, args: &[&str]) -> Self {
        Self {
            name: name.into(),
            store: store.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
        }
    }
}

/// One node: its process (while running), its fixed ports, its log.
pub struct Node {
    spec: NodeSpec,
    http_port: u16,
    resp_port: u16,
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
    /// Bumped each time the process is gone (killed or stopped): a reply received while it
    /// read the same value before and after the request came from one process lifetime.
    incarnation: Arc<AtomicU64>,
}

impl Node {
    /// A node with two free loopback ports, not started.
    pub fn new(spec: NodeSpec) -> Self {
        Self {
            spec,
            http_port: free_port(),
            resp_port: free_port(),
            child: None,
            log: Arc::new(Mutex::new(Vec::new())),
            incarnation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The spec, to change before a restart (e.g. its environment).
    pub fn spec_mut(&mut self) -> &mut NodeSpec {
        &mut self.spec
    }

    /// `http://127.0.0.1:PORT`
    pub fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// `redis://127.0.0.1:PORT/`
    pub fn resp(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.resp_port)
    }

    /// The process-lifetime counter its clients read around each request.
    pub fn incarnation(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.incarnation)
    }

    /// The process ID of the running process.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("node not running").id()
    }

    /// Starts the process and waits until it logs that it serves; if it exits first, returns
    /// its log instead.
    pub fn try_start(&mut self) -> Result<(), String> {
        assert!(
            self.child.is_none(),
            "node {} already running",
            self.spec.name
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_idmint"))
            .args(["serve", "--store", &self.spec.store])
            .args(["--http", &format!("127.0.0.1:{}", self.http_port)])
            .args(["--resp", &format!("127.0.0.1:{}", self.resp_port)])
            .args(["--node-name", &self.spec.name])
            .args(&self.spec.args)
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (serving_tx, serving_rx) = mpsc::channel();
        let log = Arc::clone(&self.log);
        std::thread::spawn(move || {
            let mut serving_tx = Some(serving_tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("idmint serving") {
                    if let Some(tx) = serving_tx.take() {
                        let _ = tx.send(());
                    }
                }
                log.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if serving_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if let Some(status) = child.try_wait().unwrap() {
                // Let the reader thread take the last lines.
                std::thread::sleep(Duration::from_millis(200));
                return Err(format!("exited with {status}:\n{}", self.log_text()));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "node {} did not serve within 60 s:\n{}",
                    self.spec.name,
                    self.log_text()
                );
            }
        }
    }

    /// Starts the process; panics with its log if it does not come up.
    pub fn start(&mut self) {
        if let Err(log) = self.try_start() {
            panic!("node {} did not start: {log}", self.spec.name);
        }
    }

    /// SIGKILL: no shutdown, no release, no give-back.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("node not running");
        child.kill().unwrap();
        child.wait().unwrap();
        self.incarnation.fetch_add(1, Ordering::SeqCst);
    }

    /// SIGTERM and the exit status of the graceful stop (at most 20 s).
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("node not running");
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "node {} did not stop within 20 s of SIGTERM",
                    self.spec.name
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.incarnation.fetch_add(1, Ordering::SeqCst);
        status
    }

    /// SIGTERM, then a check that the node stopped cleanly; a failure shows the node's log,
    /// which holds the reason (the exit status alone does not).
    pub fn stop_cleanly(&mut self) {
        let status = self.stop();
        assert!(
            status.success(),
            "node {} stopped with {status}; its log:\n{}",
            self.spec.name,
            self.log_text()
        );
    }

    /// SIGSTOP: the process freezes, sockets and all.
    pub fn freeze(&self) {
        signal(self.pid(), "STOP");
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        signal(self.pid(), "CONT");
    }

    /// Whether any line of the log so far contains `needle`.
    pub fn logged(&self, needle: &str) -> bool {
        self.log
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains(needle))
    }

    /// The whole log so far.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Node {
    /// A failing scenario must not leave processes behind (a frozen one is thawed first, so
    /// the kill is delivered at once).
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "CONT");
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `SIG<name>` to `pid` with `kill(1)`.
pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {pid} failed");
}

/// A loopback port free right now, below the ephemeral range (32768 and up on Linux), so no
/// client's outgoing connection can take it while its node restarts.
pub fn free_port() -> u16 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = u64::from(std::process::id()) * 7919;
    for _ in 0..2_000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + ((seed + n * 104_729) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000..32000");
}

/// The chaos of the node scenarios: while `go_on()`, every 1 to 2 s a pseudo-random node of
/// `nodes` is killed with SIGKILL and started again 200 ms later. The choice is a xorshift of
/// `seed` and the process ID, so runs differ but a run can be replayed from its log. Returns
/// the number of kills.
pub fn kill_at_random(nodes: &mut [Node], seed: u64, go_on: impl Fn() -> bool) -> usize {
    let mut seed = seed ^ u64::from(std::process::id());
    let mut kills = 0;
    while go_on() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(1_000 + seed % 1_000));
        let victim = (seed % nodes.len() as u64) as usize;
        nodes[victim].kill9();
        kills += 1;
        std::thread::sleep(Duration::from_millis(200));
        nodes[victim].start();
    }
    kills
}
