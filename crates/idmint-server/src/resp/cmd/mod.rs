//! The command table and dispatch (name, arity, authentication); each command or family runs
//! in a file of its own.
//!
//! | Command | Reply |
//! |---|---|
//! | `INCR tag` | the next segment ID of `tag` |
//! | `INCRBY tag n` | `n` (1..=max_count) contiguous IDs of `tag`; the reply is the last; `-ERR tag_exhausted ...` when fewer than `n` are left before the tag's end (none is taken); `-ERR permuted ...` for `n > 1` when IDs are handed out permuted |
//! | `IDMINT.SNOWFLAKE [COUNT n] [SHARD k] [FORMAT f]` | one snowflake; with `COUNT`, an array of `n` |
//! | `IDMINT.NEXT tag [COUNT n] [FORMAT f]` | one segment ID; with `COUNT`, an array of `n` (all or nothing at the tag's end, like `INCRBY`) |
//! | `IDMINT.RANGE tag n [ABOVE id]` | `[first, last]`: `n` contiguous IDs of `tag`, all above `id` when given (for clients that keep IDs in memory, see `ranges`) |
//! | `IDMINT.GIVEBACK tag first last` | 1 when the unused tail `first..=last` of the last runs this connection took of `tag` was taken back, else 0 |
//! | `IDMINT.DECODE id` | a map (field/value pairs in RESP2): `id`, `layout`, `time`, `unix_ms`, `tick`, then `dc`, `worker`, `shard` when the layout has them, `seq`, `id_space` (the version of the ID space that issued it), and `plain_id` when IDs are handed out permuted (then it needs the admin scope); with `TAG t`, a segment ID of `t`: `id`, `tag`, `plain_id` |
//! | `IDMINT.SPACE` | a map: the `layout`, `epoch_ms`, `datacenter` and `version` of the ID space this node hands out in, and `permuted` (1: no order, no runs) |
//! | `IDMINT.FORMAT [INTEGER\|STRING]` | sets (or shows) how this connection's ID replies are written |
//! | `GET tag` | the tag's counter on this node, a bulk string; null when this node has not loaded the tag |
//!
//! `FORMAT STRING` (per command) and `IDMINT.FORMAT STRING` (per connection) send IDs as bulk
//! strings, for JavaScript clients that lose integers above 2^53.
//!
//! The connection and server commands stock clients send are in `auth` (`AUTH`, `HELLO`),
//! `client`, `command`, `config`, `info`, `connection` (`PING`, `SELECT`, `RESET`), `server`
//! (`ROLE`, `TIME`, `DBSIZE`) and `transaction` (`MULTI`, `EXEC`, `DISCARD`, `WATCH`,
//! `UNWATCH`).
//!
//! Dispatch follows Redis' order: an unknown command, a wrong number of arguments, or a
//! command before `AUTH` is refused first; inside `MULTI` such a refusal also dooms the
//! transaction (`EXEC` then answers `-EXECABORT` and runs nothing), and every other command
//! but the transaction commands, `QUIT` and `RESET` is queued (`+QUEUED`) and runs at `EXEC`.

use bytes::BytesMut;
use idmint_resp::{encode, Command};

mod auth;
mod client;
mod command;
mod config;
mod connection;
mod ids;
mod info;
mod ranges;
mod server;
mod space;
mod transaction;

pub(super) use self::ranges::Returnables;
pub(super) use self::transaction::Transaction;

use super::connection::{Flow, Session};
use super::reply;
use crate::auth::Need;

/// Which handler runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Incr,
    IncrBy,
    Snowflake,
    Next,
    Range,
    GiveBack,
    Decode,
    Space,
    Format,
    Get,
    Ping,
    Echo,
    Hello,
    Auth,
    Client,
    Command,
    Config,
    Info,
    Select,
    Quit,
    Reset,
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
    Role,
    Time,
    DbSize,
}

impl Kind {
    /// Whether the command runs at once inside `MULTI` rather than being queued, as in Redis.
    fn runs_inside_multi(self) -> bool {
        matches!(
            self,
            Kind::Multi | Kind::Exec | Kind::Discard | Kind::Watch | Kind::Quit | Kind::Reset
        )
    }
}

/// One command as `COMMAND` describes it, and how dispatch treats it.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) kind: Kind,
    /// Lower case, as Redis shows command names.
    pub(super) name: &'static str,
    /// Redis' convention: `n` exactly `n` arguments (the name included), `-n` at least `n`.
    pub(super) arity: i64,
    pub(super) flags: &'static [&'static str],
    /// Position of the key (the tag), 0 when the command has none.
    pub(super) first_key: i64,
    pub(super) categories: &'static [&'static str],
    /// What the connection's grant must allow (see `crate::auth`); `None`: allowed before
    /// `AUTH`.
    pub(super) need: Option<Need>,
}

