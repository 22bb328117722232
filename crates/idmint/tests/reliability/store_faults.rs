//! Scenario 9: the store fault matrix (issue 27). One driver, [`run`], for every case: a node
//! on the store (a namespace of its own), mixed load (snowflakes and two tags, over HTTP and
//! the Redis protocol) into a [`Ledger`], the fault injected into the real server or file and
//! held [`HOLD`], then cleared. From the moment it clears, the time until the node serves again
//! by itself: a new tag over HTTP (a store write) succeeds, a snowflake succeeds, `/readyz` is
//! 200; it must be within [`RECOVERY_BAR`]. The load runs 2 s more without one failed request;
//! then no ID was handed out twice, the node still holds the worker ID it had before the
//! fault (its lease was never lost), and SIGTERM stops it with exit status 0, its segment tails
//! given back and its lease released.
//!
//! The node renews its lease every 500 ms with an HWM lead of 1.5 s, so a fault of 3 s runs the
//! snowflakes dry, and recovery needs the lease path as well as the segment path; the lease TTL
//! (10 s) outlasts every fault, so the lease must survive it.
//!
//! The faults, each with servers of the test's own where the fault would disturb the servers
//! other tests share (`support/own_*.rs`):
//!
//! | store | fault | how |
//! | --- | --- | --- |
//! | SQLite | disk full | the data folder on a 2 MB tmpfs, filled with one file, then the file removed |
//! | SQLite | locked | another process (python3's sqlite3) holds `BEGIN IMMEDIATE`: SQLITE_BUSY |
//! | SQLite | read-only | the file and its folder made immutable (`chattr +i`) while another process holds the write lock, then made writable |
//! | PostgreSQL | restart | `pg_ctl stop -m immediate` under load (transactions in flight are lost), started again |
//! | PostgreSQL | sessions terminated | `pg_terminate_backend` of every session of the node's role, every 100 ms |
//! | PostgreSQL | `statement_timeout` | `ALTER ROLE ... SET statement_timeout = '1ms'`, the node's sessions cut so that it reconnects under it, then `RESET`: the node's sessions set their own (its call timeout), so the role's must never reach them |
//! | MariaDB | restart | mariadbd killed with SIGKILL (InnoDB recovers at start), started again |
//! | MariaDB | connections killed | `KILL CONNECTION` of every connection of the node's user in `information_schema.processlist`, every 100 ms |
//! | Redis | restart | redis-server killed with SIGKILL, started again on its append-only file |
//! | Redis | clients killed | `CLIENT KILL TYPE normal SKIPME yes`, every 100 ms |
//! | Redis | `maxmemory` reached | `maxmemory` set to the memory in use with `noeviction`, written to until `-OOM`, then 64 KiB lower so it stays reached: the node's writes get `-OOM` replies; then 0 |
//!
//! Why the read-only fault is made this way: a file made read-only does not bite on descriptors
//! already open (neither `chmod` nor the immutable attribute is checked after `open`), root
//! ignores file modes, and remounting a file system read-only fails with `EBUSY` while files
//! are open for writing. What an operator's read-only file does to a running node is what it
//! does to the node's *next* connection: SQLite opens the file read-only when it cannot open it
//! for writing, and that connection refuses every write (`SQLITE_READONLY`) for as long as it
//! lives. So the fault makes the node open connections while the file is read-only: another
//! process holds SQLite's write lock for 2 s, far longer than the node's store call timeout
//! (250 ms in this case), so the node gives up on every connection of its pool (4) waiting for
//! the lock, closes them when the lock is freed, and opens new ones, read-only, in the last
//! second, which holds without the lock. `chattr +i` refuses the open for
//! writing to root too, so the node runs as it does in every other scenario (as `chmod` would
//! need a node run as another user, from a copy of the binary that user can reach). The case
//! checks that the node did meet the read-only file (its log names it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::Layout;
use idmint_test_support::lease_timing::LeaseTiming;
use sqlx::{AssertSqlSafe, Connection};
use tokio::runtime::Runtime;

