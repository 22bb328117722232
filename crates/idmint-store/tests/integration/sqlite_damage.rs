//! A SQLite file with damaged pages, damaged for real (bytes overwritten on disk): refused at
//! open with the file, the problems and what to do; damage that appears after open is reported
//! as corruption, distinct from any other store error.

use crate::common;

use std::io::Write;

use idmint_core::{Error, Tag};
use idmint_test_support::sqlite_damage::{damage_pages_of, path_of, raw, OTHER, VICTIM};
use sqlx::AssertSqlSafe;

/// A store file at `url`, namespace `ns`, with the fixture's tags, every page in the main file.
async fn file_with_tags(url: &str, ns: &str) {
    drop(idmint_store::open(url, &common::options(ns)).await.unwrap());
    idmint_test_support::sqlite_damage::fill_with_tags(url, &format!("{ns}_segments")).await;
}

#[tokio::test]
async fn a_damaged_page_is_refused_at_open_with_the_file_and_what_to_do() {
    let url = common::sqlite_url();
    let ns = common::fresh_namespace();
    file_with_tags(&url, &ns).await;
    damage_pages_of(&url, VICTIM);
    let err = idmint_store::open(&url, &common::options(&ns))
        .await
        .unwrap_err();
    let Error::StoreCorrupt { message, .. } = &err else {
        panic!("not refused as corrupt: {err:?}");
    };
    for part in [
        url.as_str(),
        "is damaged",
        "Page",
        "Restore the file from a backup",
        "Do not delete it",
        "max_id",
    ] {
        assert!(message.contains(part), "no `{part}` in: {message}");
    }
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused_at_open() {
    let url = common::sqlite_url();
    let ns = common::fresh_namespace();
    file_with_tags(&url, &ns).await;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path_of(&url))
        .unwrap();
    file.write_all(b"this is no SQLite header").unwrap();
    file.sync_all().unwrap();
    let err = idmint_store::open(&url, &common::options(&ns))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreCorrupt { message: m, .. } if m.contains(&url) && m.contains("backup")),
        "{err:?}"
    );
}

#[tokio::test]
async fn damage_after_open_is_reported_as_corruption() {
    let url = common::sqlite_url();
    let ns = common::fresh_namespace();
    file_with_tags(&url, &ns).await;
    let store = idmint_store::open(&url, &common::options(&ns))
        .await
        .unwrap();
    damage_pages_of(&url, VICTIM);
    // A write by another connection makes the store's connections drop their cached pages at
    // their next read, as any write by another node or process does: the damaged pages are
    // then read from the file.
    let touch = format!("UPDATE {ns}_segments SET description = 'touched' WHERE tag = ?1");
    let mut other = raw(&url).await;
    sqlx::query(AssertSqlSafe(touch))
        .bind(OTHER)
        .execute(&mut other)
        .await
        .unwrap();
    let victim = Tag::new(VICTIM).unwrap();
    let err = store.segments.allocate(&victim, 10).await.unwrap_err();
    // The driver's error is kept as the source, not flattened into the message.
    let cause = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        matches!(&err, Error::StoreCorrupt { .. })
            && cause.is_some_and(|cause| cause.contains("malformed")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    // Intact pages still answer: the damage is only seen where it is.
    let fine = Tag::new(OTHER).unwrap();
    assert_eq!(store.segments.allocate(&fine, 10).await.unwrap(), 1..11);
}
