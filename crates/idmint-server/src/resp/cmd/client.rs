//! `CLIENT`: the connection's ID, name, library and listing, as Redis answers them.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::{help, unknown_subcommand, wrong_arity};
use crate::resp::connection::Session;

pub(super) const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// Redis' rule for client names and library names: printable ASCII without spaces.
pub(super) fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

impl Session {
    /// One line of `CLIENT INFO` / `CLIENT LIST`.
    fn client_line(&self, command: &str) -> String {
        let show = |value: &Option<Bytes>| {
            value
                .as_deref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        let local = self.local.map(|a| a.to_string()).unwrap_or_default();
        let (flags, multi) = match &self.transaction {
            Some(transaction) => ("x", i64::try_from(transaction.len()).unwrap_or(i64::MAX)),
            None => ("N", -1),
        };
        format!(
            "id={} addr={} laddr={local} fd=-1 name={} age={} idle=0 flags={flags} db=0 sub=0 \
             psub=0 ssub=0 multi={multi} cmd={command} user=default redir=-1 resp={} \
             lib-name={} lib-ver={}\n",
            self.id,
            self.peer,
            show(&self.name),
            self.opened.elapsed().as_secs(),
            self.protocol.version(),
            show(&self.lib_name),
            show(&self.lib_ver),
        )
    }

    /// `CLIENT SETNAME | GETNAME | SETINFO | ID | INFO | LIST | NO-EVICT | NO-TOUCH |
    /// TRACKING | GETREDIR | HELP`. What a server without a feature answers for the rest
    /// (`MAINT_NOTIFICATIONS`, `KILL`, `PAUSE`, ...): an unknown subcommand, which clients that
    /// probe for it at connect take as "not supported".
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
                None => encode::null(out, self.protocol),
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
            (b"INFO", []) => {
                let line = self.client_line("client|info");
                encode::verbatim(out, self.protocol, line.as_bytes());
            }
            // Only this connection: idmint keeps no registry of its clients.
            (b"LIST", _) => {
                let line = self.client_line("client|list");
                encode::verbatim(out, self.protocol, line.as_bytes());
            }
            (b"NO-EVICT" | b"NO-TOUCH", [flag])
                if flag.eq_ignore_ascii_case(b"ON") || flag.eq_ignore_ascii_case(b"OFF") =>
            {
                encode::ok(out)
            }
            // Client-side caching: there is nothing to cache, so switching it off is a no-op
            // and switching it on is refused.
            (b"TRACKING", [switch, ..]) if switch.eq_ignore_ascii_case(b"OFF") => encode::ok(out),
            (b"TRACKING", [switch, ..]) if switch.eq_ignore_ascii_case(b"ON") => encode::error(
                out,
                "ERR idmint does not support client-side caching: IDs are never cached",
            ),
            (b"TRACKING", _) => wrong_arity(out, "client|tracking"),
            (b"GETREDIR", []) => encode::integer(out, -1),
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
                    "TRACKING (ON|OFF) [options]",
                    "    OFF is accepted; ON is refused: idmint has nothing to cache.",
                    "GETREDIR",
                    "    Return -1: tracking is never on.",
                    "HELP",
                    "    Print this help.",
                ],
            ),
            _ => unknown_subcommand(out, sub, "CLIENT"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_are_printable_without_spaces() {
        assert!(valid_client_name(b"worker-1"));
        assert!(valid_client_name(b""));
        assert!(!valid_client_name(b"a b"));
        assert!(!valid_client_name(b"a\nb"));
        assert!(!valid_client_name(b"\xff"));
    }
}
