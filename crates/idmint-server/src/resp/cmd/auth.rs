//! `AUTH` and `HELLO`: authentication and the protocol handshake.

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Protocol};

use super::client::{valid_client_name, BAD_CLIENT_NAME};
use super::info::IDMINT_VERSION;
use crate::auth::secret_eq;
use crate::resp::connection::Session;
use crate::resp::reply;

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

const NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the \
                           default user. Are you sure your configuration is correct?";

const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
                            otherwise the HELLO <proto> AUTH <user> <pass> option can be used to \
                            authenticate the client and select the RESP protocol version at the \
                            same time";

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

    /// `HELLO [protover [AUTH username password] [SETNAME name]]`: `2` or `3` switches the
    /// connection to RESP2 or RESP3 (anything else is `-NOPROTO`, and nothing changes);
    /// `AUTH` and `SETNAME` apply only when the whole command succeeds. The reply is the
    /// server's description, a map in RESP3 (field/value pairs in RESP2), as Redis sends it.
    pub(super) fn hello(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let mut rest = args.get(1..).unwrap_or_default();
        let mut protocol = self.protocol;
        if let Some((version, options)) = rest.split_first() {
            protocol = match reply::parse_i64(version) {
                None => {
                    return encode::error(
                        out,
                        "ERR Protocol version is not an integer or out of range",
                    )
                }
                Some(2) => Protocol::Resp2,
                Some(3) => Protocol::Resp3,
                Some(_) => return encode::error(out, "NOPROTO unsupported protocol version"),
            };
            rest = options;
        }
        let mut name = None;
        let mut authenticated = self.authenticated;
        while let Some((option, more)) = rest.split_first() {
            match more {
                [user, password, after @ ..] if option.eq_ignore_ascii_case(b"AUTH") => {
                    if let Err(message) = self.check_credentials(Some(user), password) {
                        return encode::error(out, message);
                    }
                    authenticated = true;
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
        if !authenticated {
            return encode::error(out, HELLO_NOAUTH);
        }
        self.authenticated = true;
        self.protocol = protocol;
        if let Some(name) = name {
            self.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(&name));
        }
        encode::map_header(out, protocol, 7);
        encode::bulk(out, b"server");
        encode::bulk(out, b"idmint");
        encode::bulk(out, b"version");
        encode::bulk(out, IDMINT_VERSION.as_bytes());
        encode::bulk(out, b"proto");
        encode::integer(out, protocol.version());
        encode::bulk(out, b"id");
        encode::integer(out, i64::try_from(self.id).unwrap_or(i64::MAX));
        encode::bulk(out, b"mode");
        encode::bulk(out, b"standalone");
        encode::bulk(out, b"role");
        encode::bulk(out, b"master");
        encode::bulk(out, b"modules");
        encode::array_header(out, 0);
    }
}
