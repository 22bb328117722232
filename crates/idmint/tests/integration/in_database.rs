//! `idmint sql install|uninstall` against real PostgreSQL servers: the function a column default
//! calls mints in the namespace's ID space beside running nodes without a duplicate, and a
//! database server whose clock steps back (libfaketime in the server) or that crashes reissues
//! nothing.

use std::collections::{BTreeSet, HashSet};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idmint_core::Layout;
use sqlx::{Connection, PgConnection};

use crate::common::{idmint_command, Server};
use crate::security::{address, http};
use crate::starting::{fresh_namespace, postgres_url};

const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// `idmint sql ARGS...`: its exit status and what it printed (stdout, then stderr).
pub(crate) fn sql(args: &[&str]) -> (i32, String) {
    let output = idmint_command()
        .arg("sql")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// The SQLSTATE of a database error, if it is one.
fn sqlstate(error: &sqlx::Error) -> Option<String> {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned())
}

/// The worker IDs the function holds, from its bookkeeping table.
async fn function_workers(url: &str, ns: &str) -> BTreeSet<u64> {
    let mut db = PgConnection::connect(url).await.unwrap();
    let rows: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT worker_id FROM {ns}_sql_function"
    )))
    .fetch_all(&mut db)
    .await
    .unwrap();
    rows.into_iter().map(|w| w as u64).collect()
}

