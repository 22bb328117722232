//! What `idmint serve` does before it serves (issue 10), against the real binary on SQLite and
//! PostgreSQL:
//! - a wrong setting or a listen port in use stops it before it touches the store: no store
//!   file is created and no worker lease row is written, and the error is one line naming the
//!   setting;
//! - a node started while its only worker ID is held by a node killed a moment ago waits for
//!   that lease to expire (`--worker-wait`) and then serves IDs above the killed node's; with a
//!   wait too short it fails naming the lease it waited for and how long it waited.

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use idmint_store::StoreOptions;

/// A layout with a single worker ID: no worker field.
const ONE_WORKER: &str = "time:41@1ms,seq:12";

/// Short leases, so a killed node's worker ID comes free within seconds.
const SHORT_LEASE: [&str; 6] = [
    "--lease-ttl",
    "3s",
    "--lease-renew",
    "1s",
    "--hwm-lead",
    "2s",
];

/// The PostgreSQL server of `scripts/with-stores`.
pub(crate) fn postgres_url() -> String {
    idmint_test_support::server_url("IDMINT_TEST_POSTGRES_URL")
}

/// A namespace no other test or earlier run used: its tables start empty.
pub(crate) fn fresh_namespace(label: &str) -> String {
    idmint_test_support::namespace(label)
}

