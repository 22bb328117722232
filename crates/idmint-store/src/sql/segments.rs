//! The segment side of every SQL backend: a range is one conditional `UPDATE` of the tag's
//! `max_id` (the tag's last range, and give-backs, a compare-and-set), tags created and
//! changed in one session that reads the row back.

use std::ops::Range;

use async_trait::async_trait;
use idmint_core::store::{SegmentStore, TagInfo, TagSettings, TagUpdate, MAX_SEGMENT_ID};
use idmint_core::Tag;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{q, rows, Access, Dialect, Session, SqlStore};
use crate::bounded::{bounded, to_i64, to_u64};
use crate::{Error, Result};

for_every_dialect! {
    impl SqlStore {
        /// Takes a range: a full step with one `UPDATE`, else (the tag is near its end, or
        /// unknown) the rest.
        async fn allocate_now(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
            let err = |e| D::error("allocating a segment", e);
            // `max_id` lives in a signed 64-bit column, so it stops at MAX_SEGMENT_ID: the last
            // range ends there (the ID MAX_SEGMENT_ID itself is never handed out), and the
            // statement refuses a range past it cleanly instead of overflowing (SQLite would turn
            // the overflow into a float).
            let limit = to_i64("limit", MAX_SEGMENT_ID.saturating_sub(step))?;
            let mut session = self.dialect.session(&self.pool, Access::Write).await?;
            let allocate = sqlx::query(q(&self.sql.allocate))
                .bind(to_i64("step", step)?)
                .bind(tag.as_str().to_owned())
                .bind(limit);
            let end = if D::RETURNING {
                let row = allocate.fetch_optional(session.conn()).await.map_err(err)?;
                row.map(|row| row.try_get::<i64, _>(0))
                    .transpose()
                    .map_err(err)?
            } else {
                D::allocated(&allocate.execute(session.conn()).await.map_err(err)?)
            };
            let range = match end {
                Some(end) => rows::full_step(tag, to_u64("max_id", end)?, step)?,
                None => self.allocate_rest(&mut session, tag, step).await?,
            };
            session.finish().await.map_err(err)?;
            Ok(range)
        }

        /// When a full step did not fit (or the tag is unknown): the tag's last range,
        /// `[max_id, MAX_SEGMENT_ID)`, taken with a compare-and-set of `max_id` from the value
        /// read, so it is ours only if nobody moved `max_id` in between (racing nodes never get
        /// overlapping ranges); read again when somebody did. Each failed round means another
        /// allocation succeeded, and the call's timeout bounds the whole. The compare-and-set
        /// always changes the row (the range is never empty), so its affected-rows count holds.
        async fn allocate_rest(
            &self,
            session: &mut Session<D::Db>,
            tag: &Tag,
            step: u64,
        ) -> Result<Range<u64>> {
            let err = |e| D::error("allocating the end of a tag", e);
            loop {
                let max_id: Option<i64> = sqlx::query_scalar(q(&self.sql.max_id))
                    .bind(tag.as_str().to_owned())
                    .fetch_optional(session.conn())
                    .await
                    .map_err(err)?;
                let max_id = max_id.ok_or_else(|| Error::UnknownTag { tag: tag.to_string() })?;
                let range = rows::range_from(tag, to_u64("max_id", max_id)?, step)?;
                let moved = sqlx::query(q(&self.sql.move_max_id))
                    .bind(to_i64("end", range.end)?)
                    .bind(tag.as_str().to_owned())
                    .bind(max_id)
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
                if D::rows_affected(&moved) == 1 {
                    return Ok(range);
                }
            }
        }

        /// Sets `max_id` to `new` if it is `expected` (a tail given back, or a range taken by
        /// [`SegmentStore::allocate_in`]): one conditional update. `what` names the call in errors.
        async fn compare_and_set_now(
            &self,
            tag: &Tag,
            expected: u64,
            new: u64,
            what: &'static str,
        ) -> Result<bool> {
            let err = |e| D::error(what, e);
            let mut session = self.dialect.session(&self.pool, Access::Write).await?;
            let read_max_id = async |session: &mut Session<D::Db>| {
                sqlx::query_scalar::<_, i64>(q(&self.sql.max_id))
                    .bind(tag.as_str().to_owned())
                    .fetch_optional(session.conn())
                    .await
                    .map_err(err)?
                    .ok_or_else(|| Error::UnknownTag { tag: tag.to_string() })
            };
            let set = if expected == new {
                // Nothing to write (and MySQL would count no changed row): only compare.
                read_max_id(&mut session).await? == to_i64("expected", expected)?
            } else {
                let moved = sqlx::query(q(&self.sql.move_max_id))
                    .bind(to_i64("new", new)?)
                    .bind(tag.as_str().to_owned())
                    .bind(to_i64("expected", expected)?)
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
                // The write changes max_id whenever it matches, so changed rows = matched rows.
                let set = D::rows_affected(&moved) == 1;
                if !set {
                    read_max_id(&mut session).await?; // an unknown tag is an error, not a "no"
                }
                set
            };
            session.finish().await.map_err(err)?;
            Ok(set)
        }

        /// Inserts a tag's row, refusing a tag that exists.
        async fn create_tag_now(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
            let err = |e| D::error("creating a tag", e);
            let mut session = self
                .dialect
                .session(&self.pool, Access::WriteThenRead)
                .await?;
            let insert = sqlx::query(q(&self.sql.create_tag))
                .bind(tag.as_str().to_owned())
                .bind(to_i64("first_id", settings.first_id.max(1))?)
                .bind(to_i64("step", settings.step)?)
                .bind(settings.description.clone());
            match insert.execute(session.conn()).await {
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                    return Err(Error::TagExists { tag: tag.to_string() })
                }
                other => other.map_err(err)?,
            };
            if let Some(dating) = &settings.dating {
                sqlx::query(q(&self.sql.create_tag_dating))
                    .bind(tag.as_str().to_owned())
                    .bind(dating.spec())
                    .execute(session.conn())
                    .await
                    .map_err(err)?;
            }
            self.read_back(session, tag, "creating a tag").await
        }

        /// Changes a tag's step and/or description.
        async fn update_tag_now(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
            let err = |e| D::error("updating a tag", e);
            let step = update.step.map(|s| to_i64("step", s)).transpose()?;
            let mut session = self
                .dialect
                .session(&self.pool, Access::WriteThenRead)
                .await?;
            let write = sqlx::query(q(&self.sql.update_tag))
                .bind(step)
                .bind(update.description.clone())
                .bind(tag.as_str().to_owned());
            write.execute(session.conn()).await.map_err(err)?;
            self.read_back(session, tag, "updating a tag").await
        }

        /// Reads `tag`'s row back after a write in `session`, with the join so the row has its
        /// dating, then ends the session: what creating or changing a tag returns.
        async fn read_back(
            &self,
            mut session: Session<D::Db>,
            tag: &Tag,
            what: &str,
        ) -> Result<TagInfo> {
            let err = |e| D::error(what, e);
            let row = sqlx::query(q(&self.sql.tag_info))
                .bind(tag.as_str().to_owned())
                .fetch_optional(session.conn())
                .await
                .map_err(err)?;
            session.finish().await.map_err(err)?;
            let row = row.ok_or_else(|| Error::UnknownTag { tag: tag.to_string() })?;
            tag_info(&row, err)
        }
    }
}

