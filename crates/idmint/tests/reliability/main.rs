//! The failure suite (issue 5): real `idmint serve` processes on real stores, real clients
//! over HTTP and the Redis protocol, and the faults that break other ID services: SIGKILL and
//! restart, clock steps (libfaketime), store outages, lease loss (SIGSTOP), and the store fault
//! matrix (full disk, locks, restarts, killed sessions, limits of each store). Every ID handed
//! out is collected in a [`ledger::Ledger`] and checked: no duplicate, strictly increasing per
//! client and process lifetime, and per worker ID the holders' IDs in disjoint ranges.
//!
//! The short form runs in `.ci/run`; `IDMINT_RELIABILITY_SECONDS=600` (per scenario phase)
//! makes the long form for release checks (RELIABILITY.md). Each scenario prints its figures
//! as a line starting with `reliability:`; run with `--nocapture` to see them.
//!
//! The scenarios run one at a time: they share the store servers and the two cores.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod clock;
mod id_space;
mod lease_loss;
mod ledger;
mod load;
mod node;
mod nodes;
mod outage;
#[path = "../support/own_mariadb.rs"]
mod own_mariadb;
#[path = "../support/own_postgres.rs"]
mod own_postgres;
#[path = "../support/own_redis.rs"]
mod own_redis;
#[path = "../support/root.rs"]
mod root;
mod store_faults;
mod store_set;
#[path = "../support/tmpfs.rs"]
mod tmpfs;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One scenario at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long the load phases of a scenario last: short in CI, long for release checks.
pub fn phase(short: Duration) -> Duration {
    match std::env::var("IDMINT_RELIABILITY_SECONDS") {
        Ok(text) => Duration::from_secs(text.parse().expect("IDMINT_RELIABILITY_SECONDS")),
        Err(_) => short,
    }
}

/// A store URL from the environment that `scripts/with-stores` sets.
pub fn store_url(variable: &str) -> String {
    idmint_test_support::server_url(variable)
}

/// A fresh SQLite file.
pub fn sqlite_url(name: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-reliability");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&file);
    format!("sqlite://{}", file.display())
}

/// A namespace no earlier run used, so each scenario starts from empty tables in a shared
/// database.
pub fn fresh_namespace(label: &str) -> String {
    idmint_test_support::namespace(label)
}

/// A multi-threaded runtime for a scenario's clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn nodes_killed_and_restarted_on_sqlite() {
    let _serial = serial();
    nodes::killed_and_restarted("sqlite", &sqlite_url("nodes"));
}

#[test]
fn nodes_killed_and_restarted_on_postgres() {
    let _serial = serial();
    nodes::killed_and_restarted("postgres", &store_url("IDMINT_TEST_POSTGRES_URL"));
}

#[test]
fn nodes_killed_and_restarted_on_mariadb() {
    let _serial = serial();
    nodes::killed_and_restarted("mariadb", &store_url("IDMINT_TEST_MYSQL_URL"));
}

#[test]
fn nodes_killed_and_restarted_on_redis() {
    let _serial = serial();
    nodes::killed_and_restarted("redis", &store_url("IDMINT_TEST_REDIS_URL"));
}

#[test]
fn clock_stepped_back_while_running() {
    let _serial = serial();
    clock::step_back_while_running(&store_url("IDMINT_TEST_POSTGRES_URL"));
}

#[test]
fn clock_behind_at_restart_under_each_policy() {
    let _serial = serial();
    clock::restart_behind_under_each_policy(&store_url("IDMINT_TEST_POSTGRES_URL"));
}

#[test]
fn store_outage_covered_by_the_buffers_on_postgres() {
    let _serial = serial();
    outage::covered_by_buffers(
        "postgres",
        &store_url("IDMINT_TEST_POSTGRES_URL"),
        "IDMINT_TEST_POSTGRES_PID",
    );
}

