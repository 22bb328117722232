//! The connection and server commands stock clients send: `PING`, `HELLO`, `AUTH`, `CLIENT`,
//! `COMMAND`, `CONFIG`, `INFO`, `SELECT`, `RESET`. Replies follow Redis 7's, as far as a
//! server with no keyspace can, so that `redis-cli`, `redis-benchmark` and client libraries
//! go on as with Redis.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Reply};

use super::commands::{lookup, wrong_arity, Spec, COMMANDS};
use super::connection::Session;
use super::reply;
use crate::auth::secret_eq;

/// The Redis version idmint answers as in `INFO` (the command set it follows); its own
/// version is `idmint_version`.
const REDIS_VERSION: &str = "7.0.0";

/// idmint's version.
const IDMINT_VERSION: &str = env!("CARGO_PKG_VERSION");

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

const NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the \
                           default user. Are you sure your configuration is correct?";

const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
                            otherwise the HELLO <proto> AUTH <user> <pass> option can be used to \
                            authenticate the client and select the RESP protocol version at the \
                            same time";

const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

const NO_CONFIG_SET: &str = "ERR CONFIG SET is not supported: idmint is configured by its \
                             config file, IDMINT_* variables and flags";

/// The parameters `CONFIG GET` knows. `redis-benchmark` reads `save` and `appendonly` at start
/// (and warns when it cannot); idmint keeps nothing in memory that a snapshot would save.
fn config_params(session: &Session) -> [(&'static str, String); 5] {
    let port = session.shared.local_addr.map_or(0, |a| a.port());
    [
        ("save", String::new()),
        ("appendonly", "no".to_owned()),
        ("databases", "1".to_owned()),
        (
            "maxclients",
            session.shared.options.max_connections.to_string(),
        ),
        ("port", port.to_string()),
    ]
}

/// Redis' rule for client names and library names: printable ASCII without spaces.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// `-ERR unknown subcommand 'x'. Try NAME HELP.`
fn unknown_subcommand(out: &mut BytesMut, sub: &[u8], command: &str) {
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
fn help(out: &mut BytesMut, lines: &[&str]) {
    encode::array_header(out, lines.len());
    for line in lines {
        encode::simple(out, line);
    }
}

/// Glob matching as Redis' `stringmatch` for `CONFIG GET`: `*`, `?`, `[abc]`, `[a-z]`,
/// `[^a]`, `\x`; ASCII case ignored.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    // (pattern, text) positions to resume from when the last `*` must swallow one more byte.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let c = text.get(t).map_or(0, u8::to_ascii_lowercase);
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => class_match(pattern, p, c),
            Some(b'\\') if p + 1 < pattern.len() => pattern
                .get(p + 1)
                .filter(|x| x.to_ascii_lowercase() == c)
                .map(|_| 2),
            Some(x) if x.to_ascii_lowercase() == c => Some(1),
            _ => None,
        };
        match (step, star) {
            (Some(len), _) => {
                p += len;
                t += 1;
            }
            (None, Some((sp, st))) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            (None, None) => return false,
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b == b'*')
}

/// Matches `c` against the class starting at `pattern[start] == b'['`; returns the class's
/// length when it matches.
fn class_match(pattern: &[u8], start: usize, c: u8) -> Option<usize> {
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(i) {
            // An unclosed class ends with the pattern, as in Redis.
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') => {
                if pattern.get(i + 1).map(u8::to_ascii_lowercase) == Some(c) {
                    matched = true;
                }
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some() => {
                let hi = pattern.get(i + 2).map_or(0, u8::to_ascii_lowercase);
                let lo = lo.to_ascii_lowercase();
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                i += 3;
            }
            Some(&x) => {
                if x.to_ascii_lowercase() == c {
                    matched = true;
                }
                i += 1;
            }
        }
    }
    (matched != negate).then_some(i.min(pattern.len()) - start)
}

