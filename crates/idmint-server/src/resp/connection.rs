//! One connection's I/O loop: read, decode every complete command, hand each to the session
//! (`cmd` parses and runs it), write all their replies with one write, repeat. What the
//! connection is (its grant, protocol, transaction...) is `session`'s; only the bytes, the
//! buffers' bounds and the timers are here.
//!
//! Buffers are bounded: the read buffer holds at most one partial request (the codec refuses
//! one above its [`Limits`](idmint_resp::Limits)) plus one read; the reply buffer is written
//! out whenever it passes [`FLUSH_AT`] within a batch, so a pipeline of large
//! `IDMINT.SNOWFLAKE COUNT 10000` requests cannot grow it without bound.
//!
//! A partial request must be completed within the listener's `partial_request_timeout` of its
//! first byte (or of the last complete command): a slowloris client is answered with a
//! protocol error and closed. An idle connection, with nothing pending, is kept as long as
//! the client likes, as Redis does.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use idmint_resp::{encode, Command, RequestDecoder};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot::{self, error::TryRecvError};

use super::cmd;
use super::lookahead::Pending;
use super::session::{Flow, Session};
use super::shared::Shared;
use crate::telemetry;

/// Initial capacity of a connection's read buffer; it grows only for large requests.
const READ_BUFFER: usize = 16 * 1024;

/// Free space below which the read buffer is grown (or reclaimed) before the next read.
const MIN_READ_SPACE: usize = 4 * 1024;

/// Initial capacity of the reply buffer.
const WRITE_BUFFER: usize = 16 * 1024;

/// Replies buffered beyond this many bytes are written out before the next command runs.
const FLUSH_AT: usize = 256 * 1024;

/// Keeps the connection gauges right however the task ends (even when aborted).
struct Connected(Arc<Shared>);

impl Connected {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.connected.fetch_add(1, Ordering::Relaxed);
        shared.total_connections.fetch_add(1, Ordering::Relaxed);
        metrics::gauge!(telemetry::RESP_CONNECTIONS).increment(1.0);
        Self(Arc::clone(shared))
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.connected.fetch_sub(1, Ordering::Relaxed);
        metrics::gauge!(telemetry::RESP_CONNECTIONS).decrement(1.0);
    }
}

/// Serves one connection until the peer closes it, it sends `QUIT` or a malformed request, an
/// I/O error occurs, or the listener shuts down (`stop` resolves, or its sender is dropped).
pub(super) async fn run<S: Stream>(
    mut stream: S,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    let _connected = Connected::new(&shared);
    let mut session = Session::new(shared, peer, local);
    tracing::trace!(%peer, client = session.id, "RESP connection opened");
    match serve_connection(&mut stream, &mut session, &mut stop).await {
        Ok(()) => tracing::trace!(%peer, client = session.id, "RESP connection closed"),
        Err(error) => tracing::debug!(%peer, client = session.id, %error, "RESP connection ended"),
    }
}

/// A connection's byte stream: TCP, or TLS over TCP.
pub(super) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// Why a connection's timer fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    /// A request started but did not complete in time.
    Partial,
    /// No command, or no `AUTH` when tokens are configured, within `auth_timeout`.
    Auth,
    /// Nothing at all within `idle_timeout`.
    Idle,
}

/// The earliest of the connection's timers that apply now, if any: none on the hot path of
/// an authenticated connection with no partial request and no idle timeout.
fn next_expiry(
    session: &Session,
    partial: &mut Option<Instant>,
    pending: bool,
    idle_since: Option<Instant>,
) -> Option<(Instant, Expiry)> {
    let limits = &session.shared.options.connections;
    let mut earliest: Option<(Instant, Expiry)> = None;
    let mut consider = |at: Instant, why: Expiry| {
        if earliest.is_none_or(|(first, _)| at < first) {
            earliest = Some((at, why));
        }
    };
    if pending {
        let timeout = session.shared.options.partial_request_timeout;
        consider(
            *partial.get_or_insert_with(|| Instant::now() + timeout),
            Expiry::Partial,
        );
    }
    if !session.admitted() {
        consider(session.opened + limits.auth_timeout, Expiry::Auth);
    }
    if let (Some(since), Some(idle)) = (idle_since, limits.idle_timeout) {
        consider(since + idle, Expiry::Idle);
    }
    earliest
}

