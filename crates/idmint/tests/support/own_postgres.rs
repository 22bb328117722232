//! A PostgreSQL server of a test's own (included with `#[path]`), as `scripts/with-stores`
//! starts the shared one: initdb in a fresh folder under `/tmp`, loopback on a free port,
//! durable settings (fsync, synchronous commit), run as the `postgres` user when the test runs
//! as root. A test may stop it the hard way and start it again, or change its settings, without
//! disturbing the servers other tests share. Stopped by PID when dropped.
//!
//! Two roles: `idmint` (password `idmint`, owner of `idmint_test`) for the node, and the
//! superuser `admin` (password `admin`) for the test's own faults.
// Each test binary that includes this file uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::root::run_quietly;

pub struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl OwnPostgres {
    /// Initialises and starts one in a fresh folder named after `name`.
    pub fn start(name: &str) -> Self {
        let bin = server_binaries();
        let dir = PathBuf::from("/tmp").join(format!("idmint-{name}-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if crate::root::is_root() {
            run_quietly(Command::new("chown").arg("postgres:").arg(&dir));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Self { bin, dir, port };
        run_quietly(
            server
                .as_postgres(&server.bin.join("initdb"))
                .arg("-D")
                .arg(server.data())
                .args(["-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
                .args(["--auth-local=trust", "--auth-host=scram-sha-256"]),
        );
        let settings = format!(
            "\n# idmint test server\nlisten_addresses = '127.0.0.1'\nport = {port}\n\
             unix_socket_directories = '{}'\nfsync = on\nsynchronous_commit = on\n\
             full_page_writes = on\nmax_connections = 50\n",
            server.dir.display()
        );
        let conf = server.data().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push_str(&settings);
        std::fs::write(&conf, text).unwrap();
        server.start_again();
        run_quietly(
            Command::new(server.bin.join("psql"))
                .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
                .arg(&server.dir)
                .args(["-p", &port.to_string(), "-U", "postgres", "-d", "postgres"])
                .args(["-c", "CREATE ROLE idmint LOGIN PASSWORD 'idmint'"])
                .args(["-c", "CREATE ROLE admin LOGIN SUPERUSER PASSWORD 'admin'"])
                .args(["-c", "CREATE DATABASE idmint_test OWNER idmint"]),
        );
        server
    }

    /// The node's URL.
    pub fn url(&self) -> String {
        format!(
            "postgres://idmint:idmint@127.0.0.1:{}/idmint_test",
            self.port
        )
    }

    /// The superuser's URL, for the test's faults.
    pub fn admin_url(&self) -> String {
        format!("postgres://admin:admin@127.0.0.1:{}/idmint_test", self.port)
    }

    /// Stops it with `pg_ctl stop -m immediate`: every process quits at once, with no
    /// checkpoint, as in a crash; transactions in flight are lost.
    pub fn stop_immediate(&self) {
        run_quietly(
            self.as_postgres(&self.bin.join("pg_ctl"))
                .arg("stop")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "-t", "60"]),
        );
    }

    /// Starts it (again: after a crash stop it recovers from its WAL) and returns once it
    /// accepts connections.
    pub fn start_again(&self) {
        let log = self.dir.join("postgres.log");
        run_quietly(
            self.as_postgres(&self.bin.join("pg_ctl"))
                .arg("start")
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(&log)
                .args(["-w", "-t", "60"]),
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The postmaster's PID while it runs.
    fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// `program`, run as the `postgres` user when the test runs as root (initdb refuses root).
    fn as_postgres(&self, program: &Path) -> Command {
        let mut command = if crate::root::is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.current_dir(&self.dir);
        command
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            // SIGQUIT is PostgreSQL's immediate shutdown: the postmaster takes its children
            // with it. SIGKILL after that, should it not be gone.
            let _ = Command::new("kill")
                .args(["-QUIT", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
            for _ in 0..100 {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest `/usr/lib/postgresql/N/bin` with a server (as `scripts/with-stores` picks it).
fn server_binaries() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("pg_ctl").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).expect(
        "PostgreSQL's server binaries in /usr/lib/postgresql (scripts/with-stores installs them)",
    )
}
