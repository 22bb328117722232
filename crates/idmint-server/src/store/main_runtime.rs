//! Where and when store calls run: every call on the main runtime, segment calls queued.
//!
//! **On the main runtime.** A database driver's connection belongs to the reactor of the runtime
//! that opened it. Requests are served on the I/O threads' runtimes (`io_threads.rs`), and a
//! request that needs a store call (a tag's first use, an admin route) while the pool is short
//! of connections would open one there. Those runtimes stop before the worker lease is
//! released at shutdown, so the release could draw a connection whose reactor was gone and
//! fail ("a Tokio 1.x context was found, but it is being shutdown"), leaving the worker ID
//! held until its lease expired. Spawning every call on the main runtime keeps every
//! connection on the one reactor that lives until the end.
//!
//! **Segment calls queued.** At most [`SEGMENT_CALLS_IN_FLIGHT`] run at once; the rest wait
//! their turn in arrival order before they start. A burst of first uses (10,000 new tags) or of
//! prefetches (10,000 tags passing their threshold together) starts one store call per tag. The
//! store serves a handful at a time (its connection pool), but every call started holds its
//! whole future (a few KiB with the driver's state) until it runs: 10,000 of them were 32 MiB
//! of heap, which the allocator then kept. Waiting here costs a few bytes per caller instead,
//! and the store's own timeout starts only when the call does, so a long queue is not mistaken
//! for an unreachable store. Worker-lease calls are not queued: a lease renewal must never
//! wait behind segment traffic.

use std::future::Future;
use std::sync::Arc;

use idmint_core::{Error, Result};
use idmint_store::Store;
use tokio::runtime::Handle;
use tokio::sync::Semaphore;

use super::layer::{layered, Calls, Layer};

/// Segment store calls allowed to run at once: above every backend's connection pool, so the
/// pool stays busy, and small enough that waiting calls cost nothing worth counting.
pub const SEGMENT_CALLS_IN_FLIGHT: usize = 32;

/// `store` with every call run on `main_runtime` (the runtime that outlives the I/O threads)
/// and its segment calls queued.
pub fn on_main_runtime(store: Store, main_runtime: Handle) -> Store {
    let layer = OnMainRuntime {
        turns: Arc::new(Semaphore::new(SEGMENT_CALLS_IN_FLIGHT)),
        runtime: main_runtime,
    };
    layered(store, layer)
}

/// The [`Layer`] that runs calls on the main runtime, segment calls in turn.
#[derive(Debug)]
struct OnMainRuntime {
    turns: Arc<Semaphore>,
    runtime: Handle,
}

impl Layer for OnMainRuntime {
    /// Runs `call` as a task of the main runtime and waits for it. The task runs to its end
    /// even if the caller stops waiting, so a store write is never cut off halfway by a client
    /// going away. A segment call first waits for a turn, and holds it until it ends (a call
    /// whose caller went away still counts against the queue); lease calls never wait behind
    /// segment traffic.
    async fn around<T: Send + 'static>(
        &self,
        _: &'static str,
        calls: Calls,
        call: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let turn = match calls {
            // The semaphore is never closed; the error arm only keeps this total.
            Calls::Segments => Some(
                Arc::clone(&self.turns)
                    .acquire_owned()
                    .await
                    .map_err(|_| Error::store_unavailable("the store queue is closed"))?,
            ),
            Calls::Leases => None,
        };
        let task = self.runtime.spawn(async move {
            let result = call.await;
            drop(turn);
            result
        });
        task.await.map_err(|error| {
            Error::store_unavailable("a store call did not finish").caused_by(error)
        })?
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Mutex;
    use std::time::Duration;

    use idmint_core::store::{LeaseRequest, MemoryStore, SegmentStore, TagSettings, WorkerLeases};
    use idmint_core::{SystemClock, Tag};

    use super::*;

    /// Notes the name of the thread each call runs on.
    #[derive(Debug, Default)]
    struct ThreadNoting(Arc<Mutex<Vec<String>>>);

    impl Layer for ThreadNoting {
        async fn around<T: Send + 'static>(
            &self,
            _: &'static str,
            _: Calls,
            call: impl Future<Output = Result<T>> + Send + 'static,
        ) -> Result<T> {
            let name = std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_owned();
            self.0.lock().unwrap().push(name);
            call.await
        }
    }

    /// Calls made from another runtime's thread (an I/O thread's) run on the main runtime,
    /// whose reactor outlives the I/O threads: the shutdown bug this module exists for.
    #[test]
    fn calls_from_another_runtime_run_on_the_main_runtime() {
        let main = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("main-runtime")
            .build()
            .unwrap();
        let memory = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
        let memory = Store {
            segments: Arc::clone(&memory) as Arc<dyn SegmentStore>,
            leases: memory as Arc<dyn WorkerLeases>,
            display_url: "memory".into(),
            set: None,
        };
        let threads = Arc::new(Mutex::new(Vec::new()));
        let noting = layered(memory, ThreadNoting(Arc::clone(&threads)));
        let store = on_main_runtime(noting, main.handle().clone());
        let io_thread = std::thread::Builder::new()
            .name("io-thread".into())
            .spawn(move || {
                let io = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                io.block_on(async {
                    let tag = Tag::new("orders").unwrap();
                    let settings = TagSettings::default();
                    store.segments.create_tag(&tag, &settings).await.unwrap();
                    let range = store.segments.allocate(&tag, 10).await.unwrap();
                    store.segments.list_tags().await.unwrap();
                    let lease = store
                        .leases
                        .acquire(&LeaseRequest {
                            node_name: "a".into(),
                            worker_count: 4,
                            worker_id: None,
                            ttl: Duration::from_secs(10),
                            id_space: None,
                            partition: idmint_core::store::Partition::WHOLE,
                        })
                        .await
                        .unwrap();
                    store.leases.release(&lease, 1).await.unwrap();
                    range
                })
            })
            .unwrap();
        let range = io_thread.join().unwrap();
        assert_eq!(range.end - range.start, 10);
        let threads = threads.lock().unwrap().clone();
        assert_eq!(threads.len(), 5);
        assert!(
            threads.iter().all(|name| name == "main-runtime"),
            "{threads:?}"
        );
    }

    /// Segment calls beyond the queue's turns wait; every one still completes.
    #[test]
    fn more_segment_calls_than_turns_all_complete() {
        let main = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let memory = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
        memory.set_latency(Duration::from_millis(2));
        let store = on_main_runtime(
            Store {
                segments: Arc::clone(&memory) as Arc<dyn SegmentStore>,
                leases: memory as Arc<dyn WorkerLeases>,
                display_url: "memory".into(),
                set: None,
            },
            main.handle().clone(),
        );
        let mut ranges = main.block_on(async {
            let tag = Tag::new("orders").unwrap();
            let settings = TagSettings::default();
            store.segments.create_tag(&tag, &settings).await.unwrap();
            let calls = (0..4 * SEGMENT_CALLS_IN_FLIGHT).map(|_| {
                let (segments, tag) = (Arc::clone(&store.segments), tag.clone());
                tokio::spawn(async move { segments.allocate(&tag, 5).await.unwrap() })
            });
            let mut ranges = Vec::new();
            for call in calls.collect::<Vec<_>>() {
                ranges.push(call.await.unwrap());
            }
            ranges
        });
        ranges.sort_by_key(|range| range.start);
        assert_eq!(ranges.len(), 4 * SEGMENT_CALLS_IN_FLIGHT);
        assert!(ranges.windows(2).all(|pair| pair[0].end <= pair[1].start));
    }
}
