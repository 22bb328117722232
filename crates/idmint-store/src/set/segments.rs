//! [`SegmentStore`] over a store set: ranges from the first store that answers, above the
//! node's last range of the tag; tag changes on every store that answers.

use std::collections::HashMap;
use std::ops::{ControlFlow, Range};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::store::{RangeRequest, SegmentStore, TagInfo, TagSettings, TagUpdate};
use idmint_core::Tag;
use tokio::task::JoinSet;

use super::members::{none_answers, Member, Members};
use crate::{Error, Result, Store};

/// How long a range request waits for a store before it asks the next one too: a store that
/// hangs (frozen, or cut off without a reset) would otherwise hold the request for the whole
/// call timeout while the node's buffers run dry.
pub(super) const HEDGE_AFTER: Duration = Duration::from_millis(500);

/// The segment side of a set.
#[derive(Debug)]
pub(super) struct SetSegments {
    members: Arc<Members>,
    /// Per tag, the end of the last range this node got: the floor of its next one, from
    /// whichever store, so the node's IDs of a tag strictly increase. At most one entry per
    /// tag the node serves (bounded by `--max-tags`).
    floors: Mutex<HashMap<Tag, u64>>,
}

impl SetSegments {
    pub(super) fn new(members: Arc<Members>) -> Self {
        Self {
            members,
            floors: Mutex::new(HashMap::new()),
        }
    }

    fn floor(&self, tag: &Tag) -> u64 {
        let floors = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
        floors.get(tag).copied().unwrap_or(0)
    }

    fn raise_floor(&self, tag: &Tag, end: u64) {
        let mut floors = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = floors.entry(tag.clone()).or_insert(0);
        *floor = (*floor).max(end);
    }

    /// A range of `tag` from `store` (`member`), creating the tag there first when another
    /// store has it (it was created while this one was down): same step, starting at the
    /// member's first ID.
    async fn allocate_on(
        &self,
        member: &Member,
        store: &Store,
        tag: &Tag,
        request: RangeRequest,
    ) -> Result<Range<u64>> {
        match store.segments.allocate_in(tag, request).await {
            Err(Error::UnknownTag { .. }) => {
                let Some(info) = self.tag_info_elsewhere(tag, member.index).await? else {
                    return Err(Error::UnknownTag {
                        tag: tag.to_string(),
                    });
                };
                let settings = TagSettings {
                    step: info.step,
                    description: info.description,
                    first_id: 1,
                    // A set never holds a dated tag (`create_tag` refuses one).
                    dating: None,
                };
                match self.create_on(member, store, tag, &settings).await {
                    Ok(_) | Err(Error::TagExists { .. }) => {}
                    Err(error) => return Err(error),
                }
                store.segments.allocate_in(tag, request).await
            }
            other => other,
        }
    }

    /// A range of `tag` from the first store that answers, above `at_least`: each store in
    /// turn, the next one asked as soon as the previous has not answered within
    /// [`HEDGE_AFTER`] (the slow one is marked down), the first range wins. A range taken by a
    /// store whose answer lost the race is left unused: a gap, never a duplicate.
    async fn allocate_hedged(&self, tag: &Tag, step: u64, at_least: u64) -> Result<Range<u64>> {
        let order = self.members.to_try();
        let mut running: JoinSet<(usize, Result<Range<u64>>)> = JoinSet::new();
        let mut next = 0;
        let mut outage = None;
        loop {
            if running.is_empty() {
                // Start the next store that is open, if any is left.
                let Some((member, store)) = self.next_open(&order, &mut next) else {
                    break;
                };
                running.spawn(Self::allocate_task(member, store, tag, step, at_least));
            }
            let joined = if next < order.len() {
                // `join_next` is cancel safe: a timeout loses no finished task.
                match tokio::time::timeout(HEDGE_AFTER, running.join_next()).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        if let Some((member, store)) = self.next_open(&order, &mut next) {
                            tracing::warn!(also_asked = %member.display, "a store of the set is slow to give a range: asking the next one too");
                            running.spawn(Self::allocate_task(member, store, tag, step, at_least));
                        }
                        continue;
                    }
                }
            } else {
                running.join_next().await
            };
            let Some(Ok((index, result))) = joined else {
                continue;
            };
            let member = &self.members.list[index];
            match self.members.answered(member, result) {
                Ok(range) => return Ok(range),
                Err(Error::UnknownTag { .. }) => {
                    let Some(store) = self.members.store_now(member) else {
                        continue;
                    };
                    let request = RangeRequest {
                        step,
                        at_least,
                        partition: member.partition,
                    };
                    match self
                        .members
                        .answered(member, self.allocate_on(member, &store, tag, request).await)
                    {
                        Err(error @ Error::StoreUnavailable { .. }) => outage = Some(error),
                        answer => return answer,
                    }
                }
                Err(error @ Error::StoreUnavailable { .. }) => outage = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(outage.unwrap_or_else(|| none_answers("allocating a segment")))
    }