/// A folder that does not exist yet, for a store file that must not be created.
fn fresh_folder(label: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-start-tests");
    std::fs::create_dir_all(&root).unwrap();
    let folder = root.join(format!(
        "{label}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&folder);
    folder
}

/// An `idmint serve` process and its log, read on a thread as it comes.
struct Node {
    child: Child,
    lines: mpsc::Receiver<String>,
    log: Vec<String>,
}

impl Node {
    /// Starts `idmint serve` with `args` (OS-chosen ports unless `args` gives them), in `cwd`
    /// when given.
    fn spawn(args: &[&str], cwd: Option<&PathBuf>) -> Self {
        Self::spawn_with_env(args, &[], cwd)
    }

    /// [`Node::spawn`] with these variables set (`IDMINT_*`).
    fn spawn_with_env(args: &[&str], env: &[(&str, &str)], cwd: Option<&PathBuf>) -> Self {
        let mut command = common::idmint_command();
        command.arg("serve").args(args).envs(env.iter().copied());
        for port in ["--http", "--resp"] {
            if !args.contains(&port) {
                command.args([port, "127.0.0.1:0"]);
            }
        }
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            log: Vec::new(),
        }
    }

    /// Waits (at most 60 s) until it serves, returning the `idmint serving` line, or until it
    /// exits, returning its status.
    fn serving_or_exit(&mut self) -> Result<String, ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.lines.recv_timeout(Duration::from_millis(20)) {
                Ok(line) => {
                    let serving = line.contains("idmint serving");
                    self.log.push(line.clone());
                    if serving {
                        return Ok(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.child.wait().unwrap());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            assert!(
                Instant::now() < deadline,
                "idmint serve neither served nor exited within 60 s:\n{}",
                self.log_text()
            );
        }
    }

    /// Asserts it exits without serving, with `status`, and returns its log.
    fn refused(mut self, status: i32) -> String {
        match self.serving_or_exit() {
            Ok(_) => panic!("idmint serve started:\n{}", self.log_text()),
            Err(exit) => assert_eq!(exit.code(), Some(status), "{}", self.log_text()),
        }
        self.log_text()
    }

    /// `http://ADDR` from the `idmint serving` line.
    fn http(serving: &str) -> String {
        let start = serving.find("http=").unwrap() + "http=".len();
        let address = serving[start..].split_whitespace().next().unwrap();
        format!("http://{address}")
    }

    fn log_text(&self) -> String {
        self.log.join("\n")
    }

    /// SIGKILL: no release, so the worker lease stays live until it expires.
    fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and a clean exit within 20 s.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "idmint serve exited with {status}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "idmint serve did not stop within 20 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The one `error:` line of a refused start's log, checked to contain every one of `needles`.
fn error_line(log: &str, needles: &[&str]) -> String {
    let errors: Vec<&str> = log.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "one error line expected:\n{log}");
    for needle in needles {
        assert!(errors[0].contains(needle), "`{needle}` missing:\n{log}");
    }
    errors[0].to_owned()
}

/// `count` snowflakes from the node at `http`.
async fn snowflakes(http: &str, count: u64) -> Vec<u64> {
    let body: serde_json::Value = reqwest::get(format!("{http}/v1/snowflake?count={count}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    common::ids_of(&body)
}

/// Starts a node whose `which` port (`--http` or `--resp`) another socket holds; it must exit
/// with status 1 and one line naming the setting, the address and the cause, once, having
/// opened no store. Returns nothing: the callers check the store.
fn refused_for_a_port_in_use(which: &str, store: &str, namespace: &str) {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let node = Node::spawn(
        &["--store", store, "--namespace", namespace, which, &address],
        None,
    );
    let log = node.refused(1);
    let what = if which == "--http" {
        "HTTP"
    } else {
        "Redis protocol"
    };
    error_line(
        &log,
        &[
            &format!("error: {which}: cannot listen for {what} on {address}: "),
            "in use",
        ],
    );
    assert_eq!(
        log.matches("in use").count(),
        1,
        "the cause is said once:\n{log}"
    );
    assert!(
        !log.contains("store opened") && !log.contains("worker lease acquired"),
        "{log}"
    );
}

#[test]
fn a_port_in_use_stops_the_node_before_the_store_file_is_created() {
    for which in ["--http", "--resp"] {
        let folder = fresh_folder("port-in-use");
        let store = format!("sqlite://{}/idmint.db", folder.display());
        refused_for_a_port_in_use(which, &store, "idmint");
        assert!(!folder.exists(), "{which}: the store's folder was created");
    }
}

#[tokio::test]
async fn a_port_in_use_writes_no_worker_lease_on_postgres() {
    let url = postgres_url();
    for which in ["--http", "--resp"] {
        let namespace = fresh_namespace("port");
        refused_for_a_port_in_use(which, &url, &namespace);
        let options = StoreOptions {
            namespace: namespace.clone(),
            ..StoreOptions::default()
        };
        let store = idmint_store::open(&url, &options).await.unwrap();
        let leases = store.leases.list_leases().await.unwrap();
        assert!(
            leases.is_empty(),
            "{which}: a lease was written: {leases:?}"
        );
    }
}

#[test]
fn bad_settings_are_refused_before_the_store_file_is_created() {
    let folder = fresh_folder("bad-settings");
    let store = format!("sqlite://{}/idmint.db", folder.display());
    // Each refused with exit status 2 and a line naming the setting.
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["--layout", ONE_WORKER, "--worker-id", "1"],
            &["--worker-id: 1 given but the layout has no `worker` field"],
        ),
        (
            &["--datacenter", "1"],
            &["--datacenter: 1 given but the layout has no `dc` field"],
        ),
        (
            &[
                "--layout",
                "time:41@1ms,dc:1,worker:9,seq:12",
                "--datacenter",
                "2",
            ],
            &["--datacenter: 2 does not fit in 1 bits"],
        ),
        (&["--epoch", "2100-01-01"], &["--epoch: ", "in the future"]),
        (
            &["--http", "localhost"],
            &["error: --http: invalid value 'localhost': "],
        ),
        // An empty token must not turn authentication off without a word.
        (
            &["--admin-token", ""],
            &["--admin-token: the admin token is empty"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["--store", store.as_str()];
        all.extend(args);
        let log = Node::spawn(&all, None).refused(2);
        error_line(&log, needles);
        assert!(!folder.exists(), "{args:?}: the store's folder was created");
    }
    let refused_store = format!("{store}?mode=ro");
    let log = Node::spawn(&["--store", &refused_store], None).refused(2);
    error_line(&log, &["--store: ", "no query parameters"]);
    assert!(!folder.exists());
}

/// Every setting of `idmint serve` given a bad value is refused before the store is touched,
/// with exit status 2 and a single line on stderr, `error: --FLAG: ...`, naming that setting,
/// whether clap refused the value, the settings' resolution did, or a check at start (issue 27:
/// `--layout uid-generator` exited 1 with `layout exhausted`, `--layout twiter` and
/// `--namespace BAD` named no flag, `--io-threads 100000` and a huge `--store-call-timeout`
/// panicked, `--data-dir /dev/null` exited 1). A value from a variable or the `--config` file
/// names its source. Every setting `serve` has must have a case here.
#[test]
fn every_setting_given_a_bad_value_is_one_error_line_naming_it() {
    let folder = fresh_folder("every-setting");
    let store = format!("sqlite://{}/idmint.db", folder.display());
    let files = fresh_folder("every-setting-files");
    std::fs::create_dir_all(&files).unwrap();
    let (_, cert, _) = crate::security::certificates(&files, "every-setting");
    let missing = files.join("missing").display().to_string();
    let cert = cert.display().to_string();
    let long_name = "n".repeat(256);
    // (setting, its bad value's flags, what the line says after `error: --setting: `)
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "data-dir",
            vec!["--data-dir", "/dev/null"],
            "is not a folder",
        ),
        ("store", vec!["--store", "foo://x"], "is not a store URL"),
        (
            "home-store",
            vec!["--home-store", "1"],
            "is not a store of the list",
        ),
        (
            "store-call-timeout",
            vec!["--store-call-timeout", "0s"],
            "must be above zero",
        ),
        (
            "store-call-timeout",
            vec!["--store-call-timeout", "580000000000years"],
            "above the most",
        ),
        (
            "store-block",
            vec!["--store-block", "10"],
            "is below the largest range",
        ),
        (
            "http",
            vec!["--http", "localhost"],
            "invalid value 'localhost'",
        ),
        ("resp", vec!["--resp", "127.0.0.1:99999"], "invalid value"),
        (
            "layout",
            vec!["--layout", "twiter"],
            "invalid layout `twiter`",
        ),
        (
            "layout",
            vec!["--layout", "uid-generator"],
            "give a later epoch, e.g. --epoch ",
        ),
        (
            "epoch",
            vec!["--epoch", "someday"],
            "invalid epoch `someday`",
        ),
        (
            "epoch",
            vec!["--layout", "uid-generator", "--epoch", "2016-05-20"],
            "ran out at",
        ),
        ("datacenter", vec!["--datacenter", "1"], "no `dc` field"),
        (
            "worker-id",
            vec!["--worker-id", "99999"],
            "does not fit in 10 bits",
        ),
        (
            "worker-id",
            vec!["--worker-id", "some"],
            "neither `auto` nor a whole number",
        ),
        (
            "node-name",
            vec!["--node-name", &long_name],
            "1 to 255 bytes",
        ),
        ("admin-token", vec!["--admin-token", ""], "empty"),
        (
            "admin-token-file",
            vec!["--admin-token-file", &missing],
            "cannot read",
        ),
        (
            "tokens-file",
            vec!["--tokens-file", &missing],
            "cannot read",
        ),
        (
            "tls-cert",
            vec!["--tls-cert", &missing, "--tls-key", &cert],
            "missing",
        ),
        (
            "tls-key",
            vec!["--tls-cert", &cert, "--tls-key", &missing],
            "missing",
        ),
        (
            "permutation-key-file",
            vec!["--permutation-key-file", &missing],
            "cannot read",
        ),
        (
            "max-connections",
            vec!["--max-connections", "0"],
            "must be above 0",
        ),
        (
            "max-connections-per-address",
            vec!["--max-connections-per-address=-1"],
            "invalid value '-1'",
        ),
        (
            "auth-timeout",
            vec!["--auth-timeout", "0s"],
            "must be above 0",
        ),
        (
            "idle-timeout",
            vec!["--idle-timeout", "2years"],
            "above the most",
        ),
        ("max-tags", vec!["--max-tags", "0"], "at least 1"),
        ("max-count", vec!["--max-count", "0"], "at least 1"),
        (
            "max-lease-size",
            vec!["--max-lease-size", "0"],
            "at least 1",
        ),
        (
            "auto-create-tags",
            vec!["--auto-create-tags", "maybe"],
            "expected one of true, false",
        ),
        ("default-step", vec!["--default-step", "0"], "at least 1"),
        (
            "allow-non-durable",
            vec!["--allow-non-durable", "yes"],
            "expected one of true, false",
        ),
        (
            "id128-node",
            vec!["--id128-node", "on"],
            "expected one of true, false",
        ),
        (
            "io-threads",
            vec!["--io-threads", "100000"],
            "is above 1024",
        ),
        (
            "namespace",
            vec!["--namespace", "Orders"],
            "1 to 32 characters",
        ),
        (
            "clock-policy",
            vec!["--clock-policy", "panic"],
            "not one of wait, switch, fail",
        ),
        (
            "lease-ttl",
            vec!["--lease-ttl", "1s"],
            "1s is not above --lease-renew (2s)",
        ),
        (
            "lease-renew",
            vec!["--lease-renew", "0s"],
            "must be above 0",
        ),
        (
            "lease-renew",
            vec!["--lease-renew", "20s"],
            "20s is not below --lease-ttl (10s)",
        ),
        (
            "hwm-lead",
            vec!["--hwm-lead", "1s"],
            "1s is not above --lease-renew (2s)",
        ),
        (
            "max-lead",
            vec!["--max-lead", "soon"],
            "invalid value 'soon'",
        ),
        (
            "max-wait",
            vec!["--max-wait", "2days"],
            "above the most it may be, 1day",
        ),
        (
            "worker-wait",
            vec!["--worker-wait", "2days"],
            "above the most",
        ),
        ("config", vec!["--config", &missing], "cannot read"),
        ("store-file", vec!["--store-file", &missing], "cannot read"),
        (
            "listen-backlog",
            vec!["--listen-backlog", "0"],
            "outside 1..=65535",
        ),
        (
            "admin-tag-reserve",
            vec!["--admin-tag-reserve", "10000"],
            "leaves no tag of --max-tags (10000)",
        ),
        (
            "log-format",
            vec!["--log-format", "xml"],
            "invalid value 'xml'",
        ),
        (
            "log-filter",
            vec!["--log-filter", "info,idmint=loud"],
            "`idmint=loud` is not a log directive",
        ),
    ];
    let refused_with = |args: &[&str], env: &[(&str, &str)], setting: &str, says: &str| {
        let mut all = args.to_vec();
        if setting != "data-dir" && setting != "store-file" {
            all.extend(["--store", store.as_str()]);
        }
        let log = Node::spawn_with_env(&all, env, None).refused(2);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "{args:?} {env:?}: one line expected:\n{log}"
        );
        let prefix = format!("error: --{setting}: ");
        assert!(
            lines[0].starts_with(&prefix) && lines[0].contains(says),
            "{args:?} {env:?}: `{prefix}...{says}` expected:\n{log}"
        );
        assert!(!folder.exists(), "{args:?}: the store's folder was created");
        // `serve --check` refuses it with the same line, having created nothing either.
        let checked =
            Node::spawn_with_env(&[&["--check"], &all[..]].concat(), env, None).refused(2);
        assert_eq!(checked.trim(), lines[0], "{args:?} {env:?} with --check");
        assert!(
            !folder.exists(),
            "{args:?}: --check created the store's folder"
        );
        lines[0].to_owned()
    };
    for (setting, args, says) in &cases {
        refused_with(args, &[], setting, says);
    }
    // Every setting has a case.
    let command = <idmint_server::config::PartialConfig as clap::Args>::augment_args(
        clap::Command::new("serve"),
    );
    for long in command
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .chain(["config"])
    {
        assert!(
            cases.iter().any(|(setting, ..)| *setting == long),
            "--{long} has no bad-value case"
        );
    }

    // A value from a variable names the variable, whether clap or the resolution refused it.
    let line = refused_with(
        &[],
        &[("IDMINT_IO_THREADS", "many")],
        "io-threads",
        "invalid value 'many'",
    );
    assert!(line.contains("from IDMINT_IO_THREADS"), "{line}");
    let line = refused_with(&[], &[("IDMINT_MAX_COUNT", "0")], "max-count", "at least 1");
    assert!(line.ends_with("(set by IDMINT_MAX_COUNT)"), "{line}");
    let line = refused_with(
        &[],
        &[("IDMINT_LAYOUT", "uid-generator")],
        "layout",
        "ran out",
    );
    assert!(line.ends_with("(set by IDMINT_LAYOUT)"), "{line}");
    // RUST_LOG is --log-filter's variable when IDMINT_LOG_FILTER is not set.
    let line = refused_with(
        &[],
        &[("RUST_LOG", "x=[")],
        "log-filter",
        "is not a log directive",
    );
    assert!(line.ends_with("(set by RUST_LOG)"), "{line}");
    // A value from the file names the file; a flag given over it wins.
    let file = files.join("ids.toml");
    std::fs::write(&file, "default_step = 0\nmax_count = 5\n").unwrap();
    // (`max_count = 5` in the file, `--max-count 0` on the command line: the flag's value.)
    let file_flag = file.display().to_string();
    let line = refused_with(&["--config", &file_flag], &[], "default-step", "at least 1");
    assert!(line.ends_with(&format!("(set in {file_flag})")), "{line}");
    let line = refused_with(
        &["--config", &file_flag, "--max-count", "0"],
        &[],
        "max-count",
        "at least 1",
    );
    assert!(!line.contains("set in"), "the flag gave it: {line}");
    std::fs::write(&file, "\nmax_count = \"many\"\n").unwrap();
    refused_with(
        &["--config", &file_flag],
        &[],
        "max-count",
        &format!("{file_flag}: line 2, `max_count`: invalid type"),
    );
}

/// `sqlite://user:pw@/path` once created a folder named `user:pw@` in the working folder.
#[test]
fn a_sqlite_url_with_credentials_is_refused_without_showing_the_password() {
    let cwd = fresh_folder("credentials");
    std::fs::create_dir_all(&cwd).unwrap();
    let target = fresh_folder("credentials-target");
    let url = format!("sqlite://user:secret@{}/idmint.db", target.display());
    let log = Node::spawn(&["--store", &url], Some(&cwd)).refused(2);
    let line = error_line(&log, &["--store: ", "no user, password or host"]);
    assert!(!line.contains("secret"), "{line}");
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "something was created"
    );
    assert!(!target.exists());
}

