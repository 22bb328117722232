//! A SQLite store file damaged for real: bytes of its pages overwritten on disk, as a failing
//! disk or a copy taken mid-write leaves them, for the tests that a damaged file is refused at
//! open (the store crate, `idmint serve`) and that damage met later is reported as corruption.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, SqliteConnection};

/// Tags [`fill_with_tags`] writes: enough for the tag table and its index to span many pages.
pub const TAGS: usize = 2_000;

/// The tag whose pages [`damage_pages_of`] is given in the tests: in the middle of both
/// b-trees, so the damage is to interior data, not to the first or last page.
pub const VICTIM: &str = "tag-01000";

/// A tag far from [`VICTIM`], whose pages stay intact: reading it still works.
pub const OTHER: &str = "tag-00000";

/// The file of a `sqlite://PATH` URL.
pub fn path_of(url: &str) -> &Path {
    Path::new(
        url.strip_prefix("sqlite://")
            .unwrap_or_else(|| panic!("not a sqlite:// URL: {url}")),
    )
}

/// Writes [`TAGS`] tags (`tag-00000`, `tag-00001`, ...) into `table` (a store's
/// `<namespace>_segments`, which the caller has created by opening the store), then checkpoints
/// and empties the write-ahead log, so every page is in the main file and bytes overwritten
/// there are what SQLite reads.
pub async fn fill_with_tags(url: &str, table: &str) {
    let mut raw = raw(url).await;
    let mut tx = raw.begin().await.expect("begin");
    let insert = format!(
        "INSERT INTO {table} (tag, max_id, step, description, updated_at_ms) \
         VALUES (?1, 1, 1000, '', 0)"
    );
    for i in 0..TAGS {
        sqlx::query(AssertSqlSafe(insert.clone()))
            .bind(format!("tag-{i:05}"))
            .execute(&mut *tx)
            .await
            .expect("insert a tag");
    }
    tx.commit().await.expect("commit");
    let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_one(&mut raw)
        .await
        .expect("checkpoint");
    assert_eq!(busy, 0, "the checkpoint was blocked");
    raw.close().await.expect("close");
}

/// A plain connection to the file of `url`, outside any store.
pub async fn raw(url: &str) -> SqliteConnection {
    SqliteConnectOptions::new()
        .filename(path_of(url))
        .connect()
        .await
        .expect("open the SQLite file")
}

/// Overwrites the b-tree page header of every page of the file holding `tag` (its row in the
/// tag table and its entry in the tag index) with bytes no page type has; returns the pages.
/// Asserts that none of them is page 0 (the file header: that would be "not a database") or
/// holds [`OTHER`].
pub fn damage_pages_of(url: &str, tag: &str) -> Vec<u64> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path_of(url))
        .expect("open the file to damage");
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).expect("read the file");
    let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        size => usize::from(size),
    };
    let mut pages: Vec<usize> = bytes
        .windows(tag.len())
        .enumerate()
        .filter(|(_, window)| *window == tag.as_bytes())
        .map(|(offset, _)| offset / page_size)
        .collect();
    pages.dedup();
    assert!(pages.len() >= 2, "{tag} found on pages {pages:?}");
    for &page in &pages {
        assert!(page > 0, "page 0 holds the file header");
        let content = &bytes[page * page_size..(page + 1) * page_size];
        assert!(
            !content.windows(OTHER.len()).any(|w| w == OTHER.as_bytes()),
            "page {page} also holds {OTHER}"
        );
        file.seek(SeekFrom::Start((page * page_size) as u64))
            .expect("seek");
        file.write_all(&[0xFF; 8]).expect("damage");
    }
    file.sync_all().expect("sync");
    pages.into_iter().map(|page| page as u64).collect()
}
