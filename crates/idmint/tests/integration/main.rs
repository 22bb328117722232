//! Tests of the `idmint` binary as users run it: the CLI, `idmint serve` end to end, real Redis client libraries, the client libraries failing over between nodes, the Grafana dashboard's metrics, the deployment files (OCI image, systemd unit, Kubernetes manifests), the operator's page in a real browser, hostile input, the security suite (tokens, connection and tag limits, TLS), the ID space, permuted IDs, the in-database function on real PostgreSQL servers, start-up checks, store sets, the docs' runnable blocks and links. The failure suite is `tests/reliability`.
//!
//! One test binary for the crate (one link, one process), a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod architecture;
mod browser;
mod cli;
mod client;
mod clients;
mod common;
mod connections;
mod damaged_store;
mod dashboard;
mod dated_ids;
mod deploy;
mod docs;
mod flood_memory;
mod hostile_input;
mod id128;
mod id_space;
mod in_database;
mod in_database_uuid;
mod layout_end;
mod operating;
#[path = "../support/own_redis.rs"]
mod own_redis;
mod permuted_ids;
mod sdk;
mod security;
mod serve;
mod starting;
mod store_sets;
mod tenants;
mod text_tags;
