//! Connection threads: each client connection lives on one thread, for its whole life.
//!
//! On tokio's work-stealing runtime, a connection that is woken by the I/O driver on one worker
//! is often run by the other, and every such hand-over wakes a parked thread (a futex call and
//! a context switch). With one request per read (`redis-benchmark -P 1`, plain HTTP clients)
//! that hand-over cost more than the request did (BENCHMARKS.md, "Figures behind design
//! choices"). So, as nginx and Redis do, connections are spread over
//! a few single-threaded runtimes, one per core: the accept loop hands each new connection to
//! the next thread in turn, and from then on its reads, commands and writes never leave it.
//!
//! The ID machinery (lease keeping, segment fetches) stays on the main runtime; connection
//! threads only call into it, and its wake-ups reach them through tokio's channels.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use tokio::net::TcpStream;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// A fixed set of single-threaded runtimes that serve connections.
#[derive(Debug)]
pub struct IoThreads {
    handles: Vec<Handle>,
    /// Round-robin cursor over `handles`.
    next: AtomicUsize,
    /// Ends the threads when dropped (each runtime then cancels what it still runs).
    stops: Mutex<Vec<oneshot::Sender<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl IoThreads {
    /// Starts `count` connection threads (at least one).
    pub fn start(count: usize) -> io::Result<Self> {
        let count = count.max(1);
        let mut handles = Vec::with_capacity(count);
        let mut stops = Vec::with_capacity(count);
        let mut threads = Vec::with_capacity(count);
        for index in 0..count {
            let runtime = Builder::new_current_thread().enable_all().build()?;
            handles.push(runtime.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("idmint-io-{index}"))
                    .spawn(move || {
                        runtime.block_on(async {
                            let _ = stopped.await;
                        });
                    })?,
            );
        }
        Ok(Self {
            handles,
            next: AtomicUsize::new(0),
            stops: Mutex::new(stops),
            threads: Mutex::new(threads),
        })
    }

    /// How many connection threads there are.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Always false: there is at least one thread.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// The runtime of the thread whose turn it is.
    fn next_handle(&self) -> &Handle {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.handles[turn % self.handles.len()]
    }

    /// Stops every thread, cancelling the connections they still serve, and waits for them.
    /// Called by [`Drop`] too; the listeners have drained their connections by then.
    pub fn stop(&self) {
        for stop in self
            .stops
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = stop.send(());
        }
        for thread in self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = thread.join();
        }
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A connection accepted on one runtime, on its way to the runtime that will serve it.
#[derive(Debug)]
pub(crate) enum Accepted {
    /// Served where it was accepted.
    Here(TcpStream),
    /// Taken off the accepting runtime's I/O driver, to be registered with the serving one's.
    Moved(std::net::TcpStream),
}

impl Accepted {
    /// The stream, registered with the runtime this is called on: call it inside the task
    /// that serves the connection.
    pub(crate) fn attach(self) -> io::Result<TcpStream> {
        match self {
            Accepted::Here(stream) => Ok(stream),
            Accepted::Moved(stream) => TcpStream::from_std(stream),
        }
    }
}

/// Where a newly accepted `stream` will be served: on the next connection thread when there
/// are some, else on the current runtime. Returns the stream to [`attach`](Accepted::attach)
/// there and the runtime to spawn its task on.
pub(crate) fn place(io: Option<&IoThreads>, stream: TcpStream) -> io::Result<(Accepted, Handle)> {
    match io {
        Some(io) => Ok((
            Accepted::Moved(stream.into_std()?),
            io.next_handle().clone(),
        )),
        None => Ok((Accepted::Here(stream), Handle::current())),
    }
}

/// Spawns `task` on `handle`; for call sites that do not keep the task's handle.
pub(crate) fn spawn_on(handle: &Handle, task: impl Future<Output = ()> + Send + 'static) {
    drop(handle.spawn(task));
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::error::Error;
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    type TestResult = Result<(), Box<dyn Error>>;

    /// Connections handed over in turn land on every thread, are served there (their I/O
    /// registered with that thread's runtime), and `stop` ends the threads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_are_spread_over_the_threads_and_served_there() -> TestResult {
        let io = Arc::new(IoThreads::start(2)?);
        assert_eq!(io.len(), 2);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (names, mut served) = tokio::sync::mpsc::unbounded_channel();
        let acceptor = {
            let io = Arc::clone(&io);
            tokio::spawn(async move {
                for _ in 0..4 {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let Ok((accepted, runtime)) = place(Some(&io), stream) else {
                        return;
                    };
                    let names = names.clone();
                    spawn_on(&runtime, async move {
                        let Ok(mut stream) = accepted.attach() else {
                            return;
                        };
                        let mut byte = [0u8; 1];
                        if stream.read_exact(&mut byte).await.is_ok() {
                            let _ = stream.write_all(&byte).await;
                            let name = std::thread::current().name().map(str::to_owned);
                            let _ = names.send(name);
                        }
                    });
                }
            })
        };
        for i in 0..4u8 {
            let mut client = tokio::net::TcpStream::connect(addr).await?;
            client.write_all(&[i]).await?;
            let mut echo = [0u8; 1];
            client.read_exact(&mut echo).await?;
            assert_eq!(echo, [i]);
        }
        acceptor.await?;
        let mut threads = HashSet::new();
        for _ in 0..4 {
            threads.insert(served.recv().await.flatten().unwrap_or_default());
        }
        let expected: HashSet<String> = ["idmint-io-0", "idmint-io-1"].map(String::from).into();
        assert_eq!(threads, expected);
        tokio::task::spawn_blocking(move || io.stop()).await?;
        Ok(())
    }

    /// Without connection threads, a connection stays on the accepting runtime.
    #[tokio::test]
    async fn without_threads_a_connection_stays_where_it_was_accepted() -> TestResult {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let client = tokio::net::TcpStream::connect(listener.local_addr()?);
        let ((stream, _), _client) = tokio::try_join!(listener.accept(), client)?;
        let (accepted, _) = place(None, stream)?;
        assert!(matches!(accepted, Accepted::Here(_)));
        accepted.attach()?;
        Ok(())
    }
}
