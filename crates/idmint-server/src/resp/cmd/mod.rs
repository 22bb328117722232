//! Parsing and dispatch (name, arity, authentication, `MULTI` queueing); each command or family
//! is a file of its own, with the pure parse of its arguments into a typed value (no session,
//! no I/O, no store) and the apply of that value on the session. The table the dispatch reads
//! is `table`; what the parses share, `args`.
//!
//! | Command | Reply |
//! |---|---|
//! | `INCR tag` | the next segment ID of `tag` |
//! | `INCRBY tag n` | `n` (1..=max_count) contiguous IDs of `tag`; the reply is the last; `-ERR tag_exhausted ...` when fewer than `n` are left before the tag's end (none is taken); `-ERR permuted ...` for `n > 1` when IDs are handed out permuted |
//! | `IDMINT.SNOWFLAKE [COUNT n] [SHARD k] [FORMAT f]` | one snowflake; with `COUNT`, an array of `n` |
//! | `IDMINT.UUID [COUNT n] [FORMAT f]` | one UUIDv7 as a bulk string (canonical text; `FORMAT` `UUID`, `ULID`, `HEX` or `BYTES`, the 16 bytes raw); with `COUNT`, an array of `n`, increasing |
//! | `IDMINT.ULID [COUNT n] [FORMAT f]` | the same as ULIDs (26 characters of base32 unless `FORMAT` says otherwise) |
//! | `IDMINT.NEXT tag [COUNT n] [FORMAT f]` | one segment ID; with `COUNT`, an array of `n` (all or nothing at the tag's end, like `INCRBY`) |
//! | `IDMINT.RANGE tag n [ABOVE id]` | `[first, last]`: `n` contiguous IDs of `tag`, all above `id` when given (for clients that keep IDs in memory, see `ranges`) |
//! | `IDMINT.GIVEBACK tag first last` | 1 when the unused tail `first..=last` of the last runs this connection took of `tag` was taken back, else 0 |
//! | `IDMINT.DECODE id [KIND uuidv7\|ulid]` | a 128-bit ID (36, 32 or 26 characters; with `KIND`, any of its forms, the 16 bytes too): a map of `id` (canonical), `kind`, `ms`, `time`, `version` and `variant` (UUIDv7), `counter`, and `node` when this node gives its IDs a node field; else a map (field/value pairs in RESP2): `id`, `layout`, `time`, `unix_ms`, `tick`, then `dc`, `worker`, `shard` when the layout has them, `seq`, `id_space` (the version of the ID space that issued it), and `plain_id` when IDs are handed out permuted (then it needs the admin scope); with `TAG t`, a segment ID of `t`: `id`, `tag`, `plain_id` |
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
//! A command's arguments are parsed when it is read, but a refusal of them is answered only
//! then, in its turn (so inside `MULTI` it is the reply of `EXEC`'s array, as in Redis).

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Command};

mod args;
mod auth;
mod client;
mod command;
mod config;
mod connection;
mod decode;
mod format;
mod id128;
mod incr;
mod info;
mod next;
mod options;
mod ranges;
mod server;
mod snowflake;
mod space;
mod table;
mod transaction;
mod ulid;
mod uuid;

use self::args::Refusal;
use self::auth::{Auth, Hello};
use self::client::Client;
use self::command::CommandInfo;
use self::config::Config;
use self::connection::{Echo, Ping, Quit, Reset, Select};
use self::decode::Decode;
use self::format::Format;
use self::id128::Id128Request;
use self::incr::{Get, Incr, IncrBy};
use self::info::Info;
use self::next::Next;
use self::ranges::{GiveBack, TakeRange};
use self::server::{DbSize, Role, Time};
use self::snowflake::Snowflake;
use self::space::Space;
use self::table::{arity_ok, lookup, Kind, Spec};
use self::transaction::{Discard, Exec, Multi, Unwatch, Watch};
use crate::auth::Need;
use crate::resp::session::{Flow, Session};

/// A command as read, after the pure parse: which command it is (or why none), and its
/// arguments typed (or why they are refused). It borrows the command's bytes; parsing
/// allocates nothing but a text form's description (`FORMAT BASE62`).
#[derive(Debug)]
pub(super) struct Parsed<'a>(Outcome<'a>);

