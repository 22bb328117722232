//! The accept loop: one task per connection, at most `max_connections` at once, and graceful
//! shutdown (stop accepting, let commands in flight finish, close idle connections).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{self, JoinSet};

use super::connection;
use super::shared::Shared;
use super::RespOptions;
use crate::accept::{Admission, Admitted, Refusal};
use crate::ids::Ids;
use crate::tally::ListenerTallies;

/// How long connections get after shutdown to finish what they are running and write their
/// replies; whatever still runs then is cut off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What Redis answers a connection beyond `maxclients`.
const TOO_MANY_CLIENTS: &[u8] = b"-ERR max number of clients reached\r\n";

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
    let tallies = ListenerTallies::start("resp");
    let admission = Admission::new(
        "RESP",
        options.connections.max_connections,
        options.connections.per_address,
        options.io.clone(),
        Arc::clone(&tallies),
    );
    let shared = Arc::new(Shared::new(ids, options, local_addr, tallies));
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
            admitted = admission.next(&listener, |stream, why| refuse(&shared, stream, why)) => {
                let Admitted { stream, runtime, peer, permit } = admitted;
                let shared = Arc::clone(&shared);
                let (stop, stopped) = oneshot::channel();
                let task = connections.spawn_on(async move {
                    match stream.attach() {
                        Ok(stream) => {
                            let local = stream.local_addr().ok();
                            match shared.options.tls.clone() {
                                None => connection::run(stream, peer, local, shared, stopped).await,
                                Some(tls) => {
                                    let within = shared.options.connections.auth_timeout;
                                    match tokio::time::timeout(within, tls.resp().accept(stream)).await {
                                        Ok(Ok(stream)) => {
                                            connection::run(stream, peer, local, shared, stopped).await;
                                        }
                                        Ok(Err(error)) => {
                                            tracing::debug!(%peer, %error, "TLS handshake failed");
                                            shared.tallies.tls_failed.add(peer);
                                        }
                                        Err(_) => shared.tallies.tls_failed.add(peer),
                                    }
                                }
                            }
                        }
                        Err(error) => {
                            tracing::debug!(%peer, %error, "RESP connection could not be attached");
                        }
                    }
                    drop(permit);
                }, &runtime);
                stops.insert(task.id(), stop);
            }
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

/// Answers a connection beyond a limit (the listener's as Redis does); the caller closes it.
fn refuse(shared: &Shared, stream: &TcpStream, why: Refusal) {
    shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
    let _ = match why {
        Refusal::Limit(_) => stream.try_write(TOO_MANY_CLIENTS),
        Refusal::PerAddress(_) => {
            stream.try_write(format!("-ERR {}\r\n", why.message()).as_bytes())
        }
    };
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
