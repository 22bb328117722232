//! The store conformance suite (`idmint_core::store::conformance`) through each layer, over
//! the in-memory store on this machine's clock: a layer must not change any answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use idmint_core::store::conformance::{run_all, Profile, Subject};
use idmint_core::store::MemoryStore;
use idmint_core::SystemClock;
use idmint_store::Store;

use super::{layer, main_runtime, metered, watched, CorruptionLatch};

/// A fresh in-memory store as the server's `Store`.
fn memory() -> Store {
    let subject = Subject::of(Arc::new(MemoryStore::new(Arc::new(SystemClock::new()))));
    Store {
        segments: subject.segments,
        leases: subject.leases,
        display_url: "memory".into(),
        set: None,
    }
}

fn subject(store: Store) -> Subject {
    Subject {
        segments: store.segments,
        leases: store.leases,
    }
}

/// A layer that only runs the call: [`layer::layered`]'s forwarding alone.
#[derive(Debug)]
struct Bare;

impl layer::Layer for Bare {
    async fn around<T: Send + 'static>(
        &self,
        _: &'static str,
        _: layer::Calls,
        call: impl std::future::Future<Output = idmint_core::Result<T>> + Send + 'static,
    ) -> idmint_core::Result<T> {
        call.await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forwarding_of_every_layer_conforms() {
    run_all(Profile::SINGLE, || async {
        subject(layer::layered(memory(), Bare))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metered_store_conforms() {
    run_all(Profile::SINGLE, || async {
        subject(metered::metered(memory()))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_on_the_main_runtime_conforms() {
    let main = tokio::runtime::Handle::current();
    run_all(Profile::SINGLE, || {
        let main = main.clone();
        async move { subject(main_runtime::on_main_runtime(memory(), main)) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corruption_watched_store_conforms() {
    let latch = Arc::new(CorruptionLatch::default());
    run_all(Profile::SINGLE, || async {
        subject(watched(memory(), &latch))
    })
    .await;
    assert_eq!(latch.reason(), None);
}

/// The layers stacked as `serve` and `Ids::start` stack them, over SQLite: the server's own
/// store, through all of them at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stacked_layers_over_sqlite_conform() {
    let dir = std::env::temp_dir().join(format!("idmint-store-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let main = tokio::runtime::Handle::current();
    let latch = Arc::new(CorruptionLatch::default());
    let mut n = 0;
    run_all(Profile::SINGLE, || {
        n += 1;
        let url = format!("sqlite://{}/{n}.db", dir.display());
        let (main, latch) = (main.clone(), Arc::clone(&latch));
        async move {
            let options = idmint_store::StoreOptions::default();
            let store = idmint_store::open(&url, &options).await.unwrap();
            let store = main_runtime::on_main_runtime(metered::metered(store), main);
            subject(watched(store, &latch))
        }
    })
    .await;
    assert_eq!(latch.reason(), None);
    let _ = std::fs::remove_dir_all(&dir);
}