#[test]
fn store_outage_longer_than_the_buffers_on_redis() {
    let _serial = serial();
    outage::longer_than_buffers(
        "redis",
        &store_url("IDMINT_TEST_REDIS_URL"),
        "IDMINT_TEST_REDIS_PID",
    );
}

#[test]
fn lease_lost_while_frozen_on_postgres() {
    let _serial = serial();
    lease_loss::frozen_past_ttl("postgres", &store_url("IDMINT_TEST_POSTGRES_URL"));
}

#[test]
fn lease_lost_while_frozen_on_redis() {
    let _serial = serial();
    lease_loss::frozen_past_ttl("redis", &store_url("IDMINT_TEST_REDIS_URL"));
}

#[test]
fn id_space_changed_between_phases_on_sqlite() {
    let _serial = serial();
    id_space::changed_between_phases("sqlite", &sqlite_url("id-space"));
}

#[test]
fn id_space_changed_between_phases_on_postgres() {
    let _serial = serial();
    id_space::changed_between_phases("postgres", &store_url("IDMINT_TEST_POSTGRES_URL"));
}

#[test]
fn id_space_changed_between_phases_on_mariadb() {
    let _serial = serial();
    id_space::changed_between_phases("mariadb", &store_url("IDMINT_TEST_MYSQL_URL"));
}

#[test]
fn id_space_changed_between_phases_on_redis() {
    let _serial = serial();
    id_space::changed_between_phases("redis", &store_url("IDMINT_TEST_REDIS_URL"));
}

#[test]
fn store_set_survives_one_store_lost() {
    let _serial = serial();
    store_set::one_store_lost(
        &store_url("IDMINT_TEST_POSTGRES_URL"),
        &store_url("IDMINT_TEST_MYSQL_URL"),
    );
}

#[test]
fn store_fault_sqlite_disk_full() {
    let _serial = serial();
    store_faults::run("SQLite", "disk full", &mut store_faults::DiskFull::new());
}

#[test]
fn store_fault_sqlite_locked_by_another_process() {
    let _serial = serial();
    store_faults::run(
        "SQLite",
        "locked by another process",
        &mut store_faults::Locked::new(),
    );
}

#[test]
fn store_fault_sqlite_file_made_read_only() {
    let _serial = serial();
    store_faults::run(
        "SQLite",
        "file made read-only",
        &mut store_faults::ReadOnly::new(),
    );
}

#[test]
fn store_fault_postgres_restarted() {
    let _serial = serial();
    store_faults::run(
        "PostgreSQL",
        "restart",
        &mut store_faults::PostgresRestart::new(),
    );
}

#[test]
fn store_fault_postgres_sessions_terminated() {
    let _serial = serial();
    store_faults::run(
        "PostgreSQL",
        "sessions terminated",
        &mut store_faults::PostgresTerminate::new(),
    );
}

#[test]
fn store_fault_postgres_statement_timeout() {
    let _serial = serial();
    store_faults::run(
        "PostgreSQL",
        "statement_timeout",
        &mut store_faults::PostgresStatementTimeout::new(),
    );
}

#[test]
fn store_fault_mariadb_restarted() {
    let _serial = serial();
    store_faults::run(
        "MariaDB",
        "restart",
        &mut store_faults::MariadbRestart::new(),
    );
}

#[test]
fn store_fault_mariadb_connections_killed() {
    let _serial = serial();
    store_faults::run(
        "MariaDB",
        "connections killed",
        &mut store_faults::MariadbKill::new(),
    );
}

#[test]
fn store_fault_redis_restarted() {
    let _serial = serial();
    store_faults::run("Redis", "restart", &mut store_faults::RedisRestart::new());
}

#[test]
fn store_fault_redis_clients_killed() {
    let _serial = serial();
    store_faults::run(
        "Redis",
        "clients killed",
        &mut store_faults::RedisClientKill::new(),
    );
}

#[test]
fn store_fault_redis_maxmemory_reached() {
    let _serial = serial();
    store_faults::run(
        "Redis",
        "maxmemory reached",
        &mut store_faults::RedisMaxmemory::new(),
    );
}