#[test]
fn the_function_and_nodes_mint_in_one_namespace_without_a_duplicate() {
    let url = postgres_url();
    let ns = fresh_namespace("fn");
    let (status, text) = sql(&[
        "install",
        "--store",
        &url,
        "--namespace",
        &ns,
        "--layout",
        LAYOUT,
        "--workers",
        "6",
    ]);
    assert_eq!(status, 0, "{text}");
    assert!(
        text.contains(&format!("{ns}_next_id(shard bigint)")),
        "{text}"
    );
    // Twice is refused, plainly.
    let (status, again) = sql(&["install", "--store", &url, "--namespace", &ns]);
    assert_eq!(status, 1, "{again}");
    assert!(again.contains("installed already"), "{again}");

    let nodes: Vec<Server> = ["fn-a", "fn-b"]
        .iter()
        .map(|name| Server::start_with(&url, name, &["--namespace", &ns]))
        .collect();
    let rt = runtime();
    let workers = rt.block_on(function_workers(&url, &ns));
    assert_eq!(workers.len(), 6);
    let table = format!("{ns}_orders");
    let committed = Arc::new(Mutex::new(Vec::<u64>::new()));
    let rolled_back = Arc::new(Mutex::new(Vec::<u64>::new()));
    rt.block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY DEFAULT {ns}_next_id(), n INT)"
        )))
        .execute(&mut db)
        .await
        .unwrap();
    });

    // Six sessions hold the six worker IDs: a seventh is told so, and draws nothing.
    let sessions: Vec<PgConnection> = rt.block_on(async {
        let mut sessions = Vec::new();
        for _ in 0..6 {
            let mut db = PgConnection::connect(&url).await.unwrap();
            let id: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {ns}_next_id()")))
                .fetch_one(&mut db)
                .await
                .unwrap();
            rolled_back.lock().unwrap().push(id as u64);
            sessions.push(db);
        }
        let mut seventh = PgConnection::connect(&url).await.unwrap();
        let refused =
            sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!("SELECT {ns}_next_id()")))
                .fetch_one(&mut seventh)
                .await
                .unwrap_err();
        assert_eq!(sqlstate(&refused).as_deref(), Some("53000"), "{refused}");
        assert!(
            refused.to_string().contains("in use by other sessions"),
            "{refused}"
        );
        sessions
    });

    // Then for 3 s: the sessions insert with the default (some transactions roll back, one
    // session drops its advisory locks now and then, one resets itself with DISCARD ALL), while
    // HTTP clients take snowflakes from both nodes.
    let deadline = Instant::now() + Duration::from_secs(3);
    let from_nodes = Arc::new(Mutex::new(Vec::<u64>::new()));
    // Keep-alive clients, as a service calling a node would hold.
    let clients: Vec<_> = nodes
        .iter()
        .map(|node| {
            let url = format!("{}/v1/snowflake?count=500", node.http);
            let from_nodes = Arc::clone(&from_nodes);
            rt.spawn(async move {
                let client = reqwest::Client::new();
                while Instant::now() < deadline {
                    let response = client.get(&url).send().await.unwrap();
                    assert_eq!(response.status(), 200);
                    let json: serde_json::Value = response.json().await.unwrap();
                    let ids = json["ids"].as_array().unwrap().iter();
                    let ids = ids.map(|v| v.as_str().unwrap().parse::<u64>().unwrap());
                    from_nodes.lock().unwrap().extend(ids);
                }
            })
        })
        .collect();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for (index, mut db) in sessions.into_iter().enumerate() {
            let (table, committed, rolled_back) = (
                table.clone(),
                Arc::clone(&committed),
                Arc::clone(&rolled_back),
            );
            tasks.push(tokio::spawn(async move {
                let insert = format!(
                    "INSERT INTO {table} (n) SELECT g FROM generate_series(1, 100) g RETURNING id"
                );
                let mut round = 0u64;
                while Instant::now() < deadline {
                    round += 1;
                    if index == 0 && round.is_multiple_of(7) {
                        sqlx::raw_sql("SELECT pg_advisory_unlock_all()")
                            .execute(&mut db)
                            .await
                            .unwrap();
                    }
                    if index == 1 && round.is_multiple_of(5) {
                        sqlx::raw_sql("DISCARD ALL").execute(&mut db).await.unwrap();
                    }
                    let mut tx = db.begin().await.unwrap();
                    // Unnamed statements: DISCARD ALL drops prepared ones behind the driver's back.
                    let ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(insert.clone()))
                        .persistent(false)
                        .fetch_all(&mut *tx)
                        .await
                        .unwrap();
                    let ids = ids.into_iter().map(|id| id as u64);
                    if round.is_multiple_of(4) {
                        tx.rollback().await.unwrap();
                        rolled_back.lock().unwrap().extend(ids);
                    } else {
                        tx.commit().await.unwrap();
                        committed.lock().unwrap().extend(ids);
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
    for client in clients {
        rt.block_on(client).unwrap();
    }

    let committed = committed.lock().unwrap().clone();
    let rolled_back = rolled_back.lock().unwrap().clone();
    let from_nodes = from_nodes.lock().unwrap().clone();
    let stored: i64 = rt.block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&mut db)
            .await
            .unwrap()
    });
    assert_eq!(stored as usize, committed.len());
    assert!(
        committed.len() > 1_000 && from_nodes.len() > 1_000,
        "{} {}",
        committed.len(),
        from_nodes.len()
    );
    println!(
        "in-database: {} IDs committed and {} rolled back by 6 sessions, {} from 2 nodes",
        committed.len(),
        rolled_back.len(),
        from_nodes.len()
    );
    // Every ID once, whoever made it and whether or not its transaction committed.
    let mut seen = HashSet::new();
    let all = committed.iter().chain(&rolled_back).chain(&from_nodes);
    let duplicates: Vec<_> = all.filter(|id| !seen.insert(**id)).collect();
    assert!(
        duplicates.is_empty(),
        "{} duplicates, e.g. {:?}",
        duplicates.len(),
        &duplicates[..duplicates.len().min(5)]
    );
    // They decode alike: the database's on the function's worker IDs, the nodes' on others.
    let layout = Layout::parse(LAYOUT).unwrap();
    let worker_of = |id: &u64| layout.decompose(*id).unwrap().worker;
    assert!(committed
        .iter()
        .chain(&rolled_back)
        .all(|id| workers.contains(&worker_of(id))));
    assert!(from_nodes
        .iter()
        .all(|id| !workers.contains(&worker_of(id))));

    // Uninstall: refused while the default uses it, then done; the worker IDs are free and
    // fenced at the last tick the function issued on each.
    for node in nodes {
        node.stop();
    }
    let (status, text) = sql(&["uninstall", "--store", &url, "--namespace", &ns]);
    assert_eq!(status, 1, "{text}");
    assert!(
        text.contains(&format!("default value for column id of table {table}")),
        "{text}"
    );
    rt.block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE {table} ALTER COLUMN id DROP DEFAULT"
        )))
        .execute(&mut db)
        .await
        .unwrap();
    });
    let (status, text) = sql(&["uninstall", "--store", &url, "--namespace", &ns]);
    assert_eq!(status, 0, "{text}");
    // A node on one of those worker IDs starts above every ID the function made on it.
    let worker = *workers.iter().next().unwrap();
    let highest = committed
        .iter()
        .chain(&rolled_back)
        .filter(|id| worker_of(id) == worker)
        .max()
        .copied()
        .unwrap_or(0);
    let node = Server::start_with(
        &url,
        "fn-c",
        &["--namespace", &ns, "--worker-id", &worker.to_string()],
    );
    let (status, _, body) = http(address(&node.http), "GET", "/v1/snowflake", None);
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let first: u64 = json["ids"][0].as_str().unwrap().parse().unwrap();
    assert_eq!(worker_of(&first), worker);
    assert!(first > highest, "{first} after the function's {highest}");
    node.stop();
}

