//! `IDMINT.FORMAT [INTEGER|STRING|DECIMAL|BASE62|BASE36|BASE32 [PREFIX p] [WIDTH n]]`: how
//! this connection's ID replies are written.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::{self, Refusal};
use crate::resp::reply::{IdFormat, BAD_FORMAT, SYNTAX_ERROR};
use crate::resp::session::Session;

/// Sets how this connection's ID replies are written (`+OK`), or, without an argument, answers
/// the current choice. Lasts until the connection closes or sends `RESET`; a client that
/// reconnects must send it again.
#[derive(Debug)]
pub(super) struct Format {
    /// The form chosen, `PREFIX` and `WIDTH` applied; `None`: show the current one.
    chosen: Option<IdFormat>,
}

impl Format {
    pub(super) fn parse(params: &[Bytes]) -> Result<Self, Refusal<'_>> {
        let Some((word, words)) = params.split_first() else {
            return Ok(Self { chosen: None });
        };
        let format = IdFormat::parse(word).ok_or(Refusal::Fixed(BAD_FORMAT))?;
        let (mut prefix, mut width) = (None, None);
        let mut words = words.iter();
        while let Some(option) = words.next() {
            match (option, words.next()) {
                (o, Some(v)) if o.eq_ignore_ascii_case(b"PREFIX") => prefix = Some(v.as_ref()),
                (o, Some(v)) if o.eq_ignore_ascii_case(b"WIDTH") => {
                    width = Some(args::unsigned(v)?);
                }
                _ => return Err(Refusal::Fixed(SYNTAX_ERROR)),
            }
        }
        let chosen = format.refined(prefix, width).map_err(Refusal::Text)?;
        Ok(Self {
            chosen: Some(chosen),
        })
    }

    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        match self.chosen {
            Some(format) => {
                session.format = format;
                encode::ok(out);
            }
            None => encode::bulk(out, session.format.name().as_bytes()),
        }
    }
}