/// Node A holds the only worker ID and is killed; node B, started right after, waits for A's
/// lease to expire, then serves IDs above A's.
async fn a_node_waits_for_a_killed_nodes_worker_id(store: &str) {
    let namespace = fresh_namespace("wait");
    let mut args = vec!["--store", store, "--namespace", &namespace];
    args.extend(["--layout", ONE_WORKER]);
    args.extend(SHORT_LEASE);
    let mut a_args = args.clone();
    a_args.extend(["--node-name", "wait-a"]);
    let mut a = Node::spawn(&a_args, None);
    let serving = a.serving_or_exit().unwrap();
    let before = snowflakes(&Node::http(&serving), 1_000).await;
    a.kill9();

    let killed = Instant::now();
    let mut b_args = args.clone();
    b_args.extend(["--node-name", "wait-b", "--worker-wait", "10s"]);
    let mut b = Node::spawn(&b_args, None);
    let serving = b
        .serving_or_exit()
        .unwrap_or_else(|status| panic!("B exited with {status}:\n{}", b.log_text()));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(10), "B took {took:?}");
    let log = b.log_text();
    let waiting = log
        .lines()
        .find(|l| l.contains("waiting for this worker lease to expire"))
        .unwrap_or_else(|| panic!("B did not say it waited:\n{log}"));
    for needle in [
        "worker_id=0",
        "holder=wait-a",
        "expires_at=20",
        "no worker ID free",
    ] {
        assert!(waiting.contains(needle), "`{needle}` missing: {waiting}");
    }
    assert!(serving.contains("worker_id=0"), "{serving}");
    let after = snowflakes(&Node::http(&serving), 1_000).await;
    let last_of_a = before.iter().max().unwrap();
    assert!(
        after.iter().all(|id| id > last_of_a),
        "B issued an ID at or below A's last ({last_of_a})"
    );
    b.stop();
}

