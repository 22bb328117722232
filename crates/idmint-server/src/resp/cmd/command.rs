//! `COMMAND`: the command table as Redis 7 describes commands.

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Reply};

use super::{help, lookup, unknown_subcommand, Spec, COMMANDS};
use crate::resp::connection::Session;

/// A command as `COMMAND` and `COMMAND INFO` describe it (Redis 7's ten fields).
fn command_entry(spec: &Spec) -> Reply {
    let words =
        |list: &[&'static str]| Reply::Array(list.iter().map(|w| Reply::simple(*w)).collect());
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Integer(spec.arity),
        words(spec.flags),
        Reply::Integer(spec.first_key),
        Reply::Integer(spec.first_key),
        Reply::Integer(i64::from(spec.first_key != 0)),
        words(spec.categories),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

impl Session {
    /// `COMMAND [COUNT | DOCS | INFO | LIST | HELP]`.
    pub(super) fn command(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(sub) = args.get(1) else {
            return Reply::Array(COMMANDS.iter().map(command_entry).collect()).encode(out);
        };
        let names = args.get(2..).unwrap_or_default();
        let upper = sub.to_ascii_uppercase();
        match upper.as_slice() {
            b"COUNT" => encode::integer(out, i64::try_from(COMMANDS.len()).unwrap_or(0)),
            // Redis 7 sends documentation maps; an empty reply tells redis-cli to go without.
            b"DOCS" => encode::array_header(out, 0),
            b"INFO" if names.is_empty() => {
                Reply::Array(COMMANDS.iter().map(command_entry).collect()).encode(out)
            }
            b"INFO" => Reply::Array(
                names
                    .iter()
                    .map(|name| lookup(name).map_or(Reply::NullArray, command_entry))
                    .collect(),
            )
            .encode(out),
            b"LIST" => {
                encode::array_header(out, COMMANDS.len());
                for spec in COMMANDS {
                    encode::bulk(out, spec.name.as_bytes());
                }
            }
            b"HELP" => help(
                out,
                &[
                    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "(no subcommand)",
                    "    Return details about all idmint commands.",
                    "COUNT",
                    "    Return the total number of commands in this idmint server.",
                    "LIST",
                    "    Return a list of all commands in this idmint server.",
                    "INFO [<command-name> ...]",
                    "    Return details about multiple idmint commands.",
                    "DOCS [<command-name> ...]",
                    "    Return documentation details (none: an empty reply).",
                    "HELP",
                    "    Print this help.",
                ],
            ),
            _ => unknown_subcommand(out, sub, "COMMAND"),
        }
    }
}
