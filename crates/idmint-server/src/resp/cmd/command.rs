//! `COMMAND`: the command table as Redis 7 describes commands, with the documentation of the
//! ID commands (`COMMAND DOCS`), so `redis-cli` shows their arguments as hints.

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Reply};

use super::args::{help, unknown_subcommand, Refusal};
use super::table::{lookup, Kind, Spec, COMMANDS};
use crate::resp::session::Session;

/// A command as `COMMAND` and `COMMAND INFO` describe it (Redis 7's ten fields; flags and
/// categories are sets in RESP3).
fn command_entry(spec: &Spec) -> Reply {
    let words =
        |list: &[&'static str]| Reply::Set(list.iter().map(|w| Reply::simple(*w)).collect());
    // `WATCH key [key ...]`: its keys run to the last argument.
    let last_key = if spec.kind == Kind::Watch {
        -1
    } else {
        spec.first_key
    };
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Integer(spec.arity),
        words(spec.flags),
        Reply::Integer(spec.first_key),
        Reply::Integer(last_key),
        Reply::Integer(i64::from(spec.first_key != 0)),
        words(spec.categories),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
    ])
}

/// One argument as `COMMAND DOCS` describes it.
struct Arg {
    name: &'static str,
    /// `key`, `integer`, `string`, `pure-token`, `oneof`.
    kind: &'static str,
    /// The word that comes before the value (`COUNT`), if any.
    token: Option<&'static str>,
    optional: bool,
    /// The choices of a `oneof`.
    choices: &'static [Arg],
}

const fn arg(name: &'static str, kind: &'static str) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        choices: &[],
    }
}

const fn option(name: &'static str, kind: &'static str, token: &'static str) -> Arg {
    Arg {
        name,
        kind,
        token: Some(token),
        optional: true,
        choices: &[],
    }
}

const fn word(name: &'static str, token: &'static str) -> Arg {
    Arg {
        name,
        kind: "pure-token",
        token: Some(token),
        optional: false,
        choices: &[],
    }
}

const FORMATS: &[Arg] = &[word("integer", "INTEGER"), word("string", "STRING")];

const FORMAT: Arg = Arg {
    name: "format",
    kind: "oneof",
    token: Some("FORMAT"),
    optional: true,
    choices: FORMATS,
};

/// The documentation of a command: summary, group and arguments.
struct Doc {
    summary: &'static str,
    /// `module` for idmint's own commands, Redis' group for the ones it shares.
    group: &'static str,
    complexity: &'static str,
    arguments: &'static [Arg],
}

const fn doc(summary: &'static str, group: &'static str, arguments: &'static [Arg]) -> Doc {
    Doc {
        summary,
        group,
        complexity: "O(1)",
        arguments,
    }
}

const TAG: Arg = arg("tag", "key");
const INCRBY_ARGS: &[Arg] = &[TAG, arg("increment", "integer")];
const SNOWFLAKE_ARGS: &[Arg] = &[
    option("count", "integer", "COUNT"),
    option("shard", "integer", "SHARD"),
    FORMAT,
];
const NEXT_ARGS: &[Arg] = &[TAG, option("count", "integer", "COUNT"), FORMAT];

const ID128_FORMATS: &[Arg] = &[
    word("uuid", "UUID"),
    word("ulid", "ULID"),
    word("hex", "HEX"),
    word("bytes", "BYTES"),
];
const ID128_ARGS: &[Arg] = &[
    option("count", "integer", "COUNT"),
    Arg {
        name: "format",
        kind: "oneof",
        token: Some("FORMAT"),
        optional: true,
        choices: ID128_FORMATS,
    },
];
const KINDS: &[Arg] = &[word("uuidv7", "UUIDV7"), word("ulid", "ULID")];
const DECODE_ARGS: &[Arg] = &[
    arg("id", "string"),
    option("tag", "key", "TAG"),
    Arg {
        name: "kind",
        kind: "oneof",
        token: Some("KIND"),
        optional: true,
        choices: KINDS,
    },
];
const RANGE_ARGS: &[Arg] = &[
    TAG,
    arg("count", "integer"),
    option("above", "integer", "ABOVE"),
];
const GIVEBACK_ARGS: &[Arg] = &[TAG, arg("first", "integer"), arg("last", "integer")];

