//! Store outages while running: a store that cannot answer makes calls fail as unavailable
//! within the call timeout (never hang), and once it answers again, or after its connections
//! were cut, calls succeed again by themselves, above every range handed out before.
//!
//! Each test makes the shared server misbehave for its own connections (a lock held by another
//! session, every session killed), so the tests of this binary run one at a time.

use crate::common;

use std::time::{Duration, Instant};

use idmint_core::store::TagSettings;
use idmint_core::{Error, Tag};
use idmint_store::{Store, StoreOptions};
use tokio::sync::Mutex;

/// One outage at a time.
static SERIAL: Mutex<()> = Mutex::const_new(());

const CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// Opens `url` in a fresh namespace with a short call timeout and a tag `t`; returns the
/// store, its namespace and the end of a first range.
async fn store_with_tag(url: &str) -> (Store, String, u64) {
    let namespace = common::fresh_namespace();
    let options = StoreOptions {
        call_timeout: CALL_TIMEOUT,
        ..common::options(&namespace)
    };
    let store = idmint_store::open(url, &options).await.unwrap();
    let tag = Tag::new("t").unwrap();
    store
        .segments
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    let first = store.segments.allocate(&tag, 10).await.unwrap();
    (store, namespace, first.end)
}

/// While the store cannot answer, an allocation fails as unavailable, within the timeout.
async fn fails_fast_as_unavailable(store: &Store) {
    let started = Instant::now();
    let err = store
        .segments
        .allocate(&Tag::new("t").unwrap(), 10)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::StoreUnavailable { .. }), "{err:?}");
    assert!(
        started.elapsed() < CALL_TIMEOUT * 3,
        "took {:?}",
        started.elapsed()
    );
}

