//! What `IDMINT.UUID` and `IDMINT.ULID` share: their options, `[COUNT n] [FORMAT f]` in any
//! order, and their reply: one ID as a bulk string, or with `COUNT` an array of them, as
//! `IDMINT.SNOWFLAKE` answers. `f` is `UUID`, `ULID`, `HEX` or `BYTES` (the 16 bytes raw, in a
//! bulk string of 16); the connection's `IDMINT.FORMAT` is for 64-bit IDs and does not apply.
//!
//! Each ID is written by `Id128Form::encode` into a buffer on the stack and from there into
//! the reply: nothing is allocated per ID.

use bytes::{Bytes, BytesMut};
use idmint_core::id128::{Id128Batch, MAX_FORM_LEN};
use idmint_core::{Id128Form, Id128Kind};
use idmint_resp::encode;

use super::args::{self, Refusal};
use crate::resp::reply::{self, SYNTAX_ERROR};
use crate::resp::session::Session;

/// The error for an unknown `FORMAT` of a 128-bit ID.
pub(super) const BAD_ID128_FORMAT: &str = "ERR FORMAT must be UUID, ULID, HEX or BYTES";

/// `IDMINT.UUID` or `IDMINT.ULID` with its options read.
#[derive(Debug)]
pub(super) struct Id128Request {
    kind: Id128Kind,
    /// `COUNT n`: an array reply, even of one.
    count: Option<u64>,
    form: Id128Form,
}

impl Id128Request {
    /// Reads `[COUNT n] [FORMAT f]` (`COUNT` in `1..=max_count`) for IDs of `kind`, written in
    /// `default_form` unless `FORMAT` names another; refuses anything else, so a command with
    /// a bad option takes no ID.
    pub(super) fn parse(
        params: &[Bytes],
        kind: Id128Kind,
        default_form: Id128Form,
        max_count: u64,
    ) -> Result<Self, Refusal<'_>> {
        let mut request = Self {
            kind,
            count: None,
            form: default_form,
        };
        let mut words = params.iter();
        while let Some(option) = words.next() {
            let Some(value) = words.next() else {
                return Err(Refusal::Fixed(SYNTAX_ERROR));
            };
            if option.eq_ignore_ascii_case(b"COUNT") {
                request.count = Some(args::count(value, "COUNT", max_count)?);
            } else if option.eq_ignore_ascii_case(b"FORMAT") {
                request.form = std::str::from_utf8(value)
                    .ok()
                    .and_then(|name| Id128Form::parse(name).ok())
                    .ok_or(Refusal::Fixed(BAD_ID128_FORMAT))?;
            } else {
                return Err(Refusal::Fixed(SYNTAX_ERROR));
            }
        }
        Ok(request)
    }

    /// Without waiting: when the generator can answer at once (always, but for 2^23 IDs or
    /// more in every millisecond of `max_lead`). `false`: run [`apply`](Self::apply).
    #[inline]
    pub(super) fn apply_now(&self, session: &mut Session, out: &mut BytesMut) -> bool {
        let count = self.count.unwrap_or(1);
        let written = session.shared.ids.try_id128s(self.kind, count, |batch| {
            self.write(out, batch);
        });
        if written.is_some() {
            session.count_id128s(self.kind, count);
        }
        written.is_some()
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let count = self.count.unwrap_or(1);
        let ids = &session.shared.ids;
        match ids
            .id128s(self.kind, count, |batch| self.write(out, batch))
            .await
        {
            Ok(()) => session.count_id128s(self.kind, count),
            Err(error) => reply::service_error(out, &error),
        }
    }

    /// The reply: the one ID as a bulk string, or with `COUNT` the array of them.
    fn write(&self, out: &mut BytesMut, batch: Id128Batch<'_>) {
        let mut scratch = [0u8; MAX_FORM_LEN];
        if self.count.is_some() {
            encode::array_header(out, batch.len());
            for id in batch {
                encode::bulk(out, self.form.encode(id, &mut scratch));
            }
        } else {
            match batch.last() {
                Some(id) => encode::bulk(out, self.form.encode(id, &mut scratch)),
                None => encode::error(out, "ERR no ID was issued"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Bytes> {
        text.split_whitespace()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    fn refusal(text: &str) -> Option<String> {
        let params = words(text);
        Id128Request::parse(&params, Id128Kind::Uuid7, Id128Form::Uuid, 10)
            .err()
            .map(|refusal| {
                let mut out = BytesMut::new();
                refusal.write(&mut out);
                String::from_utf8_lossy(&out).into_owned()
            })
    }

    #[test]
    fn options_are_read_in_any_order_and_anything_else_refused() {
        let params = words("format BYTES COUNT 3");
        let request = Id128Request::parse(&params, Id128Kind::Ulid, Id128Form::Ulid, 10);
        let request = request.ok();
        assert_eq!(request.as_ref().map(|r| r.count), Some(Some(3)));
        assert_eq!(request.as_ref().map(|r| r.form), Some(Id128Form::Bytes));
        let params = words("");
        let plain = Id128Request::parse(&params, Id128Kind::Ulid, Id128Form::Ulid, 10).ok();
        assert_eq!(
            plain.map(|r| (r.count, r.form)),
            Some((None, Id128Form::Ulid))
        );
        assert_eq!(
            refusal("COUNT 0").as_deref(),
            Some("-ERR COUNT must be between 1 and 10, got 0\r\n")
        );
        assert_eq!(
            refusal("COUNT 11").as_deref(),
            Some("-ERR COUNT must be between 1 and 10, got 11\r\n")
        );
        assert_eq!(
            refusal("FORMAT nope").as_deref(),
            Some("-ERR FORMAT must be UUID, ULID, HEX or BYTES\r\n")
        );
        assert_eq!(
            refusal("FORMAT INTEGER").as_deref(),
            Some("-ERR FORMAT must be UUID, ULID, HEX or BYTES\r\n")
        );
        assert_eq!(refusal("SHARD 1").as_deref(), Some("-ERR syntax error\r\n"));
        assert_eq!(refusal("COUNT").as_deref(), Some("-ERR syntax error\r\n"));
    }
}
