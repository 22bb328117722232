//! Group commit for SQLite: the writes of concurrent calls share one transaction, and so one
//! `fsync` of the WAL.
//!
//! SQLite has one writer at a time and every commit with `synchronous=FULL` waits for the disk
//! (about 0.5 ms here, far more on a cloud disk). With one transaction per call, a thousand
//! tags created at once (each a row insert and a first range) take a thousand and more disk
//! flushes in a row, and the other pooled connections sleep in SQLite's busy handler while
//! they wait for the lock. Here the calls queue for one connection instead: each runs its
//! statements inside a `SAVEPOINT` of the open transaction and releases it; the last call of
//! the queue (no other call waiting, or [`MAX_MEMBERS`] in the batch) commits, and every call
//! of the batch returns only when that commit is on disk. A call whose statements fail has
//! its savepoint rolled back, leaving the others' writes; a commit that fails fails every
//! call of the batch, none of which has told its caller anything yet. So each call stays
//! atomic and durable before it returns, as with a transaction of its own.
//!
//! Calls of the same batch see each other's writes in order, as they would one after the
//! other; other connections (readers, other processes) see the batch only once committed.
//!
//! A batch whose transaction did not end in a confirmed `COMMIT`, or in which a call failed,
//! closes its connection instead of giving it back to the pool: closing rolls back whatever
//! SQLite still holds open, and the pool opens a fresh connection for the next batch. That is what lets the store recover by
//! itself from a full disk, an I/O error or a file made read-only: after such an error SQLite
//! may or may not have rolled the transaction back already (its documentation leaves it open),
//! so no statement could tell a reused connection's state for sure. The transaction is
//! begun and ended with plain statements, not sqlx's `Transaction`, whose depth count is left
//! at one when a `COMMIT` fails after SQLite rolled back by itself, refusing every later
//! `BEGIN` on that connection for good.
//!
//! A call that failed spoils its batch's connection even when the others' writes commit: the
//! connection may be one SQLite opened read-only (it does so, silently, when the file cannot be
//! opened for writing: a file made read-only, a folder without write permission), which fails
//! every write for as long as it lives, however soon the file is writable again. Pooled, it
//! would fail one write in every few for good; closed, the next connection is opened afresh.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{Pool, Sqlite, SqliteConnection};
use tokio::sync::{watch, Mutex, OwnedMutexGuard};

/// Most calls in one transaction: a bound on how long the first waits for the commit.
const MAX_MEMBERS: usize = 256;

/// The outcome of a batch's commit, for the calls waiting on it: `None` until it is known.
type Outcome = Option<std::result::Result<(), Arc<str>>>;

/// The shared write queue of one SQLite store.
#[derive(Clone, Default)]
pub(crate) struct GroupCommit {
    open: Arc<Mutex<Option<Batch>>>,
    /// Calls waiting for the queue: while any is, a finishing call leaves the batch open.
    waiting: Arc<AtomicUsize>,
}

impl fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("waiting", &self.waiting.load(Ordering::Relaxed))
            .finish()
    }
}

/// The open transaction and the calls in it.
struct Batch {
    /// The connection, inside the batch's transaction from `BEGIN IMMEDIATE` on.
    conn: PoolConnection<Sqlite>,
    /// Set once `COMMIT` succeeded: only then is the connection known to be outside any
    /// transaction and given back to the pool (unless spoiled); otherwise it is closed when
    /// dropped.
    committed: bool,
    /// Set when a call of the batch failed: the connection is closed when dropped, committed
    /// or not (see the module's documentation).
    spoiled: bool,
    members: usize,
    outcome: watch::Sender<Outcome>,
}

impl Batch {
    /// Takes a connection and begins the batch's transaction, taking SQLite's write lock.
    async fn begin(pool: &Pool<Sqlite>) -> Result<Self, sqlx::Error> {
        let mut batch = Batch {
            conn: pool.acquire().await?,
            committed: false,
            spoiled: false,
            members: 0,
            outcome: watch::channel(None).0,
        };
        // Failed or cancelled, the connection is dropped with the batch, so closed.
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *batch.conn)
            .await?;
        Ok(batch)
    }
}

impl Drop for Batch {
    /// A batch dropped without a confirmed commit (rolled back, failed, abandoned), or with a
    /// failed call, closes its connection, so no connection with a transaction in doubt, or
    /// that failed a write, goes back to the pool.
    fn drop(&mut self) {
        if !self.committed || self.spoiled {
            self.conn.close_on_drop();
        }
    }
}

/// One call's part of a batch, from [`GroupCommit::join`] to [`Member::finish`].
pub(crate) struct Member {
    group: GroupCommit,
    /// The queue, held while the call runs its statements.
    guard: Option<OwnedMutexGuard<Option<Batch>>>,
    /// The batch, taken out of the queue while the call runs (given back when it is done).
    batch: Option<Batch>,
}

/// Counts a call as waiting for the queue until dropped (also when the wait is cancelled).
struct Waiting {
    group: GroupCommit,
    /// Set once the queue is taken; a wait dropped before that was cancelled.
    served: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let last = self.group.waiting.fetch_sub(1, Ordering::AcqRel) == 1;
        if last && !self.served {
            // The last waiter gave up: a batch a finishing call left open for it must still
            // be committed.
            self.group.commit_if_idle();
        }
    }
}

