//! `IDMINT.SNOWFLAKE [COUNT n] [SHARD k] [FORMAT f [PREFIX p] [WIDTH n]]`: one snowflake, or
//! an array of `n`.

use bytes::{Bytes, BytesMut};
use idmint_resp::encode;

use super::args::Refusal;
use super::options::{Extra, IdOptions};
use crate::resp::reply;
use crate::resp::session::Session;

/// `IDMINT.SNOWFLAKE` and its options.
#[derive(Debug)]
pub(super) struct Snowflake<'a> {
    options: IdOptions<'a>,
}

impl<'a> Snowflake<'a> {
    pub(super) fn parse(params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        let options = IdOptions::parse(params, Extra::Shard, max_count)?;
        Ok(Self { options })
    }

    /// Without waiting: the plain command, when the generator can answer at once (the hot
    /// path). `false`: run [`apply`](Self::apply).
    #[inline]
    pub(super) fn apply_now(&self, session: &mut Session, out: &mut BytesMut) -> bool {
        if !self.options.is_empty() {
            return false;
        }
        let ids = &session.shared.ids;
        let Some(id) = ids.try_snowflake() else {
            return false;
        };
        session.snowflakes_pending += 1;
        reply::id(out, ids.publish_snowflake(id), &session.format);
        true
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let format = match self.options.format(&session.format) {
            Ok(format) => format,
            Err(refusal) => return refusal.write(out),
        };
        let count = self.options.count;
        let shard = self.options.shard.unwrap_or(0);
        let ids = &session.shared.ids;
        match ids.snowflakes(count.unwrap_or(1), shard).await {
            Ok(mut batch) => {
                let issued = batch.len() as u64;
                if count.is_some() {
                    let largest = batch.last_id();
                    reply::ids(
                        out,
                        batch.map(|id| ids.publish_snowflake(id)),
                        largest,
                        &format,
                    );
                } else {
                    match batch.next() {
                        Some(id) => reply::id(out, ids.publish_snowflake(id), &format),
                        None => encode::error(out, "ERR no snowflake was issued"),
                    }
                }
                session.snowflakes_pending += issued;
            }
            Err(error) => reply::service_error(out, &error),
        }
    }
}