#[tokio::test]
async fn a_node_waits_for_a_killed_nodes_worker_id_on_sqlite() {
    let store = common::sqlite_url("worker-wait");
    a_node_waits_for_a_killed_nodes_worker_id(&store).await;
}

#[tokio::test]
async fn a_node_waits_for_a_killed_nodes_worker_id_on_postgres() {
    a_node_waits_for_a_killed_nodes_worker_id(&postgres_url()).await;
}

/// Node A holds the only worker ID and keeps it; node B gives up after its `--worker-wait`
/// (or at once with 0), naming the lease it waited for and how long it waited.
fn a_node_gives_up_after_its_worker_wait(store: &str) {
    let namespace = fresh_namespace("giveup");
    let mut args = vec!["--store", store, "--namespace", &namespace];
    args.extend(["--layout", ONE_WORKER]);
    args.extend(SHORT_LEASE);
    let mut a_args = args.clone();
    a_args.extend(["--node-name", "giveup-a"]);
    let mut a = Node::spawn(&a_args, None);
    a.serving_or_exit().unwrap();

    let mut b_args = args.clone();
    b_args.extend(["--node-name", "giveup-b"]);
    let mut waiting_args = b_args.clone();
    waiting_args.extend(["--worker-wait", "1s"]);
    let started = Instant::now();
    let log = Node::spawn(&waiting_args, None).refused(1);
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1), "B gave up after {took:?}");
    error_line(
        &log,
        &[
            "error: no worker ID free: all 1 are held by live nodes; waited 1.",
            "(worker_wait) for a worker lease to expire; the first to expire, worker 0's held by `giveup-a`, runs until 20",
        ],
    );
    assert!(
        log.contains("waiting for this worker lease to expire"),
        "{log}"
    );

    // A static worker ID and no wait: refused at once.
    b_args.extend(["--worker-wait", "0", "--worker-id", "0"]);
    let log = Node::spawn(&b_args, None).refused(1);
    error_line(
        &log,
        // "waited" counts the refused call itself, which a loaded machine stretches past 50 ms:
        // the log's lack of a wait line is what shows it did not wait.
        &[
            "error: worker ID 0 is held by live node `giveup-a`; waited ",
            "s (worker_wait)",
        ],
    );
    assert!(!log.contains("waiting for"), "{log}");
    a.stop();
}

#[test]
fn a_node_gives_up_after_its_worker_wait_on_sqlite() {
    a_node_gives_up_after_its_worker_wait(&common::sqlite_url("worker-wait-gives-up"));
}

#[test]
fn a_node_gives_up_after_its_worker_wait_on_postgres() {
    a_node_gives_up_after_its_worker_wait(&postgres_url());
}