/// Appends an `INFO` section: `# Title`, `key:value` lines, a blank line; CRLF line endings.
fn section(text: &mut String, title: &str, fields: &[(&str, String)]) {
    let _ = write!(text, "# {title}\r\n");
    for (key, value) in fields {
        let _ = write!(text, "{key}:{value}\r\n");
    }
    text.push_str("\r\n");
}

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
    /// Checks `AUTH`'s or `HELLO AUTH`'s credentials against the token; `Err` holds the
    /// error reply.
    ///
    /// Without a token, like Redis' `default` user with `nopass`: `AUTH default <anything>`
    /// succeeds (clients configured with credentials still connect), while `AUTH <password>`
    /// is an error that says no password is configured.
    fn check_credentials(&self, user: Option<&[u8]>, password: &[u8]) -> Result<(), &'static str> {
        let user_ok = user.is_none_or(|u| u == b"default");
        let Some(token) = self.shared.options.admin_token.as_deref() else {
            return match user {
                None => Err(NO_PASSWORD),
                Some(_) if user_ok => Ok(()),
                Some(_) => Err(WRONGPASS),
            };
        };
        // Compare the password even for a wrong user name, so both take the same time.
        let password_ok = secret_eq(password, token.as_bytes());
        if user_ok && password_ok {
            Ok(())
        } else {
            tracing::warn!(peer = %self.peer, "RESP authentication failed");
            Err(WRONGPASS)
        }
    }

    /// `PING [message]`.
    pub(super) fn ping(&mut self, args: &[Bytes], out: &mut BytesMut) {
        match args {
            [_] => encode::simple(out, "PONG"),
            [_, message] => encode::bulk(out, message),
            _ => wrong_arity(out, "ping"),
        }
    }

    /// `AUTH [username] password`.
    pub(super) fn auth(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let (user, password) = match args {
            [_, password] => (None, password),
            [_, user, password] => (Some(&user[..]), password),
            _ => return encode::error(out, "ERR syntax error"),
        };
        match self.check_credentials(user, password) {
            Ok(()) => {
                self.authenticated = true;
                encode::ok(out);
            }
            Err(message) => encode::error(out, message),
        }
    }

    /// `HELLO [protover [AUTH username password] [SETNAME name]]`. idmint speaks RESP2 only:
    /// `HELLO 3` gets `-NOPROTO`, as from a Redis without RESP3, and clients stay on RESP2.
    pub(super) fn hello(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let mut rest = args.get(1..).unwrap_or_default();
        if let Some((version, options)) = rest.split_first() {
            match reply::parse_i64(version) {
                None => {
                    return encode::error(
                        out,
                        "ERR Protocol version is not an integer or out of range",
                    )
                }
                Some(2) => {}
                Some(_) => return encode::error(out, "NOPROTO unsupported protocol version"),
            }
            rest = options;
        }
        let mut name = None;
        while let Some((option, more)) = rest.split_first() {
            match more {
                [user, password, after @ ..] if option.eq_ignore_ascii_case(b"AUTH") => {
                    if let Err(message) = self.check_credentials(Some(user), password) {
                        return encode::error(out, message);
                    }
                    self.authenticated = true;
                    rest = after;
                }
                [client_name, after @ ..] if option.eq_ignore_ascii_case(b"SETNAME") => {
                    if !valid_client_name(client_name) {
                        return encode::error(out, BAD_CLIENT_NAME);
                    }
                    name = Some(client_name.clone());
                    rest = after;
                }
                _ => {
                    return encode::error_fmt(
                        out,
                        format_args!(
                            "ERR Syntax error in HELLO option '{}'",
                            option.escape_ascii()
                        ),
                    )
                }
            }
        }
        if !self.authenticated {
            return encode::error(out, HELLO_NOAUTH);
        }
        if let Some(name) = name {
            self.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(&name));
        }
        // RESP2 has no map: field/value pairs in a flat array, as Redis sends them.
        encode::array_header(out, 14);
        encode::bulk(out, b"server");
        encode::bulk(out, b"idmint");
        encode::bulk(out, b"version");
        encode::bulk(out, IDMINT_VERSION.as_bytes());
        encode::bulk(out, b"proto");
        encode::integer(out, 2);
        encode::bulk(out, b"id");
        encode::integer(out, i64::try_from(self.id).unwrap_or(i64::MAX));
        encode::bulk(out, b"mode");
        encode::bulk(out, b"standalone");
        encode::bulk(out, b"role");
        encode::bulk(out, b"master");
        encode::bulk(out, b"modules");
        encode::array_header(out, 0);
    }

    /// `SELECT index`: idmint has one database, 0.
    pub(super) fn select(&mut self, args: &[Bytes], out: &mut BytesMut) {
        match args.get(1).and_then(|a| reply::parse_i64(a)) {
            None => encode::error(out, "ERR invalid DB index"),
            Some(0) => encode::ok(out),
            Some(_) => encode::error(out, "ERR DB index is out of range"),
        }
    }

    /// `RESET`: back to a new connection's state.
    pub(super) fn reset(&mut self, out: &mut BytesMut) {
        self.authenticated = self.shared.options.admin_token.is_none();
        self.name = None;
        encode::simple(out, "RESET");
    }

    /// One line of `CLIENT INFO` / `CLIENT LIST`.
    fn client_line(&self, command: &str) -> String {
        let show = |value: &Option<Bytes>| {
            value
                .as_deref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        let local = self.local.map(|a| a.to_string()).unwrap_or_default();
        format!(
            "id={} addr={} laddr={local} fd=-1 name={} age={} idle=0 flags=N db=0 sub=0 \
             psub=0 ssub=0 multi=-1 cmd={command} user=default redir=-1 resp=2 lib-name={} \
             lib-ver={}\n",
            self.id,
            self.peer,
            show(&self.name),
            self.opened.elapsed().as_secs(),
            show(&self.lib_name),
            show(&self.lib_ver),
        )
    }

    /// `CLIENT SETNAME | GETNAME | SETINFO | ID | INFO | LIST | NO-EVICT | NO-TOUCH | HELP`.
    pub(super) fn client(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let Some(sub) = args.get(1) else {
            return wrong_arity(out, "client");
        };
        let upper = sub.to_ascii_uppercase();
        match (upper.as_slice(), args.get(2..).unwrap_or_default()) {
            (b"SETNAME", [name]) => {
                if !valid_client_name(name) {
                    return encode::error(
                        out,
                        "ERR Client names cannot contain spaces, newlines or special characters.",
                    );
                }
                self.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(name));
                encode::ok(out);
            }
            (b"SETNAME", _) => wrong_arity(out, "client|setname"),
            (b"GETNAME", []) => match &self.name {
                Some(name) => encode::bulk(out, name),
                None => encode::null_bulk(out),
            },
            (b"GETNAME", _) => wrong_arity(out, "client|getname"),
            (b"SETINFO", [attribute, value]) => {
                if !valid_client_name(value) {
                    return encode::error_fmt(
                        out,
                        format_args!(
                            "ERR {} cannot contain spaces, newlines or special characters.",
                            attribute.escape_ascii()
                        ),
                    );
                }
                let value = (!value.is_empty()).then(|| Bytes::copy_from_slice(value));
                if attribute.eq_ignore_ascii_case(b"LIB-NAME") {
                    self.lib_name = value;
                } else if attribute.eq_ignore_ascii_case(b"LIB-VER") {
                    self.lib_ver = value;
                } else {
                    return encode::error_fmt(
                        out,
                        format_args!("ERR Unrecognized option '{}'", attribute.escape_ascii()),
                    );
                }
                encode::ok(out);
            }
            (b"SETINFO", _) => wrong_arity(out, "client|setinfo"),
            (b"ID", []) => encode::integer(out, i64::try_from(self.id).unwrap_or(i64::MAX)),
            (b"INFO", []) => encode::bulk(out, self.client_line("client|info").as_bytes()),
            // Only this connection: idmint keeps no registry of its clients.
            (b"LIST", _) => encode::bulk(out, self.client_line("client|list").as_bytes()),
            (b"NO-EVICT" | b"NO-TOUCH", [flag])
                if flag.eq_ignore_ascii_case(b"ON") || flag.eq_ignore_ascii_case(b"OFF") =>
            {
                encode::ok(out)
            }
            (b"HELP", []) => help(
                out,
                &[
                    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "GETNAME",
                    "    Return the name of the current connection.",
                    "ID",
                    "    Return the ID of the current connection.",
                    "INFO",
                    "    Return information about the current client connection.",
                    "LIST",
                    "    Return information about this connection (idmint lists no other).",
                    "SETINFO <LIB-NAME|LIB-VER> <value>",
                    "    Set client library name or version.",
                    "SETNAME <name>",
                    "    Assign the name <name> to the current connection.",
                    "NO-EVICT (ON|OFF)",
                    "NO-TOUCH (ON|OFF)",
                    "    Accepted and ignored.",
                    "HELP",
                    "    Print this help.",
                ],
            ),
            _ => unknown_subcommand(out, sub, "CLIENT"),
        }
    }

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
                .filter(|(name, _)| rest.iter().any(|p| glob_match(p, name.as_bytes())))
                .collect();
            encode::array_header(out, 2 * matching.len());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_redis() {
        assert!(glob_match(b"save", b"save"));
        assert!(glob_match(b"SAVE", b"save"));
        assert!(glob_match(b"*", b"appendonly"));
        assert!(glob_match(b"append*", b"appendonly"));
        assert!(glob_match(b"*only", b"appendonly"));
        assert!(glob_match(b"a*d*y", b"appendonly"));
        assert!(glob_match(b"s?ve", b"save"));
        assert!(glob_match(b"[rs]ave", b"save"));
        assert!(glob_match(b"[a-z]ave", b"save"));
        assert!(!glob_match(b"[^s]ave", b"save"));
        assert!(glob_match(b"s\\ave", b"save"));
        assert!(!glob_match(b"save*x", b"save"));
        assert!(!glob_match(b"sav", b"save"));
        assert!(!glob_match(b"", b"save"));
        assert!(glob_match(b"**", b""));
        assert!(!glob_match(b"[", b"s"));
    }

    #[test]
    fn client_names_are_printable_without_spaces() {
        assert!(valid_client_name(b"worker-1"));
        assert!(valid_client_name(b""));
        assert!(!valid_client_name(b"a b"));
        assert!(!valid_client_name(b"a\nb"));
        assert!(!valid_client_name(b"\xff"));
    }
}