use crate::ledger::Ledger;
use crate::load::{Clients, Load, MIXED};
use crate::node::{Node, NodeSpec};
use crate::own_mariadb::OwnMariadb;
use crate::own_postgres::OwnPostgres;
use crate::own_redis::OwnRedis;
use crate::tmpfs::Tmpfs;

const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// How long each fault holds.
pub const HOLD: Duration = Duration::from_secs(3);

/// The longest a node may take to serve again once the fault cleared (issue 27).
pub const RECOVERY_BAR: Duration = Duration::from_secs(2);

/// A fault of the store, injected into the real server or file, and cleared again.
pub trait Fault {
    /// The store URL the node is started on.
    fn store(&self) -> String;

    /// More `idmint serve` flags the fault needs.
    fn node_args(&self) -> Vec<String> {
        Vec::new()
    }

    /// Starts the fault.
    fn inject(&mut self, runtime: &Runtime);

    /// Called about every 100 ms while the fault holds, with the time since it was injected:
    /// faults that are acts (killing sessions) repeat them.
    fn keep(&mut self, _runtime: &Runtime, _held: Duration) {}

    /// Ends the fault and returns once the store is whole again (the moment recovery is timed
    /// from), with what the fault did, in a few words.
    fn clear(&mut self, runtime: &Runtime) -> String;

    /// Checks what the node's log shows of the fault: that it met it, for faults whose effect
    /// on the node is not certain otherwise (or that it never did, for one it is immune to).
    fn check_log(&self, _node: &Node) {}
}

