//! A SQLite file with damaged pages, damaged for real (bytes overwritten on disk): refused at
//! open with the file, the problems and what to do; damage that appears after open is reported
//! as corruption, distinct from any other store error.

use crate::common;

use std::io::{Read, Seek, SeekFrom, Write};

use idmint_core::{Error, Tag};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, SqliteConnection};

/// Tags in the file: enough for the tag table and its index to span many pages each.
const TAGS: usize = 2_000;

/// The tag whose pages get damaged, in the middle of both b-trees.
const VICTIM: &str = "tag-01000";

/// A tag far from the victim, on pages left intact.
const OTHER: &str = "tag-00000";

/// A store file at `url`, namespace `ns`, with [`TAGS`] tags, every page in the main file (the
/// write-ahead log checkpointed and emptied), so bytes overwritten there are what SQLite reads.
async fn file_with_tags(url: &str, ns: &str) {
    drop(idmint_store::open(url, &common::options(ns)).await.unwrap());
    let mut raw = raw(url).await;
    let mut tx = raw.begin().await.unwrap();
    let insert = format!(
        "INSERT INTO {ns}_segments (tag, max_id, step, description, updated_at_ms) \
         VALUES (?1, 1, 1000, '', 0)"
    );
    for i in 0..TAGS {
        sqlx::query(AssertSqlSafe(insert.clone()))
            .bind(format!("tag-{i:05}"))
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(busy, 0, "the checkpoint was blocked");
    raw.close().await.unwrap();
}

/// A plain connection to the file of `url`, outside the store.
async fn raw(url: &str) -> SqliteConnection {
    let path = url.strip_prefix("sqlite://").unwrap();
    SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap()
}

/// Overwrites the b-tree page header of every page of the file holding `tag` (its row in the
/// tag table and its entry in the tag index) with bytes no page type has. Returns the pages.
fn damage_pages_of(url: &str, tag: &str) -> Vec<u64> {
    let path = url.strip_prefix("sqlite://").unwrap();
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        size => u64::from(size),
    };
    let mut pages: Vec<u64> = bytes
        .windows(tag.len())
        .enumerate()
        .filter(|(_, window)| *window == tag.as_bytes())
        .map(|(offset, _)| offset as u64 / page_size)
        .collect();
    pages.dedup();
    assert!(pages.len() >= 2, "{tag} found on pages {pages:?}");
    for page in &pages {
        // Page 0 holds the file header: never damaged here (that is "not a database").
        assert!(*page > 0);
        let start = (page * page_size) as usize;
        let content = &bytes[start..start + page_size as usize];
        assert!(
            !content.windows(OTHER.len()).any(|w| w == OTHER.as_bytes()),
            "page {page} also holds {OTHER}"
        );
        file.seek(SeekFrom::Start(page * page_size)).unwrap();
        file.write_all(&[0xFF; 8]).unwrap();
    }
    file.sync_all().unwrap();
    pages
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
    let path = url.strip_prefix("sqlite://").unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
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
