//! `AUTH` and `HELLO`: authentication (a token gives the connection its grant, see
//! `crate::auth`) and the protocol handshake.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Protocol};

use super::client::{valid_client_name, BAD_CLIENT_NAME};
use super::info::IDMINT_VERSION;
use crate::auth::{digest, Grant, Need};

/// A grant and the SHA-256 of the token that gave it (none without tokens).
type Granted = (Arc<Grant>, Option<[u8; 32]>);
use crate::resp::connection::Session;
use crate::resp::reply;

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

const NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the \
                           default user. Are you sure your configuration is correct?";

const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
                            otherwise the HELLO <proto> AUTH <user> <pass> option can be used to \
                            authenticate the client and select the RESP protocol version at the \
                            same time";

/// Wrong tokens a connection may send; the next one closes it.
pub(crate) const MAX_AUTH_FAILURES: u32 = 3;

/// How long a wrong token's reply is held back, times the connection's failures so far: a
/// guesser gets a few tries a second per connection, and a pipeline of guesses no faster.
const FAILURE_DELAY: Duration = Duration::from_millis(200);

impl Session {
    /// Checks `AUTH`'s or `HELLO AUTH`'s credentials against the tokens; `Err` holds the
    /// error reply. A wrong token is counted, slowed down ([`FAILURE_DELAY`]), and after
    /// [`MAX_AUTH_FAILURES`] closes the connection (see [`Session::auth_closing`]).
    ///
    /// Without tokens, like Redis' `default` user with `nopass`: `AUTH default <anything>`
    /// succeeds (clients configured with credentials still connect), while `AUTH <password>`
    /// is an error that says no password is configured. With tokens, the user name may be
    /// `default` or the token's name.
    async fn check_credentials(
        &mut self,
        user: Option<&[u8]>,
        password: &[u8],
    ) -> Result<Granted, &'static str> {
        if !self.shared.options.auth.required() {
            return match user {
                None => Err(NO_PASSWORD),
                Some(b"default") => Ok((Grant::open(), None)),
                Some(_) => Err(WRONGPASS),
            };
        }
        let token = digest(password);
        let grant = self
            .shared
            .options
            .auth
            .check_digest(&token)
            .filter(|grant| user.is_none_or(|u| u == b"default" || u == grant.name().as_bytes()));
        match grant {
            Some(grant) => Ok((grant, Some(token))),
            None => {
                self.auth_failures += 1;
                self.shared.tallies.auth_failures.add(self.peer);
                tokio::time::sleep(FAILURE_DELAY * self.auth_failures).await;
                Err(WRONGPASS)
            }
        }
    }

    /// Whether the connection has used up its wrong tokens: its last reply is written, then
    /// it is closed.
    pub(super) fn auth_closing(&self) -> bool {
        self.auth_failures >= MAX_AUTH_FAILURES
    }

    /// Gives the connection `grant`, from the token with SHA-256 `token` (none when no token
    /// is configured): what it may run from now on. The tags it cached under another grant are
    /// forgotten, so the fast path never serves a tag the new one refuses.
    pub(in crate::resp) fn set_grant(
        &mut self,
        grant: Option<Arc<Grant>>,
        token: Option<[u8; 32]>,
    ) {
        self.may_mint = grant.as_ref().is_some_and(|g| g.allows(Need::Mint));
        self.tags.clear();
        self.returnable.clear();
        self.grant = grant;
        self.token = token;
        self.tokens_seen = self.shared.options.auth.generation();
    }

    /// After the tokens were reloaded: the connection's token looked up again, so a token
    /// removed from the file stops working on connections already open, at their next command.
    #[cold]
    pub(in crate::resp) fn recheck_token(&mut self) {
        let grant = self
            .token
            .and_then(|token| self.shared.options.auth.check_digest(&token));
        let token = grant.as_ref().and(self.token);
        self.set_grant(grant, token);
    }

    /// `AUTH [username] password`.
    pub(super) async fn auth(&mut self, args: &[Bytes], out: &mut BytesMut) {
        let (user, password) = match args {
            [_, password] => (None, password),
            [_, user, password] => (Some(&user[..]), password),
            _ => return encode::error(out, "ERR syntax error"),
        };
        match self.check_credentials(user, password).await {
            Ok((grant, token)) => {
                self.set_grant(Some(grant), token);
                encode::ok(out);
            }
            Err(message) => encode::error(out, message),
        }
    }

    /// `HELLO [protover [AUTH username password] [SETNAME name]]`: `2` or `3` switches the
    /// connection to RESP2 or RESP3 (anything else is `-NOPROTO`, and nothing changes);
    /// `AUTH` and `SETNAME` apply only when the whole command succeeds. The reply is the
    /// server's description, a map in RESP3 (field/value pairs in RESP2), as Redis sends it.
    pub(super) async fn hello(&mut self, args: &[Bytes], out: &mut BytesMut) {
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
        let mut granted = None;
        while let Some((option, more)) = rest.split_first() {
            match more {
                [user, password, after @ ..] if option.eq_ignore_ascii_case(b"AUTH") => {
                    match self.check_credentials(Some(user), password).await {
                        Ok(grant) => granted = Some(grant),
                        Err(message) => return encode::error(out, message),
                    }
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
        if granted.is_none() && self.grant.is_none() {
            return encode::error(out, HELLO_NOAUTH);
        }
        if let Some((grant, token)) = granted {
            self.set_grant(Some(grant), token);
        }
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
