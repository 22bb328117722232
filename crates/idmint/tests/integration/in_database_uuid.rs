//! `idmint sql install --uuid` against real PostgreSQL servers: `<ns>_uuidv7()` makes UUIDv7s
//! of idmint's layout (version 7, RFC variant, the ms of the server's clock, a 24-bit counter),
//! strictly increasing in the order a session draws them, within a statement and across
//! statements, through a counter overflow and a server clock stepping back (libfaketime), and
//! unique across concurrent sessions; PostgreSQL's `uuid` type, Python's `uuid` module and the
//! `uuid` crate read them as v7, and `ORDER BY` on a `uuid` column gives generation order.

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::{AssertSqlSafe, Connection, PgConnection};

use crate::in_database::{runtime, sql, FaketimeServer};
use crate::starting::{fresh_namespace, postgres_url};

/// The counter's bound: 2^24 - 1.
const COUNTER_MAX: u32 = (1 << 24) - 1;

/// One ID as the spec splits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts {
    ms: u64,
    counter: u32,
}

/// Parses a canonical UUID as PostgreSQL prints it, checks it is a UUIDv7 of the RFC variant
/// (by the `uuid` crate) and splits it.
fn parts(text: &str) -> (u128, Parts) {
    let id = uuid::Uuid::parse_str(text).unwrap_or_else(|e| panic!("`{text}`: {e}"));
    assert_eq!(id.get_version_num(), 7, "{text}");
    assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{text}");
    assert_eq!(id.hyphenated().to_string(), text, "not canonical: {text}");
    let b = id.as_bytes();
    let ms = b[..6]
        .iter()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
    let counter = (u32::from(b[6] & 0x0f) << 20)
        | (u32::from(b[7]) << 12)
        | (u32::from(b[8] & 0x3f) << 6)
        | (u32::from(b[9]) >> 2);
    (id.as_u128(), Parts { ms, counter })
}

/// Checks a session's IDs in the order it drew them: strictly increasing, and each one's
/// counter is the spec's (seeded below 2^23 on a new ms, the last one's + 1 in the same ms).
fn check_session(ids: &[String]) {
    let parsed: Vec<(u128, Parts)> = ids.iter().map(|t| parts(t)).collect();
    for pair in parsed.windows(2) {
        let ((a, pa), (b, pb)) = (pair[0], pair[1]);
        assert!(a < b, "{pa:?} then {pb:?}: not increasing");
        if pb.ms == pa.ms {
            assert_eq!(pb.counter, pa.counter + 1, "{pa:?} then {pb:?}");
        } else {
            assert!(pb.counter < 1 << 23, "a new ms seeded {pb:?}");
        }
    }
}

/// The server's clock by `db`'s backend, whole ms since the Unix epoch.
async fn clock_ms(db: &mut PgConnection) -> u64 {
    let ms: i64 =
        sqlx::query_scalar("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint")
            .fetch_one(db)
            .await
            .unwrap();
    ms as u64
}

/// `n` IDs from one statement, in the order the function made them.
async fn draw_in_one_statement(db: &mut PgConnection, ns: &str, n: usize) -> Vec<String> {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT {ns}_uuidv7()::text FROM generate_series(1, {n})"
    )))
    .fetch_all(db)
    .await
    .unwrap()
}

async fn draw_one(db: &mut PgConnection, ns: &str) -> String {
    sqlx::query_scalar(AssertSqlSafe(format!("SELECT {ns}_uuidv7()::text")))
        .fetch_one(db)
        .await
        .unwrap()
}

async fn exec(db: &mut PgConnection, statement: String) {
    sqlx::raw_sql(AssertSqlSafe(statement))
        .execute(db)
        .await
        .unwrap();
}

/// Python's `uuid` module reads every ID as a version 7 UUID of the RFC variant and sorts
/// them as they were drawn.
fn python_reads_them_in_order(ids: &[String]) {
    let script = "import sys, uuid\n\
                  ids = [uuid.UUID(l.strip()) for l in sys.stdin if l.strip()]\n\
                  assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids)\n\
                  assert sorted(ids) == ids and len(set(ids)) == len(ids)\n\
                  assert all(str(u) == l.strip() for u, l in zip(ids, sys.argv[1:]))\n\
                  print(len(ids))\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 on the PATH");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ids.join("\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        ids.len().to_string()
    );
}

