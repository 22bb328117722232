//! Admitting connections, the same for both front ends: at most a set number served at once,
//! and at most a set number from one client address (one beyond either gets the protocol's
//! "too many" answer and is closed, without the server waiting on it; it is counted, and
//! logged at most once per interval, see `crate::tally`), accept errors about resources pause the loop instead of spinning, and every
//! admitted connection gets `TCP_NODELAY` (a client waiting for one reply must not wait for
//! Nagle's algorithm) and is placed on its connection thread.
//!
//! What happens to a connection once admitted, and how a listener stops, is each protocol's
//! own (`http::listener`, `resp::listener`).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::io_threads::{self, Accepted, IoThreads};
use crate::tally::ListenerTallies;

/// Pause after an accept error such as "too many open files", so the loop does not spin while
/// the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Which limit refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The listener's, with its value.
    Limit(usize),
    /// The client address's, with its value.
    PerAddress(usize),
}

impl Refusal {
    /// The sentence of the refusal.
    pub(crate) fn message(self) -> String {
        match self {
            Refusal::Limit(limit) => {
                format!(
                    "the server is at its limit of {limit} connections (--max-connections); \
                     retry later"
                )
            }
            Refusal::PerAddress(limit) => format!(
                "this address has {limit} connections open, the most allowed \
                 (--max-connections-per-address; clients behind one NAT address share it)"
            ),
        }
    }
}

/// A connection admitted under the limit.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The stream, to be attached inside the task that serves it.
    pub(crate) stream: Accepted,
    /// The runtime to spawn that task on.
    pub(crate) runtime: Handle,
    /// The client's address.
    pub(crate) peer: SocketAddr,
    /// The connection's place under the limits: hold it until the connection ends.
    pub(crate) permit: Permit,
}

/// A connection's place under the listener's limit and its address's.
#[derive(Debug)]
pub(crate) struct Permit {
    _slot: OwnedSemaphorePermit,
    _address: Option<AddressSlot>,
}

/// One connection of an address, given back when dropped.
#[derive(Debug)]
struct AddressSlot {
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// The admission rules of one listener.
#[derive(Debug)]
pub(crate) struct Admission {
    /// `HTTP` or `RESP`, for the log.
    protocol: &'static str,
    permits: Arc<Semaphore>,
    limit: usize,
    /// Most connections per client address; 0: no limit.
    per_address: usize,
    /// Open connections per address (only when `per_address` is set).
    addresses: Arc<Mutex<HashMap<IpAddr, usize>>>,
    io: Option<Arc<IoThreads>>,
    tallies: Arc<ListenerTallies>,
}

impl Admission {
    /// At most `limit` connections at once (at least one), and `per_address` from one
    /// address (0: no limit), served on `io` (or on the accepting runtime when `None`).
    /// Refusals are counted in `tallies`.
    pub(crate) fn new(
        protocol: &'static str,
        limit: usize,
        per_address: usize,
        io: Option<Arc<IoThreads>>,
        tallies: Arc<ListenerTallies>,
    ) -> Self {
        Self {
            protocol,
            permits: Arc::new(Semaphore::new(limit.clamp(1, Semaphore::MAX_PERMITS))),
            limit,
            per_address,
            addresses: Arc::default(),
            io,
            tallies,
        }
    }

    /// A place for one more connection of `ip`, if it has fewer than `per_address`.
    fn address_slot(&self, ip: IpAddr) -> Result<Option<AddressSlot>, ()> {
        if self.per_address == 0 {
            return Ok(None);
        }
        let mut counts = self
            .addresses
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(ip).or_insert(0);
        if *count >= self.per_address {
            return Err(());
        }
        *count += 1;
        Ok(Some(AddressSlot {
            counts: Arc::clone(&self.addresses),
            ip,
        }))
    }

    /// Waits for the next connection within the limits. One beyond them is handed to
    /// `refuse` with the limit it broke, which writes the protocol's answer without waiting (a fresh socket's send buffer takes a
    /// few bytes at once), and is closed. Cancel-safe: nothing is lost when the caller stops
    /// waiting, so it can be one branch of a `select!`.
    pub(crate) async fn next(
        &self,
        listener: &TcpListener,
        refuse: impl Fn(&TcpStream, Refusal),
    ) -> Admitted {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    self.accept_failed(&error).await;
                    continue;
                }
            };
            let Ok(slot) = Arc::clone(&self.permits).try_acquire_owned() else {
                self.tallies.over_limit.add(peer);
                refuse(&stream, Refusal::Limit(self.limit));
                continue;
            };
            let Ok(address) = self.address_slot(peer.ip()) else {
                self.tallies.per_address.add(peer);
                refuse(&stream, Refusal::PerAddress(self.per_address));
                continue;
            };
            let permit = Permit {
                _slot: slot,
                _address: address,
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
