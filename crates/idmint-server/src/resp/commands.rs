//! The command table, dispatch (name, arity, authentication), and the ID commands.
//!
//! | Command | Reply |
//! |---|---|
//! | `INCR tag` | the next segment ID of `tag` |
//! | `INCRBY tag n` | `n` (1..=max_count) contiguous IDs of `tag`; the reply is the last; `-ERR tag_exhausted ...` when fewer than `n` are left before the tag's end (none is taken) |
//! | `IDMINT.SNOWFLAKE [COUNT n] [SHARD k]` | one snowflake; with `COUNT`, an array of `n` |
//! | `IDMINT.NEXT tag [COUNT n]` | one segment ID; with `COUNT`, an array of `n` (all or nothing at the tag's end, like `INCRBY`) |
//! | `IDMINT.DECODE id` | field/value pairs: `id`, `layout`, `time`, `unix_ms`, `tick`, then `dc`, `worker`, `shard` when the layout has them, `seq`, and `id_space` (the version of the ID space that issued it) |
//!
//! The connection and server commands stock clients send are in `admin`.

use bytes::BytesMut;
use idmint_core::Result;
use idmint_resp::{encode, Command};

use super::connection::{Flow, Session};
use super::reply::{self, NOT_AN_INTEGER, SYNTAX_ERROR};

/// Which handler runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Incr,
    IncrBy,
    Snowflake,
    Next,
    Decode,
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
    /// Allowed before `AUTH` when a token is set.
    pub(super) before_auth: bool,
}

/// `COMMAND` flags and ACL categories shared by several commands.
const WRITE: &[&str] = &["write", "denyoom", "fast"];
const NO_AUTH: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];
const CONN: &[&str] = &["@fast", "@connection"];
const STALE_OK: &[&str] = &["noscript", "loading", "stale"];
const SLOW_CONN: &[&str] = &["@slow", "@connection"];

/// Every command idmint answers, `INCR` first: dispatch scans this table in order.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Spec] = &[
    // kind, name, arity, flags, key position, ACL categories, allowed before AUTH
    spec(Kind::Incr, "incr", 2, WRITE, 1, &["@write", "@string", "@fast"], false),
    spec(Kind::IncrBy, "incrby", 3, WRITE, 1, &["@write", "@string", "@fast"], false),
    spec(Kind::Snowflake, "idmint.snowflake", -1, &["fast"], 0, &["@fast"], false),
    spec(Kind::Next, "idmint.next", -2, WRITE, 1, &["@write", "@fast"], false),
    spec(Kind::Decode, "idmint.decode", 2, &["readonly", "fast"], 0, &["@read", "@fast"], false),
    spec(Kind::Ping, "ping", -1, &["fast"], 0, CONN, true),
    spec(Kind::Echo, "echo", 2, &["fast"], 0, CONN, false),
    spec(Kind::Hello, "hello", -1, NO_AUTH, 0, CONN, true),
    spec(Kind::Auth, "auth", -2, NO_AUTH, 0, CONN, true),
    spec(Kind::Client, "client", -2, STALE_OK, 0, SLOW_CONN, false),
    spec(Kind::Command, "command", -1, &["loading", "stale"], 0, SLOW_CONN, false),
    spec(Kind::Config, "config", -2, &["admin", "noscript"], 0, &["@admin", "@slow"], false),
    spec(Kind::Info, "info", -1, &["loading", "stale"], 0, &["@slow", "@dangerous"], false),
    spec(Kind::Select, "select", 2, &["loading", "stale", "fast"], 0, &["@fast"], false),
    spec(Kind::Quit, "quit", -1, NO_AUTH, 0, CONN, true),
    spec(Kind::Reset, "reset", 1, NO_AUTH, 0, CONN, true),
];

