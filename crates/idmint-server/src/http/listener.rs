//! The HTTP/1.1 accept loop, on hyper's connection builder so that slow and oversized clients
//! are bounded:
//!
//! - a request line and headers must arrive within [`HEADER_READ_TIMEOUT`] of the server
//!   starting to wait for them, or the connection is closed (hyper's `header_read_timeout`): a
//!   slowloris client trickling a request a byte at a time, or one that connects and sends
//!   nothing, no longer holds a connection (and its task and file descriptor) forever. The same
//!   timer runs while a keep-alive connection waits for its next request, so idle keep-alive
//!   connections close after it too;
//! - a request line and headers above [`MAX_HEADER_SIZE`] bytes get `431` (hyper's
//!   `max_header_size`), so a partial head buffers at most that much per connection;
//! - at most [`MAX_CONNECTIONS`] connections are served at once, and at most
//!   `per_address` from one client address; one beyond is answered `503`
//!   (`too_many_connections`) and closed, as the Redis-protocol listener does;
//! - a connection whose first request has not arrived within `auth_timeout` is closed (the
//!   header timeout alone would let a silent client hold it for 30 s); with an `idle_timeout`
//!   below the header timeout, idle keep-alive connections close after it.
//!
//! `axum::serve` offers none of these settings. Graceful shutdown is hyper-util's: stop
//! accepting, let each connection finish the request it is serving, close idle ones.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use idmint_core::ErrorCode;
use tokio::net::{TcpListener, TcpStream};

use super::timing::{self, RequestTimers, Timed};
use crate::accept::{Admission, Admitted, Refusal};
use crate::config::ConnectionLimits;
use crate::io_threads::{self, IoThreads};
use crate::tally::ListenerTallies;
use crate::telemetry;
use crate::tls::Tls;

/// How long a client may take to send a request line and its headers, counted from when the
/// server starts waiting for them: when the connection is accepted, and on a keep-alive
/// connection when the previous response has been written. hyper's own default.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest request line plus headers, in bytes. Far above what any client of an ID service
/// sends, far below hyper's ~400 KB default buffer.
pub const MAX_HEADER_SIZE: usize = 64 * 1024;

/// Most HTTP connections served at once (the Redis-protocol listener has the same default).
pub const MAX_CONNECTIONS: usize = 10_000;

/// Bounds on the connections of the HTTP listener, and where they run.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// See [`HEADER_READ_TIMEOUT`], the default.
    pub header_read_timeout: Duration,
    /// See [`MAX_HEADER_SIZE`], the default; hyper needs at least 8 KiB and is given that when
    /// asked for less.
    pub max_header_size: usize,
    /// Most connections (default [`MAX_CONNECTIONS`]) in all and per address, how long the
    /// first request may take to arrive, and the idle timeout.
    pub limits: ConnectionLimits,
    /// The threads that serve connections; `None` serves them on the accepting runtime.
    pub io: Option<Arc<IoThreads>>,
    /// TLS: when set, every connection starts with a TLS handshake (`https://`).
    pub tls: Option<Tls>,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_header_size: MAX_HEADER_SIZE,
            limits: ConnectionLimits::default(),
            io: None,
            tls: None,
        }
    }
}

/// Serves `router` on `listener` with the default [`ConnectionOptions`] until `shutdown`
/// completes, then stops accepting and waits for in-flight requests to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(listener, router, ConnectionOptions::default(), shutdown).await
}

