//! What the store tests share: opening each backend in a namespace of its own.

use std::path::PathBuf;

use idmint_store::{Store, StoreOptions};

/// A namespace no other test (in this or any earlier run) uses: std's `RandomState` is seeded
/// from the OS per process, so the prefix differs between runs against a long-lived server.
pub fn fresh_namespace() -> String {
    idmint_test_support::namespace("store")
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
    idmint_test_support::server_url(variable)
}

/// Opens `url` in a fresh namespace.
pub async fn open(url: &str) -> (Store, String) {
    let namespace = fresh_namespace();
    let store = idmint_store::open(url, &options(&namespace)).await.unwrap();
    (store, namespace)
}
