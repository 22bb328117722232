//! What the store tests share: opening each backend in a namespace of its own.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use idmint_store::{Store, StoreOptions};

/// A namespace no other test (in this or any earlier run) uses: std's `RandomState` is seeded
/// from the OS per process, so the prefix differs between runs against a long-lived server.
pub fn fresh_namespace() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!(
        "t{:x}_{}",
        hasher.finish() & 0xFFFF_FFFF,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Options for a test in `namespace`.
pub fn options(namespace: &str) -> StoreOptions {
    StoreOptions {
        namespace: namespace.to_owned(),
        ..StoreOptions::default()
    }
}

/// A SQLite file of its own, in the target folder's temporary space.
pub fn sqlite_url() -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-store-tests");
    std::fs::create_dir_all(&dir).unwrap();
    format!("sqlite://{}/{}.db", dir.display(), fresh_namespace())
}

/// The URL of a server backend, from the environment `scripts/with-stores` sets up. A missing
/// server fails the test: the suite must never pass by skipping a backend.
pub fn server_url(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: run the tests through scripts/test (or scripts/with-stores), which starts the servers")
    })
}

/// Opens `url` in a fresh namespace.
pub async fn open(url: &str) -> (Store, String) {
    let namespace = fresh_namespace();
    let store = idmint_store::open(url, &options(&namespace)).await.unwrap();
    (store, namespace)
}