/// Once the store answers again, allocations succeed within a few tries (any failure meanwhile
/// is an outage, never a wrong answer), above everything handed out before.
async fn recovers_above(store: &Store, floor: u64) -> u64 {
    let tag = Tag::new("t").unwrap();
    for _ in 0..20 {
        match store.segments.allocate(&tag, 10).await {
            Ok(range) => {
                assert!(
                    range.start >= floor,
                    "range {range:?} below {floor} after an outage"
                );
                return range.end;
            }
            Err(Error::StoreUnavailable { .. }) => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(other) => panic!("unexpected {other:?} after an outage"),
        }
    }
    panic!("the store did not recover within 20 tries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_calls_are_bounded_while_another_process_holds_the_write_lock() {
    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::{ConnectOptions, Connection};

    let _serial = SERIAL.lock().await;
    let url = common::sqlite_url();
    let (store, _, end) = store_with_tag(&url).await;
    let path = url.strip_prefix("sqlite://").unwrap();
    let mut other = SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap();
    let mut hold = other.begin_with("BEGIN IMMEDIATE").await.unwrap();
    fails_fast_as_unavailable(&store).await;
    sqlx::query("SELECT 1").execute(&mut *hold).await.unwrap();
    hold.rollback().await.unwrap();
    recovers_above(&store, end).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_calls_are_bounded_and_reconnect_by_themselves() {
    use sqlx::postgres::PgConnection;
    use sqlx::{AssertSqlSafe, Connection};

    let _serial = SERIAL.lock().await;
    // A server of the test's own: killing every session of the shared one broke the calls of
    // other tests running meanwhile.
    let server = crate::own_postgres::OwnPostgres::start("store-outage");
    let url = server.url();
    let (store, namespace, end) = store_with_tag(&url).await;
    let mut admin = PgConnection::connect(&url).await.unwrap();

    // Another session holds the tag's row: our update waits, and the wait is cut at the timeout.
    let lock = format!("SELECT max_id FROM {namespace}_segments WHERE tag = 't' FOR UPDATE");
    let mut hold = admin.begin().await.unwrap();
    sqlx::query(AssertSqlSafe(lock))
        .fetch_one(&mut *hold)
        .await
        .unwrap();
    fails_fast_as_unavailable(&store).await;
    hold.rollback().await.unwrap();
    let end = recovers_above(&store, end).await;

    // Every session of the pool is killed by the server: the pool reconnects by itself.
    let kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                WHERE usename = current_user AND pid <> pg_backend_pid()";
    sqlx::query(kill).execute(&mut admin).await.unwrap();
    recovers_above(&store, end).await;
}

/// A database whose `statement_timeout` (1 ms) is far below the store's call timeout: the
/// store's sessions bound their statements themselves, so a write that waits 300 ms for a row
/// lock succeeds, as on any database. Before, such a setting (on the role or the database)
/// failed every statement that waited, and sessions opened while it was set kept it after it
/// was reset.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_calls_are_bounded_by_the_store_not_by_the_databases_statement_timeout() {
    use sqlx::postgres::PgConnection;
    use sqlx::{AssertSqlSafe, Connection};

    let _serial = SERIAL.lock().await;
    let url = common::server_url("IDMINT_TEST_POSTGRES_URL");
    let mut admin = PgConnection::connect(&url).await.unwrap();
    let database = format!("{}_tiny_timeout", common::fresh_namespace());
    for ddl in [
        format!("CREATE DATABASE {database}"),
        format!("ALTER DATABASE {database} SET statement_timeout = '1ms'"),
    ] {
        sqlx::query(AssertSqlSafe(ddl))
            .execute(&mut admin)
            .await
            .unwrap();
    }
    let (base, _) = url.rsplit_once('/').unwrap();
    let tiny = format!("{base}/{database}");
    let (store, namespace, end) = store_with_tag(&tiny).await;

    // Another session (without the tiny timeout) holds the tag's row for 300 ms.
    let mut other = PgConnection::connect(&tiny).await.unwrap();
    sqlx::query("SET statement_timeout = 0")
        .execute(&mut other)
        .await
        .unwrap();
    let mut hold = other.begin().await.unwrap();
    let lock = format!("SELECT max_id FROM {namespace}_segments WHERE tag = 't' FOR UPDATE");
    sqlx::query(AssertSqlSafe(lock))
        .fetch_one(&mut *hold)
        .await
        .unwrap();
    let waiting = {
        let store = store.clone();
        tokio::spawn(async move { store.segments.allocate(&Tag::new("t").unwrap(), 10).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    hold.rollback().await.unwrap();
    let range = waiting.await.unwrap().unwrap();
    assert!(range.start >= end, "{range:?} below {end}");

    drop(store);
    other.close().await.unwrap();
    let drop_database = format!("DROP DATABASE {database} WITH (FORCE)");
    sqlx::query(AssertSqlSafe(drop_database))
        .execute(&mut admin)
        .await
        .unwrap();
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_calls_are_bounded_and_reconnect_by_themselves() {
    use sqlx::mysql::MySqlConnection;
    use sqlx::{AssertSqlSafe, Connection};

    let _serial = SERIAL.lock().await;
    // A server of the test's own: killing every connection of the shared one broke the calls
    // of other tests running meanwhile.
    let server = crate::own_mariadb::OwnMariadb::start("store-outage");
    let url = server.url();
    let (store, namespace, end) = store_with_tag(&url).await;
    let mut admin = MySqlConnection::connect(&url).await.unwrap();

    let lock = format!("SELECT max_id FROM {namespace}_segments WHERE tag = 't' FOR UPDATE");
    let mut hold = admin.begin().await.unwrap();
    sqlx::query(AssertSqlSafe(lock))
        .fetch_one(&mut *hold)
        .await
        .unwrap();
    fails_fast_as_unavailable(&store).await;
    hold.rollback().await.unwrap();
    let end = recovers_above(&store, end).await;

    let ours: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM information_schema.processlist WHERE user = 'idmint' AND id <> CONNECTION_ID()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!ours.is_empty());
    for id in ours {
        // The id comes from the server, an integer: KILL takes no bind parameter.
        let kill = format!("KILL CONNECTION {id}");
        let _ = sqlx::query(AssertSqlSafe(kill)).execute(&mut admin).await;
    }
    recovers_above(&store, end).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_calls_are_bounded_and_reconnect_by_themselves() {
    let _serial = SERIAL.lock().await;
    // A server of the test's own: pausing and killing every client of the shared one broke
    // the other tests' calls that ran meanwhile (broken pipes in the store-set tests).
    let server = crate::own_redis::OwnRedis::start("store-outage");
    let url = server.url();
    let (store, _, end) = store_with_tag(&url).await;
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut admin = client.get_multiplexed_async_connection().await.unwrap();

    // The server stops answering clients for 2.5 s: calls fail at the timeout, then resume.
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "2500", "ALL"][..])
        .query_async(&mut admin)
        .await
        .unwrap();
    fails_fast_as_unavailable(&store).await;
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let end = recovers_above(&store, end).await;

    // Every client connection is killed: the connection manager reconnects by itself.
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"][..])
        .query_async(&mut admin)
        .await
        .unwrap();
    recovers_above(&store, end).await;
}
