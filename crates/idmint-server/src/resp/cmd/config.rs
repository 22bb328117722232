//! `CONFIG GET` of the few parameters clients read at start; `CONFIG SET` is refused.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::{help, unknown_subcommand, wrong_arity};
use crate::glob::{glob_match, Case};
use crate::resp::connection::Session;

const NO_CONFIG_SET: &str = "ERR CONFIG SET is not supported: idmint is configured by its \
                             config file, IDMINT_* variables and flags";

/// The parameters `CONFIG GET` knows. `redis-benchmark` reads `save` and `appendonly` at start
/// (and warns when it cannot); idmint keeps nothing in memory that a snapshot would save.
fn config_params(session: &Session) -> [(&'static str, String); 7] {
    let port = session.shared.local_addr.map_or(0, |a| a.port());
    [
        ("save", String::new()),
        ("appendonly", "no".to_owned()),
        ("databases", "1".to_owned()),
        (
            "maxclients",
            session
                .shared
                .options
                .connections
                .max_connections
                .to_string(),
        ),
        ("port", port.to_string()),
        ("maxmemory", "0".to_owned()),
        ("maxmemory-policy", "noeviction".to_owned()),
    ]
}

impl Session {
    /// `CONFIG GET pattern [pattern ...]`; idmint is configured by its file, environment and
    /// flags, so `CONFIG SET` is refused.
    pub(super) fn config(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(sub) = args.get(1) else {
            return wrong_arity(out, "config");
        };
        let rest = args.get(2..).unwrap_or_default();
        if sub.eq_ignore_ascii_case(b"GET") {
            if rest.is_empty() {
                return wrong_arity(out, "config|get");
            }
            let params = config_params(self);
            let matching: Vec<&(&str, String)> = params
                .iter()
                .filter(|(name, _)| {
                    rest.iter()
                        .any(|p| glob_match(p, name.as_bytes(), Case::Ignore))
                })
                .collect();
            encode::map_header(out, self.protocol, matching.len());
            for (name, value) in matching {
                encode::bulk(out, name.as_bytes());
                encode::bulk(out, value.as_bytes());
            }
        } else if sub.eq_ignore_ascii_case(b"SET") {
            encode::error(out, NO_CONFIG_SET);
        } else if sub.eq_ignore_ascii_case(b"RESETSTAT") {
            encode::ok(out);
        } else if sub.eq_ignore_ascii_case(b"HELP") {
            help(
                out,
                &[
                    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "GET <pattern>",
                    "    Return parameters matching the glob-like <pattern> and their values.",
                    "HELP",
                    "    Print this help.",
                ],
            );
        } else {
            unknown_subcommand(out, sub, "CONFIG");
        }
    }
}
