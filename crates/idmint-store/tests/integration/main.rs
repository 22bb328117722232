//! Every backend against the store traits: the conformance suite, store sets, crashes, outages,
//! durability guards and SQLite's own cases (damage, faults of the machine); and the properties
//! of showing a store URL without its credentials.
//!
//! One test binary for the crate (one link, one process), a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod conformance;
mod crash;
mod location_props;
mod outage;
#[path = "../../../idmint/tests/support/own_mariadb.rs"]
mod own_mariadb;
#[path = "../../../idmint/tests/support/own_postgres.rs"]
mod own_postgres;
#[path = "../../../idmint/tests/support/own_redis.rs"]
mod own_redis;
#[path = "../../../idmint/tests/support/root.rs"]
mod root;
mod server_guards;
mod set_conformance;
mod sqlite_damage;
mod sqlite_faults;
mod sqlite_specific;
mod store_sets;
#[path = "../../../idmint/tests/support/tmpfs.rs"]
mod tmpfs;
