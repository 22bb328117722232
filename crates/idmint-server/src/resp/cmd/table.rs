//! The command table: every command idmint answers, what `COMMAND` says of it, and what
//! dispatch checks before it runs (its arity, what the connection's grant must allow).

use crate::auth::Need;

/// Which handler runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Incr,
    IncrBy,
    Snowflake,
    Uuid,
    Ulid,
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
    pub(super) fn runs_inside_multi(self) -> bool {
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
    spec(Kind::Uuid, "idmint.uuid", -1, &["fast"], 0, &["@fast"], MINT),
    spec(Kind::Ulid, "idmint.ulid", -1, &["fast"], 0, &["@fast"], MINT),
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
}