#[allow(clippy::too_many_arguments)]
const fn spec(
    kind: Kind,
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    first_key: i64,
    categories: &'static [&'static str],
    before_auth: bool,
) -> Spec {
    Spec {
        kind,
        name,
        arity,
        flags,
        first_key,
        categories,
        before_auth,
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

impl Session {
    /// Runs `command` without waiting when it can: `INCR` of a tag this connection has used,
    /// with an ID in memory, and a plain `IDMINT.SNOWFLAKE` the generator can answer at once.
    /// `None` means: run it with [`execute`](Self::execute).
    #[inline]
    pub(super) fn execute_now(&mut self, command: &Command, out: &mut BytesMut) -> Option<Flow> {
        if !self.authenticated {
            return None;
        }
        match command.args() {
            [name, tag] if name.eq_ignore_ascii_case(b"INCR") => {
                let entry = self.tags.get(tag)?;
                let id = entry.buffer.try_next()?;
                entry.issued(1);
                reply::id(out, id);
            }
            [name] if name.eq_ignore_ascii_case(b"IDMINT.SNOWFLAKE") => {
                let id = self.shared.ids.try_snowflake()?;
                self.snowflakes_pending += 1;
                reply::id(out, id);
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
            return Flow::Continue;
        };
        if !arity_ok(spec.arity, command.len()) {
            wrong_arity(out, spec.name);
            return Flow::Continue;
        }
        if !self.authenticated && !spec.before_auth {
            encode::error(out, "NOAUTH Authentication required.");
            return Flow::Continue;
        }
        let args = command.args();
        match spec.kind {
            Kind::Incr => self.incr(args.get(1).map_or(&[][..], |a| a), out).await,
            Kind::IncrBy => self.incr_by(args, out).await,
            Kind::Snowflake => self.snowflake(args, out).await,
            Kind::Next => self.next(args, out).await,
            Kind::Decode => self.decode(args, out),
            Kind::Ping => self.ping(args, out),
            Kind::Echo => encode::bulk(out, args.get(1).map_or(&[][..], |a| a)),
            Kind::Hello => self.hello(args, out),
            Kind::Auth => self.auth(args, out),
            Kind::Client => self.client(args, out),
            Kind::Command => self.command(args, out),
            Kind::Config => self.config(args, out),
            Kind::Info => self.info(args, out),
            Kind::Select => self.select(args, out),
            Kind::Reset => self.reset(out),
            Kind::Quit => {
                encode::ok(out);
                return Flow::Close;
            }
        }
        Flow::Continue
    }

    /// `INCR tag` and `IDMINT.NEXT tag`: the next segment ID.
    async fn incr(&mut self, tag: &[u8], out: &mut BytesMut) {
        let result: Result<u64> = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let id = match entry.buffer.try_next() {
                Some(id) => id,
                None => entry.buffer.next().await?,
            };
            entry.issued(1);
            Ok(id)
        }
        .await;
        match result {
            Ok(id) => reply::id(out, id),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `INCRBY tag n`: `n` contiguous IDs; the reply is the last, so the run is
    /// `last - n + 1 ..= last`, as with Redis' counter.
    async fn incr_by(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let [_, tag, n] = args else {
            return wrong_arity(out, "incrby");
        };
        let max = self.shared.options.max_count;
        let Some(n) = reply::parse_count(out, n, "increment", max) else {
            return;
        };
        let result: Result<u64> = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let run = entry.buffer.take_contiguous(n).await?;
            entry.issued(run.end.saturating_sub(run.start));
            Ok(run.end.saturating_sub(1))
        }
        .await;
        match result {
            Ok(last) => reply::id(out, last),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.SNOWFLAKE [COUNT n] [SHARD k]`.
    async fn snowflake(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let mut count = None;
        let mut shard = 0;
        let mut options = args.get(1..).unwrap_or_default().iter();
        while let Some(option) = options.next() {
            let Some(value) = options.next() else {
                return encode::error(out, SYNTAX_ERROR);
            };
            if option.eq_ignore_ascii_case(b"COUNT") {
                let max = self.shared.options.max_count;
                match reply::parse_count(out, value, "COUNT", max) {
                    Some(n) => count = Some(n),
                    None => return,
                }
            } else if option.eq_ignore_ascii_case(b"SHARD") {
                match reply::parse_u64(value) {
                    Some(k) => shard = k,
                    None => return encode::error(out, NOT_AN_INTEGER),
                }
            } else {
                return encode::error(out, SYNTAX_ERROR);
            }
        }
        match self.shared.ids.snowflakes(count.unwrap_or(1), shard).await {
            Ok(mut batch) => {
                let issued = batch.len() as u64;
                if count.is_some() {
                    let largest = batch.last_id();
                    reply::ids(out, batch, largest);
                } else {
                    match batch.next() {
                        Some(id) => reply::id(out, id),
                        None => encode::error(out, "ERR no snowflake was issued"),
                    }
                }
                self.snowflakes_pending += issued;
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.NEXT tag [COUNT n]`.
    async fn next(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let (tag, count) = match args {
            [_, tag] => (tag, None),
            [_, tag, option, value] if option.eq_ignore_ascii_case(b"COUNT") => {
                let max = self.shared.options.max_count;
                match reply::parse_count(out, value, "COUNT", max) {
                    Some(n) => (tag, Some(n)),
                    None => return,
                }
            }
            _ => return encode::error(out, SYNTAX_ERROR),
        };
        let Some(count) = count else {
            return self.incr(tag, out).await;
        };
        let result = async {
            let entry = self.tags.resolve(&self.shared.ids, tag).await?;
            let runs = entry.buffer.next_many(count).await?;
            let total: u64 = runs.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            entry.issued(total);
            Ok::<_, idmint_core::Error>(runs)
        }
        .await;
        match result {
            Ok(runs) => {
                let (ids, largest) = reply::RunIds::new(runs);
                reply::ids(out, ids, largest);
            }
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// `IDMINT.DECODE id`: the ID taken apart with the layout of the space that issued it, as
    /// field/value pairs
    /// (what `HGETALL` returns, so clients read it into a map).
    fn decode(&mut self, args: &[bytes::Bytes], out: &mut BytesMut) {
        let Some(id) = args.get(1).and_then(|a| reply::parse_u64(a)) else {
            return encode::error(out, NOT_AN_INTEGER);
        };
        let decoded = match self.shared.ids.decode(id) {
            Ok(decoded) => decoded,
            Err(error) => return reply::service_error(out, &error),
        };
        let optional = [
            ("dc", decoded.dc),
            ("worker", decoded.worker),
            ("shard", decoded.shard),
        ];
        let present = optional.iter().filter(|(_, v)| v.is_some()).count()
            + usize::from(decoded.id_space.is_some());
        encode::array_header(out, 2 * (6 + present));
        encode::bulk(out, b"id");
        reply::id(out, id);
        encode::bulk(out, b"layout");
        encode::bulk(out, decoded.layout.as_bytes());
        encode::bulk(out, b"time");
        encode::bulk(out, decoded.time.as_bytes());
        encode::bulk(out, b"unix_ms");
        reply::id(out, decoded.unix_ms);
        encode::bulk(out, b"tick");
        reply::id(out, decoded.tick);
        for (field, value) in optional {
            if let Some(value) = value {
                encode::bulk(out, field.as_bytes());
                reply::id(out, value);
            }
        }
        encode::bulk(out, b"seq");
        reply::id(out, decoded.seq);
        if let Some(version) = decoded.id_space {
            encode::bulk(out, b"id_space");
            reply::id(out, version);
        }
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
