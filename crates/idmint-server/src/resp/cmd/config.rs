//! `CONFIG GET` of the few parameters clients read at start; `CONFIG SET` is refused.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::{help, unknown_subcommand, Refusal};
use crate::glob::{glob_match, Case};
use crate::resp::session::Session;

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

/// `CONFIG GET pattern [pattern ...]`; idmint is configured by its file, environment and
/// flags, so `CONFIG SET` is refused.
#[derive(Debug)]
pub(super) enum Config<'a> {
    /// `GET` and its patterns.
    Get(&'a [Bytes]),
    Set,
    ResetStat,
    Help,
}

impl<'a> Config<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        let Some((sub, rest)) = params.split_first() else {
            return Err(Refusal::Arity("config"));
        };
        if sub.eq_ignore_ascii_case(b"GET") {
            if rest.is_empty() {
                return Err(Refusal::Arity("config|get"));
            }
            Ok(Self::Get(rest))
        } else if sub.eq_ignore_ascii_case(b"SET") {
            Ok(Self::Set)
        } else if sub.eq_ignore_ascii_case(b"RESETSTAT") {
            Ok(Self::ResetStat)
        } else if sub.eq_ignore_ascii_case(b"HELP") {
            Ok(Self::Help)
        } else {
            Err(unknown_subcommand(sub, "'. Try CONFIG HELP."))
        }
    }

    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        match self {
            Self::Get(patterns) => {
                let params = config_params(session);
                let matching: Vec<&(&str, String)> = params
                    .iter()
                    .filter(|(name, _)| {
                        patterns
                            .iter()
                            .any(|p| glob_match(p, name.as_bytes(), Case::Ignore))
                    })
                    .collect();
                encode::map_header(out, session.protocol, matching.len());
                for (name, value) in matching {
                    encode::bulk(out, name.as_bytes());
                    encode::bulk(out, value.as_bytes());
                }
            }
            Self::Set => encode::error(out, NO_CONFIG_SET),
            Self::ResetStat => encode::ok(out),
            Self::Help => help(
                out,
                &[
                    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "GET <pattern>",
                    "    Return parameters matching the glob-like <pattern> and their values.",
                    "HELP",
                    "    Print this help.",
                ],
            ),
        }
    }
}
