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
//! The bytes are parsed by `idmint-resp` (arrays of bulk strings and inline commands, bounded
//! by [`Limits`](idmint_resp::Limits)); replies are RESP2 until a connection sends `HELLO 3`,
//! then RESP3 (maps, sets, null, verbatim text where Redis sends them). This module owns the
//! sockets and runs the commands, in the shape of tokio's mini-redis: the connection loop only
//! moves frames, and each command is a pure parse into a typed value plus an apply on the
//! session.
//!
//! Files, each importing only from the files listed before it (no two import each other, and
//! none imports this one, which only declares and re-exports):
//!
//! - `options`: [`RespOptions`] and [`SERVER_LIMITS`];
//! - `reply`: integer arguments, ID replies (integers, or strings for JavaScript), and the
//!   mapping of `idmint_core::Error` to replies;
//! - `shared` (options): what every connection of a listener shares;
//! - `tags`: each connection's cache of segment buffers, so `INCR tag` on the hot path is one
//!   lock-free claim and no allocation;
//! - `queue`: the commands of an open `MULTI`, and their bounds;
//! - `returnables`: the runs `IDMINT.GIVEBACK` may return;
//! - `session` (shared, tags, queue, returnables, reply): one connection's state (grant,
//!   protocol, ID format, name, transaction, tag cache), what the commands read and change;
//! - `cmd` (session and the files above): the command table, and per command or family a file
//!   with its pure parse (the arguments into a typed value: no session, no I/O, no store) and
//!   its apply on the session; `cmd/mod.rs` parses a request into a `cmd::Request` and
//!   dispatches it (name, arity, authentication, `MULTI` queueing);
//! - `lookahead` (cmd, session): a connection's pending requests, and the loading of a
//!   pipeline's new tags at once, using the commands' own parses;
//! - `connection` (lookahead, cmd, session, shared): one connection's I/O loop: read, decode,
//!   hand each command to the session, write the replies (every complete command of a read is
//!   answered, and the replies leave in one write), with its buffers' bounds and timers;
//! - `listener` (connection, shared, options): the accept loop, the connection limit and
//!   graceful shutdown.

mod cmd;
mod connection;
mod listener;
mod lookahead;
mod options;
mod queue;
mod reply;
mod returnables;
mod session;
mod shared;
mod tags;

pub use self::listener::serve;
pub use self::options::{RespOptions, SERVER_LIMITS};