    /// The next store of `order` from `*next` on that is open, moving `*next` past it.
    fn next_open<'a>(&self, order: &[&'a Member], next: &mut usize) -> Option<(&'a Member, Store)> {
        while *next < order.len() {
            let member = order[*next];
            *next += 1;
            if let Some(store) = self.members.store_now(member) {
                return Some((member, store));
            }
        }
        None
    }

    /// One store's range request, as a task of its own (so a hedged one can run beside it).
    fn allocate_task(
        member: &Member,
        store: Store,
        tag: &Tag,
        step: u64,
        at_least: u64,
    ) -> impl std::future::Future<Output = (usize, Result<Range<u64>>)> + Send + 'static {
        let (index, tag) = (member.index, tag.clone());
        let request = RangeRequest {
            step,
            at_least,
            partition: member.partition,
        };
        async move { (index, store.segments.allocate_in(&tag, request).await) }
    }

    /// Creates `tag` on one store, at the store's first ID at or above `settings.first_id`.
    async fn create_on(
        &self,
        member: &Member,
        store: &Store,
        tag: &Tag,
        settings: &TagSettings,
    ) -> Result<TagInfo> {
        let first_id = member
            .partition
            .first_id(settings.first_id.max(1))
            .ok_or_else(|| Error::TagExhausted {
                tag: tag.to_string(),
            })?;
        let settings = TagSettings {
            first_id,
            ..settings.clone()
        };
        store.segments.create_tag(tag, &settings).await
    }

    /// The tag's row from a store other than `except` that answers.
    async fn tag_info_elsewhere(&self, tag: &Tag, except: usize) -> Result<Option<TagInfo>> {
        let asking = |member: &Member, store: Store| {
            let skip = member.index == except;
            async move {
                if skip {
                    return Ok(None);
                }
                store.segments.tag_info(tag).await
            }
        };
        let found = self
            .members
            .ask_each(asking, |_, result| match result {
                Ok(Some(info)) => ControlFlow::Break(info),
                _ => ControlFlow::Continue(()),
            })
            .await;
        Ok(found)
    }

    /// Runs `call` on every store that answers; returns the first answer in call order (home
    /// first), or the first error when none answered with a value.
    async fn on_every_store<'a, T, F, Fut>(&'a self, what: &str, call: F) -> Result<T>
    where
        F: FnMut(&'a Member, Store) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut first_answer = None;
        let mut first_error = None;
        self.members
            .ask_each(call, |_, result| {
                match result {
                    Ok(value) => {
                        first_answer.get_or_insert(value);
                    }
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
                ControlFlow::<()>::Continue(())
            })
            .await;
        match (first_answer, first_error) {
            (Some(value), _) => Ok(value),
            (None, Some(error)) => Err(error),
            (None, None) => Err(none_answers(what)),
        }
    }
}

#[async_trait]
impl SegmentStore for SetSegments {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        self.allocate_in(
            tag,
            RangeRequest {
                step,
                at_least: 0,
                partition: self.members.list[0].partition,
            },
        )
        .await
    }

    async fn allocate_in(&self, tag: &Tag, request: RangeRequest) -> Result<Range<u64>> {
        let at_least = request.at_least.max(self.floor(tag));
        let range = self.allocate_hedged(tag, request.step, at_least).await?;
        self.raise_floor(tag, range.end);
        Ok(range)
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        let member = self.members.owner_of_id(unused.start);
        let Some(store) = self.members.store_now(member) else {
            return Ok(false);
        };
        self.members
            .answered(member, store.segments.give_back(tag, unused).await)
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        if settings.dating.is_some() {
            // Each store of a set hands out its own part of every range, by its own clock: a
            // period's counter could not start again at 1 on every store without overlap.
            return Err(Error::InvalidArgument {
                name: "period",
                reason: "a dated tag needs a single store: a store set cannot date its IDs".into(),
            });
        }
        // Created on any store, the tag exists in the set: stores that were down get it when
        // they first serve it (`allocate_on`).
        self.on_every_store("creating a tag", |member, store| async move {
            self.create_on(member, &store, tag, settings).await
        })
        .await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        self.on_every_store("updating a tag", |_, store| async move {
            store.segments.update_tag(tag, update).await
        })
        .await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let mut outage = None;
        let mut answered = false;
        let asking = |_: &Member, store: Store| async move { store.segments.tag_info(tag).await };
        let found = self
            .members
            .ask_each(asking, |_, result| match result {
                Ok(Some(info)) => ControlFlow::Break(Ok(Some(info))),
                Ok(None) => {
                    answered = true;
                    ControlFlow::Continue(())
                }
                Err(error @ Error::StoreUnavailable { .. }) => {
                    outage = Some(error);
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(Err(error)),
            })
            .await;
        // Every store that answered said no; when none answered, the outage.
        match (found, answered, outage) {
            (Some(answer), _, _) => answer,
            (None, true, _) => Ok(None),
            (None, false, Some(error)) => Err(error),
            (None, false, None) => Err(none_answers("reading a tag")),
        }
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        let mut merged: HashMap<Tag, TagInfo> = HashMap::new();
        let asking = |_: &Member, store: Store| async move { store.segments.list_tags().await };
        self.members
            .every_answer("listing tags", asking, |_, tags: Vec<TagInfo>| {
                for info in tags {
                    // The set's max_id of a tag: the highest of its stores'.
                    merged
                        .entry(info.tag.clone())
                        .and_modify(|seen| seen.max_id = seen.max_id.max(info.max_id))
                        .or_insert(info);
                }
            })
            .await?;
        let mut tags: Vec<TagInfo> = merged.into_values().collect();
        tags.sort_by(|a, b| a.tag.as_str().cmp(b.tag.as_str()));
        Ok(tags)
    }

    async fn compare_and_set_max_id(&self, _: &Tag, _: u64, _: u64) -> Result<bool> {
        Err(Error::InvalidArgument {
            name: "max_id",
            reason: "a store set has one max_id per store; move it on one store".into(),
        })
    }
}
