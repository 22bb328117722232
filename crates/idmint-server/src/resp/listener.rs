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
use super::options::RespOptions;
use super::shared::Shared;
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

#[cfg(test)]
mod tests {
    //! The connection loop's timers, through a listener.

    use std::error::Error;
    use std::net::SocketAddr;

    use idmint_core::store::MemoryStore;
    use idmint_core::{Clock, Layout, SnowflakeConfig, SystemClock};
    use idmint_store::Store;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::task::JoinHandle;

    use super::*;
    use crate::ids::{Ids, IdsConfig, LeaseConfig, SegmentOptions};
    use crate::test_io::read_to_close;

    type TestResult = Result<(), Box<dyn Error>>;
    type Running = (
        SocketAddr,
        oneshot::Sender<()>,
        JoinHandle<std::io::Result<()>>,
    );

    /// The RESP listener with a 300 ms partial-request timeout, over an in-memory store.
    async fn start() -> Result<Running, Box<dyn Error>> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let memory = Arc::new(MemoryStore::new(Arc::clone(&clock)));
        let store = Store {
            segments: memory.clone(),
            leases: memory,
            display_url: "memory".into(),
            set: None,
        };
        let config = IdsConfig {
            layout: Layout::parse("time:41@1ms,worker:10,seq:12")?,
            datacenter: 0,
            lease: LeaseConfig::default(),
            snowflake: SnowflakeConfig::default(),
            segments: SegmentOptions::default(),
            permutation: None,
        };
        let ids = Ids::start(config, store, clock).await?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let options = RespOptions {
            partial_request_timeout: Duration::from_millis(300),
            ..RespOptions::default()
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, ids, options, async {
            let _ = stopped.await;
        }));
        Ok((addr, stop, task))
    }

    async fn read_text(stream: &mut TcpStream, len: usize) -> Result<String, Box<dyn Error>> {
        let mut buf = vec![0u8; len];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut buf)).await??;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partial_request_is_timed_out_but_idle_and_progressing_clients_are_not() -> TestResult
    {
        let (addr, stop, task) = start().await?;
        let mut partial = TcpStream::connect(addr).await?;
        partial
            .write_all(b"*2\r\n$4\r\nINCR\r\n$100\r\nabc")
            .await?;
        let mut idle = TcpStream::connect(addr).await?;
        // A pipeline whose commands complete one by one, each within the timeout, though the
        // whole takes longer than it.
        let mut steady = TcpStream::connect(addr).await?;
        for piece in [&b"PING\r\nPI"[..], b"NG\r\nPI", b"NG\r\nPI"] {
            steady.write_all(piece).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        steady.write_all(b"NG\r\n").await?;
        assert_eq!(read_text(&mut steady, 28).await?, "+PONG\r\n".repeat(4));
        assert_eq!(
            read_to_close(&mut partial).await?,
            "-ERR Protocol error: request not complete within 0.3 s\r\n"
        );
        // Idle well past the timeout, and still served.
        tokio::time::sleep(Duration::from_millis(400)).await;
        idle.write_all(b"PING\r\n").await?;
        assert_eq!(read_text(&mut idle, 7).await?, "+PONG\r\n");
        drop((idle, steady));
        let _ = stop.send(());
        task.await??;
        Ok(())
    }
}
