//! `IDMINT.NEXT tag [COUNT n] [FORMAT f [PREFIX p] [WIDTH n]]`: one segment ID; with `COUNT`,
//! an array of `n` (all or nothing at the tag's end, like `INCRBY`).

use bytes::{Bytes, BytesMut};

use super::args::Refusal;
use super::incr::{dated_format, next_one};
use super::options::{Extra, IdOptions};
use crate::resp::reply;
use crate::resp::session::Session;

/// `IDMINT.NEXT` and its options.
#[derive(Debug)]
pub(super) struct Next<'a> {
    pub(super) tag: &'a [u8],
    options: IdOptions<'a>,
}

impl<'a> Next<'a> {
    pub(super) fn parse(params: &'a [Bytes], max_count: u64) -> Result<Self, Refusal<'a>> {
        let Some((tag, words)) = params.split_first() else {
            return Err(Refusal::Arity("idmint.next"));
        };
        let options = IdOptions::parse(words, Extra::Nothing, max_count)?;
        Ok(Self { tag, options })
    }

    pub(super) async fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let format = match self.options.format(&session.format) {
            Ok(format) => format.into_owned(),
            Err(refusal) => return refusal.write(out),
        };
        let dated_text = !self.options.format_given();
        let Some(count) = self.options.count else {
            return next_one(session, self.tag, dated_text, Some(&format), out).await;
        };
        let result = async {
            let entry = session
                .tags
                .resolve(&session.shared.ids, self.tag, session.grant.as_deref())
                .await?;
            let runs = entry.buffer.next_many(count).await?;
            let total: u64 = runs.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            entry.issued(total);
            let shown = dated_text.then(|| dated_format(&entry.buffer)).flatten();
            Ok::<_, idmint_core::Error>((runs, entry.publisher.clone(), shown))
        }
        .await;
        match result {
            Ok((runs, publisher, shown)) => {
                let (ids, largest) = reply::RunIds::new(runs);
                let public = ids.map(|id| publisher.publish(id));
                reply::ids(out, public, largest, shown.as_ref().unwrap_or(&format));
            }
            Err(error) => reply::service_error(out, &error),
        }
    }
}
