//! `AUTH` and `HELLO`: authentication (a token gives the connection its grant, see
//! `crate::auth`) and the protocol handshake.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Protocol};

use super::args::Refusal;
use super::client::{valid_client_name, BAD_CLIENT_NAME};
use super::info::IDMINT_VERSION;
use crate::auth::{digest, Grant};
use crate::resp::reply;
use crate::resp::session::Session;

/// A grant and the SHA-256 of the token that gave it (none without tokens).
type Granted = (Arc<Grant>, Option<[u8; 32]>);

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

/// Checks `AUTH`'s or `HELLO AUTH`'s credentials against the tokens; `Err` holds the
/// error reply. A wrong token is counted, slowed down ([`FAILURE_DELAY`]), and after
/// [`MAX_AUTH_FAILURES`] closes the connection (see [`closing`]).
///
/// Without tokens, like Redis' `default` user with `nopass`: `AUTH default <anything>`
/// succeeds (clients configured with credentials still connect), while `AUTH <password>`
/// is an error that says no password is configured. With tokens, the user name may be
/// `default` or the token's name.
async fn check_credentials(
    session: &mut Session,
    user: Option<&[u8]>,
    password: &[u8],
) -> Result<Granted, &'static str> {
    if !session.shared.options.auth.required() {
        return match user {
            None => Err(NO_PASSWORD),
            Some(b"default") => Ok((Grant::open(), None)),
            Some(_) => Err(WRONGPASS),
        };
    }
    let token = digest(password);
    let grant = session
        .shared
        .options
        .auth
        .check_digest(&token)
        .filter(|grant| user.is_none_or(|u| u == b"default" || u == grant.name().as_bytes()));
    match grant {
        Some(grant) => Ok((grant, Some(token))),
        None => {
            session.auth_failures += 1;
            session.shared.tallies.auth_failures.add(session.peer);
            tokio::time::sleep(FAILURE_DELAY * session.auth_failures).await;
            Err(WRONGPASS)
        }
    }
}

/// Whether the connection has used up its wrong tokens: its last reply is written, then it is
/// closed.
pub(super) fn closing(session: &Session) -> bool {
    session.auth_failures >= MAX_AUTH_FAILURES
}

/// `AUTH [username] password`.
#[derive(Debug)]
pub(super) struct Auth<'a> {
    user: Option<&'a [u8]>,
    password: &'a [u8],
}

impl<'a> Auth<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        match params {
            [password] => Ok(Self {
                user: None,
                password,
            }),
            [user, password] => Ok(Self {
                user: Some(user),
                password,
            }),
            _ => Err(Refusal::Fixed("ERR syntax error")),
        }
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        match check_credentials(session, self.user, self.password).await {
            Ok((grant, token)) => {
                session.set_grant(Some(grant), token);
                encode::ok(out);
            }
            Err(message) => encode::error(out, message),
        }
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`: `2` or `3` switches the
/// connection to RESP2 or RESP3 (anything else is `-NOPROTO`, and nothing changes); `AUTH` and
/// `SETNAME` apply only when the whole command succeeds. The reply is the server's
/// description, a map in RESP3 (field/value pairs in RESP2), as Redis sends it.
#[derive(Debug)]
pub(super) struct Hello<'a> {
    /// `None`: the connection's, unchanged.
    protocol: Option<Protocol>,
    /// The options before the first refused one (all of them when none is), in order.
    options: &'a [Bytes],
    /// The first option refused. It is answered once the credentials of the `AUTH` options
    /// before it were checked, in the order they were written (a wrong token there is counted
    /// and answered first).
    refused: Option<Refusal<'a>>,
    /// The last `SETNAME`.
    name: Option<&'a [u8]>,
}

/// One option of `HELLO`.
#[derive(Debug)]
enum HelloOption<'a> {
    Auth { user: &'a [u8], password: &'a [u8] },
    SetName(&'a [u8]),
}

/// Reads `HELLO`'s options one by one; after a refused one, nothing more.
struct HelloOptions<'a>(&'a [Bytes]);

impl<'a> Iterator for HelloOptions<'a> {
    type Item = Result<HelloOption<'a>, Refusal<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (option, more) = self.0.split_first()?;
        match more {
            [user, password, after @ ..] if option.eq_ignore_ascii_case(b"AUTH") => {
                self.0 = after;
                Some(Ok(HelloOption::Auth { user, password }))
            }
            [name, after @ ..] if option.eq_ignore_ascii_case(b"SETNAME") => {
                self.0 = after;
                if !valid_client_name(name) {
                    self.0 = &[];
                    return Some(Err(Refusal::Fixed(BAD_CLIENT_NAME)));
                }
                Some(Ok(HelloOption::SetName(name)))
            }
            _ => {
                self.0 = &[];
                Some(Err(Refusal::Quoting {
                    before: "ERR Syntax error in HELLO option '",
                    word: option,
                    after: "'",
                }))
            }
        }
    }
}

impl<'a> Hello<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        let mut rest = params;
        let mut protocol = None;
        if let Some((version, options)) = params.split_first() {
            protocol = Some(match reply::parse_i64(version) {
                None => {
                    return Err(Refusal::Fixed(
                        "ERR Protocol version is not an integer or out of range",
                    ))
                }
                Some(2) => Protocol::Resp2,
                Some(3) => Protocol::Resp3,
                Some(_) => return Err(Refusal::Fixed("NOPROTO unsupported protocol version")),
            });
            rest = options;
        }
        let mut hello = Self {
            protocol,
            options: rest,
            refused: None,
            name: None,
        };
        let mut options = HelloOptions(rest);
        loop {
            let unread = options.0.len();
            match options.next() {
                None => break,
                Some(Ok(HelloOption::SetName(name))) => hello.name = Some(name),
                Some(Ok(HelloOption::Auth { .. })) => {}
                Some(Err(refusal)) => {
                    hello.options = rest.get(..rest.len() - unread).unwrap_or_default();
                    hello.refused = Some(refusal);
                    break;
                }
            }
        }
        Ok(hello)
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let mut granted = None;
        for option in HelloOptions(self.options).flatten() {
            if let HelloOption::Auth { user, password } = option {
                match check_credentials(session, Some(user), password).await {
                    Ok(grant) => granted = Some(grant),
                    Err(message) => return encode::error(out, message),
                }
            }
        }
        if let Some(refusal) = self.refused {
            return refusal.write(out);
        }
        if granted.is_none() && session.grant.is_none() {
            return encode::error(out, HELLO_NOAUTH);
        }
        if let Some((grant, token)) = granted {
            session.set_grant(Some(grant), token);
        }
        let protocol = self.protocol.unwrap_or(session.protocol);
        session.protocol = protocol;
        if let Some(name) = self.name {
            session.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(name));
        }
        encode::map_header(out, protocol, 7);
        encode::bulk(out, b"server");
        encode::bulk(out, b"idmint");
        encode::bulk(out, b"version");
        encode::bulk(out, IDMINT_VERSION.as_bytes());
        encode::bulk(out, b"proto");
        encode::integer(out, protocol.version());
        encode::bulk(out, b"id");
        encode::integer(out, i64::try_from(session.id).unwrap_or(i64::MAX));
        encode::bulk(out, b"mode");
        encode::bulk(out, b"standalone");
        encode::bulk(out, b"role");
        encode::bulk(out, b"master");
        encode::bulk(out, b"modules");
        encode::array_header(out, 0);
    }
}