/// A PostgreSQL server of the test's own under libfaketime (`tests/support/postgres-faketime`),
/// stopped by PID when dropped.
pub(crate) struct FaketimeServer {
    pub(crate) url: String,
    pid: u32,
    dir: String,
    offset: String,
}

impl FaketimeServer {
    pub(crate) fn start() -> Self {
        let script = crate::clients::repo().join("tests/support/postgres-faketime");
        let output = Command::new(&script).output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let value = |key: &str| -> String {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("no {key}: {text}"))
                .to_owned()
        };
        Self {
            url: value("url"),
            pid: value("pid").parse().unwrap(),
            dir: value("dir"),
            offset: value("offset"),
        }
    }

    /// Sets the server's clock `offset` from the real one (`+0`, `-3s`, `+97200s`) and returns
    /// once every process of the server runs on it: the backends of connections already open
    /// and those of connections opened later (a new one is checked before returning).
    pub(crate) fn clock(&self, offset: &str) {
        let offset_ms = offset_ms(offset);
        // Written beside and renamed over it: libfaketime reads the file in every process of
        // the server, and one that read it between a truncation and the write would run on the
        // real clock (an empty file is no offset) for up to a second.
        let next = format!("{}.next", self.offset);
        std::fs::write(&next, format!("{offset}\n")).unwrap();
        std::fs::rename(&next, &self.offset).unwrap();
        // libfaketime (FAKETIME_CACHE_DURATION=1) keeps the offset a process read until the
        // real clock's whole second is more than 1 past the whole second it read it in, and a
        // backend forked from the postmaster starts with the postmaster's reading. A process
        // that read the file in the second of the write, before it, runs on the old offset up
        // to the start of the second after next: up to 2 s, not 1. (A fixed 1.5 s wait let
        // nodes that connected in the rest of that window read the old clock: the dated test's
        // first range was dated by the real day, not the faked one.) Every process reads the
        // new offset at its first look at the clock from that second on.
        let written_s = unix_ms() / 1_000;
        let everywhere_ms = (written_s + 2) * 1_000 + 50;
        std::thread::sleep(Duration::from_millis(
            everywhere_ms.saturating_sub(unix_ms()),
        ));
        let url = self.url.clone();
        let (before, store_ms, after) = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut db = PgConnection::connect(&url).await.unwrap();
                let before = unix_ms();
                let store_ms: i64 = sqlx::query_scalar(
                    "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
                )
                .fetch_one(&mut db)
                .await
                .unwrap();
                (before, store_ms, unix_ms())
            })
        })
        .join()
        .unwrap();
        let (low, high) = (
            before as i64 + offset_ms - 250,
            after as i64 + offset_ms + 250,
        );
        assert!(
            (low..=high).contains(&store_ms),
            "the server's clock reads {store_ms} ms on a new connection, not {offset} from \
             this machine's ({before} to {after} ms)"
        );
    }

    /// Kills the postmaster with SIGKILL (its backends follow), then starts the server again.
    fn crash_and_restart(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        let gone = Instant::now();
        while std::path::Path::new(&format!("/proc/{}", self.pid)).exists() {
            assert!(gone.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(50));
        }
        // The backends leave when they see the postmaster gone.
        std::thread::sleep(Duration::from_secs(2));
        let script = crate::clients::repo().join("tests/support/postgres-faketime");
        let output = Command::new(&script)
            .args(["restart", &self.dir])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.pid = text.trim().trim_start_matches("pid=").parse().unwrap();
    }
}