/// `COMMAND` flags and ACL categories shared by several commands.
const WRITE: &[&str] = &["write", "denyoom", "fast"];
const NO_AUTH: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];
const CONN: &[&str] = &["@fast", "@connection"];
const STALE_OK: &[&str] = &["noscript", "loading", "stale"];
const SLOW_CONN: &[&str] = &["@slow", "@connection"];
const TX_FLAGS: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
const TX: &[&str] = &["@fast", "@transaction"];
const READ: &[&str] = &["readonly", "fast"];

/// What a command needs, as the table writes it.
const OPEN: Option<Need> = None;
const ANY: Option<Need> = Some(Need::Token);
const MINT: Option<Need> = Some(Need::Mint);
const METRICS: Option<Need> = Some(Need::Metrics);
const ADMIN: Option<Need> = Some(Need::Admin);

/// Every command idmint answers, `INCR` first: dispatch scans this table in order.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Spec] = &[
    // kind, name, arity, flags, key position, ACL categories, what it needs
    spec(Kind::Incr, "incr", 2, WRITE, 1, &["@write", "@string", "@fast"], MINT),
    spec(Kind::IncrBy, "incrby", 3, WRITE, 1, &["@write", "@string", "@fast"], MINT),
    spec(Kind::Snowflake, "idmint.snowflake", -1, &["fast"], 0, &["@fast"], MINT),
    spec(Kind::Next, "idmint.next", -2, WRITE, 1, &["@write", "@fast"], MINT),
    spec(Kind::Range, "idmint.range", -3, &["write", "denyoom"], 1, &["@write", "@slow"], MINT),
    spec(Kind::GiveBack, "idmint.giveback", 4, &["write"], 1, &["@write", "@slow"], MINT),
    spec(Kind::Decode, "idmint.decode", -2, READ, 0, &["@read", "@fast"], MINT),
    spec(Kind::Space, "idmint.space", 1, READ, 0, &["@read", "@fast"], MINT),
    spec(Kind::Format, "idmint.format", -1, &["fast"], 0, CONN, ANY),
    spec(Kind::Get, "get", 2, READ, 1, &["@read", "@string", "@fast"], MINT),
    spec(Kind::Ping, "ping", -1, &["fast"], 0, CONN, OPEN),
    spec(Kind::Echo, "echo", 2, &["fast"], 0, CONN, ANY),
    spec(Kind::Hello, "hello", -1, NO_AUTH, 0, CONN, OPEN),
    spec(Kind::Auth, "auth", -2, NO_AUTH, 0, CONN, OPEN),
    spec(Kind::Client, "client", -2, STALE_OK, 0, SLOW_CONN, ANY),
    spec(Kind::Command, "command", -1, &["loading", "stale"], 0, SLOW_CONN, ANY),
    spec(Kind::Config, "config", -2, &["admin", "noscript"], 0, &["@admin", "@slow"], ADMIN),
    spec(Kind::Info, "info", -1, &["loading", "stale"], 0, &["@slow", "@dangerous"], METRICS),
    spec(Kind::Select, "select", 2, &["loading", "stale", "fast"], 0, &["@fast"], ANY),
    spec(Kind::Quit, "quit", -1, NO_AUTH, 0, CONN, OPEN),
    spec(Kind::Reset, "reset", 1, NO_AUTH, 0, CONN, OPEN),
    spec(Kind::Multi, "multi", 1, TX_FLAGS, 0, TX, ANY),
    spec(Kind::Exec, "exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], 0, &["@slow", "@transaction"], ANY),
    spec(Kind::Discard, "discard", 1, TX_FLAGS, 0, TX, ANY),
    spec(Kind::Watch, "watch", -2, TX_FLAGS, 1, TX, ANY),
    spec(Kind::Unwatch, "unwatch", 1, TX_FLAGS, 0, TX, ANY),
    spec(Kind::Role, "role", 1, &["noscript", "loading", "stale", "fast"], 0, &["@admin", "@fast", "@dangerous"], ANY),
    spec(Kind::Time, "time", 1, &["loading", "stale", "fast"], 0, &["@fast"], ANY),
    spec(Kind::DbSize, "dbsize", 1, READ, 0, &["@keyspace", "@read", "@fast"], ANY),
];

#[allow(clippy::too_many_arguments)]
const fn spec(
    kind: Kind,
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    first_key: i64,
    categories: &'static [&'static str],
    need: Option<Need>,
) -> Spec {
    Spec {
        kind,
        name,
        arity,
        flags,
        first_key,
        categories,
        need,
    }
}

