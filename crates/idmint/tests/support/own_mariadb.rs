//! A MariaDB server of a test's own (included with `#[path]`), as `scripts/with-stores` starts
//! the shared one: `mariadb-install-db` in a fresh folder under `/tmp`, loopback on a free port,
//! durable settings (`innodb_flush_log_at_trx_commit=1`, `sync_binlog=1`), run as the `mysql`
//! user when the test runs as root. A test may kill it and start it again on the same folder
//! without disturbing the servers other tests share. Stopped by PID when dropped.
//!
//! Two users: `idmint` (password `idmint`, all rights on `idmint_test`) for the node, and
//! `admin` (password `admin`, every right) for the test's own faults.
// Each test binary that includes this file uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::root::run_quietly;

pub struct OwnMariadb {
    dir: PathBuf,
    port: u16,
    user: String,
    child: Option<Child>,
}

impl OwnMariadb {
    /// Installs and starts one in a fresh folder named after `name`.
    pub fn start(name: &str) -> Self {
        let dir =
            PathBuf::from("/tmp").join(format!("idmint-{name}-mariadb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let user = if crate::root::is_root() {
            run_quietly(Command::new("chown").arg("-R").arg("mysql:").arg(&dir));
            "mysql".to_owned()
        } else {
            std::env::var("USER").unwrap_or_default()
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        run_quietly(
            Command::new(first_of(&["mariadb-install-db", "mysql_install_db"]))
                .arg("--no-defaults")
                .arg(format!("--datadir={}", dir.join("data").display()))
                .arg(format!("--user={user}"))
                .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
                .arg("--skip-name-resolve"),
        );
        let mut server = Self {
            dir,
            port,
            user,
            child: None,
        };
        server.start_again();
        let grants = "CREATE DATABASE idmint_test;\n\
            CREATE USER 'idmint'@'127.0.0.1' IDENTIFIED BY 'idmint';\n\
            GRANT ALL PRIVILEGES ON `idmint_test`.* TO 'idmint'@'127.0.0.1';\n\
            CREATE USER 'admin'@'127.0.0.1' IDENTIFIED BY 'admin';\n\
            GRANT ALL PRIVILEGES ON *.* TO 'admin'@'127.0.0.1' WITH GRANT OPTION;\n";
        run_quietly(server.client().args(["-e", grants]));
        server
    }

    /// The node's URL.
    pub fn url(&self) -> String {
        format!("mysql://idmint:idmint@127.0.0.1:{}/idmint_test", self.port)
    }

    /// The admin's URL, for the test's faults.
    pub fn admin_url(&self) -> String {
        format!("mysql://admin:admin@127.0.0.1:{}/idmint_test", self.port)
    }

    /// SIGKILL: the server dies mid-transaction; InnoDB recovers at the next start.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts mariadbd (again) on the same folder and port, and returns once it answers.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "mariadbd already runs");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("mariadbd.log"))
            .unwrap();
        let child = Command::new(first_of(&["mariadbd", "mysqld"]))
            .arg("--no-defaults")
            .arg(format!("--user={}", self.user))
            .arg(format!("--datadir={}", self.dir.join("data").display()))
            .arg(format!("--tmpdir={}", self.dir.join("tmp").display()))
            .arg(format!("--socket={}", self.socket()))
            .arg(format!(
                "--pid-file={}",
                self.dir.join("mariadbd.pid").display()
            ))
            .arg(format!("--port={}", self.port))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
            .args(["--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1"])
            .args([
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mariadbd (installed by scripts/with-stores)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ping = Command::new(first_of(&["mariadb-admin", "mysqladmin"]))
                .args([
                    "--no-defaults",
                    "--protocol=socket",
                    "-S",
                    &self.socket(),
                    "-uroot",
                ])
                .arg("ping")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            if ping.success() {
                return;
            }
            assert!(Instant::now() < deadline, "mariadbd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn socket(&self) -> String {
        self.dir.join("mariadbd.sock").display().to_string()
    }

    /// The command-line client as root over the socket.
    fn client(&self) -> Command {
        let mut command = Command::new(first_of(&["mariadb", "mysql"]));
        command.args([
            "--no-defaults",
            "--protocol=socket",
            "-S",
            &self.socket(),
            "-uroot",
        ]);
        command
    }
}

impl Drop for OwnMariadb {
    fn drop(&mut self) {
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The first of `names` found in PATH or the sbin folders (where Debian puts mariadbd).
fn first_of(names: &[&str]) -> PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    let folders = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
        .map(PathBuf::from);
    for folder in folders {
        for name in names {
            let candidate = folder.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!("none of {names:?} found (scripts/with-stores installs MariaDB)")
}
