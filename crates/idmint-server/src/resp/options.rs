//! How the Redis-protocol listener behaves: [`RespOptions`] and the request bounds it starts
//! from ([`SERVER_LIMITS`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use idmint_resp::Limits;

use crate::auth::Auth;
use crate::config::ConnectionLimits;
use crate::io_threads::IoThreads;
use crate::tls::Tls;

/// The codec's default limits, with requests capped at 64 KiB instead of 1 MiB.
///
/// A client that stalls in the middle of a request holds its bytes in its connection's buffer
/// until the request completes or times out (`partial_request_timeout`); at
/// `max_connections` such clients, that is `max_connections x max_request_len`: 10 GiB with
/// the codec's 1 MiB, 640 MiB with 64 KiB. idmint's commands carry a tag of at most 128 bytes
/// and a few integers, and what stock clients send (`HELLO`, `AUTH`, `CLIENT SETINFO`) is as
/// small, so 64 KiB refuses nothing a real client sends. (Inline lines keep the codec's
/// `max_inline_len`, also 64 KiB.)
pub const SERVER_LIMITS: Limits = Limits {
    max_request_len: 64 * 1024,
    ..Limits::DEFAULT
};

/// How the Redis-protocol listener behaves.
#[derive(Clone)]
pub struct RespOptions {
    /// The tokens: `AUTH [user] token` (or `HELLO 3 AUTH user token`) with one of them gives
    /// the connection its grant. With tokens configured, every command but `AUTH`, `HELLO`,
    /// `PING`, `QUIT` and `RESET` is refused with `-NOAUTH` until then, and a command outside
    /// the grant's scope or tags with `-NOPERM`. With none (the default), everything is open.
    pub auth: Arc<Auth>,
    /// Bounds on what one request may declare or contain. Default [`SERVER_LIMITS`].
    pub limits: Limits,
    /// Largest `COUNT` of `IDMINT.SNOWFLAKE` and `IDMINT.NEXT`, and largest `INCRBY` increment.
    pub max_count: u64,
    /// Most connections served at once (beyond it a connection is answered
    /// `-ERR max number of clients reached` and closed, as Redis does), per client address,
    /// how long a connection has to authenticate, and the idle timeout.
    pub connections: ConnectionLimits,
    /// How long a request may take to arrive once its first byte has (counted again after
    /// each complete command): a client that starts a request and then stalls or trickles it
    /// (slowloris) is answered `-ERR Protocol error: ...` and closed after it, rather than
    /// holding its connection and up to [`Limits::max_request_len`] bytes of buffer forever.
    /// Idle connections, with no partial request, are never timed out, as with Redis.
    /// Default 30 s.
    pub partial_request_timeout: Duration,
    /// The threads that serve connections; `None` serves them on the accepting runtime.
    pub io: Option<Arc<IoThreads>>,
    /// TLS: when set, every connection starts with a TLS handshake (`rediss://`).
    pub tls: Option<Tls>,
}

impl Default for RespOptions {
    fn default() -> Self {
        Self {
            auth: Arc::new(Auth::default()),
            limits: SERVER_LIMITS,
            max_count: 10_000,
            connections: ConnectionLimits::default(),
            partial_request_timeout: Duration::from_secs(30),
            io: None,
            tls: None,
        }
    }
}

impl fmt::Debug for RespOptions {
    /// Never shows the token itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RespOptions")
            .field("auth", &self.auth)
            .field("limits", &self.limits)
            .field("max_count", &self.max_count)
            .field("connections", &self.connections)
            .field("partial_request_timeout", &self.partial_request_timeout)
            .field("io_threads", &self.io.as_ref().map(|io| io.len()))
            .field("tls", &self.tls)
            .finish()
    }
}
