//! `CLIENT`: the connection's ID, name, library and listing, as Redis answers them.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::{help, unknown_subcommand, Refusal};
use crate::resp::session::Session;

pub(super) const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// Redis' rule for client names and library names: printable ASCII without spaces.
pub(super) fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// One line of `CLIENT INFO` / `CLIENT LIST`.
fn client_line(session: &Session, command: &str) -> String {
    let show = |value: &Option<Bytes>| {
        value
            .as_deref()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    let local = session.local.map(|a| a.to_string()).unwrap_or_default();
    let (flags, multi) = match &session.transaction {
        Some(transaction) => ("x", i64::try_from(transaction.len()).unwrap_or(i64::MAX)),
        None => ("N", -1),
    };
    format!(
        "id={} addr={} laddr={local} fd=-1 name={} age={} idle=0 flags={flags} db=0 sub=0 \
         psub=0 ssub=0 multi={multi} cmd={command} user=default redir=-1 resp={} \
         lib-name={} lib-ver={}\n",
        session.id,
        session.peer,
        show(&session.name),
        session.opened.elapsed().as_secs(),
        session.protocol.version(),
        show(&session.lib_name),
        show(&session.lib_ver),
    )
}

/// `CLIENT SETNAME | GETNAME | SETINFO | ID | INFO | LIST | NO-EVICT | NO-TOUCH | TRACKING |
/// GETREDIR | HELP`. What a server without a feature answers for the rest
/// (`MAINT_NOTIFICATIONS`, `KILL`, `PAUSE`, ...): an unknown subcommand, which clients that
/// probe for it at connect take as "not supported".
#[derive(Debug)]
pub(super) enum Client<'a> {
    /// A valid name; empty: no name.
    SetName(&'a [u8]),
    GetName,
    /// `LIB-NAME` (or, with `version`, `LIB-VER`) and a valid value.
    SetInfo {
        version: bool,
        value: &'a [u8],
    },
    Id,
    Info,
    /// Only this connection: idmint keeps no registry of its clients.
    List,
    /// `NO-EVICT`, `NO-TOUCH` and `TRACKING OFF`: accepted, nothing to do.
    Accepted,
    GetRedir,
    Help,
}

impl<'a> Client<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        let Some((sub, rest)) = params.split_first() else {
            return Err(Refusal::Arity("client"));
        };
        let is = |word: &str| sub.eq_ignore_ascii_case(word.as_bytes());
        let word = |arg: &[u8], word: &str| arg.eq_ignore_ascii_case(word.as_bytes());
        if is("SETNAME") {
            let [name] = rest else {
                return Err(Refusal::Arity("client|setname"));
            };
            if !valid_client_name(name) {
                return Err(Refusal::Fixed(BAD_CLIENT_NAME));
            }
            Ok(Self::SetName(name))
        } else if is("GETNAME") {
            match rest {
                [] => Ok(Self::GetName),
                _ => Err(Refusal::Arity("client|getname")),
            }
        } else if is("SETINFO") {
            let [attribute, value] = rest else {
                return Err(Refusal::Arity("client|setinfo"));
            };
            if !valid_client_name(value) {
                return Err(Refusal::Quoting {
                    before: "ERR ",
                    word: attribute,
                    after: " cannot contain spaces, newlines or special characters.",
                });
            }
            if word(attribute, "LIB-NAME") {
                Ok(Self::SetInfo {
                    version: false,
                    value,
                })
            } else if word(attribute, "LIB-VER") {
                Ok(Self::SetInfo {
                    version: true,
                    value,
                })
            } else {
                Err(Refusal::Quoting {
                    before: "ERR Unrecognized option '",
                    word: attribute,
                    after: "'",
                })
            }
        } else if is("ID") && rest.is_empty() {
            Ok(Self::Id)
        } else if is("INFO") && rest.is_empty() {
            Ok(Self::Info)
        } else if is("LIST") {
            Ok(Self::List)
        } else if (is("NO-EVICT") || is("NO-TOUCH"))
            && matches!(rest, [flag] if word(flag, "ON") || word(flag, "OFF"))
        {
            Ok(Self::Accepted)
        } else if is("TRACKING") {
            // Client-side caching: there is nothing to cache, so switching it off is a no-op
            // and switching it on is refused.
            match rest {
                [switch, ..] if word(switch, "OFF") => Ok(Self::Accepted),
                [switch, ..] if word(switch, "ON") => Err(Refusal::Fixed(
                    "ERR idmint does not support client-side caching: IDs are never cached",
                )),
                _ => Err(Refusal::Arity("client|tracking")),
            }
        } else if is("GETREDIR") && rest.is_empty() {
            Ok(Self::GetRedir)
        } else if is("HELP") && rest.is_empty() {
            Ok(Self::Help)
        } else {
            Err(unknown_subcommand(sub, "'. Try CLIENT HELP."))
        }
    }

    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        match self {
            Self::SetName(name) => {
                session.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(name));
                encode::ok(out);
            }
            Self::GetName => match &session.name {
                Some(name) => encode::bulk(out, name),
                None => encode::null(out, session.protocol),
            },
            Self::SetInfo { version, value } => {
                let value = (!value.is_empty()).then(|| Bytes::copy_from_slice(value));
                if version {
                    session.lib_ver = value;
                } else {
                    session.lib_name = value;
                }
                encode::ok(out);
            }
            Self::Id => encode::integer(out, i64::try_from(session.id).unwrap_or(i64::MAX)),
            Self::Info => {
                let line = client_line(session, "client|info");
                encode::verbatim(out, session.protocol, line.as_bytes());
            }
            Self::List => {
                let line = client_line(session, "client|list");
                encode::verbatim(out, session.protocol, line.as_bytes());
            }
            Self::Accepted => encode::ok(out),
            Self::GetRedir => encode::integer(out, -1),
            Self::Help => help(
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