/// [`serve`] with chosen bounds. Connections are admitted as `crate::accept` says (limit,
/// `TCP_NODELAY`, accept errors logged and retried, never returned).
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    options: ConnectionOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    /// hyper's smallest read buffer: a smaller head limit would never be reached.
    const HYPER_MIN_BUFFER: usize = 8 * 1024;
    let limits = options.limits;
    let header_read_timeout = limits
        .idle_timeout
        .map_or(options.header_read_timeout, |idle| {
            idle.min(options.header_read_timeout)
        });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_header_size(options.max_header_size.max(HYPER_MIN_BUFFER));
    let tallies = ListenerTallies::start("http");
    let timers = RequestTimers::register();
    let admission = Admission::new(
        "HTTP",
        limits.max_connections,
        limits.per_address,
        options.io,
        Arc::clone(&tallies),
    );
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let admitted = tokio::select! {
            () = &mut shutdown => break,
            admitted = admission.next(&listener, refuse) => admitted,
        };
        let Admitted {
            stream,
            runtime,
            peer,
            permit,
        } = admitted;
        let service = Timed {
            inner: TowerToHyperService::new(router.clone()),
            connection: Arc::new(timing::Connection {
                timers: timers.clone(),
                peer,
                tallies: Arc::clone(&tallies),
            }),
        };
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tallies = Arc::clone(&tallies);
        let tls = options.tls.clone();
        io_threads::spawn_on(&runtime, async move {
            let stream = match stream.attach() {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%peer, %error, "HTTP connection could not be attached");
                    return;
                }
            };
            let connection = Connection {
                builder,
                service,
                watcher,
                limits,
                tallies: &tallies,
                peer,
            };
            match tls {
                None => connection.serve(stream).await,
                Some(tls) => {
                    match tokio::time::timeout(limits.auth_timeout, tls.http().accept(stream)).await
                    {
                        Ok(Ok(stream)) => connection.serve(stream).await,
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "TLS handshake failed");
                            tallies.tls_failed.add(peer);
                        }
                        Err(_) => tallies.tls_failed.add(peer),
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// What serving one admitted connection takes.
struct Connection<'a> {
    builder: http1::Builder,
    service: Timed<TowerToHyperService<Router>>,
    watcher: hyper_util::server::graceful::Watcher,
    limits: ConnectionLimits,
    tallies: &'a ListenerTallies,
    peer: std::net::SocketAddr,
}

impl Connection<'_> {
    /// Serves requests on `stream` (TCP, or TLS over it) until it closes; closes it when no
    /// request arrived within `auth_timeout`.
    async fn serve<S>(self, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let seen = Arc::new(AtomicBool::new(false));
        let service = FirstRequest {
            inner: self.service,
            seen: Arc::clone(&seen),
        };
        let connection = self
            .watcher
            .watch(self.builder.serve_connection(TokioIo::new(stream), service));
        let mut connection = std::pin::pin!(connection);
        let first_request_by = tokio::time::sleep(self.limits.auth_timeout);
        let ended = tokio::select! {
            ended = connection.as_mut() => ended,
            () = first_request_by, if !seen.load(Ordering::Relaxed) => {
                if seen.load(Ordering::Relaxed) {
                    connection.await
                } else {
                    self.tallies.auth_timeout.add(self.peer);
                    Ok(())
                }
            }
        };
        // A header read timeout, a malformed request or a peer gone are all ordinary here.
        if let Err(error) = ended {
            tracing::debug!(peer = %self.peer, %error, "HTTP connection ended");
        }
    }
}

/// The router's service, noting that a request arrived (the first one ends the connection's
/// `auth_timeout`).
#[derive(Clone)]
struct FirstRequest<S> {
    inner: S,
    seen: Arc<AtomicBool>,
}

impl<S, B> hyper::service::Service<hyper::Request<B>> for FirstRequest<S>
where
    S: hyper::service::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, request: hyper::Request<B>) -> Self::Future {
        self.seen.store(true, Ordering::Relaxed);
        self.inner.call(request)
    }
}

