//! The stores of a set: opening and checking them, the order calls try them in, and which
//! one owns a worker ID or a segment ID.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use idmint_core::store::{Partition, SetMembership};
use idmint_core::IdSpaceRecord;

use super::partition;
use crate::{Error, Location, Result, Store, StoreOptions};

/// How often a store of a set that is down (or not open yet) is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// One store of the set.
pub(super) struct Member {
    /// Its place in the `--store` list.
    pub(super) index: usize,
    url: String,
    /// The URL with its password hidden.
    pub(super) display: String,
    pub(super) partition: Partition,
    /// Set once the store is open and checked.
    store: OnceLock<Store>,
    /// Not open, or its last call found it down: calls go to the other stores until a watcher
    /// sees it answer again, so no call waits for a store known to be down.
    down: AtomicBool,
    /// A watcher task runs for it.
    watching: AtomicBool,
}

impl Member {
    fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }
}

/// Every store of a set, as the node's list gives them.
pub(super) struct Members {
    pub(super) list: Vec<Member>,
    set_id: String,
    options: StoreOptions,
    home: usize,
}

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Members")
            .field("set_id", &self.set_id)
            .field("stores", &self.display())
            .field("home", &self.home)
            .finish()
    }
}

impl Members {
    /// Opens every store that answers, finds or creates the set, and checks each open store
    /// against it (see [`open_set`](super::open_set)).
    pub(super) async fn open(
        urls: &[String],
        options: &StoreOptions,
        block: u64,
        home: usize,
    ) -> Result<Arc<Self>> {
        let count = urls.len();
        let mut list = Vec::with_capacity(count);
        let mut opened: Vec<Option<Store>> = Vec::with_capacity(count);
        for (index, url) in urls.iter().enumerate() {
            let display = Location::parse(url)?.display;
            list.push(Member {
                index,
                url: url.clone(),
                display,
                partition: partition(index, count, block)?,
                store: OnceLock::new(),
                down: AtomicBool::new(false),
                watching: AtomicBool::new(false),
            });
            opened.push(open_or_skip(url, options).await?);
        }
        let mut records: Vec<Option<SetMembership>> = Vec::with_capacity(count);
        for (member, store) in list.iter().zip(&mut opened) {
            let record = match store {
                Some(open) => match open.leases.store_set().await {
                    Ok(record) => record,
                    Err(error @ Error::StoreUnavailable { .. }) => {
                        tracing::warn!(store = %member.display, error = %error.with_causes(), "store of the set does not answer; it is tried again when needed");
                        *store = None;
                        None
                    }
                    Err(error) => return Err(error),
                },
                None => None,
            };
            records.push(record);
        }
        let set_id = find_set_id(&records, opened[0].is_some())?;
        let mut usable = 0;
        // Store 0 first: it decides the set ID among nodes creating the set at once.
        for (member, store) in list.iter().zip(opened) {
            if let Some(store) = store {
                check_member(&store, &set_id, member).await?;
                let _ = member.store.set(store);
                usable += 1;
            }
        }
        let open: Vec<&Store> = list.iter().filter_map(|m| m.store.get()).collect();
        sync_id_spaces(&open).await?;
        if usable == 0 {
            return Err(Error::store_unavailable(format!(
                "no store of the set answers: {}",
                list.iter()
                    .map(|m| m.display.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        tracing::info!(set = %set_id, stores = count, usable, home, "store set opened");
        let members = Arc::new(Self {
            list,
            set_id,
            options: options.clone(),
            home,
        });
        for member in &members.list {
            if member.store.get().is_none() {
                members.mark_down(member);
            }
        }
        Ok(members)
    }

    /// The index of the node's home store.
    pub(super) fn home(&self) -> usize {
        self.home
    }

    /// The stores' URLs, passwords hidden, for logs.
    pub(super) fn display(&self) -> String {
        let urls: Vec<&str> = self.list.iter().map(|m| m.display.as_str()).collect();
        urls.join(" + ")
    }

    /// The stores in the order a call tries them: home first, then the ones after it in the
    /// list (wrapping); the stores known to be down after all the others.
    pub(super) fn in_order(&self) -> Vec<&Member> {
        let count = self.list.len();
        let mut order: Vec<&Member> = (0..count)
            .map(|i| &self.list[(self.home + i) % count])
            .collect();
        // A stable sort keeps the home-first order within each group.
        order.sort_by_key(|m| m.is_down());
        order
    }

    /// The stores a call should try: those not known to be down, or, when all are, every one
    /// (a last resort that costs a call timeout each).
    pub(super) fn to_try(&self) -> Vec<&Member> {
        let order = self.in_order();
        if order.iter().any(|m| !m.is_down()) {
            order.into_iter().filter(|m| !m.is_down()).collect()
        } else {
            order
        }
    }

    /// The store that leases `worker_id`.
    pub(super) fn owner_of_worker(&self, worker_id: u64) -> &Member {
        let count = self.list.len() as u64;
        &self.list[Partition::of_worker(worker_id, count) as usize]
    }

    /// The store that hands out segment ID `id`.
    pub(super) fn owner_of_id(&self, id: u64) -> &Member {
        let first = &self.list[0].partition;
        &self.list[Partition::of_id(id, first.count, first.block) as usize]
    }

    /// The member's store if it is open; otherwise `None` (a watcher opens it when it can).
    pub(super) fn store_now(self: &Arc<Self>, member: &Member) -> Option<Store> {
        let store = member.store.get().cloned();
        if store.is_none() {
            self.mark_down(member);
        }
        store
    }

    /// Marks `member` down and makes sure a watcher runs for it: every [`RETRY_AFTER`], the
    /// watcher opens the store (checking it against the set and copying the ID space) or, when
    /// open, asks it for its clock; once it answers, calls may go to it again.
    pub(super) fn mark_down(self: &Arc<Self>, member: &Member) {
        member.down.store(true, Ordering::Release);
        if member.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let members = Arc::clone(self);
        let index = member.index;
        tokio::spawn(async move {
            let member = &members.list[index];
            loop {
                tokio::time::sleep(RETRY_AFTER).await;
                if members.answers(member).await {
                    member.down.store(false, Ordering::Release);
                }
                member.watching.store(false, Ordering::Release);
                // A call may have marked it down again between the two stores above.
                if !member.is_down() || member.watching.swap(true, Ordering::AcqRel) {
                    return;
                }
            }
        });
    }

    /// Whether `member` answers now: opened (and checked) if it was not, else its clock read.
    async fn answers(&self, member: &Member) -> bool {
        if let Some(store) = member.store.get() {
            return store.leases.clock_ms().await.is_ok();
        }
        let opened = async {
            let store = crate::open(&member.url, &self.options).await?;
            check_member(&store, &self.set_id, member).await?;
            // The ID space pinned while it was away, from the stores that are open.
            let mut stores: Vec<&Store> = self.list.iter().filter_map(|m| m.store.get()).collect();
            stores.push(&store);
            sync_id_spaces(&stores).await?;
            Ok::<_, Error>(store)
        };
        match opened.await {
            Ok(store) => {
                tracing::info!(store = %member.display, "store of the set opened");
                let _ = member.store.set(store);
                true
            }
            Err(error) => {
                tracing::debug!(store = %member.display, error = %error.with_causes(), "store of the set still cannot be used");
                false
            }
        }
    }

    /// Asks each store a call should try ([`to_try`](Self::to_try)) in turn: `call` with the
    /// store, then `answer` with how it went (an outage has marked the store down by then).
    /// Stops at the first [`ControlFlow::Break`] and gives its value; `None` once every store
    /// was asked, or when none is open. The one loop over the stores of a set: each caller says
    /// what an answer means (the first one wins, all are merged, an outage moves on).
    pub(super) async fn ask_each<'a, T, B, F, Fut>(
        self: &'a Arc<Self>,
        mut call: F,
        mut answer: impl FnMut(&'a Member, Result<T>) -> ControlFlow<B>,
    ) -> Option<B>
    where
        F: FnMut(&'a Member, Store) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        for member in self.to_try() {
            let Some(store) = self.store_now(member) else {
                continue;
            };
            let result = self.answered(member, call(member, store).await);
            if let ControlFlow::Break(value) = answer(member, result) {
                return Some(value);
            }
        }
        None
    }

    /// Runs `call` on each store in [`in_order`](Self::in_order) until one answers: an
    /// outage ([`Error::StoreUnavailable`]) moves on to the next store, any other result is
    /// the answer. Fails with the last outage when none answers.
    pub(super) async fn first_answer<'a, T, F, Fut>(
        self: &'a Arc<Self>,
        what: &str,
        call: F,
    ) -> Result<T>
    where
        F: FnMut(&'a Member, Store) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut outage = None;
        let answer = self
            .ask_each(call, |_, result| match result {
                Err(error @ Error::StoreUnavailable { .. }) => {
                    outage = Some(error);
                    ControlFlow::Continue(())
                }
                answer => ControlFlow::Break(answer),
            })
            .await;
        answer.unwrap_or_else(|| Err(outage.unwrap_or_else(|| none_answers(what))))
    }

    /// Runs `call` on every store in turn and hands each answer to `take` (a list merged, a
    /// record written): an outage moves on to the next store, any other error is the result at
    /// once. Succeeds when at least one store answered; fails with the last outage, or
    /// [`none_answers`] `what`, when none did.
    pub(super) async fn every_answer<'a, T, F, Fut>(
        self: &'a Arc<Self>,
        what: &str,
        call: F,
        mut take: impl FnMut(&'a Member, T),
    ) -> Result<()>
    where
        F: FnMut(&'a Member, Store) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut answered = false;
        let mut outage = None;
        let failed = self
            .ask_each(call, |member, result| match result {
                Ok(answer) => {
                    answered = true;
                    take(member, answer);
                    ControlFlow::Continue(())
                }
                Err(error @ Error::StoreUnavailable { .. }) => {
                    outage = Some(error);
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            })
            .await;
        match (failed, answered) {
            (Some(error), _) => Err(error),
            (None, true) => Ok(()),
            (None, false) => Err(outage.unwrap_or_else(|| none_answers(what))),
        }
    }

    /// Notes how a call to `member` went (an outage marks it down until its watcher sees it
    /// answer) and passes the result on.
    pub(super) fn answered<T>(self: &Arc<Self>, member: &Member, result: Result<T>) -> Result<T> {
        if let Err(Error::StoreUnavailable { .. }) = &result {
            tracing::warn!(store = %member.display, "store of the set does not answer: calls go to the others until it does");
            self.mark_down(member);
        }
        result
    }
}

/// The failure of a call that found no store of the set answering (`what` it was doing).
pub(super) fn none_answers(what: &str) -> Error {
    Error::store_unavailable(format!("{what}: no store of the set answers"))
}

/// Brings every store of `stores` to the same ID-space history: the longest one among them,
/// of which every other must be the start (else the stores were pinned apart, and the set is
/// refused). A store that missed records (it was down when the space was pinned) gets them, in
/// order. A change of space needs every store of the set (`SetLeases::record_id_space`), so a
/// store only misses records it can take: it has no lease of a later space.
async fn sync_id_spaces(stores: &[&Store]) -> Result<()> {
    let mut histories = Vec::with_capacity(stores.len());
    for store in stores {
        histories.push(store.leases.id_spaces().await?);
    }
    let Some(longest) = histories.iter().max_by_key(|h| h.len()).cloned() else {
        return Ok(());
    };
    let same = |a: &IdSpaceRecord, b: &IdSpaceRecord| {
        (a.version, &a.space, a.issues_from_ms, a.first_id)
            == (b.version, &b.space, b.issues_from_ms, b.first_id)
    };
    for (store, history) in stores.iter().zip(&histories) {
        if !history.iter().zip(&longest).all(|(a, b)| same(a, b)) {
            return Err(Error::store_invalid(format!(
                "{} holds another ID-space history than the other stores of the set",
                store.display_url
            )));
        }
        for missing in &longest[history.len()..] {
            // A change is refused on a store whose leases reach past its moment: what they
            // issued under the old space could meet the new space's values.
            let bound = if missing.version > 1 {
                missing.issues_from_ms
            } else {
                u64::MAX
            };
            store.leases.record_id_space(missing, bound).await?;
            tracing::info!(store = %store.display_url, version = missing.version, "ID space copied to a store of the set");
        }
    }
    Ok(())
}

/// Opens `url`, or `None` when the store does not answer now (it is tried again later).
async fn open_or_skip(url: &str, options: &StoreOptions) -> Result<Option<Store>> {
    match crate::open(url, options).await {
        Ok(store) => Ok(Some(store)),
        Err(error @ Error::StoreUnavailable { .. }) => {
            tracing::warn!(error = %error.with_causes(), "store of the set does not answer; it is tried again when needed");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// The set the open stores belong to: the one their records name (all must agree), or a new
/// one when none has a record and store 0 answers (it will hold the first record).
fn find_set_id(records: &[Option<SetMembership>], first_open: bool) -> Result<String> {
    let mut ids: Vec<&str> = records
        .iter()
        .flatten()
        .map(|r| r.set_id.as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] if first_open => new_set_id(),
        [] => Err(Error::store_unavailable(
            "creating the store set needs store 0 (the first --store) to answer",
        )),
        several => Err(Error::store_invalid(format!(
            "the stores belong to different sets ({}): give the stores of one set",
            several.join(", ")
        ))),
    }
}

/// A random set ID: 128 bits, hex.
fn new_set_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::store_invalid(format!("no randomness for a set ID: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Checks that `store` is `member` of set `set_id`, recording it there if it holds no record
/// yet (and no data).
async fn check_member(store: &Store, set_id: &str, member: &Member) -> Result<()> {
    match store.leases.store_set().await? {
        Some(record) if record.set_id == set_id && record.partition == member.partition => Ok(()),
        Some(record) => Err(Error::store_invalid(format!(
            "{} is {} of set {}, but the --store list makes it {} of set {set_id}: check the \
             order and number of --store and the block size",
            member.display, record.partition, record.set_id, member.partition
        ))),
        None => {
            let record = store
                .leases
                .join_store_set(set_id, member.partition)
                .await?;
            tracing::info!(store = %member.display, set = %record.set_id, place = %record.partition, "store joined the set");
            Ok(())
        }
    }
}