/// A tag row, joined with its dating (the `tag_info` statement's columns), as [`TagInfo`].
fn tag_info<R: Row>(row: &R, err: impl Fn(sqlx::Error) -> Error) -> Result<TagInfo>
where
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let mut info = rows::tag_info(
        row.try_get(0).map_err(&err)?,
        row.try_get(1).map_err(&err)?,
        row.try_get(2).map_err(&err)?,
        row.try_get(3).map_err(&err)?,
        row.try_get(4).map_err(&err)?,
    )?;
    let dating: Option<String> = row.try_get(5).map_err(&err)?;
    info.dating = dating.as_deref().map(rows::dating).transpose()?;
    Ok(info)
}

for_every_dialect! {
    #[async_trait]
    impl SegmentStore for SqlStore {
        async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
            rows::check_step(step)?;
            let call = self.allocate_now(tag, step);
            bounded(self.timeout, "allocating a segment", call).await
        }

        async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
            if unused.start >= unused.end {
                return Ok(false);
            }
            let what = "giving back a segment tail";
            let call = self.compare_and_set_now(tag, unused.end, unused.start, what);
            bounded(self.timeout, what, call).await
        }

        async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
            let what = "moving a tag's max_id";
            let call = self.compare_and_set_now(tag, expected, new, what);
            bounded(self.timeout, what, call).await
        }

        async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
            rows::check_step(settings.step)?;
            let call = self.create_tag_now(tag, settings);
            bounded(self.timeout, "creating a tag", call).await
        }

        async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
            rows::check_step(update.step.unwrap_or(1))?;
            let call = self.update_tag_now(tag, update);
            bounded(self.timeout, "updating a tag", call).await
        }

        async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
            let what = "reading a tag";
            let read = sqlx::query(q(&self.sql.tag_info))
                .bind(tag.as_str().to_owned())
                .fetch_optional(&self.pool);
            let row = self.read(what, read).await?;
            row.as_ref()
                .map(|row| tag_info(row, |e| D::error(what, e)))
                .transpose()
        }

        async fn list_tags(&self) -> Result<Vec<TagInfo>> {
            let what = "listing tags";
            let read = sqlx::query(q(&self.sql.list_tags)).fetch_all(&self.pool);
            let rows = self.read(what, read).await?;
            rows.iter()
                .map(|row| tag_info(row, |e| D::error(what, e)))
                .collect()
        }
    }
}
