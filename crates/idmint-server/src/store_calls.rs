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
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Renewal, SegmentStore, TagInfo, TagSettings, TagUpdate,
    WorkerLeases,
};
use idmint_core::{Error, IdSpaceRecord, Result, Tag};
use idmint_store::Store;
use tokio::runtime::Handle;
use tokio::sync::Semaphore;

/// Segment store calls allowed to run at once: above every backend's connection pool, so the
/// pool stays busy, and small enough that waiting calls cost nothing worth counting.
pub const SEGMENT_CALLS_IN_FLIGHT: usize = 32;

/// `store` with every call run on `main_runtime` (the runtime that outlives the I/O threads)
/// and its segment calls queued.
pub fn on_main_runtime(store: Store, main_runtime: Handle) -> Store {
    Store {
        segments: Arc::new(QueuedSegments {
            inner: store.segments,
            turns: Arc::new(Semaphore::new(SEGMENT_CALLS_IN_FLIGHT)),
            runtime: main_runtime.clone(),
        }),
        leases: Arc::new(MainRuntimeLeases {
            inner: store.leases,
            runtime: main_runtime,
        }),
        display_url: store.display_url,
    }
}

/// Runs `call` as a task of `runtime` and waits for it. The task runs to its end even if the
/// caller stops waiting, so a store write is never cut off halfway by a client going away.
async fn run_on<T: Send + 'static>(
    runtime: &Handle,
    call: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime
        .spawn(call)
        .await
        .map_err(|error| Error::store_unavailable("a store call did not finish").caused_by(error))?
}

/// [`SegmentStore`] whose calls wait for one of a fixed number of turns, then run on the main
/// runtime.
#[derive(Debug)]
struct QueuedSegments {
    inner: Arc<dyn SegmentStore>,
    turns: Arc<Semaphore>,
    runtime: Handle,
}

impl QueuedSegments {
    /// Waits for a turn, then runs `call` on the main runtime holding it: a call whose caller
    /// went away still counts against the queue until it ends.
    async fn queued<T, F, Fut>(&self, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<dyn SegmentStore>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        // The semaphore is never closed; the error arm only keeps this total.
        let turn = Arc::clone(&self.turns)
            .acquire_owned()
            .await
            .map_err(|_| Error::store_unavailable("the store queue is closed"))?;
        let call = call(Arc::clone(&self.inner));
        run_on(&self.runtime, async move {
            let result = call.await;
            drop(turn);
            result
        })
        .await
    }
}

#[async_trait]
impl SegmentStore for QueuedSegments {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let tag = tag.clone();
        self.queued(|store| async move { store.allocate(&tag, step).await })
            .await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        let tag = tag.clone();
        self.queued(|store| async move { store.give_back(&tag, unused).await })
            .await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        let (tag, settings) = (tag.clone(), settings.clone());
        self.queued(|store| async move { store.create_tag(&tag, &settings).await })
            .await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        let (tag, update) = (tag.clone(), update.clone());
        self.queued(|store| async move { store.update_tag(&tag, &update).await })
            .await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let tag = tag.clone();
        self.queued(|store| async move { store.tag_info(&tag).await })
            .await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        self.queued(|store| async move { store.list_tags().await })
            .await
    }
}

/// [`WorkerLeases`] whose calls run on the main runtime, unqueued.
#[derive(Debug)]
struct MainRuntimeLeases {
    inner: Arc<dyn WorkerLeases>,
    runtime: Handle,
}

#[async_trait]
impl WorkerLeases for MainRuntimeLeases {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        let (store, request) = (Arc::clone(&self.inner), request.clone());
        run_on(&self.runtime, async move { store.acquire(&request).await }).await
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let (store, lease) = (Arc::clone(&self.inner), lease.clone());
        run_on(&self.runtime, async move {
            store.renew(&lease, hwm_ms, ttl).await
        })
        .await
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let (store, lease) = (Arc::clone(&self.inner), lease.clone());
        run_on(&self.runtime, async move {
            store.release(&lease, final_hwm_ms).await
        })
        .await
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        let store = Arc::clone(&self.inner);
        run_on(&self.runtime, async move { store.list_leases().await }).await
    }

    async fn clock_ms(&self) -> Result<u64> {
        let store = Arc::clone(&self.inner);
        run_on(&self.runtime, async move { store.clock_ms().await }).await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        let store = Arc::clone(&self.inner);
        run_on(&self.runtime, async move { store.id_spaces().await }).await
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let (store, record) = (Arc::clone(&self.inner), record.clone());
        run_on(&self.runtime, async move {
            store.record_id_space(&record, hwm_bound_ms).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Mutex;

    use idmint_core::store::MemoryStore;
    use idmint_core::SystemClock;

    use super::*;

    /// The in-memory store, noting the name of the thread each call ran on.
    #[derive(Debug)]
    struct ThreadNoting {
        inner: MemoryStore,
        threads: Mutex<Vec<String>>,
    }

    impl ThreadNoting {
        fn note(&self) {
            let name = std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_owned();
            self.threads.lock().unwrap().push(name);
        }
    }

    #[async_trait]
    impl SegmentStore for ThreadNoting {
        async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
            self.note();
            self.inner.allocate(tag, step).await
        }
        async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
            self.note();
            self.inner.give_back(tag, unused).await
        }
        async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
            self.note();
            self.inner.create_tag(tag, settings).await
        }
        async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
            self.note();
            self.inner.update_tag(tag, update).await
        }
        async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
            self.note();
            self.inner.tag_info(tag).await
        }
        async fn list_tags(&self) -> Result<Vec<TagInfo>> {
            self.note();
            self.inner.list_tags().await
        }
    }

    #[async_trait]
    impl WorkerLeases for ThreadNoting {
        async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
            self.note();
            self.inner.acquire(request).await
        }
        async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
            self.note();
            self.inner.renew(lease, hwm_ms, ttl).await
        }
        async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
            self.note();
            self.inner.release(lease, final_hwm_ms).await
        }
        async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
            self.note();
            self.inner.list_leases().await
        }
        async fn clock_ms(&self) -> Result<u64> {
            self.note();
            self.inner.clock_ms().await
        }
        async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
            self.note();
            self.inner.id_spaces().await
        }
        async fn record_id_space(&self, record: &IdSpaceRecord, bound: u64) -> Result<()> {
            self.note();
            self.inner.record_id_space(record, bound).await
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
        let noting = Arc::new(ThreadNoting {
            inner: MemoryStore::new(Arc::new(SystemClock::new())),
            threads: Mutex::new(Vec::new()),
        });
        let store = on_main_runtime(
            Store {
                segments: Arc::clone(&noting) as Arc<dyn SegmentStore>,
                leases: Arc::clone(&noting) as Arc<dyn WorkerLeases>,
                display_url: "memory".into(),
            },
            main.handle().clone(),
        );
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
        let threads = noting.threads.lock().unwrap().clone();
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
