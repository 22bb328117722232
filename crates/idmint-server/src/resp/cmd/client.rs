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