impl Drop for FaketimeServer {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown.
        let _ = Command::new("kill")
            .args(["-INT", &self.pid.to_string()])
            .status();
        let stop = Instant::now();
        while std::path::Path::new(&format!("/proc/{}", self.pid)).exists()
            && stop.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The server's clock by `db`'s backend, in ms since the Unix epoch.
async fn server_clock_ms(db: &mut PgConnection) -> i64 {
    sqlx::query_scalar("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT")
        .fetch_one(db)
        .await
        .unwrap()
}

/// When [`FaketimeServer::clock`] returns, the offset is in force on a connection that was open
/// and on one opened after, even when the server's processes read the offset file in the
/// second of the write, just before it: the case where a backend runs on the old offset for
/// the longest (a fixed wait of 1.5 s missed it, and a node connecting then dated a range by
/// the real clock). The offset is more than a day, so a reading on the old one is far off.
#[test]
fn a_faked_clock_is_in_force_on_every_connection_once_set() {
    let server = FaketimeServer::start();
    let offset_s: i64 = 27 * 3_600;
    runtime().block_on(async {
        let mut open = PgConnection::connect(&server.url).await.unwrap();
        // The open backend reads the file early in a second, just before the write: it read
        // it last by the end of the second of the first query, so two seconds on its cache
        // has run out and it reads the file again (the longest it then keeps the old offset).
        // The postmaster does the same when its cache is as old, forking another. Tried again
        // on a machine too slow to do it within the second.
        let mut tries = 0;
        let mut forked = loop {
            tries += 1;
            server_clock_ms(&mut open).await;
            let second = unix_ms() / 1_000 + 2;
            tokio::time::sleep(Duration::from_millis(
                (second * 1_000 + 20).saturating_sub(unix_ms()),
            ))
            .await;
            server_clock_ms(&mut open).await;
            let mut forked = PgConnection::connect(&server.url).await.unwrap();
            server_clock_ms(&mut forked).await;
            if unix_ms() / 1_000 == second || tries == 5 {
                break forked;
            }
        };
        server.clock(&format!("+{offset_s}s"));
        let mut new = PgConnection::connect(&server.url).await.unwrap();
        for (name, db) in [
            ("open", &mut open),
            ("forked", &mut forked),
            ("new", &mut new),
        ] {
            let before = unix_ms() as i64;
            let store_ms = server_clock_ms(db).await;
            let ahead_ms = store_ms - before;
            assert!(
                (offset_s * 1_000 - 250..offset_s * 1_000 + 1_000).contains(&ahead_ms),
                "the {name} connection's clock is {ahead_ms} ms ahead, not {offset_s} s"
            );
        }
    });
}

/// Milliseconds since the Unix epoch by this machine's clock (the real one).
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A libfaketime offset as [`FaketimeServer::clock`] writes it (`+0`, `-3s`, `+97200s`), in
/// milliseconds.
fn offset_ms(offset: &str) -> i64 {
    let seconds: i64 = offset
        .strip_suffix('s')
        .unwrap_or(offset)
        .parse()
        .unwrap_or_else(|_| panic!("`{offset}` is not an offset in seconds"));
    seconds * 1_000
}

/// Draws IDs with `SELECT <ns>_next_id()` (each its own committed transaction) on `sessions`
/// connections for `run`: each session's IDs, and the errors' SQLSTATEs.
fn draw(url: &str, ns: &str, sessions: usize, run: Duration) -> (Vec<Vec<u64>>, Vec<String>) {
    let rt = runtime();
    rt.block_on(async {
        let deadline = Instant::now() + run;
        let mut tasks = Vec::new();
        for _ in 0..sessions {
            let (url, ns) = (url.to_owned(), ns.to_owned());
            tasks.push(tokio::spawn(async move {
                let (mut ids, mut errors) = (Vec::new(), Vec::new());
                let mut db = PgConnection::connect(&url).await.unwrap();
                let select = format!("SELECT {ns}_next_id()");
                while Instant::now() < deadline {
                    match sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(select.clone()))
                        .fetch_one(&mut db)
                        .await
                    {
                        Ok(id) => ids.push(id as u64),
                        Err(e) => {
                            let message = e.to_string();
                            assert!(message.contains("the clock is"), "{message}");
                            errors.push(sqlstate(&e).unwrap_or_default());
                        }
                    }
                }
                (ids, errors)
            }));
        }
        let mut all = (Vec::new(), Vec::new());
        for task in tasks {
            let (ids, errors) = task.await.unwrap();
            all.0.push(ids);
            all.1.extend(errors);
        }
        all
    })
}