// Every command read is parsed into one on the hot path and moved to the dispatch: kept
// small, so that costs a copy of a few cache words, never an allocation.
const _: () = assert!(std::mem::size_of::<Parsed<'static>>() <= 128);

/// What the parse made of a command.
#[derive(Debug)]
enum Outcome<'a> {
    /// The first words of an HTTP request (`POST /...`, a `Host:` header line), which Redis
    /// takes as a cross-protocol attack.
    CrossProtocol,
    /// A command idmint does not know.
    Unknown,
    /// A known command with a number of arguments its arity refuses.
    WrongArity(&'static Spec),
    /// A known command: its arguments, or why they are refused.
    Known(&'static Spec, Result<Request<'a>, Refusal<'a>>),
}

/// A command's arguments, typed: one variant per command.
#[derive(Debug)]
enum Request<'a> {
    Incr(Incr<'a>),
    IncrBy(IncrBy<'a>),
    Snowflake(Snowflake<'a>),
    /// `IDMINT.UUID` and `IDMINT.ULID`.
    Id128(Id128Request),
    Next(Next<'a>),
    Range(TakeRange<'a>),
    GiveBack(GiveBack<'a>),
    Decode(Decode<'a>),
    Space(Space),
    Format(Format),
    Get(Get<'a>),
    Ping(Ping<'a>),
    Echo(Echo<'a>),
    Hello(Hello<'a>),
    Auth(Auth<'a>),
    Client(Client<'a>),
    Command(CommandInfo<'a>),
    Config(Config<'a>),
    Info(Info),
    Select(Select),
    Quit(Quit),
    Reset(Reset),
    Multi(Multi),
    Exec(Exec),
    Discard(Discard),
    Watch(Watch),
    Unwatch(Unwatch),
    Role(Role),
    Time(Time),
    DbSize(DbSize),
}

/// Parses `command`: its name in the table, its arity, then its arguments (`COUNT` and
/// `INCRBY`'s increment within `max_count`). Pure: the same command parses the same on any
/// connection.
#[inline]
pub(super) fn parse(command: &Command, max_count: u64) -> Parsed<'_> {
    let Some(spec) = lookup(command.name()) else {
        return Parsed(if is_cross_protocol(command.name()) {
            Outcome::CrossProtocol
        } else {
            Outcome::Unknown
        });
    };
    if !arity_ok(spec.arity, command.len()) {
        return Parsed(Outcome::WrongArity(spec));
    }
    let request = Request::parse(spec.kind, command.params(), max_count);
    Parsed(Outcome::Known(spec, request))
}

impl<'a> Request<'a> {
    /// The arguments (`params`, the name left out) of a command of `kind`.
    #[inline]
    fn parse(kind: Kind, params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        Ok(match kind {
            Kind::Incr => Self::Incr(Incr::parse(params)?),
            Kind::IncrBy => Self::IncrBy(IncrBy::parse(params, max_count)?),
            Kind::Snowflake => Self::Snowflake(Snowflake::parse(params, max_count)?),
            Kind::Uuid => Self::Id128(uuid::parse(params, max_count)?),
            Kind::Ulid => Self::Id128(ulid::parse(params, max_count)?),
            Kind::Next => Self::Next(Next::parse(params, max_count)?),
            Kind::Range => Self::Range(TakeRange::parse(params, max_count)?),
            Kind::GiveBack => Self::GiveBack(GiveBack::parse(params)?),
            Kind::Decode => Self::Decode(Decode::parse(params, max_count)?),
            Kind::Space => Self::Space(Space),
            Kind::Format => Self::Format(Format::parse(params)?),
            Kind::Get => Self::Get(Get::parse(params)?),
            Kind::Ping => Self::Ping(Ping::parse(params)?),
            Kind::Echo => Self::Echo(Echo::parse(params)?),
            Kind::Hello => Self::Hello(Hello::parse(params)?),
            Kind::Auth => Self::Auth(Auth::parse(params)?),
            Kind::Client => Self::Client(Client::parse(params)?),
            Kind::Command => Self::Command(CommandInfo::parse(params)?),
            Kind::Config => Self::Config(Config::parse(params)?),
            Kind::Info => Self::Info(Info::parse(params)?),
            Kind::Select => Self::Select(Select::parse(params)?),
            Kind::Quit => Self::Quit(Quit),
            Kind::Reset => Self::Reset(Reset),
            Kind::Multi => Self::Multi(Multi),
            Kind::Exec => Self::Exec(Exec),
            Kind::Discard => Self::Discard(Discard),
            Kind::Watch => Self::Watch(Watch),
            Kind::Unwatch => Self::Unwatch(Unwatch),
            Kind::Role => Self::Role(Role),
            Kind::Time => Self::Time(Time),
            Kind::DbSize => Self::DbSize(DbSize),
        })
    }

    /// Runs the command on `session`, appending its reply to `out`.
    async fn apply(self, session: &mut Session, out: &mut BytesMut) -> Flow {
        match self {
            Self::Incr(incr) => incr.apply(session, out).await,
            Self::IncrBy(incr_by) => incr_by.apply(session, out).await,
            Self::Snowflake(snowflake) => snowflake.apply(session, out).await,
            Self::Id128(request) => request.apply(session, out).await,
            Self::Next(next) => next.apply(session, out).await,
            Self::Range(range) => range.apply(session, out).await,
            Self::GiveBack(give_back) => give_back.apply(session, out).await,
            Self::Decode(decode) => decode.apply(session, out),
            Self::Space(space) => space.apply(session, out),
            Self::Format(format) => format.apply(session, out),
            Self::Get(get) => get.apply(session, out),
            Self::Ping(ping) => ping.apply(out),
            Self::Echo(echo) => echo.apply(out),
            Self::Hello(hello) => {
                hello.apply(session, out).await;
                return after_credentials(session);
            }
            Self::Auth(auth) => {
                auth.apply(session, out).await;
                return after_credentials(session);
            }
            Self::Client(client) => client.apply(session, out),
            Self::Command(command) => command.apply(session, out),
            Self::Config(config) => config.apply(session, out),
            Self::Info(info) => info.apply(session, out),
            Self::Select(select) => select.apply(out),
            Self::Reset(reset) => reset.apply(session, out),
            Self::Multi(multi) => multi.apply(session, out),
            Self::Exec(exec) => exec.apply(session, out),
            Self::Discard(discard) => discard.apply(session, out),
            Self::Watch(watch) => watch.apply(session, out),
            Self::Unwatch(unwatch) => unwatch.apply(out),
            Self::Role(role) => role.apply(out),
            Self::Time(time) => time.apply(session, out),
            Self::DbSize(dbsize) => dbsize.apply(session, out),
            Self::Quit(quit) => return quit.apply(out),
        }
        Flow::Continue
    }
}

impl Parsed<'_> {
    /// The tag of `INCR tag`, `INCRBY tag n` or `IDMINT.NEXT tag`, arguments valid: the
    /// commands that load their tag and change nothing else (see `lookahead`).
    pub(super) fn loaded_tag(&self) -> Option<&[u8]> {
        match &self.0 {
            Outcome::Known(_, Ok(Request::Incr(incr))) => Some(incr.tag),
            Outcome::Known(_, Ok(Request::IncrBy(incr_by))) => Some(incr_by.tag),
            Outcome::Known(_, Ok(Request::Next(next))) => Some(next.tag),
            _ => None,
        }
    }
}

/// After `AUTH` or `HELLO`: a connection that used up its wrong tokens is closed.
fn after_credentials(session: &Session) -> Flow {
    if auth::closing(session) {
        session.shared.tallies.auth_closed.add(session.peer);
        return Flow::Close;
    }
    Flow::Continue
}

/// Runs `parsed` without waiting when it can: `INCR` of a tag this connection has used, with
/// an ID in memory, a plain `IDMINT.SNOWFLAKE` the generator can answer at once, and
/// `IDMINT.UUID` or `IDMINT.ULID` (nearly always). `None`
/// means: run it with [`execute`].
///
/// The checks of [`execute`] hold without being made: a connection that may mint passes the
/// scope check, and its tag cache holds only tags its grant allows (it is emptied when the
/// grant changes).
#[inline]
pub(super) fn run_now(
    session: &mut Session,
    parsed: &Parsed<'_>,
    out: &mut BytesMut,
) -> Option<Flow> {
    if !session.may_mint || session.transaction.is_some() {
        return None;
    }
    let done = match &parsed.0 {
        Outcome::Known(_, Ok(Request::Incr(incr))) => incr.apply_now(session, out),
        Outcome::Known(_, Ok(Request::Snowflake(snowflake))) => snowflake.apply_now(session, out),
        Outcome::Known(_, Ok(Request::Id128(request))) => request.apply_now(session, out),
        _ => false,
    };
    done.then_some(Flow::Continue)
}

/// Runs `command`, as `parsed`, appending its reply to `out`.
pub(super) async fn execute(
    session: &mut Session,
    command: &Command,
    parsed: Parsed<'_>,
    out: &mut BytesMut,
) -> Flow {
    let (spec, request) = match parsed.0 {
        Outcome::CrossProtocol => {
            // Like Redis: an HTTP request sent here (say, by a web page to localhost) must not
            // get to run the inline commands in its body. Close, no reply.
            tracing::warn!(
                peer = %session.peer,
                "HTTP request on the Redis-protocol port; closing the connection"
            );
            return Flow::Close;
        }
        Outcome::Unknown => {
            unknown_command(out, command);
            session.doom_transaction();
            return Flow::Continue;
        }
        Outcome::WrongArity(spec) => {
            Refusal::Arity(spec.name).write(out);
            session.doom_transaction();
            return Flow::Continue;
        }
        Outcome::Known(spec, request) => (spec, request),
    };
    if let Some(need) = spec.need {
        // Decoding a permuted ID restores its plain value (its time, its position): on a
        // permuted namespace that is the operator's, not every minting client's.
        let need = match spec.kind {
            Kind::Decode if session.shared.ids.is_permuted() => Need::Admin,
            _ => need,
        };
        if !permitted(session, spec, need, command, out) {
            session.doom_transaction();
            return Flow::Continue;
        }
    }
    if session.transaction.is_some() && !spec.kind.runs_inside_multi() {
        transaction::queue(session, command, out);
        return Flow::Continue;
    }
    match request {
        Ok(request) => request.apply(session, out).await,
        Err(refusal) => {
            refusal.write(out);
            Flow::Continue
        }
    }
}

/// Whether the connection's grant allows `command` (of `spec`, which needs `need`) and its
/// key (the tag); if not, the refusal is written: `-NOAUTH` before `AUTH`, `-NOPERM` for a
/// scope or tag outside the grant, as Redis' ACLs answer.
fn permitted(
    session: &Session,
    spec: &Spec,
    need: Need,
    command: &Command,
    out: &mut BytesMut,
) -> bool {
    let Some(grant) = &session.grant else {
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

#[cfg(test)]
mod tests {
    use super::*;

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