fn docs(kind: Kind) -> Doc {
    match kind {
        Kind::Incr => doc("The next segment ID of a tag.", "string", &[TAG]),
        Kind::IncrBy => doc(
            "Takes `increment` contiguous segment IDs of a tag; answers the last.",
            "string",
            INCRBY_ARGS,
        ),
        Kind::Snowflake => Doc {
            complexity: "O(N) where N is the count",
            ..doc(
                "One snowflake ID, or COUNT of them.",
                "module",
                SNOWFLAKE_ARGS,
            )
        },
        Kind::Uuid => Doc {
            complexity: "O(N) where N is the count",
            ..doc(
                "One UUIDv7, or COUNT of them, increasing.",
                "module",
                ID128_ARGS,
            )
        },
        Kind::Ulid => Doc {
            complexity: "O(N) where N is the count",
            ..doc("One ULID, or COUNT of them, increasing.", "module", ID128_ARGS)
        },
        Kind::Next => Doc {
            complexity: "O(N) where N is the count",
            ..doc(
                "The next segment ID of a tag, or COUNT of them.",
                "module",
                NEXT_ARGS,
            )
        },
        Kind::Range => doc(
            "Takes `count` contiguous segment IDs of a tag, all above ABOVE; answers [first, last].",
            "module",
            RANGE_ARGS,
        ),
        Kind::GiveBack => doc(
            "Returns the unused tail of the last runs this connection took of a tag.",
            "module",
            GIVEBACK_ARGS,
        ),
        Kind::Decode => doc(
            "Takes an ID apart: a snowflake's time, worker, sequence, layout; a UUIDv7's or ULID's time, counter, node.",
            "module",
            DECODE_ARGS,
        ),
        Kind::Space => doc(
            "The ID space this node hands out in: layout, epoch, datacenter, version, permuted.",
            "module",
            &[],
        ),
        Kind::Format => doc(
            "Sets how this connection's ID replies are written: integers or strings.",
            "module",
            &[Arg {
                name: "format",
                kind: "oneof",
                token: None,
                optional: true,
                choices: FORMATS,
            }],
        ),
        Kind::Get => doc(
            "A tag's counter on this node; takes no ID.",
            "string",
            &[TAG],
        ),
        Kind::Multi | Kind::Exec | Kind::Discard | Kind::Watch | Kind::Unwatch => {
            doc("Transactions, as Redis runs them.", "transactions", &[])
        }
        Kind::Info | Kind::Config | Kind::Command | Kind::Role | Kind::Time | Kind::DbSize => doc(
            "What a Redis server answers, for clients and tools.",
            "server",
            &[],
        ),
        _ => doc(
            "The connection command Redis clients send.",
            "connection",
            &[],
        ),
    }
}

/// One argument's documentation map.
fn arg_reply(arg: &Arg) -> Reply {
    let mut pairs = vec![
        (Reply::bulk("name"), Reply::bulk(arg.name)),
        (Reply::bulk("type"), Reply::bulk(arg.kind)),
    ];
    if let Some(token) = arg.token {
        pairs.push((Reply::bulk("token"), Reply::bulk(token)));
    }
    if arg.optional {
        pairs.push((
            Reply::bulk("flags"),
            Reply::Set(vec![Reply::simple("optional")]),
        ));
    }
    if !arg.choices.is_empty() {
        pairs.push((
            Reply::bulk("arguments"),
            Reply::Array(arg.choices.iter().map(arg_reply).collect()),
        ));
    }
    Reply::map(pairs)
}

/// A command's `COMMAND DOCS` entry: its name, then its documentation map.
fn docs_entry(spec: &Spec) -> [Reply; 2] {
    let doc = docs(spec.kind);
    let mut pairs = vec![
        (Reply::bulk("summary"), Reply::bulk(doc.summary)),
        (Reply::bulk("since"), Reply::bulk("1.0.0")),
        (Reply::bulk("group"), Reply::bulk(doc.group)),
        (Reply::bulk("complexity"), Reply::bulk(doc.complexity)),
    ];
    if doc.group == "module" {
        pairs.push((Reply::bulk("module"), Reply::bulk("idmint")));
    }
    if !doc.arguments.is_empty() {
        pairs.push((
            Reply::bulk("arguments"),
            Reply::Array(doc.arguments.iter().map(arg_reply).collect()),
        ));
    }
    [Reply::bulk(spec.name), Reply::map(pairs)]
}

