//! A redis-server of a test's own, shared by the integration tests and the failure suite
//! (included with `#[path]`): a test may freeze, kill and restart it without disturbing the
//! store servers other tests share. Durable as the Redis store requires (append-only file,
//! fsync always), so a restart on the same folder finds every write. Stopped by PID when
//! dropped.
// Each test binary that includes this file uses part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct OwnRedis {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts one in a fresh folder named after `name`, on a free loopback port.
    pub fn start(name: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{name}-redis-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = Self {
            port,
            dir,
            child: None,
        };
        redis.restart();
        redis
    }

    /// Starts redis-server (again) on the same port and folder, and waits for it to answer.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "redis-server already runs");
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
        while !self.answers_ping() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("redis-server runs").id()
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    fn answers_ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut reply = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }

    /// Sends a signal (`-STOP`, `-CONT`) to the running server.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([name, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGKILL (a stopped process too); [`restart`](Self::restart) brings it back.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A frozen process must be thawed to exit cleanly; a running one ignores this.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .stderr(Stdio::null())
                .status();
        }
        self.kill9();
    }
}
