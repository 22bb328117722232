//! `IDMINT.SPACE`: the ID space this node hands out in, for client libraries that must know
//! how to treat its IDs before they cache any.
//!
//! The answer is a map (field/value pairs in RESP2): `layout`, `epoch_ms`, `datacenter`,
//! `version` (of the namespace's ID space; 0 when none is recorded), and `permuted` (1 when
//! IDs are handed out permuted: a client must then neither keep snowflakes in order nor ask
//! for runs). The key's fingerprint is not given: it says nothing a client acts on.

use bytes::BytesMut;
use idmint_resp::encode;

use crate::resp::reply::{self, IdFormat};
use crate::resp::session::Session;

/// `IDMINT.SPACE`: no argument.
#[derive(Debug)]
pub(super) struct Space;

impl Space {
    pub(super) fn apply(self, session: &Session, out: &mut BytesMut) {
        let ids = &session.shared.ids;
        let layout = ids.layout();
        let current = ids.id_spaces().last();
        let version = current.map_or(0, |record| record.version);
        let datacenter = current.map_or(0, |record| record.space.datacenter);
        encode::map_header(out, session.protocol, 5);
        encode::bulk(out, b"layout");
        encode::bulk(out, layout.spec().as_bytes());
        for (field, value) in [
            ("epoch_ms", layout.epoch_ms()),
            ("datacenter", datacenter),
            ("version", version),
            ("permuted", u64::from(ids.is_permuted())),
        ] {
            encode::bulk(out, field.as_bytes());
            reply::id(out, value, &IdFormat::Integer);
        }
    }
}
