//! The ID space pinned in the store, through the binary as an operator meets it: a restart with
//! another epoch, layout or datacenter is refused and issues nothing; `idmint id-space change`
//! refuses a space that overlaps what was issued (or while a node runs) and accepts one above
//! it; IDs from before and after a change decode with their own space. On every backend.
use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{idmint_command, ids_of, sqlite_url, Server};
use idmint_test_support::lease_timing::LeaseTiming;

/// The default layout with its default epoch spelled out, so the tests can move it.
const LAYOUT: &str = "time:41@1ms,worker:10,seq:12";
const EPOCH_MS: u64 = 1_735_689_600_000;
/// Twitter's layout with one bit moved from the time field to the worker field.
const WIDER: &str = "time:40@1ms,dc:5,worker:6,seq:12";

/// A namespace no other test of this run (or an earlier one) uses.
pub(crate) fn namespace(label: &str) -> String {
    idmint_test_support::namespace(label)
}

pub(crate) fn server_url(variable: &str) -> String {
    idmint_test_support::server_url(variable)
}

/// Runs `idmint ARGS` to its end (at most 60 s): exit status, stdout, stderr.
pub(crate) fn run(args: &[&str]) -> (i32, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, &format!("idmint {args:?} did not end within 60 s"))
}

/// `idmint serve` that must refuse to start: its exit status and log.
pub(crate) fn refused_serve(store: &str, node: &str, extra: &[&str]) -> (i32, String) {
    let child = idmint_command()
        .args(["serve", "--store", store, "--node-name", node])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .args(extra)
        .spawn()
        .unwrap();
    let (code, _, log) = finish(
        child,
        &format!("idmint serve {extra:?} should refuse, but runs"),
    );
    (code, log)
}

/// Waits at most 60 s for `child` to end (killing it and failing with `overdue` after that),
/// then reads what it wrote to the pipes it has: exit status, stdout, stderr.
fn finish(mut child: std::process::Child, overdue: &str) -> (i32, String, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{overdue}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |pipe: Option<&mut dyn Read>| {
        let mut text = String::new();
        if let Some(pipe) = pipe {
            pipe.read_to_string(&mut text).unwrap();
        }
        text
    };
    let out = read(child.stdout.as_mut().map(|p| p as &mut dyn Read));
    let err = read(child.stderr.as_mut().map(|p| p as &mut dyn Read));
    (status.code().unwrap_or(-1), out, err)
}

