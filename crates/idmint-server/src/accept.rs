//! Admitting connections, the same for both front ends: at most a set number served at once
//! (one beyond it gets the protocol's "too many" answer and is closed, without the server
//! waiting on it), accept errors about resources pause the loop instead of spinning, and every
//! admitted connection gets `TCP_NODELAY` (a client waiting for one reply must not wait for
//! Nagle's algorithm) and is placed on its connection thread.
//!
//! What happens to a connection once admitted, and how a listener stops, is each protocol's
//! own (`http::listener`, `resp::listener`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::io_threads::{self, Accepted, IoThreads};

/// Pause after an accept error such as "too many open files", so the loop does not spin while
/// the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A connection admitted under the limit.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The stream, to be attached inside the task that serves it.
    pub(crate) stream: Accepted,
    /// The runtime to spawn that task on.
    pub(crate) runtime: Handle,
    /// The client's address.
    pub(crate) peer: SocketAddr,
    /// The connection's place under the limit: hold it until the connection ends.
    pub(crate) permit: OwnedSemaphorePermit,
}

/// The admission rules of one listener.
#[derive(Debug)]
pub(crate) struct Admission {
    /// `HTTP` or `RESP`, for the log.
    protocol: &'static str,
    permits: Arc<Semaphore>,
    limit: usize,
    io: Option<Arc<IoThreads>>,
}

impl Admission {
    /// At most `limit` connections at once (at least one), served on `io` (or on the
    /// accepting runtime when `None`).
    pub(crate) fn new(protocol: &'static str, limit: usize, io: Option<Arc<IoThreads>>) -> Self {
        Self {
            protocol,
            permits: Arc::new(Semaphore::new(limit.clamp(1, Semaphore::MAX_PERMITS))),
            limit,
            io,
        }
    }

    /// The limit, for the "too many" answers.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Waits for the next connection within the limit. One beyond it is handed to `refuse`,
    /// which writes the protocol's answer without waiting (a fresh socket's send buffer takes a
    /// few bytes at once), and is closed. Cancel-safe: nothing is lost when the caller stops
    /// waiting, so it can be one branch of a `select!`.
    pub(crate) async fn next(
        &self,
        listener: &TcpListener,
        refuse: impl Fn(&TcpStream),
    ) -> Admitted {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    self.accept_failed(&error).await;
                    continue;
                }
            };
            let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
                tracing::warn!(
                    protocol = self.protocol,
                    %peer,
                    limit = self.limit,
                    "connection refused: too many connections"
                );
                refuse(&stream);
                continue;
            };
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(protocol = self.protocol, %peer, %error, "TCP_NODELAY not set");
            }
            match io_threads::place(self.io.as_deref(), stream) {
                Ok((stream, runtime)) => {
                    return Admitted {
                        stream,
                        runtime,
                        peer,
                        permit,
                    }
                }
                Err(error) => {
                    tracing::debug!(
                        protocol = self.protocol,
                        %peer,
                        %error,
                        "connection could not be handed to its thread"
                    );
                }
            }
        }
    }

    /// Logs an accept error and pauses when it is about resources (file descriptors, memory)
    /// rather than one connection that went away before it was accepted.
    async fn accept_failed(&self, error: &io::Error) {
        if matches!(
            error.kind(),
            io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::Interrupted
                | io::ErrorKind::WouldBlock
        ) {
            tracing::debug!(protocol = self.protocol, %error, "accept failed");
        } else {
            tracing::warn!(protocol = self.protocol, %error, "accept failed; pausing");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
        }
    }
}