#[test]
fn the_uuid_function_makes_v7_ids_in_the_order_a_session_draws_them() {
    let url = postgres_url();
    let ns = fresh_namespace("uu");
    let (status, text) = sql(&["install", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 0, "{text}");
    assert!(text.contains(&format!(".{ns}_uuidv7()")), "{text}");
    // The snowflake function's options do not go with it.
    let (status, text) = sql(&[
        "install",
        "--store",
        &url,
        "--namespace",
        &ns,
        "--uuid",
        "--workers",
        "3",
    ]);
    assert_eq!(status, 2, "{text}");
    let (status, again) = sql(&["install", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 1, "{again}");
    assert!(again.contains("installed already"), "{again}");

    let rt = runtime();
    rt.block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        // No worker ID leased, none of the store's tables made.
        let tables: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NULL")
            .bind(format!("{ns}_workers"))
            .fetch_one(&mut db)
            .await
            .unwrap();
        assert!(tables, "--uuid made the namespace's tables");
        let kind: String = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT pg_typeof({ns}_uuidv7())::text"
        )))
        .fetch_one(&mut db)
        .await
        .unwrap();
        assert_eq!(kind, "uuid");

        // 20,000 in one statement, then 2,000 statements of one: one session's order.
        let before = clock_ms(&mut db).await;
        let mut ids = draw_in_one_statement(&mut db, &ns, 20_000).await;
        for _ in 0..2_000 {
            ids.push(draw_one(&mut db, &ns).await);
        }
        let after = clock_ms(&mut db).await;
        check_session(&ids);
        for id in &ids {
            let ms = parts(id).1.ms;
            assert!(
                (before..=after).contains(&ms),
                "{id}: {ms} not in {before}..={after}"
            );
        }
        let same_ms = ids
            .windows(2)
            .filter(|w| parts(&w[0]).1.ms == parts(&w[1]).1.ms)
            .count();
        assert!(
            same_ms > 1_000,
            "only {same_ms} IDs shared a ms: the counter went untested"
        );
        python_reads_them_in_order(&ids);

        // As a column default: ORDER BY the uuid column is the order of the inserts.
        let table = format!("{ns}_orders");
        exec(
            &mut db,
            format!("CREATE TABLE {table} (id uuid PRIMARY KEY DEFAULT {ns}_uuidv7(), n int)"),
        )
        .await;
        for batch in 0..20 {
            let (from, to) = (batch * 500 + 1, batch * 500 + 500);
            exec(
                &mut db,
                format!("INSERT INTO {table} (n) SELECT g FROM generate_series({from}, {to}) g"),
            )
            .await;
        }
        let order: Vec<i32> =
            sqlx::query_scalar(AssertSqlSafe(format!("SELECT n FROM {table} ORDER BY id")))
                .fetch_all(&mut db)
                .await
                .unwrap();
        assert_eq!(order, (1..=10_000).collect::<Vec<i32>>());
        // The text PostgreSQL prints is the uuid it stores.
        let same: bool = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT bool_and(id::text::uuid = id) FROM {table}"
        )))
        .fetch_one(&mut db)
        .await
        .unwrap();
        assert!(same);

        // Uninstall: refused while the default uses it, then done.
        let (status, text) = sql(&["uninstall", "--store", &url, "--namespace", &ns, "--uuid"]);
        assert_eq!(status, 1, "{text}");
        assert!(
            text.contains(&format!("default value for column id of table {table}")),
            "{text}"
        );
        exec(
            &mut db,
            format!("ALTER TABLE {table} ALTER COLUMN id DROP DEFAULT"),
        )
        .await;
    });
    let (status, text) = sql(&["uninstall", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 0, "{text}");
    let (status, text) = sql(&["uninstall", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 1, "{text}");
    assert!(text.contains("not installed"), "{text}");
}

#[test]
fn concurrent_sessions_draw_uuids_that_never_meet() {
    let url = postgres_url();
    let ns = fresh_namespace("uc");
    let (status, text) = sql(&["install", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 0, "{text}");
    let rt = runtime();
    let sessions: Vec<Vec<String>> = rt.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let (url, ns) = (url.clone(), ns.clone());
                tokio::spawn(async move {
                    let mut db = PgConnection::connect(&url).await.unwrap();
                    let mut ids = Vec::with_capacity(20_000);
                    // Statements of 1,000 and of 1, in turns, each in its own transaction.
                    while ids.len() < 20_000 {
                        ids.extend(draw_in_one_statement(&mut db, &ns, 1_000).await);
                        for _ in 0..50 {
                            ids.push(draw_one(&mut db, &ns).await);
                        }
                    }
                    ids
                })
            })
            .collect();
        let mut sessions = Vec::new();
        for task in tasks {
            sessions.push(task.await.unwrap());
        }
        sessions
    });
    let mut seen = HashSet::new();
    for ids in &sessions {
        check_session(ids);
        for id in ids {
            assert!(seen.insert(id.clone()), "{id} drawn twice");
        }
    }
    assert!(seen.len() >= 80_000, "{}", seen.len());
    println!(
        "in-database uuid: {} UUIDv7s from 4 concurrent sessions, none twice",
        seen.len()
    );
}