/// The read, execute, write loop.
async fn serve_connection<S: Stream>(
    stream: &mut S,
    session: &mut Session,
    stop: &mut oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let mut pending = Pending::new(
        RequestDecoder::new(session.shared.options.limits),
        BytesMut::with_capacity(READ_BUFFER),
    );
    let mut out = BytesMut::with_capacity(WRITE_BUFFER);
    // When the partial request at the front of the buffer must be complete.
    let mut deadline: Option<Instant> = None;
    let idle_timeout = session.shared.options.connections.idle_timeout;
    loop {
        let inbuf = &mut pending.inbuf;
        if inbuf.capacity() - inbuf.len() < MIN_READ_SPACE {
            // Reclaims the buffer's memory once the commands sliced from it are dropped.
            inbuf.reserve(READ_BUFFER);
        }
        let idle_since = idle_timeout.and(inbuf.is_empty().then(Instant::now));
        let expiry = next_expiry(session, &mut deadline, !inbuf.is_empty(), idle_since);
        let read = match expiry {
            None => tokio::select! {
                biased;
                read = stream.read_buf(inbuf) => read?,
                // Shutdown while waiting for a request: nothing is in flight, close.
                _ = &mut *stop => return Ok(()),
            },
            Some((until, why)) => tokio::select! {
                biased;
                read = stream.read_buf(inbuf) => read?,
                _ = &mut *stop => return Ok(()),
                () = tokio::time::sleep_until(until.into()) => {
                    return expired(stream, session, inbuf, why).await;
                }
            },
        };
        if read == 0 {
            return Ok(()); // the peer closed
        }
        pending.read_more();
        let mut flow = Flow::Continue;
        while flow == Flow::Continue {
            match pending.next() {
                Ok(Some(command)) => {
                    // Progress: the next partial request gets a time of its own.
                    deadline = None;
                    session.greeted = true;
                    flow = run_command(session, &command, &mut out, Some(&mut pending)).await;
                    flush_if_full(stream, &mut out).await?;
                    // `EXEC`'s header is written; its commands' replies follow.
                    for queued in std::mem::take(&mut session.exec_queue) {
                        run_command(session, &queued, &mut out, None).await;
                        flush_if_full(stream, &mut out).await?;
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    // The stream can no longer be split into requests: answer, then close.
                    tracing::debug!(peer = %session.peer, %error, "RESP protocol error");
                    metrics::counter!(telemetry::RESP_PROTOCOL_ERRORS).increment(1);
                    error.write_reply(&mut out);
                    flow = Flow::Close;
                }
            }
        }
        if pending.inbuf.is_empty() {
            deadline = None;
        }
        session.flush_counters();
        if !out.is_empty() {
            // One write for every reply of the batch: pipelining's whole point.
            stream.write_all(&out).await?;
            out.clear();
        }
        if flow == Flow::Close {
            linger(stream, &mut pending.inbuf).await;
            return Ok(());
        }
        if !matches!(stop.try_recv(), Err(TryRecvError::Empty)) {
            let _ = stream.shutdown().await;
            return Ok(());
        }
    }
}

/// Ends a connection whose timer fired: a partial request gets a protocol error, a connection
/// that did not authenticate in time an error saying so, an idle one nothing (as Redis closes
/// idle clients).
async fn expired<S: Stream>(
    stream: &mut S,
    session: &Session,
    inbuf: &mut BytesMut,
    why: Expiry,
) -> std::io::Result<()> {
    let limits = &session.shared.options.connections;
    match why {
        Expiry::Partial => {
            let timeout = session.shared.options.partial_request_timeout;
            return partial_request_timed_out(stream, session, inbuf, timeout).await;
        }
        Expiry::Auth => {
            session.shared.tallies.auth_timeout.add(session.peer);
            let mut out = BytesMut::new();
            let what = if session.shared.options.auth.required() {
                "authenticate (AUTH)"
            } else {
                "send a command"
            };
            encode::error_fmt(
                &mut out,
                format_args!(
                    "ERR closing the connection: it did not {what} within {} s",
                    limits.auth_timeout.as_secs_f64()
                ),
            );
            stream.write_all(&out).await?;
        }
        Expiry::Idle => session.shared.tallies.idle_timeout.add(session.peer),
    }
    linger(stream, inbuf).await;
    Ok(())
}

/// Writes the replies buffered so far once they pass [`FLUSH_AT`], so that a pipeline (or a
/// transaction) of large replies never grows the buffer without bound.
async fn flush_if_full<S: Stream>(stream: &mut S, out: &mut BytesMut) -> std::io::Result<()> {
    if out.len() >= FLUSH_AT {
        stream.write_all(out).await?;
        out.clear();
    }
    Ok(())
}

/// Answers a request that did not arrive in full within `timeout` of its first byte (or of
/// the last complete command) with a protocol error, and closes.
async fn partial_request_timed_out<S: Stream>(
    stream: &mut S,
    session: &Session,
    inbuf: &mut BytesMut,
    timeout: Duration,
) -> std::io::Result<()> {
    tracing::debug!(
        peer = %session.peer,
        buffered = inbuf.len(),
        ?timeout,
        "RESP request not complete in time; closing"
    );
    metrics::counter!(telemetry::RESP_PROTOCOL_ERRORS).increment(1);
    let mut out = BytesMut::new();
    encode::error_fmt(
        &mut out,
        format_args!(
            "ERR Protocol error: request not complete within {} s",
            timeout.as_secs_f64()
        ),
    );
    stream.write_all(&out).await?;
    linger(stream, inbuf).await;
    Ok(())
}

/// Closes after `QUIT` or a protocol error so that the peer reads the last reply.
///
/// Closing a socket with unread bytes in its receive queue makes the kernel send a reset,
/// which may destroy the reply before the peer reads it (a client that pipelined more after
/// `QUIT`, or kept sending a malformed request). So: send FIN, then read and discard what the
/// peer still sends, for a bounded time and amount, until it closes its side.
async fn linger<S: Stream>(stream: &mut S, scratch: &mut BytesMut) {
    const LINGER: Duration = Duration::from_millis(250);
    const MAX_DISCARD: usize = 1024 * 1024;
    if stream.shutdown().await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(LINGER, async {
        let mut discarded = 0;
        while discarded < MAX_DISCARD {
            scratch.clear();
            scratch.reserve(READ_BUFFER);
            match stream.read_buf(scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => discarded += n,
            }
        }
    })
    .await;
}

/// Hands one command to the session: parsed, then run at once when it can be (the hot path),
/// else run after loading ahead the new tags of the commands read after it (with `pending`: a
/// command read from the connection, not one of a transaction; see `lookahead`).
#[inline]
async fn run_command(
    session: &mut Session,
    command: &Command,
    out: &mut BytesMut,
    pending: Option<&mut Pending>,
) -> Flow {
    session.begin_command();
    let parsed = cmd::parse(command, session.shared.options.max_count);
    if let Some(flow) = cmd::run_now(session, &parsed, out) {
        return flow;
    }
    if let Some(pending) = pending {
        pending.load_tags_ahead(session, &parsed).await;
    }
    cmd::execute(session, command, parsed, out).await
}
