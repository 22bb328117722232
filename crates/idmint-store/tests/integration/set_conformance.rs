//! The conformance suite (`idmint_core::store::conformance`) through a store set of three:
//! what a node sees of a set behind the store traits is a store like any other, but for what
//! only a single store does (`Profile::SET`: a tag's end on every store, dated tags, the order
//! worker IDs are chosen in). The set's own rules (partitions, floors, routing) are tested in
//! `store_sets.rs`.

use idmint_core::store::conformance::{run_all, Profile, Subject};
use idmint_core::store::DEFAULT_BLOCK;
use idmint_store::{open_set, SetOptions};

use crate::common;

/// A new set of the stores at `urls` (a fresh namespace in each), asking store 0 first as the
/// suite needs, with the default block size.
async fn fresh_set(urls: Vec<String>) -> Subject {
    let set = SetOptions {
        block: DEFAULT_BLOCK,
        home: Some(0),
        node_name: "conformance".into(),
    };
    let options = common::options(&common::fresh_namespace());
    let store = open_set(&urls, &options, &set).await.unwrap();
    Subject {
        segments: store.segments,
        leases: store.leases,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_of_three_sqlite_stores_conforms() {
    run_all(Profile::SET, || {
        fresh_set(vec![
            common::sqlite_url(),
            common::sqlite_url(),
            common::sqlite_url(),
        ])
    })
    .await;
}

/// A set of three backends, each with its own behaviour under the set's routing.
#[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_of_postgres_mysql_and_redis_conforms() {
    run_all(Profile::SET, || {
        fresh_set(vec![
            common::server_url("IDMINT_TEST_POSTGRES_URL"),
            common::server_url("IDMINT_TEST_MYSQL_URL"),
            common::server_url("IDMINT_TEST_REDIS_URL"),
        ])
    })
    .await;
}
