//! # idmint-resp
//!
//! The Redis protocol (RESP2, and RESP3's replies) as idmint speaks it, with no I/O: a request parser and a reply
//! encoder, so that `redis-cli`, `redis-benchmark` and any Redis client library can mint IDs
//! (`INCR tag`, `IDMINT.SNOWFLAKE`, ...). The server owns the sockets; this crate turns the
//! bytes it read into [`Command`]s and its answers into bytes. Being pure, it is tested
//! exhaustively (every split point of a pipeline, random input) and can be fuzzed through
//! [`parse_all`].
//!
//! ## Requests
//! - Arrays of bulk strings, what every client sends: `*2\r\n$4\r\nINCR\r\n$3\r\ntag\r\n`.
//! - Inline commands, one line split on whitespace with Redis' quoting rules (see below):
//!   `PING\r\n`, `INCR tag\n`. A request is inline when its first byte is not `*`.
//! - Pipelining: a buffer may hold many requests; each call takes the first complete one and
//!   says how many bytes it used.
//! - Bounded: see [`Limits`]. No declared length is trusted for allocation.
//!
//! Anything else (nested arrays, non-bulk elements, null or negative lengths, an empty array,
//! a bad length, a line not ending in CRLF, a limit exceeded) is a [`ProtocolError`]. Like
//! Redis, the server then replies `-ERR Protocol error: ...` ([`ProtocolError::write_reply`])
//! and closes the connection, since the stream can no longer be split into requests.
//!
//! Inline syntax, as Redis' `sdssplitargs`: arguments are separated by whitespace;
//! `"double quotes"` allow whitespace and the escapes `\n \r \t \b \a \\ \" \xHH`;
//! `'single quotes'` are literal but for `\'`; a closing quote must be followed by whitespace
//! or the end of the line; the line ends at `\n`, with one `\r` before it dropped; blank lines
//! are skipped. Details in the `inline` module source.
//!
//! ## Replies
//! [`encode`] appends replies (`+OK`, `-ERR ...`, `:123`, `$5\r\nhello`, `$-1`, `*N`, `*-1`,
//! and RESP3's `%N` maps, `~N` sets, `_` null and `=N` verbatim text, each with its RESP2
//! stand-in for a connection that did not ask for RESP3: see [`Protocol`]) to a `Vec<u8>` or
//! `BytesMut` without allocating; [`Reply`] holds a reply as a value, nested arrays included.
//!
//! ## A server's read loop
//! ```
//! use idmint_resp::{encode, parse_command, Limits};
//!
//! let limits = Limits::default();
//! let mut inbuf: Vec<u8> = Vec::new();
//! let mut outbuf: Vec<u8> = Vec::new();
//! let mut counter = 0;
//! // What two socket reads might return: a pipeline cut in the middle of a command.
//! let reads: [&[u8]; 2] = [b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$1", b"\r\nt\r\nINCR t\r\n"];
//! 'conn: for read in reads {
//!     inbuf.extend_from_slice(read);
//!     let mut used = 0;
//!     loop {
//!         match parse_command(&inbuf[used..], &limits) {
//!             Ok(Some((cmd, n))) => {
//!                 used += n;
//!                 match cmd.upper_name().as_deref() {
//!                     Some(b"PING") => encode::simple(&mut outbuf, "PONG"),
//!                     Some(b"INCR") => {
//!                         counter += 1;
//!                         encode::integer(&mut outbuf, counter);
//!                     }
//!                     _ => encode::error_fmt(
//!                         &mut outbuf,
//!                         format_args!("ERR unknown command '{}'", cmd.name().escape_ascii()),
//!                     ),
//!                 }
//!             }
//!             Ok(None) => break, // the rest is incomplete: keep it and read more
//!             Err(e) => {
//!                 e.write_reply(&mut outbuf);
//!                 break 'conn; // write outbuf, then close the connection
//!             }
//!         }
//!     }
//!     inbuf.drain(..used);
//!     // socket.write_all(&outbuf); outbuf.clear();
//! }
//! assert_eq!(outbuf, b"+PONG\r\n:1\r\n:2\r\n");
//! ```
//! With a `BytesMut` read buffer, [`RequestDecoder`] does the same without copying arguments;
//! `examples/read_loop.rs` runs it against a simulated socket.

// docs.rs builds with `--cfg docsrs` on nightly: items behind a cargo feature show which.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's examples, compiled and run as doc tests so the text on crates.io stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod command;
pub mod encode;
pub mod error;
mod inline;
pub mod limits;
pub mod parse;

pub use command::{Command, UpperName};
pub use encode::{Protocol, Reply};
pub use error::{CrlfAfter, LengthKind, ProtocolError};
pub use limits::Limits;
pub use parse::{parse_all, parse_command, ParsedAll, RequestDecoder};
