//! The connection commands: `PING`, `ECHO`, `SELECT`, `RESET`, `QUIT`.

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Protocol};

use super::args::Refusal;
use crate::resp::reply::{self, IdFormat};
use crate::resp::session::{Flow, Session};

/// `PING [message]`.
#[derive(Debug)]
pub(super) struct Ping<'a> {
    message: Option<&'a [u8]>,
}

impl<'a> Ping<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        match params {
            [] => Ok(Self { message: None }),
            [message] => Ok(Self {
                message: Some(message),
            }),
            _ => Err(Refusal::Arity("ping")),
        }
    }

    pub(super) fn apply(self, out: &mut BytesMut) {
        match self.message {
            None => encode::simple(out, "PONG"),
            Some(message) => encode::bulk(out, message),
        }
    }
}

/// `ECHO message`.
#[derive(Debug)]
pub(super) struct Echo<'a> {
    message: &'a [u8],
}

impl<'a> Echo<'a> {
    pub(super) fn parse(params: &'a [Bytes]) -> Result<Self, Refusal<'a>> {
        match params {
            [message] => Ok(Self { message }),
            _ => Err(Refusal::Arity("echo")),
        }
    }

    pub(super) fn apply(self, out: &mut BytesMut) {
        encode::bulk(out, self.message);
    }
}

/// `SELECT index`: idmint has one database, 0; any other index is refused at parse.
#[derive(Debug)]
pub(super) struct Select;

impl Select {
    pub(super) fn parse(params: &[Bytes]) -> Result<Self, Refusal<'_>> {
        match params.first().and_then(|a| reply::parse_i64(a)) {
            None => Err(Refusal::Fixed("ERR invalid DB index")),
            Some(0) => Ok(Self),
            Some(_) => Err(Refusal::Fixed("ERR DB index is out of range")),
        }
    }

    pub(super) fn apply(self, out: &mut BytesMut) {
        encode::ok(out);
    }
}

/// `RESET`: back to a new connection's state (RESP2, integer IDs, no transaction, not
/// authenticated when a token is set, no name).
#[derive(Debug)]
pub(super) struct Reset;

impl Reset {
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        session.set_grant(session.shared.initial_grant(), None);
        session.name = None;
        session.protocol = Protocol::Resp2;
        session.format = IdFormat::Integer;
        session.transaction = None;
        encode::simple(out, "RESET");
    }
}

/// `QUIT`: `+OK`, then the connection closes.
#[derive(Debug)]
pub(super) struct Quit;

impl Quit {
    pub(super) fn apply(self, out: &mut BytesMut) -> Flow {
        encode::ok(out);
        Flow::Close
    }
}