/// The command named `name`, ignoring case.
pub(super) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|spec| name.eq_ignore_ascii_case(spec.name.as_bytes()))
}

/// Whether `argc` arguments (the name included) suit `arity`.
pub(super) fn arity_ok(arity: i64, argc: usize) -> bool {
    let argc = i64::try_from(argc).unwrap_or(i64::MAX);
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// `-ERR wrong number of arguments for 'name' command`, `name` as Redis spells it (lower
/// case, `client|setname` for a subcommand).
pub(super) fn wrong_arity(out: &mut BytesMut, name: &str) {
    encode::error_fmt(
        out,
        format_args!("ERR wrong number of arguments for '{name}' command"),
    );
}

/// The first words of an HTTP request (`POST /...`, a `Host:` header line), which Redis
/// takes as a cross-protocol attack.
fn is_cross_protocol(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"POST") || name.eq_ignore_ascii_case(b"HOST:")
}

/// Redis' reply to a command it does not know, quoting the name and the first arguments.
fn unknown_command(out: &mut BytesMut, command: &Command) {
    use std::fmt::Write;
    const SHOWN: usize = 128;
    let mut args = String::new();
    for arg in command.params() {
        if args.len() >= SHOWN {
            break;
        }
        let room = SHOWN - args.len();
        let shown = arg.get(..room.min(arg.len())).unwrap_or_default();
        let _ = write!(args, "'{}' ", shown.escape_ascii());
    }
    let name = command.name();
    let name = name.get(..SHOWN.min(name.len())).unwrap_or_default();
    encode::error_fmt(
        out,
        format_args!(
            "ERR unknown command '{}', with args beginning with: {args}",
            name.escape_ascii()
        ),
    );
}

/// `-ERR unknown subcommand 'x'. Try NAME HELP.`
pub(super) fn unknown_subcommand(out: &mut BytesMut, sub: &[u8], command: &str) {
    encode::error_fmt(
        out,
        format_args!(
            "ERR unknown subcommand '{}'. Try {command} HELP.",
            sub.get(..128.min(sub.len()))
                .unwrap_or_default()
                .escape_ascii()
        ),
    );
}

/// A `HELP` reply: one simple string per line.
pub(super) fn help(out: &mut BytesMut, lines: &[&str]) {
    encode::array_header(out, lines.len());
    for line in lines {
        encode::simple(out, line);
    }
}

impl Session {
    /// Whether the connection's grant allows `command` (of `spec`, which needs `need`) and its
    /// key (the tag); if not, the refusal is written: `-NOAUTH` before `AUTH`, `-NOPERM` for a
    /// scope or tag outside the grant, as Redis' ACLs answer.
    fn permitted(&self, spec: &Spec, need: Need, command: &Command, out: &mut BytesMut) -> bool {
        let Some(grant) = &self.grant else {
            encode::error(out, "NOAUTH Authentication required.");
            return false;
        };
        if !grant.allows(need) {
            encode::error_fmt(
                out,
                format_args!(
                    "NOPERM this token may not run the '{}' command: it needs the {} scope",
                    spec.name,
                    need.scope_name()
                ),
            );
            return false;
        }
        let key = usize::try_from(spec.first_key)
            .ok()
            .filter(|&at| at > 0)
            .and_then(|at| command.args().get(at));
        if let Some(tag) = key {
            if !grant.allows_tag(tag) {
                encode::error_fmt(
                    out,
                    format_args!(
                        "NOPERM this token may not use the tag '{}'",
                        tag.get(..128.min(tag.len()))
                            .unwrap_or_default()
                            .escape_ascii()
                    ),
                );
                return false;
            }
        }
        true
    }

    /// Runs `command` without waiting when it can: `INCR` of a tag this connection has used,
    /// with an ID in memory, and a plain `IDMINT.SNOWFLAKE` the generator can answer at once.
    /// `None` means: run it with [`execute`](Self::execute).
    #[inline]
    pub(super) fn execute_now(&mut self, command: &Command, out: &mut BytesMut) -> Option<Flow> {
        if !self.may_mint || self.transaction.is_some() {
            return None;
        }
        match command.args() {
            [name, tag] if name.eq_ignore_ascii_case(b"INCR") => {
                let entry = self.tags.get(tag)?;
                let id = entry.buffer.try_next()?;
                entry.issued(1);
                reply::id(out, entry.publisher.publish(id), &self.format);
            }
            [name] if name.eq_ignore_ascii_case(b"IDMINT.SNOWFLAKE") => {
                let id = self.shared.ids.try_snowflake()?;
                self.snowflakes_pending += 1;
                reply::id(out, self.shared.ids.publish_snowflake(id), &self.format);
            }
            _ => return None,
        }
        Some(Flow::Continue)
    }