/// Runs the fault matrix's driver for one case.
pub fn run(store_label: &str, fault_label: &str, fault: &mut dyn Fault) {
    let namespace = crate::fresh_namespace("faults");
    let mut args: Vec<String> = ["--layout", LAYOUT, "--namespace", &namespace]
        .iter()
        .chain(&LeaseTiming::FAULTS.flags())
        .map(|arg| arg.to_string())
        .collect();
    args.extend(fault.node_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut node = Node::new(NodeSpec::new("faults", &fault.store(), &args));
    node.start();
    let runtime = crate::runtime();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let worker = runtime
        .block_on(ready_worker(&http, &node.http()))
        .unwrap_or_else(|| panic!("not ready at start:\n{}", node.log_text()));

    let ledger = Arc::new(Ledger::default());
    let mut clients = Clients::new(Load::steady(), &ledger);
    clients.spawn(&runtime, 0, &node, &MIXED);
    std::thread::sleep(Duration::from_millis(1_500));
    let before = ledger.report();
    assert_eq!(
        before.failed_total(),
        0,
        "failures before the fault: {before}"
    );

    // New tags during the fault too: a store write every 200 ms, whatever the buffers hold.
    let probing = Arc::new(AtomicBool::new(true));
    let probes_failed = Arc::new(AtomicU64::new(0));
    // A new tag makes a few store calls, each bounded by the node's call timeout (5 s, as long
    // as `http`'s): under a loaded machine its 503 can come after 5 s, so the prober waits
    // longer than all of them and reads a slow refusal as the refusal it is, not as no answer.
    let prober_http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let prober = runtime.spawn(probe_new_tags(
        prober_http,
        node.http(),
        Arc::clone(&probing),
        Arc::clone(&probes_failed),
    ));
    fault.inject(&runtime);
    let injected = Instant::now();
    while injected.elapsed() < HOLD {
        std::thread::sleep(Duration::from_millis(100));
        fault.keep(&runtime, injected.elapsed());
    }
    let what = fault.clear(&runtime);
    let cleared = Instant::now();
    probing.store(false, Ordering::SeqCst);
    let during = ledger.report();
    let recovered = runtime.block_on(serves_again(&http, &node, cleared));
    runtime.block_on(prober).unwrap();
    fault.check_log(&node);

    // Steady again: 2 s of load without one failure.
    let settled = ledger.report();
    std::thread::sleep(Duration::from_secs(2));
    let after = ledger.report();
    clients.stop(&runtime);
    let worker_after = runtime.block_on(ready_worker(&http, &node.http()));
    assert_eq!(
        worker_after,
        Some(worker),
        "the worker ID changed or the node is not ready:\n{}",
        node.log_text()
    );
    assert!(
        !node.logged("worker lease lost"),
        "the lease was lost:\n{}",
        node.log_text()
    );
    node.stop_cleanly();
    for line in ["segment tails given back", "worker lease released"] {
        assert!(
            node.logged(line),
            "no `{line}` at shutdown:\n{}",
            node.log_text()
        );
    }
    assert!(
        !node.logged("giving back a segment tail failed"),
        "{}",
        node.log_text()
    );
    let given_back = logged_number(&node, "segment tails given back", "given_back=");
    assert!(given_back >= 2, "{given_back} tails given back");

    let report = ledger.check(&Layout::parse(LAYOUT).unwrap());
    let failed_during =
        during.failed_total() - before.failed_total() + probes_failed.load(Ordering::SeqCst);
    println!(
        "reliability: {store_label} {fault_label} ({}), held {HOLD:?}: {} requests failed during it; \
         served again {} ms after it cleared (new tag, snowflake, readyz); worker {} kept; \
         {} tails given back and the lease released at SIGTERM (exit 0); {report}",
        what,
        failed_during,
        recovered.as_millis(),
        worker,
        given_back,
    );
    assert!(
        recovered < RECOVERY_BAR,
        "{store_label} {fault_label}: served again only {recovered:?} after the fault cleared:\n{}",
        node.log_text()
    );
    assert_eq!(
        after.failed_total(),
        settled.failed_total(),
        "failures after the node served again: {after}"
    );
    for code in report.failed.keys() {
        assert!(
            code.contains("503")
                || code.starts_with("resp TRYAGAIN")
                || code.starts_with("resp ERR"),
            "a failure that is not a clear retryable error: {code}: {report}"
        );
    }
}

/// `/readyz`'s worker ID when it is 200.
async fn ready_worker(http: &reqwest::Client, base: &str) -> Option<u64> {
    let response = http.get(format!("{base}/readyz")).send().await.ok()?;
    if response.status() != 200 {
        return None;
    }
    let body: serde_json::Value = response.json().await.ok()?;
    body["worker_id"].as_u64()
}

/// A new tag: `GET /v1/segment/{tag}?count=1` on a tag never used, which creates it (a store
/// write) and takes its first range. The status, 0 when no answer came.
async fn new_tag(http: &reqwest::Client, base: &str, tag: &str) -> u16 {
    new_tag_answer(http, base, tag).await.0
}

/// [`new_tag`]'s status and body (empty when the request failed).
async fn new_tag_answer(http: &reqwest::Client, base: &str, tag: &str) -> (u16, String) {
    let url = format!("{base}/v1/segment/{tag}?count=1");
    match http.get(url).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.text().await.unwrap_or_default())
        }
        Err(_) => (0, String::new()),
    }
}