#[test]
fn a_session_counts_on_past_its_counter_a_clock_behind_it_and_says_what_a_rollback_undoes() {
    let url = postgres_url();
    let ns = fresh_namespace("uo");
    let (status, text) = sql(&["install", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 0, "{text}");
    let setting = format!("idmint.uuidv7_{ns}");
    runtime().block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        let plant = |state: String| {
            format!("SELECT set_config('{setting}', '{state}', false)")
        };
        // The counter at its end: the next ID borrows the next ms, counter 0.
        let ahead = clock_ms(&mut db).await + 60_000;
        exec(&mut db, plant(format!("{ahead}:{COUNTER_MAX}"))).await;
        let ids = draw_in_one_statement(&mut db, &ns, 2).await;
        assert_eq!(parts(&ids[0]).1, Parts { ms: ahead + 1, counter: 0 });
        assert_eq!(parts(&ids[1]).1, Parts { ms: ahead + 1, counter: 1 });
        // The session's last ID a minute ahead of the clock (as after the clock stepped back):
        // it counts on from it, in statements and transactions of their own.
        exec(&mut db, plant(format!("{ahead}:5"))).await;
        let mut ids = vec![draw_one(&mut db, &ns).await];
        ids.push(draw_one(&mut db, &ns).await);
        ids.extend(draw_in_one_statement(&mut db, &ns, 100).await);
        assert_eq!(parts(&ids[0]).1, Parts { ms: ahead, counter: 6 });
        check_session(&ids);
        assert!(ids.iter().all(|id| parts(id).1.ms == ahead));

        // A rollback undoes the setting with the transaction: the session goes on from its
        // state before it (docs/in-database.md says so). The IDs stay unique.
        let before: String = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT current_setting('{setting}')"
        )))
        .fetch_one(&mut db)
        .await
        .unwrap();
        let mut tx = db.begin().await.unwrap();
        let rolled_back = draw_in_one_statement(&mut tx, &ns, 10).await;
        tx.rollback().await.unwrap();
        let after_rollback: String = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT current_setting('{setting}')"
        )))
        .fetch_one(&mut db)
        .await
        .unwrap();
        assert_eq!(after_rollback, before);
        let next = draw_in_one_statement(&mut db, &ns, 10).await;
        check_session(&next);
        let all: HashSet<&String> = ids.iter().chain(&rolled_back).chain(&next).collect();
        assert_eq!(all.len(), ids.len() + rolled_back.len() + next.len());
        // DISCARD ALL starts the session afresh, on the clock again.
        // (Unnamed statements: DISCARD ALL drops the driver's prepared ones behind its back.)
        exec(&mut db, "DISCARD ALL".to_owned()).await;
        let (now, fresh): (i64, String) = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, {ns}_uuidv7()::text"
        )))
        .persistent(false)
        .fetch_one(&mut db)
        .await
        .unwrap();
        let (now, fresh) = (now as u64, parts(&fresh).1);
        assert!(fresh.ms >= now && fresh.ms < ahead, "{fresh:?}");
    });
}