#[test]
fn a_database_clock_stepping_back_or_a_crash_reissues_nothing() {
    let mut server = FaketimeServer::start();
    let ns = "clock";
    let (status, text) = sql(&[
        "install",
        "--store",
        &server.url,
        "--namespace",
        ns,
        "--layout",
        LAYOUT,
        "--workers",
        "3",
        "--max-lead",
        "1s",
        "--max-wait",
        "300ms",
    ]);
    assert_eq!(status, 0, "{text}");
    let mut rounds = Vec::new();
    let (before, errors) = draw(&server.url, ns, 2, Duration::from_secs(1));
    assert!(errors.is_empty(), "{errors:?}");
    rounds.push(before);
    // Back 5 s: past the 1 s lead the calls wait, then fail plainly, until the clock is past
    // the IDs issued; then they go on. (`clock` returns up to about 2 s after the step, when
    // the clock is still 3 s behind those IDs.)
    server.clock("-5s");
    let (during, errors) = draw(&server.url, ns, 2, Duration::from_secs(5));
    assert!(!errors.is_empty(), "no call waited for the clock");
    println!(
        "in-database clock: {} calls waited and failed after the step back",
        errors.len()
    );
    assert!(errors.iter().all(|code| code == "55000"), "{errors:?}");
    let late: usize = during.iter().map(Vec::len).sum();
    assert!(
        late > 100,
        "calls did not go on once the clock was past: {late}"
    );
    rounds.push(during);
    // Back another 5 s, then the server crashes and comes back with its clock still behind.
    server.clock("-10s");
    server.crash_and_restart();
    let (after, _) = draw(&server.url, ns, 2, Duration::from_secs(5));
    rounds.push(after);

    let mut seen = HashSet::new();
    let mut total = 0;
    for round in &rounds {
        for session in round {
            // A session's IDs only grow.
            assert!(
                session.windows(2).all(|w| w[0] < w[1]),
                "a session's IDs went back"
            );
            for id in session {
                total += 1;
                assert!(seen.insert(*id), "ID {id} issued twice");
            }
        }
    }
    assert!(total > 1_000, "{total}");
    println!("in-database clock: {total} IDs over two steps back and a crash, none twice");
    server.clock("+0");
}
