//! The SQLite store writes again by itself after a failed batch of its group commit: a full
//! disk (a tmpfs of the test's own, filled with a file, then freed), a file made read-only
//! (immutable) and writable again, and callers that gave up mid-write (their futures dropped by
//! a timeout at every point of a write). Before the group
//! commit closed a connection whose transaction was in doubt, one failed `COMMIT` on a full
//! disk left sqlx counting the connection inside a transaction, and every later write failed
//! with `begin_with at non-zero transaction depth`, however much space was freed.

use crate::common;
use crate::tmpfs::Tmpfs;

use std::ops::Range;
use std::time::Duration;

use idmint_core::store::TagSettings;
use idmint_core::{Error, Tag};
use idmint_store::{Store, StoreOptions};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

fn tag(name: &str) -> Tag {
    Tag::new(name).unwrap()
}

/// Creates tag `t` and returns a first range of it.
async fn first_range(store: &Store) -> Range<u64> {
    store
        .segments
        .create_tag(&tag("t"), &TagSettings::default())
        .await
        .unwrap();
    store.segments.allocate(&tag("t"), 10).await.unwrap()
}

/// A new tag and a range of `t` succeed at once (no retry), `times` times over, each range
/// above `floor`; returns the end of the last.
async fn writes_succeed(store: &Store, label: &str, times: usize, mut floor: u64) -> u64 {
    for i in 0..times {
        store
            .segments
            .create_tag(&tag(&format!("{label}-{i}")), &TagSettings::default())
            .await
            .unwrap_or_else(|e| panic!("write {i} after {label}: {e:?}"));
        let range = store
            .segments
            .allocate(&tag("t"), 10)
            .await
            .unwrap_or_else(|e| panic!("allocation {i} after {label}: {e:?}"));
        assert!(
            range.start >= floor,
            "{range:?} below {floor} after {label}"
        );
        floor = range.end;
    }
    floor
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writes_again_once_a_full_disk_has_room() {
    let disk = Tmpfs::mount("store-full-disk", "2m");
    let url = format!("sqlite://{}/idmint.db", disk.path().display());
    let (store, _) = common::open(&url).await;
    let first = first_range(&store).await;

    let filler = disk.fill();
    // The write-ahead log may still have a little room: write until the disk refuses.
    let mut refused = None;
    for i in 0..2_000 {
        let created = store
            .segments
            .create_tag(&tag(&format!("full-{i}")), &TagSettings::default())
            .await;
        if let Err(error) = created {
            refused = Some(error);
            break;
        }
    }
    let error = refused.expect("2,000 tags written to a full disk");
    assert!(
        matches!(error, Error::StoreUnavailable { .. }),
        "a full disk is not unavailable (retry): {error:?}"
    );
    assert!(
        format!("{error:?}").contains("full"),
        "the cause is not named: {error:?}"
    );
    // Still full: an allocation fails the same way, and takes no range.
    let still = store.segments.allocate(&tag("t"), 10).await;
    assert!(
        matches!(still, Err(Error::StoreUnavailable { .. })),
        "{still:?}"
    );

    std::fs::remove_file(filler).unwrap();
    writes_succeed(&store, "freed", 20, first.end).await;
}

/// `chattr SIGNi` on `paths`: the immutable attribute refuses an open for writing even to root
/// (a mode change would not), and, like a mode change, leaves descriptors already open alone.
fn chattr(sign: char, paths: &[std::path::PathBuf]) {
    let status = std::process::Command::new("chattr")
        .arg(format!("{sign}i"))
        .args(paths)
        .status()
        .expect("chattr (e2fsprogs)");
    assert!(status.success(), "chattr {sign}i {paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writes_again_once_a_read_only_file_is_writable() {
    let disk = Tmpfs::mount("store-read-only", "16m");
    let file = disk.path().join("idmint.db");
    let url = format!("sqlite://{}", file.display());
    let options = StoreOptions {
        call_timeout: Duration::from_millis(300),
        ..common::options(&common::fresh_namespace())
    };
    let store = idmint_store::open(&url, &options).await.unwrap();
    let first = first_range(&store).await;

    // The store's connections are opened while the file is read-only: another connection,
    // opened before, holds the write lock, so the store's writes wait for it, time out, and
    // their connections are closed; the new ones SQLite opens read-only.
    let mut other = SqliteConnectOptions::new()
        .filename(&file)
        .connect()
        .await
        .unwrap();
    let hold = other.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let mut immutable: Vec<_> = ["idmint.db", "idmint.db-wal", "idmint.db-shm"]
        .iter()
        .map(|name| disk.path().join(name))
        .filter(|path| path.exists())
        .collect();
    immutable.push(disk.path().to_owned());
    chattr('+', &immutable);
    for i in 0..6 {
        let created = store
            .segments
            .create_tag(&tag(&format!("locked-{i}")), &TagSettings::default())
            .await;
        assert!(
            matches!(created, Err(Error::StoreUnavailable { .. })),
            "{created:?}"
        );
    }
    hold.rollback().await.unwrap();
    other.close().await.unwrap();
    let mut read_only = 0;
    for i in 0..6 {
        match store
            .segments
            .create_tag(&tag(&format!("read-only-{i}")), &TagSettings::default())
            .await
        {
            Err(error @ Error::StoreUnavailable { .. }) => {
                read_only += usize::from(format!("{error:?}").contains("readonly"));
            }
            other => panic!("a write to a read-only file: {other:?}"),
        }
    }
    assert!(read_only > 0, "no write met the read-only file");

    chattr('-', &immutable);
    // A connection opened read-only fails one write and is closed: at most the pool's size of
    // writes fail (4), then every write succeeds. (Before, such a connection went back to the
    // pool after its batch committed the others' writes, and failed writes for good.)
    let mut failed = 0;
    let mut floor = first.end;
    for i in 0..40 {
        let created = store
            .segments
            .create_tag(&tag(&format!("writable-{i}")), &TagSettings::default())
            .await;
        match created {
            Ok(_) => {}
            Err(Error::StoreUnavailable { .. }) if i < 4 => failed += 1,
            Err(error) => panic!("write {i} after the file was writable again: {error:?}"),
        }
        if let Ok(range) = store.segments.allocate(&tag("t"), 10).await {
            assert!(range.start >= floor, "{range:?} below {floor}");
            floor = range.end;
        } else {
            assert!(
                i < 4,
                "allocation {i} failed after the file was writable again"
            );
            failed += 1;
        }
    }
    assert!(
        failed <= 4,
        "{failed} writes failed after the file was writable again"
    );
    writes_succeed(&store, "writable-again", 20, floor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writes_again_after_callers_gave_up_mid_write() {
    let url = common::sqlite_url();
    let (store, _) = common::open(&url).await;
    let first = first_range(&store).await;

    // 600 writes at once, each given up after 20 µs to 3 ms: some before they queue, some
    // waiting in the queue, some between their statements, some during the commit.
    let writes: Vec<_> = (0..600u64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let patience = Duration::from_micros(20 + (i * 7_919) % 3_000);
                let write = async {
                    if i % 2 == 0 {
                        store.segments.allocate(&tag("t"), 10).await.map(Some)
                    } else {
                        let settings = TagSettings::default();
                        let created = store
                            .segments
                            .create_tag(&tag(&format!("hurried-{i}")), &settings)
                            .await;
                        created.map(|_| None)
                    }
                };
                tokio::time::timeout(patience, write).await
            })
        })
        .collect();
    let mut ranges = vec![first];
    let mut gave_up = 0;
    for write in writes {
        match write.await.unwrap() {
            Ok(Ok(range)) => ranges.extend(range),
            // A caller that gave up between its batch's statements rolls the batch back: the
            // others of the batch fail too, as unavailable (retry), never with a wrong answer.
            Ok(Err(Error::StoreUnavailable { .. })) => {}
            Ok(Err(error)) => panic!("a write failed otherwise than unavailable: {error:?}"),
            Err(_) => gave_up += 1,
        }
    }
    assert!(gave_up > 100, "only {gave_up} writes were given up");
    // Ranges that were confirmed never overlap.
    ranges.sort_by_key(|range| range.start);
    for pair in ranges.windows(2) {
        assert!(pair[0].end <= pair[1].start, "{pair:?} overlap");
    }

    // Every later write succeeds at once, above every range handed out (a range whose caller
    // gave up may have been committed: it is a gap, never reissued).
    let floor = ranges.last().map_or(0, |range| range.end);
    writes_succeed(&store, "dropped", 20, floor).await;
}
