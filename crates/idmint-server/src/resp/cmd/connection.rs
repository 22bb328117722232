//! The connection commands: `PING`, `SELECT`, `RESET` (`ECHO` and `QUIT` are one line each, in
//! the dispatch).

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Protocol};

use super::wrong_arity;
use crate::resp::connection::Session;
use crate::resp::reply::{self, IdFormat};

impl Session {
    /// `PING [message]`.
    pub(super) fn ping(&mut self, args: &[Bytes], out: &mut BytesMut) {
        match args {
            [_] => encode::simple(out, "PONG"),
            [_, message] => encode::bulk(out, message),
            _ => wrong_arity(out, "ping"),
        }
    }

    /// `SELECT index`: idmint has one database, 0.
    pub(super) fn select(&mut self, args: &[Bytes], out: &mut BytesMut) {
        match args.get(1).and_then(|a| reply::parse_i64(a)) {
            None => encode::error(out, "ERR invalid DB index"),
            Some(0) => encode::ok(out),
            Some(_) => encode::error(out, "ERR DB index is out of range"),
        }
    }

    /// `RESET`: back to a new connection's state (RESP2, integer IDs, no transaction, not
    /// authenticated when a token is set, no name).
    pub(super) fn reset(&mut self, out: &mut BytesMut) {
        self.set_grant(self.shared.initial_grant(), None);
        self.name = None;
        self.protocol = Protocol::Resp2;
        self.format = IdFormat::Integer;
        self.transaction = None;
        encode::simple(out, "RESET");
    }
}