/// `COMMAND [COUNT | DOCS | INFO | LIST | HELP]`.
#[derive(Debug)]
pub(super) enum CommandInfo<'a> {
    /// No subcommand: every command's entry.
    All,
    Count,
    /// The documentation of the named commands, or of every command.
    Docs(&'a [Bytes]),
    /// The entries of the named commands, or of every command.
    Info(&'a [Bytes]),
    List,
    Help,
}

impl<'a> CommandInfo<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        let Some((sub, names)) = params.split_first() else {
            return Ok(Self::All);
        };
        let is = |word: &str| sub.eq_ignore_ascii_case(word.as_bytes());
        Ok(if is("COUNT") {
            Self::Count
        } else if is("DOCS") {
            Self::Docs(names)
        } else if is("INFO") {
            Self::Info(names)
        } else if is("LIST") {
            Self::List
        } else if is("HELP") {
            Self::Help
        } else {
            return Err(unknown_subcommand(sub, "'. Try COMMAND HELP."));
        })
    }

    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        let protocol = session.protocol;
        match self {
            Self::All => {
                Reply::Array(COMMANDS.iter().map(command_entry).collect()).encode_as(out, protocol)
            }
            Self::Count => encode::integer(out, i64::try_from(COMMANDS.len()).unwrap_or(0)),
            Self::Docs(names) => {
                // Every command, or the named ones idmint knows (unknown names are left out,
                // as Redis does).
                let specs: Vec<&Spec> = if names.is_empty() {
                    COMMANDS.iter().collect()
                } else {
                    names.iter().filter_map(|name| lookup(name)).collect()
                };
                Reply::Map(specs.into_iter().flat_map(docs_entry).collect())
                    .encode_as(out, protocol);
            }
            Self::Info([]) => {
                Reply::Array(COMMANDS.iter().map(command_entry).collect()).encode_as(out, protocol)
            }
            Self::Info(names) => Reply::Array(
                names
                    .iter()
                    .map(|name| lookup(name).map_or(Reply::NullArray, command_entry))
                    .collect(),
            )
            .encode_as(out, protocol),
            Self::List => {
                encode::array_header(out, COMMANDS.len());
                for spec in COMMANDS {
                    encode::bulk(out, spec.name.as_bytes());
                }
            }
            Self::Help => help(
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
                    "    Return documentation details about multiple idmint commands.",
                    "HELP",
                    "    Print this help.",
                ],
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use idmint_resp::Protocol;

    use super::*;

    #[test]
    fn every_command_has_docs_and_the_id_commands_their_arguments() {
        for spec in COMMANDS {
            let [name, doc] = docs_entry(spec);
            assert_eq!(name, Reply::bulk(spec.name));
            let Reply::Map(fields) = doc else {
                panic!("{}: not a map", spec.name);
            };
            assert!(fields.len() % 2 == 0 && fields.len() >= 8, "{}", spec.name);
        }
        let snowflake = lookup(b"IDMINT.SNOWFLAKE").map(docs_entry);
        let mut out = Vec::new();
        if let Some([_, doc]) = snowflake {
            doc.encode_as(&mut out, Protocol::Resp3);
        }
        let text = String::from_utf8_lossy(&out);
        for part in ["COUNT", "SHARD", "FORMAT", "STRING", "optional", "oneof"] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
        for name in [&b"IDMINT.UUID"[..], b"IDMINT.ULID"] {
            let mut out = Vec::new();
            if let Some([_, doc]) = lookup(name).map(docs_entry) {
                doc.encode_as(&mut out, Protocol::Resp3);
            }
            let text = String::from_utf8_lossy(&out);
            for part in ["COUNT", "FORMAT", "UUID", "ULID", "HEX", "BYTES"] {
                assert!(text.contains(part), "{part} missing from {text}");
            }
        }
    }
}