    /// Runs `command`, appending its reply to `out`.
    pub(super) async fn execute(&mut self, command: &Command, out: &mut BytesMut) -> Flow {
        let Some(spec) = lookup(command.name()) else {
            if is_cross_protocol(command.name()) {
                // Like Redis: an HTTP request sent here (say, by a web page to localhost)
                // must not get to run the inline commands in its body. Close, no reply.
                tracing::warn!(
                    peer = %self.peer,
                    "HTTP request on the Redis-protocol port; closing the connection"
                );
                return Flow::Close;
            }
            unknown_command(out, command);
            self.doom_transaction();
            return Flow::Continue;
        };
        if !arity_ok(spec.arity, command.len()) {
            wrong_arity(out, spec.name);
            self.doom_transaction();
            return Flow::Continue;
        }
        if let Some(need) = spec.need {
            // Decoding a permuted ID restores its plain value (its time, its position): on a
            // permuted namespace that is the operator's, not every minting client's.
            let need = match spec.kind {
                Kind::Decode if self.shared.ids.is_permuted() => Need::Admin,
                _ => need,
            };
            if !self.permitted(spec, need, command, out) {
                self.doom_transaction();
                return Flow::Continue;
            }
        }
        if self.transaction.is_some() && !spec.kind.runs_inside_multi() {
            self.queue(command, out);
            return Flow::Continue;
        }
        let args = command.args();
        match spec.kind {
            Kind::Incr => self.incr(args.get(1).map_or(&[][..], |a| a), out).await,
            Kind::IncrBy => self.incr_by(args, out).await,
            Kind::Snowflake => self.snowflake(args, out).await,
            Kind::Next => self.next(args, out).await,
            Kind::Range => self.range(args, out).await,
            Kind::GiveBack => self.give_back(args, out).await,
            Kind::Decode => self.decode(args, out),
            Kind::Space => self.space(out),
            Kind::Format => self.format(args, out),
            Kind::Get => self.get(args, out),
            Kind::Ping => self.ping(args, out),
            Kind::Echo => encode::bulk(out, args.get(1).map_or(&[][..], |a| a)),
            Kind::Hello | Kind::Auth => {
                if spec.kind == Kind::Auth {
                    self.auth(args, out).await;
                } else {
                    self.hello(args, out).await;
                }
                if self.auth_closing() {
                    self.shared.tallies.auth_closed.add(self.peer);
                    return Flow::Close;
                }
            }
            Kind::Client => self.client(args, out),
            Kind::Command => self.command(args, out),
            Kind::Config => self.config(args, out),
            Kind::Info => self.info(args, out),
            Kind::Select => self.select(args, out),
            Kind::Reset => self.reset(out),
            Kind::Multi => self.multi(out),
            Kind::Exec => self.exec(out),
            Kind::Discard => self.discard(out),
            Kind::Watch => self.watch(out),
            Kind::Unwatch => encode::ok(out),
            Kind::Role => self.role(out),
            Kind::Time => self.time(out),
            Kind::DbSize => self.dbsize(out),
            Kind::Quit => {
                encode::ok(out);
                return Flow::Close;
            }
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_arity_follows_redis() {
        assert_eq!(lookup(b"iNcR").map(|s| s.kind), Some(Kind::Incr));
        assert_eq!(
            lookup(b"idmint.SNOWFLAKE").map(|s| s.kind),
            Some(Kind::Snowflake)
        );
        assert!(lookup(b"INCRX").is_none());
        assert!(lookup(b"").is_none());
        assert!(arity_ok(2, 2));
        assert!(!arity_ok(2, 3));
        assert!(arity_ok(-2, 2));
        assert!(arity_ok(-2, 5));
        assert!(!arity_ok(-2, 1));
    }

    #[test]
    fn unknown_commands_read_like_redis() {
        let command = Command::new(vec!["xyz".into(), "a".into(), "b c".into()]);
        let mut out = BytesMut::new();
        if let Some(command) = command {
            unknown_command(&mut out, &command);
        }
        assert_eq!(
            &out[..],
            b"-ERR unknown command 'xyz', with args beginning with: 'a' 'b c' \r\n"
        );
        let long = Command::new(vec!["nope".into(), "x".repeat(300).into()]);
        let mut out = BytesMut::new();
        if let Some(command) = long {
            unknown_command(&mut out, &command);
        }
        assert!(out.len() < 250, "{}", out.len());
    }
}
