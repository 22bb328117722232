//! `INFO`: the sections Redis clients and tools read, with idmint's own.
//!
//! Clients parse more of `INFO` than one would think: some check `role:master` in
//! `replication` before writing, `cluster_enabled` to choose a cluster client, `loading` in
//! `persistence` before their first command, `redis_version` to choose features. Every
//! default section of Redis 7 is here, with the values a standalone primary without
//! persistence, replicas or modules reports (idmint's durability is its store's), then
//! `idmint`: the layout, the worker lease and the segment buffers.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::Refusal;
use crate::resp::session::Session;

/// The Redis version idmint answers as in `INFO` (the command set it follows); its own
/// version is `idmint_version`.
const REDIS_VERSION: &str = "7.0.0";

/// Most `segmentN:` lines in `INFO`: the busiest tags.
const INFO_TAGS: usize = 100;

/// idmint's version.
pub(super) const IDMINT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The sections `INFO` (or `INFO default`) answers, in Redis' order, then idmint's.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
    "idmint",
];

/// Appends an `INFO` section: `# Title`, `key:value` lines, a blank line; CRLF line endings.
fn section(text: &mut String, title: &str, fields: &[(&str, String)]) {
    let _ = write!(text, "# {title}\r\n");
    for (key, value) in fields {
        let _ = write!(text, "{key}:{value}\r\n");
    }
    text.push_str("\r\n");
}

/// This process' resident memory in bytes, from `/proc/self/status` (0 where there is none).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(0)
}

/// Bytes as Redis' `*_human` fields show them (`1.50M`).
fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.2}{}", UNITS[unit])
    }
}

/// `INFO [section ...]`: the default sections (see [`DEFAULT_SECTIONS`]) without an argument
/// or with `default`, `all` or `everything`; otherwise the ones named (any case; names it does
/// not know are left out). A verbatim string in RESP3, a bulk string in RESP2, as Redis
/// answers.
#[derive(Debug)]
pub(super) struct Info {
    /// Bit `i`: [`DEFAULT_SECTIONS`]`[i]` is wanted.
    sections: u16,
}