impl GroupCommit {
    /// Joins the batch (opening one with `BEGIN IMMEDIATE` if none is open) and opens the
    /// call's savepoint.
    pub(crate) async fn join(&self, pool: &Pool<Sqlite>) -> Result<Member, sqlx::Error> {
        let guard = {
            self.waiting.fetch_add(1, Ordering::AcqRel);
            let mut waiting = Waiting {
                group: self.clone(),
                served: false,
            };
            let guard = Arc::clone(&self.open).lock_owned().await;
            waiting.served = true;
            guard
        };
        let mut member = Member {
            group: self.clone(),
            guard: Some(guard),
            batch: None,
        };
        let open = member.guard.as_mut().and_then(|guard| guard.take());
        let mut batch = match open {
            Some(batch) => batch,
            None => Batch::begin(pool).await?,
        };
        batch.members += 1;
        sqlx::query("SAVEPOINT member")
            .execute(&mut *batch.conn)
            .await?;
        member.batch = Some(batch);
        Ok(member)
    }

    /// Commits an open batch that nobody is left to continue (see [`Waiting`]).
    fn commit_if_idle(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let group = self.clone();
        runtime.spawn(async move {
            let mut guard = Arc::clone(&group.open).lock_owned().await;
            if group.waiting.load(Ordering::Acquire) == 0 {
                if let Some(batch) = guard.take() {
                    let _ = commit(batch).await;
                }
            }
            drop(guard);
        });
    }
}

impl Member {
    /// The connection of the batch.
    pub(crate) fn conn(&mut self) -> &mut SqliteConnection {
        match &mut self.batch {
            Some(batch) => &mut batch.conn,
            // Only after `finish` or `drop`, which consume the member.
            None => unreachable_connection(),
        }
    }

    /// Releases the call's savepoint, then commits the batch if no other call waits (or the
    /// batch is full), else leaves it to the next call; either way returns once the batch's
    /// commit is known.
    pub(crate) async fn finish(mut self) -> Result<(), sqlx::Error> {
        let (Some(mut guard), Some(mut batch)) = (self.guard.take(), self.batch.take()) else {
            return Err(abandoned());
        };
        if let Err(error) = sqlx::query("RELEASE SAVEPOINT member")
            .execute(&mut *batch.conn)
            .await
        {
            // The transaction is in doubt: roll it all back (dropping the batch closes its
            // connection), so every call of the batch fails rather than one of them claiming
            // a write it may not have.
            drop(batch);
            drop(guard);
            return Err(error);
        }
        if self.group.waiting.load(Ordering::Acquire) == 0 || batch.members >= MAX_MEMBERS {
            // The queue stays held through the commit: the next batch begins after it, not in
            // SQLite's busy handler.
            let committed = commit(batch).await;
            drop(guard);
            return committed;
        }
        let mut outcome = batch.outcome.subscribe();
        *guard = Some(batch);
        drop(guard);
        loop {
            if let Some(result) = outcome.borrow_and_update().clone() {
                return result.map_err(|message| group_failed(&message));
            }
            if outcome.changed().await.is_err() {
                return Err(abandoned());
            }
        }
    }
}

impl super::SharedTx<Sqlite> for Member {
    fn conn(&mut self) -> &mut SqliteConnection {
        Member::conn(self)
    }

    fn finish(
        self: Box<Self>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), sqlx::Error>> + Send>> {
        Box::pin(Member::finish(*self))
    }
}

impl Drop for Member {
    /// A call that ended without [`Member::finish`] (an error, a timeout): its savepoint is
    /// rolled back and the batch is committed with the other calls' writes, on a task (a drop
    /// cannot wait). The next call starts a fresh transaction on a fresh connection: after a
    /// failed statement (a damaged page, a read-only file, say) the connection is not trusted
    /// for more.
    fn drop(&mut self) {
        let (Some(guard), Some(mut batch)) = (self.guard.take(), self.batch.take()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // dropping the batch rolls it back; its calls see it abandoned
        };
        batch.spoiled = true;
        runtime.spawn(async move {
            let undone = async {
                sqlx::query("ROLLBACK TO SAVEPOINT member")
                    .execute(&mut *batch.conn)
                    .await?;
                sqlx::query("RELEASE SAVEPOINT member")
                    .execute(&mut *batch.conn)
                    .await
            };
            if undone.await.is_ok() {
                let _ = commit(batch).await;
            }
            // Else the batch is dropped: its connection closed, so rolled back, and its
            // calls fail.
            drop(guard);
        });
    }
}

/// Commits `batch` and tells its waiting calls. A failed commit leaves the batch uncommitted,
/// so its connection is closed as it drops.
async fn commit(mut batch: Batch) -> Result<(), sqlx::Error> {
    let result = sqlx::query("COMMIT")
        .execute(&mut *batch.conn)
        .await
        .map(|_| ());
    batch.committed = result.is_ok();
    batch.outcome.send_replace(Some(
        result
            .as_ref()
            .map(|_| ())
            .map_err(|error| Arc::from(error.to_string())),
    ));
    result
}

/// The error of a call whose batch failed to commit.
fn group_failed(message: &str) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(format!(
        "the shared transaction of this write failed to commit: {message}"
    )))
}

/// The error of a call whose batch was rolled back before it was committed.
fn abandoned() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(
        "the shared transaction of this write was rolled back",
    ))
}

/// Never reached: a member has its batch from `join` until it is consumed.
fn unreachable_connection() -> ! {
    panic!("a group-commit member was used after it finished")
}
