//! The Redis-protocol front end: any Redis client, `redis-cli` and `redis-benchmark` mint IDs.
//!
//! ```text
//! $ redis-cli -p 6380 INCR orders                 # next segment ID of tag `orders`
//! $ redis-cli -p 6380 INCRBY orders 100           # 100 contiguous IDs; the reply is the last
//! $ redis-cli -p 6380 IDMINT.SNOWFLAKE COUNT 3 SHARD 7
//! $ redis-cli -p 6380 IDMINT.NEXT orders COUNT 5
//! $ redis-cli -p 6380 IDMINT.DECODE 175928847299117063
//! ```
//!
//! The bytes are parsed by `idmint-resp` (RESP2 arrays and inline commands, bounded by
//! [`Limits`]); this module owns the sockets and runs the commands:
//!
//! - `listener`: the accept loop, the connection limit and graceful shutdown;
//! - `connection`: one connection's read, decode, execute and write loop, pipelining included
//!   (every complete command of a read is answered, and the replies leave in one write);
//! - `commands`: the command table, dispatch, authentication and the ID commands;
//! - `admin`: what stock clients send besides (`PING`, `HELLO`, `CLIENT`, `COMMAND`,
//!   `CONFIG GET`, `INFO`, ...);
//! - `tags`: each connection's cache of segment buffers, so `INCR tag` on the hot path is one
//!   lock-free claim and no allocation;
//! - `reply`: argument parsing helpers and the mapping of `idmint_core::Error` to replies.

mod admin;
mod commands;
mod connection;
mod listener;
mod reply;
mod tags;

use std::fmt;

use idmint_resp::Limits;

pub use self::listener::serve;

/// How the Redis-protocol listener behaves.
#[derive(Clone)]
pub struct RespOptions {
    /// The password of `AUTH` (and `HELLO 2 AUTH default <password>`). When set, every command
    /// but `AUTH`, `HELLO`, `PING` and `QUIT` is refused with `-NOAUTH` until the connection
    /// has authenticated.
    pub admin_token: Option<String>,
    /// Bounds on what one request may declare or contain.
    pub limits: Limits,
    /// Largest `COUNT` of `IDMINT.SNOWFLAKE` and `IDMINT.NEXT`, and largest `INCRBY` increment.
    pub max_count: u64,
    /// Most connections served at once; a connection beyond it is answered
    /// `-ERR max number of clients reached` and closed, as Redis does.
    pub max_connections: usize,
}

impl Default for RespOptions {
    fn default() -> Self {
        Self {
            admin_token: None,
            limits: Limits::DEFAULT,
            max_count: 10_000,
            max_connections: 10_000,
        }
    }
}

impl fmt::Debug for RespOptions {
    /// Never shows the token itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RespOptions")
            .field("admin_token", &self.admin_token.as_ref().map(|_| "<set>"))
            .field("limits", &self.limits)
            .field("max_count", &self.max_count)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}
