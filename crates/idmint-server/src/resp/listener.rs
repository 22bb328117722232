//! The accept loop: one task per connection, at most `max_connections` at once, and graceful
//! shutdown (stop accepting, let commands in flight finish, close idle connections).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::{self, JoinSet};

use super::{connection, RespOptions};
use crate::ids::Ids;
use crate::io_threads;

/// How long connections get after shutdown to finish what they are running and write their
/// replies; whatever still runs then is cut off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Pause after an accept error such as "too many open files", so the loop does not spin
/// while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What Redis answers a connection beyond `maxclients`.
const TOO_MANY_CLIENTS: &[u8] = b"-ERR max number of clients reached\r\n";

/// State shared by every connection of one listener: the service, the options and the
/// counters `INFO` reports.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) ids: Arc<Ids>,
    pub(super) options: RespOptions,
    /// The address the listener is bound to (`INFO`'s `tcp_port`).
    pub(super) local_addr: Option<SocketAddr>,
    pub(super) started: Instant,
    next_client_id: AtomicU64,
    pub(super) connected: AtomicUsize,
    pub(super) total_connections: AtomicU64,
    pub(super) rejected_connections: AtomicU64,
    /// Commands run, added once per batch of pipelined commands (not per command, so that
    /// connections on different cores do not fight over one cache line).
    pub(super) total_commands: AtomicU64,
}

impl Shared {
    fn new(ids: Arc<Ids>, options: RespOptions, local_addr: Option<SocketAddr>) -> Self {
        Self {
            ids,
            options,
            local_addr,
            started: Instant::now(),
            next_client_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            total_commands: AtomicU64::new(0),
        }
    }

    /// A new connection's `CLIENT ID`.
    pub(super) fn client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Serves the Redis protocol on `listener` until `shutdown` resolves.
///
/// Then it stops accepting, tells every connection to stop, and waits (at most a few
/// seconds) for them: a connection waiting for its next request closes at once, one running
/// commands finishes them, writes the replies and closes. Connections still running after the
/// grace period are cut off. Returns once every connection task has ended; accept errors are
/// logged and retried, not returned.
pub async fn serve(
    listener: TcpListener,
    ids: Arc<Ids>,
    options: RespOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let local_addr = listener.local_addr().ok();
    let permits = Arc::new(Semaphore::new(
        options.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    let shared = Arc::new(Shared::new(ids, options, local_addr));
    let mut connections = JoinSet::new();
    // One stop signal per connection: a oneshot receiver is polled with a few atomic
    // operations, where a shared watch or Notify would take a lock shared by every
    // connection on each read that has to wait.
    let mut stops: HashMap<task::Id, oneshot::Sender<()>> = HashMap::new();
    let mut shutdown = std::pin::pin!(shutdown);
    tracing::debug!(addr = ?local_addr, "RESP listener accepting");
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => match Arc::clone(&permits).try_acquire_owned() {
                    Ok(permit) => {
                        let (accepted, runtime) =
                            match io_threads::place(shared.options.io.as_deref(), stream) {
                                Ok(placed) => placed,
                                Err(error) => {
                                    tracing::debug!(%peer, %error, "RESP connection could not be handed over");
                                    continue;
                                }
                            };
                        let shared = Arc::clone(&shared);
                        let (stop, stopped) = oneshot::channel();
                        let task = connections.spawn_on(async move {
                            match accepted.attach() {
                                Ok(stream) => connection::run(stream, peer, shared, stopped).await,
                                Err(error) => {
                                    tracing::debug!(%peer, %error, "RESP connection could not be attached");
                                }
                            }
                            drop(permit);
                        }, &runtime);
                        stops.insert(task.id(), stop);
                    }
                    Err(_) => refuse(&shared, stream, peer),
                },
                Err(error) => accept_failed(&error).await,
            },
            Some(ended) = connections.join_next_with_id(), if !connections.is_empty() => {
                stops.remove(&log_task_end(ended));
            }
        }
    }
    drop(listener);
    for (_, stop) in stops.drain() {
        let _ = stop.send(());
    }
    tracing::debug!(
        connections = connections.len(),
        "RESP listener stopped accepting; draining connections"
    );
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while let Some(ended) = connections.join_next_with_id().await {
            log_task_end(ended);
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = connections.len(),
            grace = ?SHUTDOWN_GRACE,
            "RESP connections still busy after the shutdown grace period; closing them"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    Ok(())
}

/// Answers a connection beyond the limit, as Redis does, without waiting on it.
fn refuse(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        %peer,
        limit = shared.options.max_connections,
        "RESP connection refused: too many clients"
    );
    // A fresh socket's send buffer takes these few bytes at once; if not, the peer gets none.
    let _ = stream.try_write(TOO_MANY_CLIENTS);
}

/// Logs an accept error and pauses when it is about resources (file descriptors, memory)
/// rather than one connection that went away before it was accepted.
async fn accept_failed(error: &io::Error) {
    match error.kind() {
        io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::Interrupted
        | io::ErrorKind::WouldBlock => {
            tracing::debug!(%error, "RESP accept failed");
        }
        _ => {
            tracing::warn!(%error, "RESP accept failed; pausing");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
        }
    }
}

/// A connection task never panics by design; should one, say so. Returns the task's ID.
fn log_task_end(ended: Result<(task::Id, ()), task::JoinError>) -> task::Id {
    match ended {
        Ok((id, ())) => id,
        Err(error) => {
            if error.is_panic() {
                tracing::error!(%error, "RESP connection task panicked");
            }
            error.id()
        }
    }
}
