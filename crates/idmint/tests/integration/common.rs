//! A real `idmint serve` process for the binary's tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `idmint` binary under test, logging plainly at `info` to a piped stderr (the tests read
/// its log) with stdout discarded; callers add the subcommand and flags.
pub fn idmint_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idmint"));
    command
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// A running `idmint serve` and the addresses it bound.
pub struct Server {
    child: Child,
    /// `http://ADDR`
    pub http: String,
    /// `redis://ADDR/`
    pub resp: String,
    /// The log line that says it serves (addresses, layout, worker ID, node name).
    pub serving: String,
    /// The log lines before that one (the store opened, the lease taken...).
    pub startup: Vec<String>,
    /// Every log line after that one, as it arrives.
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts the binary on `store` with OS-chosen ports; returns once it logged that it serves.
    pub fn start(store: &str, node: &str) -> Self {
        Self::start_with(store, node, &[])
    }

    /// [`Server::start`] with more flags.
    pub fn start_with(store: &str, node: &str, extra: &[&str]) -> Self {
        Self::start_with_env(store, node, extra, &[])
    }

    /// [`Server::start_with`] with `IDMINT_*` (or other) variables set.
    pub fn start_with_env(store: &str, node: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(store, node, ("127.0.0.1:0", "127.0.0.1:0"), extra, env)
    }

    /// [`Server::start_with_env`] on the given HTTP and RESP addresses (to restart a server
    /// where its clients expect it).
    pub fn start_at(
        store: &str,
        node: &str,
        addresses: (&str, &str),
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::launch(Some(store), node, addresses, extra, env)
    }

    /// [`Server::start_with_env`] with no `--store`: `extra` or `env` name it another way
    /// (`--store-file`, `IDMINT_STORE`).
    pub fn start_without_store(node: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::launch(None, node, ("127.0.0.1:0", "127.0.0.1:0"), extra, env)
    }

    fn launch(
        store: Option<&str>,
        node: &str,
        (http, resp): (&str, &str),
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = idmint_command();
        command.envs(env.iter().copied()).arg("serve");
        if let Some(store) = store {
            command.args(["--store", store]);
        }
        command
            .args(["--http", http, "--resp", resp])
            .args(["--node-name", node])
            .args(extra);
        Self::start_command(command)
    }

    /// Runs `command`, an `idmint serve` (under chroot, strace, ...) whose flags or variables
    /// bind both ports; returns once it logged that it serves. Its log is read from stderr.
    pub fn start_command(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut startup = Vec::new();
        let serving = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| {
                    panic!(
                        "idmint serve exited before serving:\n{}",
                        startup.join("\n")
                    )
                })
                .unwrap();
            if line.contains("idmint serving") {
                break line;
            }
            startup.push(line);
        };
        // Keep draining the log so the server never blocks on a full pipe; keep it for tests
        // that read it.
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let field = |name: &str| {
            let start = serving.find(&format!("{name}=")).unwrap() + name.len() + 1;
            serving[start..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned()
        };
        Self {
            http: format!("http://{}", field("http")),
            resp: format!("redis://{}/", field("resp")),
            serving,
            startup,
            child,
            log,
        }
    }

    /// The log lines written since it served.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The server's process ID, to signal it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(self) {
        let pid = self.child.id();
        self.stop_through(pid);
    }

    /// Sends SIGTERM to `pid`, the `idmint serve` that a wrapper this process started runs as
    /// its child (strace), and waits for the wrapper's clean exit.
    pub fn stop_through(mut self, pid: u32) {
        let pid = pid.to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "idmint serve exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("idmint serve did not stop within 10 s of SIGTERM");
    }
}

impl Drop for Server {
    /// A test that fails before [`Server::stop`] must not leave the server running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A loopback port that was free a moment ago (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A SQLite URL of a fresh file in the target folder's temporary space.
pub fn sqlite_url(name: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-bin-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&file);
    format!("sqlite://{}", file.display())
}

/// The IDs of a `{"ids": ["1", ...]}` body (IDs travel as strings); none for an error body.
pub fn ids_of(body: &serde_json::Value) -> Vec<u64> {
    let ids = body["ids"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    ids.iter()
        .map(|id| id.as_str().unwrap().parse::<u64>().unwrap())
        .collect()
}

/// A server on fixed ports, so it can be restarted (or killed and started again) where its
/// clients expect it.
pub struct FixedNode {
    store: String,
    name: String,
    flags: Vec<String>,
    /// `127.0.0.1:PORT` of HTTP.
    pub http: String,
    /// `127.0.0.1:PORT` of the Redis protocol.
    pub resp: String,
    /// The running process, if any.
    pub server: Option<Server>,
}

impl FixedNode {
    /// Starts `idmint serve` on `store` with `flags`, on two free ports kept for restarts.
    pub fn start(store: &str, name: &str, flags: &[&str]) -> Self {
        let mut node = Self {
            store: store.to_owned(),
            name: name.to_owned(),
            flags: flags.iter().map(|&f| f.to_owned()).collect(),
            http: format!("127.0.0.1:{}", free_port()),
            resp: format!("127.0.0.1:{}", free_port()),
            server: None,
        };
        node.start_again();
        node
    }

    /// Starts the process again at the same addresses (after `kill`, or replacing it).
    pub fn start_again(&mut self) {
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        let addresses = (self.http.as_str(), self.resp.as_str());
        let server = Server::start_at(&self.store, &self.name, addresses, &flags, &[]);
        self.server = Some(server);
    }

    /// Stops it gracefully (SIGTERM) and starts it again.
    pub fn restart(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
        self.start_again();
    }

    /// Kills it with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(server) = self.server.take() {
            let pid = server.pid().to_string();
            assert!(Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .unwrap()
                .success());
            drop(server);
        }
    }

    /// Stops it gracefully, if it runs.
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }

    /// The Redis-protocol port.
    pub fn port(&self) -> &str {
        self.resp.rsplit(':').next().unwrap_or_default()
    }
}

/// Runs a setup script of the repository (`tests/clients/setup`, `tests/browser/setup`), which
/// installs what a suite needs and prints `key=value` lines; returns the value of each of
/// `keys`, in order.
pub fn run_setup(script: &str, keys: &[&str]) -> Vec<String> {
    let output = Command::new(crate::clients::repo().join(script))
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("{script} did not start: {e}"));
    assert!(
        output.status.success(),
        "{script} failed: what the suite needs could not be installed"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    keys.iter()
        .map(|key| {
            text.lines()
                .find_map(|line| line.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("{script} printed no {key}: {text}"))
                .to_owned()
        })
        .collect()
}

/// `text` percent-encoded for a URL path segment: every byte but `A-Z a-z 0-9 - . _ ~`.
pub fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