impl Info {
    pub(super) fn parse(params: &[Bytes]) -> Result<Self, Refusal<'_>> {
        const ALL: u16 = (1 << DEFAULT_SECTIONS.len()) - 1;
        let everything = |word: &Bytes| {
            ["all", "everything", "default"]
                .iter()
                .any(|all| word.eq_ignore_ascii_case(all.as_bytes()))
        };
        if params.is_empty() || params.iter().any(everything) {
            return Ok(Self { sections: ALL });
        }
        let mut sections = 0;
        for (i, section) in DEFAULT_SECTIONS.iter().enumerate() {
            if params
                .iter()
                .any(|word| word.eq_ignore_ascii_case(section.as_bytes()))
            {
                sections |= 1 << i;
            }
        }
        Ok(Self { sections })
    }

    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        let want = |section: &str| {
            DEFAULT_SECTIONS
                .iter()
                .position(|known| *known == section)
                .is_some_and(|i| self.sections & (1 << i) != 0)
        };
        let shared = &session.shared;
        let mut text = String::new();
        if want("server") {
            let uptime = shared.started.elapsed().as_secs();
            section(
                &mut text,
                "Server",
                &[
                    ("redis_version", REDIS_VERSION.to_owned()),
                    ("redis_git_sha1", "00000000".to_owned()),
                    ("redis_git_dirty", "0".to_owned()),
                    ("redis_mode", "standalone".to_owned()),
                    ("server_name", "idmint".to_owned()),
                    ("idmint_version", IDMINT_VERSION.to_owned()),
                    (
                        "os",
                        format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                    ),
                    ("arch_bits", usize::BITS.to_string()),
                    ("process_id", std::process::id().to_string()),
                    (
                        "tcp_port",
                        shared.local_addr.map_or(0, |a| a.port()).to_string(),
                    ),
                    ("uptime_in_seconds", uptime.to_string()),
                    ("uptime_in_days", (uptime / 86_400).to_string()),
                    ("run_id", shared.run_id.clone()),
                    ("io_threads_active", "0".to_owned()),
                ],
            );
        }
        if want("clients") {
            section(
                &mut text,
                "Clients",
                &[
                    (
                        "connected_clients",
                        shared.connected.load(Ordering::Relaxed).to_string(),
                    ),
                    ("cluster_connections", "0".to_owned()),
                    (
                        "maxclients",
                        shared.options.connections.max_connections.to_string(),
                    ),
                    ("blocked_clients", "0".to_owned()),
                    ("tracking_clients", "0".to_owned()),
                ],
            );
        }
        if want("memory") {
            let resident = resident_bytes();
            section(
                &mut text,
                "Memory",
                &[
                    ("used_memory", resident.to_string()),
                    ("used_memory_human", human(resident)),
                    ("used_memory_rss", resident.to_string()),
                    ("used_memory_rss_human", human(resident)),
                    ("maxmemory", "0".to_owned()),
                    ("maxmemory_human", "0B".to_owned()),
                    ("maxmemory_policy", "noeviction".to_owned()),
                    ("mem_allocator", "libc".to_owned()),
                ],
            );
        }
        if want("persistence") {
            // Nothing is kept in memory that a snapshot would save: every range and lease is
            // durable in the store before it is used.
            section(
                &mut text,
                "Persistence",
                &[
                    ("loading", "0".to_owned()),
                    ("async_loading", "0".to_owned()),
                    ("rdb_changes_since_last_save", "0".to_owned()),
                    ("rdb_bgsave_in_progress", "0".to_owned()),
                    ("rdb_last_bgsave_status", "ok".to_owned()),
                    ("aof_enabled", "0".to_owned()),
                    ("aof_rewrite_in_progress", "0".to_owned()),
                    ("aof_last_write_status", "ok".to_owned()),
                ],
            );
        }
        if want("stats") {
            let commands = shared.total_commands.load(Ordering::Relaxed) + session.commands_pending;
            section(
                &mut text,
                "Stats",
                &[
                    (
                        "total_connections_received",
                        shared.total_connections.load(Ordering::Relaxed).to_string(),
                    ),
                    ("total_commands_processed", commands.to_string()),
                    (
                        "rejected_connections",
                        shared
                            .rejected_connections
                            .load(Ordering::Relaxed)
                            .to_string(),
                    ),
                    ("expired_keys", "0".to_owned()),
                    ("evicted_keys", "0".to_owned()),
                    ("keyspace_hits", "0".to_owned()),
                    ("keyspace_misses", "0".to_owned()),
                ],
            );
        }
        if want("replication") {
            // Every node is a primary of its own; no node replicates another.
            section(
                &mut text,
                "Replication",
                &[
                    ("role", "master".to_owned()),
                    ("connected_slaves", "0".to_owned()),
                    ("master_failover_state", "no-failover".to_owned()),
                    ("master_replid", shared.run_id.clone()),
                    ("master_replid2", "0".repeat(40)),
                    ("master_repl_offset", "0".to_owned()),
                    ("second_repl_offset", "-1".to_owned()),
                    ("repl_backlog_active", "0".to_owned()),
                    ("repl_backlog_size", "0".to_owned()),
                    ("repl_backlog_first_byte_offset", "0".to_owned()),
                    ("repl_backlog_histlen", "0".to_owned()),
                ],
            );
        }
        if want("modules") {
            section(&mut text, "Modules", &[]);
        }
        if want("errorstats") {
            section(&mut text, "Errorstats", &[]);
        }
        if want("cluster") {
            section(&mut text, "Cluster", &[("cluster_enabled", "0".to_owned())]);
        }
        if want("keyspace") {
            // The tags this node has loaded, as `DBSIZE` counts them.
            let tags = shared.ids.segments().len();
            let keys = if tags == 0 {
                Vec::new()
            } else {
                vec![("db0", format!("keys={tags},expires=0,avg_ttl=0"))]
            };
            section(&mut text, "Keyspace", &keys);
        }
        if want("idmint") {
            let ids = &shared.ids;
            let layout = ids.layout();
            let mut fields = vec![
                ("layout", layout.spec()),
                ("layout_epoch_ms", layout.epoch_ms().to_string()),
                ("layout_ends_at_ms", layout.ends_at_ms().to_string()),
                // 1 when IDs are handed out permuted: not ordered, and no runs.
                ("ids_permuted", u8::from(ids.is_permuted()).to_string()),
                ("worker_id", ids.keeper().lease().worker_id.to_string()),
                (
                    "worker_lease_held",
                    u8::from(ids.keeper().is_held()).to_string(),
                ),
            ];
            // Rates snapshotted once: they move while the list is sorted.
            let mut buffers: Vec<_> = ids
                .segments()
                .buffers()
                .into_iter()
                .map(|buffer| (buffer.rate_per_sec(), buffer))
                .collect();
            fields.push(("segment_tags", buffers.len().to_string()));
            // One `segmentN:` line per tag, like Redis' `slaveN:` lines (a tag may hold `:`,
            // so it is a value, never a key): the busiest [`INFO_TAGS`], so that a node with
            // thousands of tags answers `INFO` in a few kilobytes.
            let shown = buffers.len().min(INFO_TAGS);
            if shown < buffers.len() {
                buffers.select_nth_unstable_by(shown, |a, b| b.0.total_cmp(&a.0));
                buffers.truncate(shown);
            }
            buffers.sort_by(|a, b| b.0.total_cmp(&a.0));
            let names: Vec<String> = (0..buffers.len()).map(|i| format!("segment{i}")).collect();
            for (name, (rate, buffer)) in names.iter().zip(&buffers) {
                let value = format!(
                    "tag={},remaining={},step={},rate_per_sec={rate:.1}",
                    buffer.tag(),
                    buffer.remaining(),
                    buffer.step(),
                );
                fields.push((name.as_str(), value));
            }
            section(&mut text, "Idmint", &fields);
        }
        // Redis ends the reply without the last blank line.
        let body = text.strip_suffix("\r\n").unwrap_or(&text);
        encode::verbatim(out, session.protocol, body.as_bytes());
    }
}
