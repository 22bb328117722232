//! `ROLE`, `TIME`, `DBSIZE`: what clients and tools probe a server with. None takes an
//! argument.

use bytes::BytesMut;
use idmint_resp::encode;

use crate::resp::session::Session;

/// `ROLE`: idmint nodes are independent primaries with no replicas (`master`, offset 0, no
/// replicas), which is what clients that check the role before writing look for.
#[derive(Debug)]
pub(super) struct Role;

impl Role {
    pub(super) fn apply(self, out: &mut BytesMut) {
        encode::array_header(out, 3);
        encode::bulk(out, b"master");
        encode::integer(out, 0);
        encode::array_header(out, 0);
    }
}

/// `TIME`: seconds and microseconds since the Unix epoch, as two bulk strings, from the clock
/// the snowflakes are made with (millisecond precision: the microseconds are the milliseconds
/// times 1,000).
#[derive(Debug)]
pub(super) struct Time;

impl Time {
    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        let now_ms = session.shared.ids.clock().now_ms();
        let seconds = i64::try_from(now_ms / 1_000).unwrap_or(i64::MAX);
        let micros = i64::try_from(now_ms % 1_000 * 1_000).unwrap_or(0);
        encode::array_header(out, 2);
        encode::bulk_integer(out, seconds);
        encode::bulk_integer(out, micros);
    }
}

/// `DBSIZE`: how many tags this node has loaded (the keys `GET` can read here); the store may
/// hold more.
#[derive(Debug)]
pub(super) struct DbSize;

impl DbSize {
    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        let tags = session.shared.ids.segments().len();
        encode::integer(out, i64::try_from(tags).unwrap_or(i64::MAX));
    }
}