#[test]
fn a_database_clock_stepping_back_keeps_a_sessions_uuids_increasing() {
    let server = FaketimeServer::start();
    let ns = "uclock";
    let (status, text) = sql(&[
        "install",
        "--store",
        &server.url,
        "--namespace",
        ns,
        "--uuid",
    ]);
    assert_eq!(status, 0, "{text}");
    let rt = runtime();
    rt.block_on(async {
        let mut db = PgConnection::connect(&server.url).await.unwrap();
        let mut ids = draw_in_one_statement(&mut db, ns, 1_000).await;
        for _ in 0..100 {
            ids.push(draw_one(&mut db, ns).await);
        }
        let last_before = parts(ids.last().unwrap()).1;
        // Back 5 s (`clock` returns once every backend runs on it, this one included).
        server.clock("-5s");
        let behind = clock_ms(&mut db).await;
        assert!(
            behind + 2_000 < last_before.ms,
            "the clock reads {behind}, the last ID {last_before:?}"
        );
        // The session goes on from its last ID, ahead of the clock, for a second.
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut during = Vec::new();
        while Instant::now() < deadline {
            during.extend(draw_in_one_statement(&mut db, ns, 200).await);
            during.push(draw_one(&mut db, ns).await);
        }
        assert!(during.iter().all(|id| parts(id).1.ms == last_before.ms));
        ids.extend(during);
        check_session(&ids);
        // A new session starts on the clock as it reads now; its IDs meet none of the others.
        let mut other = PgConnection::connect(&server.url).await.unwrap();
        let fresh = draw_in_one_statement(&mut other, ns, 1_000).await;
        check_session(&fresh);
        assert!(parts(&fresh[0]).1.ms < last_before.ms);
        let all: HashSet<&String> = ids.iter().chain(&fresh).collect();
        assert_eq!(all.len(), ids.len() + fresh.len());
        println!(
            "in-database uuid clock: {} IDs of one session over a 5 s step back, in order",
            ids.len()
        );
    });
    server.clock("+0");
}

/// The shared vectors (`clients/conformance/id128_vectors.json`): for each UUIDv7 case without a
/// node field whose ms is ahead of the clock, a session whose last ID is just before the case
/// draws exactly the case's bits, the 50 random ones aside; PostgreSQL prints every case's
/// text as the vectors do and sorts them by their bytes.
#[test]
fn the_function_composes_the_shared_vectors() {
    let path = crate::clients::repo().join("clients/conformance/id128_vectors.json");
    let vectors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases: Vec<&serde_json::Value> = vectors["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "uuidv7")
        .collect();
    let url = postgres_url();
    let ns = fresh_namespace("uv");
    let (status, text) = sql(&["install", "--store", &url, "--namespace", &ns, "--uuid"]);
    assert_eq!(status, 0, "{text}");
    let random_bits = (1u128 << 50) - 1;
    runtime().block_on(async {
        let mut db = PgConnection::connect(&url).await.unwrap();
        let now = clock_ms(&mut db).await;
        let mut composed = 0;
        for case in &cases {
            let text = case["uuid"].as_str().unwrap();
            let shown: String = sqlx::query_scalar("SELECT $1::uuid::text")
                .bind(text)
                .fetch_one(&mut db)
                .await
                .unwrap();
            assert_eq!(shown, text);
            let (ms, counter) = (
                case["ms"].as_u64().unwrap(),
                case["counter"].as_u64().unwrap(),
            );
            if case["node_bits"] != 0 || ms <= now + 1 {
                continue;
            }
            // The state just before the case: counter - 1, or the ms before at its last counter.
            let state = match counter {
                0 => format!("{}:{COUNTER_MAX}", ms - 1),
                c => format!("{ms}:{}", c - 1),
            };
            let (_, id): (String, String) = sqlx::query_as(AssertSqlSafe(format!(
                "SELECT set_config('idmint.uuidv7_{ns}', '{state}', false), {ns}_uuidv7()::text"
            )))
            .fetch_one(&mut db)
            .await
            .unwrap();
            let want = uuid::Uuid::parse_str(text).unwrap().as_u128();
            let got = uuid::Uuid::parse_str(&id).unwrap().as_u128();
            assert_eq!(got & !random_bits, want & !random_bits, "{id} for {text}");
            composed += 1;
        }
        assert!(composed >= 5, "only {composed} cases composed");
        let mut by_bytes: Vec<&str> = cases.iter().map(|c| c["uuid"].as_str().unwrap()).collect();
        by_bytes.sort_by_key(|t| uuid::Uuid::parse_str(t).unwrap().into_bytes());
        let sorted: Vec<String> = sqlx::query_scalar(
            "SELECT u::text FROM unnest($1::text[]) t, LATERAL (SELECT t::uuid AS u) x ORDER BY u",
        )
        .bind(&by_bytes)
        .fetch_all(&mut db)
        .await
        .unwrap();
        assert_eq!(sorted, by_bytes);
    });
}