/// Answers a connection beyond a limit with a `503`; the caller closes it.
fn refuse(stream: &TcpStream, why: Refusal) {
    const CODE: &str = ErrorCode::TooManyConnections.as_str();
    telemetry::record_http_error(CODE);
    let body = serde_json::json!({
        "error": {
            "code": CODE,
            "message": why.message(),
        }
    })
    .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

#[cfg(test)]
mod tests {
    use std::error::Error;
    use std::net::SocketAddr;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::oneshot;
    use tokio::task::JoinHandle;

    use super::*;
    use crate::test_io::read_to_close;

    type TestResult = Result<(), Box<dyn Error>>;

    /// A listener serving `GET /` with `options`; the sender stops it.
    async fn start(
        options: ConnectionOptions,
    ) -> Result<(SocketAddr, oneshot::Sender<()>, JoinHandle<io::Result<()>>), Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let router = Router::new().route("/", get(|| async { "ok" }));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_with(listener, router, options, async {
            let _ = stopped.await;
        }));
        Ok((addr, stop, task))
    }

    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";

    #[tokio::test]
    async fn slow_silent_and_idle_connections_are_closed_after_the_header_timeout() -> TestResult {
        let (addr, stop, task) = start(ConnectionOptions {
            header_read_timeout: Duration::from_millis(300),
            ..ConnectionOptions::default()
        })
        .await?;
        let mut silent = TcpStream::connect(addr).await?;
        let mut partial = TcpStream::connect(addr).await?;
        partial
            .write_all(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
            .await?;
        let mut idle = TcpStream::connect(addr).await?;
        idle.write_all(GET).await?;
        let mut answer = [0u8; 17];
        idle.read_exact(&mut answer).await?;
        assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n");
        // Nothing more is sent: each is closed by the server (no answer to the partial one).
        assert_eq!(read_to_close(&mut silent).await?, "");
        assert_eq!(read_to_close(&mut partial).await?, "");
        assert!(read_to_close(&mut idle).await?.ends_with("ok"));
        // A client that sends its request in time is served.
        let mut prompt = TcpStream::connect(addr).await?;
        prompt.write_all(GET).await?;
        prompt.read_exact(&mut answer).await?;
        assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n");
        let _ = stop.send(());
        task.await??;
        Ok(())
    }

    #[tokio::test]
    async fn heads_over_the_limit_get_431() -> TestResult {
        let (addr, stop, task) = start(ConnectionOptions {
            max_header_size: 16 * 1024,
            ..ConnectionOptions::default()
        })
        .await?;
        let mut stream = TcpStream::connect(addr).await?;
        let header = format!("X-Big: {}\r\n", "a".repeat(20 * 1024));
        let request = format!("GET / HTTP/1.1\r\nHost: t\r\n{header}\r\n");
        stream.write_all(request.as_bytes()).await?;
        let reply = read_to_close(&mut stream).await?;
        assert!(
            reply.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{reply:?}"
        );
        let _ = stop.send(());
        task.await??;
        Ok(())
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_get_503_and_the_slot_frees() -> TestResult {
        let (addr, stop, task) = start(ConnectionOptions {
            limits: ConnectionLimits {
                max_connections: 1,
                ..ConnectionLimits::default()
            },
            ..ConnectionOptions::default()
        })
        .await?;
        let mut first = TcpStream::connect(addr).await?;
        first.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n").await?;
        let mut second = TcpStream::connect(addr).await?;
        let reply = read_to_close(&mut second).await?;
        assert!(
            reply.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{reply:?}"
        );
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or_default();
        let body: serde_json::Value = serde_json::from_str(body)?;
        assert_eq!(body["error"]["code"], "too_many_connections");
        // The first one finishes its request and leaves: its slot is free again.
        first.write_all(b"Connection: close\r\n\r\n").await?;
        assert!(read_to_close(&mut first).await?.ends_with("ok"));
        let mut served = false;
        for _ in 0..100 {
            let mut third = TcpStream::connect(addr).await?;
            third.write_all(GET).await?;
            let mut answer = [0u8; 12];
            third.read_exact(&mut answer).await?;
            if &answer == b"HTTP/1.1 200" {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(served, "the connection slot was never freed");
        let _ = stop.send(());
        task.await??;
        Ok(())
    }

    #[tokio::test]
    async fn shutdown_closes_idle_connections_and_finishes() -> TestResult {
        let (addr, stop, task) = start(ConnectionOptions::default()).await?;
        let mut idle = TcpStream::connect(addr).await?;
        idle.write_all(GET).await?;
        let mut answer = [0u8; 17];
        idle.read_exact(&mut answer).await?;
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(10), task).await???;
        assert!(read_to_close(&mut idle).await?.ends_with("ok"));
        Ok(())
    }
}
