//! `INFO`: the sections Redis clients and tools read, with idmint's own.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use crate::resp::connection::Session;

/// The Redis version idmint answers as in `INFO` (the command set it follows); its own
/// version is `idmint_version`.
const REDIS_VERSION: &str = "7.0.0";

/// idmint's version.
pub(super) const IDMINT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Appends an `INFO` section: `# Title`, `key:value` lines, a blank line; CRLF line endings.
fn section(text: &mut String, title: &str, fields: &[(&str, String)]) {
    let _ = write!(text, "# {title}\r\n");
    for (key, value) in fields {
        let _ = write!(text, "{key}:{value}\r\n");
    }
    text.push_str("\r\n");
}

impl Session {
    /// `INFO [section ...]`: `server`, `clients`, `stats`, `keyspace` and `idmint` (the
    /// layout, the worker lease and the segment buffers); all of them by default.
    pub(super) fn info(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let wanted: Vec<String> = args
            .get(1..)
            .unwrap_or_default()
            .iter()
            .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
            .collect();
        let all = wanted.is_empty()
            || wanted
                .iter()
                .any(|s| matches!(s.as_str(), "all" | "everything" | "default"));
        let want = |section: &str| all || wanted.iter().any(|s| s == section);
        let shared = &self.shared;
        let mut text = String::new();
        if want("server") {
            let uptime = shared.started.elapsed().as_secs();
            section(
                &mut text,
                "Server",
                &[
                    ("redis_version", REDIS_VERSION.to_owned()),
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
                    ("maxclients", shared.options.max_connections.to_string()),
                ],
            );
        }
        if want("stats") {
            let commands = shared.total_commands.load(Ordering::Relaxed) + self.commands_pending;
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
                ],
            );
        }
        if want("idmint") {
            let ids = &shared.ids;
            let layout = ids.layout();
            let mut fields = vec![
                ("layout", layout.spec()),
                ("layout_epoch_ms", layout.epoch_ms().to_string()),
                ("layout_ends_at_ms", layout.ends_at_ms().to_string()),
                ("worker_id", ids.keeper().lease().worker_id.to_string()),
                (
                    "worker_lease_held",
                    u8::from(ids.keeper().is_held()).to_string(),
                ),
            ];
            let buffers = ids.segments().buffers();
            fields.push(("segment_tags", buffers.len().to_string()));
            // One `segmentN:` line per tag, like Redis' `slaveN:` lines (a tag may hold `:`,
            // so it is a value, never a key).
            let names: Vec<String> = (0..buffers.len()).map(|i| format!("segment{i}")).collect();
            for (name, buffer) in names.iter().zip(&buffers) {
                let value = format!(
                    "tag={},remaining={},step={},rate_per_sec={:.1}",
                    buffer.tag(),
                    buffer.remaining(),
                    buffer.step(),
                    buffer.rate_per_sec(),
                );
                fields.push((name.as_str(), value));
            }
            section(&mut text, "Idmint", &fields);
        }
        if want("keyspace") {
            section(&mut text, "Keyspace", &[]);
        }
        // Redis ends the reply without the last blank line.
        let body = text.strip_suffix("\r\n").unwrap_or(&text);
        encode::bulk(out, body.as_bytes());
    }
}