/// `GET PATH` on `server`, its JSON body (an error body too).
pub(crate) async fn get_json(
    http: &reqwest::Client,
    server: &Server,
    path: &str,
) -> serde_json::Value {
    let url = format!("{}{path}", server.http);
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Snowflakes from `server` for `length`, 100 per call.
async fn mint(server: &Server, length: Duration) -> Vec<u64> {
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut ids = Vec::new();
    while started.elapsed() < length {
        let body = get_json(&http, server, "/v1/snowflake?count=100").await;
        let batch = ids_of(&body);
        assert!(!batch.is_empty(), "{body}");
        ids.extend(batch);
    }
    ids
}

/// `/v1/decode/{id}` on `server`.
pub(crate) async fn decode(server: &Server, id: u64) -> serde_json::Value {
    get_json(&reqwest::Client::new(), server, &format!("/v1/decode/{id}")).await
}

/// `idmint id-space show --json`.
fn show(store: &str, ns: &str) -> serde_json::Value {
    let (code, out, err) = run(&[
        "id-space",
        "show",
        "--store",
        store,
        "--namespace",
        ns,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// The probe that found the bug: two runs on one store with epochs 2,011 ms apart. The second
/// is refused until the space is changed through the command, which itself refuses while the
/// first run serves and while the new epoch would reach back into issued IDs; then the two
/// runs share no ID, and every ID decodes with the space that issued it.
async fn epochs_two_seconds_apart_share_no_id(store: String) {
    let ns = namespace("epoch");
    let moved = (EPOCH_MS + 2_011).to_string();
    let first_flags = ["--namespace", &ns, "--layout", LAYOUT];
    let moved_flags = ["--namespace", &ns, "--layout", LAYOUT, "--epoch", &moved];

    let first = Server::start_with(&store, "node-a", &first_flags);
    // While it serves, no change is accepted: it could issue above any HWM read now.
    let change = ["id-space", "change", "--store", &store, "--namespace", &ns];
    let (code, _, err) = run(&[&change[..], &["--epoch", &moved]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("still hold worker leases") && err.contains("node-a"),
        "{err}"
    );
    // A dry run judges it anyway (issue 27: it was refused for the leases): the overlap and
    // when the change would pass, and the node that holds a lease.
    let (code, _, err) = run(&[&change[..], &["--epoch", &moved, "--dry-run"]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("would overlap") && err.contains("accepted from") && err.contains("node-a"),
        "{err}"
    );
    // An earlier epoch lies above what was issued: the plan, and that node-a must stop first.
    let (code, out, err) = run(&[&change[..], &["--epoch", "2024-01-01", "--dry-run"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("would change (dry run")
            && out.contains("not yet: 1 node(s) still hold worker leases (worker ")
            && out.contains("`node-a`"),
        "{out}"
    );
    let first_ids = mint(&first, Duration::from_millis(1_500)).await;
    let first_decoded = decode(&first, first_ids[0]).await;
    first.stop();

    // Right after the first run, the moved epoch still reaches back into its IDs (checked
    // first: the margin is the 2,011 ms the epoch moved).
    let (code, _, err) = run(&[&change[..], &["--epoch", &moved]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("would overlap") && err.contains("accepted from"),
        "{err}"
    );
    let (code, log) = refused_serve(&store, "node-a", &moved_flags);
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("1735689600000") && log.contains("1735689602011"),
        "{log}"
    );
    assert!(log.contains("idmint id-space change"), "{log}");
    assert!(!log.contains("worker lease acquired"), "{log}");
    assert_eq!(show(&store, &ns)["spaces"].as_array().unwrap().len(), 1);
    // Once the clock has passed that point, the same change goes through.
    std::thread::sleep(Duration::from_millis(2_200));
    let (code, out, err) = run(&[&change[..], &["--epoch", &moved]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("version 1 -> 2"), "{out}");

    let second = Server::start_with(&store, "node-a", &moved_flags);
    let second_ids = mint(&second, Duration::from_millis(1_500)).await;
    let old = decode(&second, first_ids[0]).await;
    let new = decode(&second, second_ids[0]).await;
    second.stop();

    let first_max = first_ids.iter().max().unwrap();
    let second_min = second_ids.iter().min().unwrap();
    assert!(
        second_min > first_max,
        "the second run issued {second_min}, not above the first run's {first_max}"
    );
    assert!(first_ids.len() > 1_000 && second_ids.len() > 1_000);
    assert_eq!(old["id_space"], 1);
    assert_eq!(old["unix_ms"], first_decoded["unix_ms"]);
    assert_eq!(new["id_space"], 2);
    let (code, out, err) = run(&[
        "decode",
        &first_ids[0].to_string(),
        "--store",
        &store,
        "--namespace",
        &ns,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let cli: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(cli["unix_ms"], first_decoded["unix_ms"]);
    assert_eq!(cli["id_space"], 1);
}

/// Another layout, datacenter or epoch is refused at start and takes no worker lease; a
/// change to a space below what was issued is refused and changes nothing; one above is
/// accepted and serves.
async fn other_settings_are_refused_and_take_nothing(store: String) {
    let ns = namespace("dc");
    let flags = [
        "--namespace",
        &ns,
        "--layout",
        "twitter",
        "--datacenter",
        "1",
    ];
    let first = Server::start_with(&store, "node-a", &flags);
    let first_ids = mint(&first, Duration::from_millis(300)).await;
    first.stop();
    let before = show(&store, &ns);

    let refusals: [(&[&str], &str); 3] = [
        (&["--layout", "sonyflake"], "layout"),
        (
            &["--layout", "twitter", "--datacenter", "2"],
            "datacenter differs",
        ),
        (
            &[
                "--layout",
                "twitter",
                "--datacenter",
                "1",
                "--epoch",
                "2020-01-01",
            ],
            "epoch differs",
        ),
    ];
    for (extra, reason) in refusals {
        let (code, log) = refused_serve(
            &store,
            "node-b",
            &[&["--namespace", &ns][..], extra].concat(),
        );
        assert_eq!(code, 2, "{extra:?}: {log}");
        assert!(log.contains(reason), "{extra:?}: {log}");
    }
    // Nothing changed in the store: same space, same leases, same high-water marks.
    assert_eq!(show(&store, &ns), before);

    let change = ["id-space", "change", "--store", &store, "--namespace", &ns];
    // The default layout from 2025, and Sonyflake's 10 ms ticks with 24 bits below them, lie
    // far below Twitter's IDs of today.
    for layout in [LAYOUT, "sonyflake"] {
        let (code, _, err) = run(&[&change[..], &["--layout", layout]].concat());
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("would overlap"), "{err}");
    }
    let (code, _, err) = run(&[&change[..], &["--datacenter", "32"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--datacenter"), "{err}");
    assert_eq!(show(&store, &ns), before);

    // One more bit below the time field, from an earlier epoch: every moment lies higher.
    let wider = ["--layout", WIDER, "--epoch", "2010-01-01"];
    let (code, out, err) = run(&[&change[..], &wider, &["--dry-run"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("dry run") && out.contains("it would pass now"),
        "{out}"
    );
    assert_eq!(show(&store, &ns), before);
    let (code, _, err) = run(&[&change[..], &wider].concat());
    assert_eq!(code, 0, "{err}");
    let second_flags = [&["--namespace", &ns, "--datacenter", "1"][..], &wider].concat();
    let second = Server::start_with(&store, "node-b", &second_flags);
    let second_ids = mint(&second, Duration::from_millis(300)).await;
    let old = decode(&second, first_ids[0]).await;
    second.stop();
    assert!(second_ids.iter().min() > first_ids.iter().max());
    assert_eq!(old["dc"], 1);
    assert_eq!(old["id_space"], 1);
    let spaces = show(&store, &ns)["spaces"].clone();
    assert_eq!(spaces[1]["layout"], WIDER);
    assert_eq!(spaces[1]["datacenter"], 1);
}

/// A store whose nodes issued IDs before ID spaces were recorded (a worker lease with an HWM,
/// no record): a node refuses to guess the settings; `id-space adopt` records them, once.
async fn a_store_from_before_id_spaces_is_adopted_explicitly(store: String) {
    let ns = namespace("adopt");
    let options = idmint_store::StoreOptions {
        namespace: ns.clone(),
        ..idmint_store::StoreOptions::default()
    };
    let opened = idmint_store::open(&store, &options).await.unwrap();
    let request = idmint_core::store::LeaseRequest {
        node_name: "old-node".into(),
        worker_count: 1024,
        worker_id: None,
        ttl: Duration::from_secs(30),
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
    };
    let lease = opened.leases.acquire(&request).await.unwrap();
    let hwm = 1_790_000_000_000;
    opened.leases.release(&lease, hwm).await.unwrap();

    let flags = ["--namespace", &ns, "--layout", LAYOUT];
    let (code, log) = refused_serve(&store, "node-a", &flags);
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("idmint id-space adopt"), "{log}");
    assert_eq!(show(&store, &ns)["spaces"].as_array().unwrap().len(), 0);

    let adopt = ["id-space", "adopt", "--store", &store, "--namespace", &ns];
    let (code, out, err) = run(&[&adopt[..], &["--layout", LAYOUT]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("version 1"), "{out}");
    let (code, _, err) = run(&[&adopt[..], &["--layout", LAYOUT]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already records"), "{err}");

    let node = Server::start_with(&store, "node-a", &flags);
    let ids = mint(&node, Duration::from_millis(200)).await;
    node.stop();
    // Above the old node's HWM: the fence holds across the adoption.
    let Ok(layout) = idmint_core::Layout::parse(LAYOUT) else {
        panic!("the layout parses");
    };
    let floor = layout.max_id_at(layout.tick_at(hwm).unwrap(), 0);
    assert!(ids.iter().all(|id| *id > floor));
}

/// A node frozen past its lease while the space changes: when it wakes, its renewal finds the
/// token moved on and its new lease is refused under the old space, so it serves no more
/// snowflakes and says why on `/readyz`; nothing it hands out lies in the new space.
async fn a_node_frozen_across_a_change_retires(store: String) {
    let ns = namespace("frozen");
    let mut flags = vec!["--namespace", &ns, "--layout", LAYOUT];
    flags.extend(LeaseTiming::SHORT.flags());
    let node = Server::start_with(&store, "frozen", &flags);
    mint(&node, Duration::from_millis(200)).await;
    let signal = |name: &str| {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &node.pid().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name}");
    };
    signal("STOP");
    std::thread::sleep(Duration::from_millis(2_500));
    let earlier = (EPOCH_MS - 86_400_000).to_string();
    let change = ["id-space", "change", "--store", &store, "--namespace", &ns];
    let (code, _, err) = run(&[&change[..], &["--epoch", &earlier]].concat());
    signal("CONT");
    assert_eq!(code, 0, "{err}");
    let new_first: u64 = show(&store, &ns)["spaces"][1]["first_id"].as_u64().unwrap();

    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut handed_out = Vec::new();
    let retired = loop {
        let body = get_json(&http, &node, "/v1/snowflake?count=10").await;
        handed_out.extend(ids_of(&body));
        let ready = get_json(&http, &node, "/readyz").await;
        if ready["error"]["code"] == "id_space_changed" {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(retired, "/readyz never said id_space_changed");
    assert!(handed_out.iter().all(|id| *id < new_first));
    node.stop();
}

/// `$test(store URL)` as one test per backend: SQLite, PostgreSQL, MariaDB, Redis.
macro_rules! on_every_store {
    ($name:ident, $test:ident) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $test(sqlite_url(stringify!($name))).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $test(server_url("IDMINT_TEST_POSTGRES_URL")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                $test(server_url("IDMINT_TEST_MYSQL_URL")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                $test(server_url("IDMINT_TEST_REDIS_URL")).await;
            }
        }
    };
}

pub(crate) use on_every_store;

on_every_store!(
    epochs_two_seconds_apart,
    epochs_two_seconds_apart_share_no_id
);
on_every_store!(
    other_settings_refused,
    other_settings_are_refused_and_take_nothing
);

/// `id-space show|change` and `decode --store` on a SQLite file that is not there refuse,
/// naming `--store`, and create nothing: a mistyped path must not become an empty store.
#[test]
fn operator_commands_never_create_an_embedded_store() {
    let url = sqlite_url("never-created");
    let path = url.trim_start_matches("sqlite://").to_owned();
    let commands: [&[&str]; 3] = [
        &["id-space", "show", "--store", &url],
        &[
            "id-space",
            "change",
            "--store",
            &url,
            "--epoch",
            "2024-01-01",
        ],
        &["decode", "5", "--store", &url],
    ];
    for args in commands {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("--store") && err.contains("does not exist"),
            "{args:?}: {err}"
        );
        assert!(
            !std::path::Path::new(&path).exists(),
            "{args:?} created {path}"
        );
    }
}
on_every_store!(adopted, a_store_from_before_id_spaces_is_adopted_explicitly);
on_every_store!(
    frozen_across_a_change,
    a_node_frozen_across_a_change_retires
);