/// Creates a new tag every 200 ms while `probing`, counting those that fail; each must fail
/// as a clear retryable error (503), never otherwise.
async fn probe_new_tags(
    http: reqwest::Client,
    base: String,
    probing: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
) {
    let mut n = 0;
    while probing.load(Ordering::SeqCst) {
        n += 1;
        match new_tag_answer(&http, &base, &format!("during-{n}")).await {
            (200, _) => {}
            (503, _) => {
                failed.fetch_add(1, Ordering::SeqCst);
            }
            (0, _) => panic!("a new tag during the fault got no answer within 30 s"),
            (other, body) => panic!("a new tag during the fault answered {other}: {body}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls every 10 ms until, in one round, a new tag, a snowflake and `/readyz` all succeed;
/// returns the time since `cleared`.
async fn serves_again(http: &reqwest::Client, node: &Node, cleared: Instant) -> Duration {
    let base = node.http();
    let mut n = 0;
    loop {
        n += 1;
        let served = new_tag(http, &base, &format!("after-{n}")).await == 200
            && matches!(
                http.get(format!("{base}/v1/snowflake?count=1")).send().await,
                Ok(response) if response.status() == 200
            )
            && ready_worker(http, &base).await.is_some();
        if served {
            return cleared.elapsed();
        }
        assert!(
            cleared.elapsed() < Duration::from_secs(30),
            "the node did not serve again within 30 s of the fault clearing:\n{}",
            node.log_text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The number after `key` on the log line holding `needle`.
fn logged_number(node: &Node, needle: &str, key: &str) -> u64 {
    let log = node.log_text();
    log.lines()
        .find(|line| line.contains(needle))
        .and_then(|line| line.split(key).nth(1))
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no {key} on the `{needle}` line:\n{log}"))
}

// ---------------------------------------------------------------------------------------------
// SQLite

/// The data folder on a 2 MB tmpfs, filled with one file, then freed.
pub struct DiskFull {
    disk: Tmpfs,
    filler: Option<PathBuf>,
}

impl DiskFull {
    pub fn new() -> Self {
        Self {
            disk: Tmpfs::mount("faults-disk-full", "2m"),
            filler: None,
        }
    }
}

impl Fault for DiskFull {
    fn store(&self) -> String {
        format!("sqlite://{}/idmint.db", self.disk.path().display())
    }

    fn inject(&mut self, _: &Runtime) {
        self.filler = Some(self.disk.fill());
    }

    fn clear(&mut self, _: &Runtime) -> String {
        let filler = self.filler.take().expect("injected");
        let size = std::fs::metadata(&filler).unwrap().len();
        std::fs::remove_file(filler).unwrap();
        format!("{} KiB filler on a 2 MB tmpfs", size / 1024)
    }

    fn check_log(&self, node: &Node) {
        assert!(
            node.logged("database or disk is full"),
            "the node never met the full disk:\n{}",
            node.log_text()
        );
    }
}

/// Another process holding SQLite's write lock: python3's sqlite3 in `BEGIN IMMEDIATE` until
/// its standard input closes.
struct LockHolder {
    child: Child,
}

impl LockHolder {
    /// Takes the write lock of the database at `path` (waiting for it up to 10 s).
    fn take(path: &Path) -> Self {
        let script = "import sqlite3, sys\n\
            db = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)\n\
            db.execute('BEGIN IMMEDIATE')\n\
            print('held', flush=True)\n\
            sys.stdin.read()\n\
            db.execute('ROLLBACK')\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 (with its sqlite3 module) holds the lock");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "held", "python3 did not take the lock");
        Self { child }
    }

    /// Rolls back and waits for the process to end: the lock is free on return.
    fn release(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the lock holder ended with {status}");
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The database locked by another process: `SQLITE_BUSY` for the node's writes.
pub struct Locked {
    disk: Tmpfs,
    holder: Option<LockHolder>,
}

impl Locked {
    pub fn new() -> Self {
        Self {
            disk: Tmpfs::mount("faults-locked", "16m"),
            holder: None,
        }
    }

    fn file(&self) -> PathBuf {
        self.disk.path().join("idmint.db")
    }
}

impl Fault for Locked {
    fn store(&self) -> String {
        format!("sqlite://{}", self.file().display())
    }

    fn inject(&mut self, _: &Runtime) {
        self.holder = Some(LockHolder::take(&self.file()));
    }

    fn clear(&mut self, _: &Runtime) -> String {
        self.holder.take().expect("injected").release();
        "BEGIN IMMEDIATE held by python3".into()
    }
}

/// The file made read-only while another process holds the write lock (see the module's
/// documentation), then writable again.
pub struct ReadOnly {
    disk: Tmpfs,
    holder: Option<LockHolder>,
    immutable: Vec<PathBuf>,
}

/// How long the lock is held within the read-only fault.
const READ_ONLY_LOCKED: Duration = Duration::from_secs(2);

impl ReadOnly {
    pub fn new() -> Self {
        Self {
            disk: Tmpfs::mount("faults-read-only", "16m"),
            holder: None,
            immutable: Vec::new(),
        }
    }

    fn file(&self) -> PathBuf {
        self.disk.path().join("idmint.db")
    }
}

/// `chattr SIGN i` on `paths`.
fn chattr(sign: &str, paths: &[PathBuf]) {
    let status = Command::new("chattr")
        .arg(format!("{sign}i"))
        .args(paths)
        .status()
        .expect("chattr (e2fsprogs)");
    assert!(status.success(), "chattr {sign}i {paths:?}");
}

impl Fault for ReadOnly {
    fn store(&self) -> String {
        format!("sqlite://{}", self.file().display())
    }

    fn node_args(&self) -> Vec<String> {
        vec!["--store-call-timeout".into(), "250ms".into()]
    }

    fn inject(&mut self, _: &Runtime) {
        crate::root::require_root("making the SQLite file immutable");
        self.holder = Some(LockHolder::take(&self.file()));
        let mut paths: Vec<PathBuf> = ["idmint.db", "idmint.db-wal", "idmint.db-shm"]
            .iter()
            .map(|name| self.disk.path().join(name))
            .filter(|path| path.exists())
            .collect();
        paths.push(self.disk.path().to_owned());
        chattr("+", &paths);
        self.immutable = paths;
    }

    fn keep(&mut self, _: &Runtime, held: Duration) {
        if held >= READ_ONLY_LOCKED {
            if let Some(holder) = self.holder.take() {
                holder.release();
            }
        }
    }

    fn clear(&mut self, _: &Runtime) -> String {
        if let Some(holder) = self.holder.take() {
            holder.release();
        }
        chattr("-", &self.immutable);
        format!(
            "{} files and the folder immutable, the write lock held by python3 for the first {READ_ONLY_LOCKED:?}",
            self.immutable.len() - 1
        )
    }

    fn check_log(&self, node: &Node) {
        assert!(
            node.logged("readonly"),
            "the node never met the read-only file:\n{}",
            node.log_text()
        );
    }
}

impl Drop for ReadOnly {
    /// A failing case must not leave an immutable file the tmpfs cannot drop.
    fn drop(&mut self) {
        if !self.immutable.is_empty() {
            let _ = Command::new("chattr")
                .arg("-i")
                .args(&self.immutable)
                .status();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

/// The server stopped with `pg_ctl stop -m immediate` under load, then started again.
pub struct PostgresRestart {
    server: OwnPostgres,
}

impl PostgresRestart {
    pub fn new() -> Self {
        Self {
            server: OwnPostgres::start("faults-restart"),
        }
    }
}

impl Fault for PostgresRestart {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, _: &Runtime) {
        self.server.stop_immediate();
    }

    fn clear(&mut self, _: &Runtime) -> String {
        self.server.start_again();
        "pg_ctl stop -m immediate, then start".into()
    }
}

/// Runs `sql` as the superuser of `server`; returns the first column of the first row, if any.
async fn postgres_admin(server: &OwnPostgres, sql: &str) -> Option<i64> {
    let mut admin = sqlx::PgConnection::connect(&server.admin_url())
        .await
        .unwrap();
    let value = sqlx::query_scalar::<_, Option<i64>>(AssertSqlSafe(sql.to_owned()))
        .fetch_optional(&mut admin)
        .await
        .unwrap()
        .flatten();
    admin.close().await.unwrap();
    value
}

/// Terminates every session of the node's role; returns how many.
const TERMINATE: &str = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                         WHERE usename = 'idmint'";

/// `pg_terminate_backend` of every session of the node's role, every 100 ms.
pub struct PostgresTerminate {
    server: OwnPostgres,
    terminated: i64,
}

impl PostgresTerminate {
    pub fn new() -> Self {
        Self {
            server: OwnPostgres::start("faults-terminate"),
            terminated: 0,
        }
    }

    fn terminate(&mut self, runtime: &Runtime) {
        self.terminated += runtime
            .block_on(postgres_admin(&self.server, TERMINATE))
            .unwrap_or(0);
    }
}

impl Fault for PostgresTerminate {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, runtime: &Runtime) {
        self.terminate(runtime);
    }

    fn keep(&mut self, runtime: &Runtime, _: Duration) {
        self.terminate(runtime);
    }

    fn clear(&mut self, _: &Runtime) -> String {
        assert!(self.terminated > 0, "no session of the node was terminated");
        format!("{} sessions terminated", self.terminated)
    }
}

/// `statement_timeout` of 1 ms for the node's role, its sessions cut so that it reconnects under
/// it, then reset. The node's sessions set their own (its store call timeout) at connection, so
/// the role's setting must not reach them: while it held, and after its reset (a session keeps
/// the role's setting of its start for as long as it lives).
pub struct PostgresStatementTimeout {
    server: OwnPostgres,
}

impl PostgresStatementTimeout {
    pub fn new() -> Self {
        Self {
            server: OwnPostgres::start("faults-statement-timeout"),
        }
    }
}

impl Fault for PostgresStatementTimeout {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, runtime: &Runtime) {
        runtime.block_on(async {
            postgres_admin(
                &self.server,
                "ALTER ROLE idmint SET statement_timeout = '1ms'",
            )
            .await;
            // The fault is real: a plain session of the role starts with it.
            let mut plain = sqlx::PgConnection::connect(&self.server.url())
                .await
                .unwrap();
            let timeout: String = sqlx::query_scalar("SHOW statement_timeout")
                .fetch_one(&mut plain)
                .await
                .unwrap();
            assert_eq!(timeout, "1ms");
            plain.close().await.unwrap();
            postgres_admin(&self.server, TERMINATE).await;
        });
    }

    fn clear(&mut self, runtime: &Runtime) -> String {
        runtime.block_on(postgres_admin(
            &self.server,
            "ALTER ROLE idmint RESET statement_timeout",
        ));
        "ALTER ROLE SET statement_timeout = '1ms', sessions cut, then RESET".into()
    }

    fn check_log(&self, node: &Node) {
        assert!(
            !node.logged("statement timeout"),
            "the role's statement_timeout reached the node's sessions:\n{}",
            node.log_text()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// MariaDB

/// mariadbd killed with SIGKILL under load, then started again.
pub struct MariadbRestart {
    server: OwnMariadb,
}

impl MariadbRestart {
    pub fn new() -> Self {
        Self {
            server: OwnMariadb::start("faults-restart"),
        }
    }
}

impl Fault for MariadbRestart {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, _: &Runtime) {
        self.server.kill9();
    }

    fn clear(&mut self, _: &Runtime) -> String {
        self.server.start_again();
        "SIGKILL, then started".into()
    }
}

/// `KILL CONNECTION` of every connection of the node's user, every 100 ms.
pub struct MariadbKill {
    server: OwnMariadb,
    killed: usize,
}

impl MariadbKill {
    pub fn new() -> Self {
        Self {
            server: OwnMariadb::start("faults-kill"),
            killed: 0,
        }
    }

    fn kill(&mut self, runtime: &Runtime) {
        self.killed += runtime.block_on(async {
            let mut admin = sqlx::MySqlConnection::connect(&self.server.admin_url())
                .await
                .unwrap();
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT id FROM information_schema.processlist WHERE user = 'idmint'",
            )
            .fetch_all(&mut admin)
            .await
            .unwrap();
            for id in &ids {
                // The id is the server's integer: KILL takes no bind parameter.
                let kill = format!("KILL CONNECTION {id}");
                // A connection may have ended meanwhile.
                let _ = sqlx::query(AssertSqlSafe(kill)).execute(&mut admin).await;
            }
            admin.close().await.unwrap();
            ids.len()
        });
    }
}

impl Fault for MariadbKill {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, runtime: &Runtime) {
        self.kill(runtime);
    }

    fn keep(&mut self, runtime: &Runtime, _: Duration) {
        self.kill(runtime);
    }

    fn clear(&mut self, _: &Runtime) -> String {
        assert!(self.killed > 0, "no connection of the node was killed");
        format!("{} connections killed", self.killed)
    }
}

// ---------------------------------------------------------------------------------------------
// Redis

/// redis-server killed with SIGKILL under load, then started again on its append-only file.
pub struct RedisRestart {
    server: OwnRedis,
}

impl RedisRestart {
    pub fn new() -> Self {
        Self {
            server: OwnRedis::start("faults-restart"),
        }
    }
}

impl Fault for RedisRestart {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, _: &Runtime) {
        self.server.kill9();
    }

    fn clear(&mut self, _: &Runtime) -> String {
        self.server.restart();
        "SIGKILL, then started on its append-only file".into()
    }
}

/// Runs one command on `server` from a connection of the test's own.
async fn redis_admin<T: redis::FromRedisValue>(
    server: &OwnRedis,
    command: &redis::Cmd,
) -> redis::RedisResult<T> {
    let client = redis::Client::open(server.url()).unwrap();
    let mut admin = client.get_multiplexed_async_connection().await?;
    command.query_async(&mut admin).await
}

/// `CLIENT KILL` of every normal client but the test's own, every 100 ms.
pub struct RedisClientKill {
    server: OwnRedis,
    killed: i64,
}

impl RedisClientKill {
    pub fn new() -> Self {
        Self {
            server: OwnRedis::start("faults-client-kill"),
            killed: 0,
        }
    }

    fn kill(&mut self, runtime: &Runtime) {
        let mut kill = redis::cmd("CLIENT");
        kill.arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"][..]);
        self.killed += runtime
            .block_on(redis_admin::<i64>(&self.server, &kill))
            .unwrap();
    }
}

impl Fault for RedisClientKill {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, runtime: &Runtime) {
        self.kill(runtime);
    }

    fn keep(&mut self, runtime: &Runtime, _: Duration) {
        self.kill(runtime);
    }

    fn clear(&mut self, _: &Runtime) -> String {
        assert!(self.killed > 0, "no client of the node was killed");
        format!("{} clients killed", self.killed)
    }
}

/// `maxmemory` reached with `noeviction`: every write gets `-OOM`.
pub struct RedisMaxmemory {
    server: OwnRedis,
}

impl RedisMaxmemory {
    pub fn new() -> Self {
        Self {
            server: OwnRedis::start("faults-maxmemory"),
        }
    }
}

impl Fault for RedisMaxmemory {
    fn store(&self) -> String {
        self.server.url()
    }

    fn inject(&mut self, runtime: &Runtime) {
        runtime.block_on(async {
            let info: String = redis_admin(&self.server, redis::cmd("INFO").arg("memory"))
                .await
                .unwrap();
            let used: u64 = info
                .lines()
                .find_map(|line| line.strip_prefix("used_memory:"))
                .and_then(|value| value.trim().parse().ok())
                .expect("used_memory in INFO memory");
            let mut config = redis::cmd("CONFIG");
            config
                .arg("SET")
                .arg("maxmemory-policy")
                .arg("noeviction")
                .arg("maxmemory")
                .arg(used);
            let _: () = redis_admin(&self.server, &config).await.unwrap();
            // Reached: a write of the test's own is refused (memory grows with any write, so a
            // few may pass first).
            let mut reached = false;
            for i in 0..10_000 {
                let mut set = redis::cmd("SET");
                set.arg(format!("faults-probe-{i}")).arg("x".repeat(100));
                match redis_admin::<()>(&self.server, &set).await {
                    Ok(()) => {}
                    Err(error) if error.code() == Some("OOM") => {
                        reached = true;
                        break;
                    }
                    Err(error) => panic!("{error}"),
                }
            }
            assert!(reached, "maxmemory {used} was never reached");
            // The memory in use moves with client buffers (this test's connections closing
            // free some): the limit goes 64 KiB below it, so it stays reached.
            let mut lower = redis::cmd("CONFIG");
            lower.arg("SET").arg("maxmemory").arg(used - 64 * 1024);
            let _: () = redis_admin(&self.server, &lower).await.unwrap();
        });
    }

    fn clear(&mut self, runtime: &Runtime) -> String {
        let mut config = redis::cmd("CONFIG");
        config.arg("SET").arg("maxmemory").arg(0);
        let _: () = runtime
            .block_on(redis_admin(&self.server, &config))
            .unwrap();
        "maxmemory reached (then 64 KiB below), noeviction, then 0".into()
    }

    fn check_log(&self, node: &Node) {
        assert!(
            node.logged("OOM"),
            "the node never met an OOM reply:\n{}",
            node.log_text()
        );
    }
}
