//! `idmint serve` on a SQLite file whose pages are damaged for real (bytes overwritten on
//! disk): refused at start with the file, the problems and what to do; damage met while it
//! serves makes `/readyz` fail with `store_corrupt`, and it stays failed.

use crate::common;

use std::io::{Read, Seek, SeekFrom, Write};
use std::process::Stdio;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, SqliteConnection};

/// Tags in the file: enough for the tag table and its index to span many pages each.
const TAGS: usize = 2_000;

/// The tag whose pages get damaged, in the middle of both b-trees.
const VICTIM: &str = "tag-01000";

/// A tag far from the victim, on pages left intact.
const OTHER: &str = "tag-00000";

/// A store file at `url` (default namespace) with [`TAGS`] tags, every page in the main file
/// (the write-ahead log checkpointed and emptied), so bytes overwritten there are what SQLite
/// reads.
async fn file_with_tags(url: &str) {
    let options = idmint_store::StoreOptions::default();
    drop(idmint_store::open(url, &options).await.unwrap());
    let mut raw = raw(url).await;
    let mut tx = raw.begin().await.unwrap();
    for i in 0..TAGS {
        sqlx::query(
            "INSERT INTO idmint_segments (tag, max_id, step, description, updated_at_ms) \
             VALUES (?1, 1, 1000, '', 0)",
        )
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

/// A plain connection to the file of `url`, outside idmint.
async fn raw(url: &str) -> SqliteConnection {
    let path = url.strip_prefix("sqlite://").unwrap();
    SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap()
}

/// Overwrites the b-tree page header of every page holding `tag` (its row in the tag table and
/// its entry in the tag index) with bytes no page type has.
fn damage_pages_of(url: &str, tag: &str) {
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
    for page in pages {
        assert!(page > 0, "page 0 holds the file header");
        let content = &bytes[page * page_size..(page + 1) * page_size];
        assert!(
            !content.windows(OTHER.len()).any(|w| w == OTHER.as_bytes()),
            "page {page} also holds {OTHER}"
        );
        file.seek(SeekFrom::Start((page * page_size) as u64))
            .unwrap();
        file.write_all(&[0xFF; 8]).unwrap();
    }
    file.sync_all().unwrap();
}

#[tokio::test]
async fn serve_refuses_a_damaged_file_and_says_what_to_do() {
    let url = common::sqlite_url("damaged-at-start");
    file_with_tags(&url).await;
    damage_pages_of(&url, VICTIM);
    let mut child = common::idmint_command()
        .args(["serve", "--store", &url])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    for _ in 0..300 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("idmint serve did not exit on a damaged file");
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    for part in [
        url.as_str(),
        "is damaged",
        "btreeInitPage",
        "Restore the file from a backup",
        "Do not delete it",
    ] {
        assert!(stderr.contains(part), "no `{part}` in:\n{stderr}");
    }
    assert!(!stderr.contains("idmint serving"), "{stderr}");
}

/// `GET url`: the status and the JSON body.
async fn get(http: &reqwest::Client, url: &str) -> (u16, serde_json::Value) {
    let response = http.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn damage_met_while_serving_makes_readyz_fail_until_restart() {
    let url = common::sqlite_url("damaged-while-serving");
    file_with_tags(&url).await;
    let server = common::Server::start(&url, "damage-test");
    let http = reqwest::Client::new();
    let base = server.http.clone();
    assert_eq!(get(&http, &format!("{base}/readyz")).await.0, 200);
    let other = format!("{base}/v1/segment/{OTHER}");
    assert_eq!(get(&http, &other).await.0, 200);

    // The file was intact when the server checked it at start; now two pages are not.
    damage_pages_of(&url, VICTIM);
    // A write by another process makes the server's connections drop their cached pages at
    // their next read (as any write by another node does), so the damaged ones are read from
    // the file.
    let mut touch = raw(&url).await;
    sqlx::query(AssertSqlSafe(format!(
        "UPDATE idmint_segments SET description = 'touched' WHERE tag = '{OTHER}'"
    )))
    .execute(&mut touch)
    .await
    .unwrap();

    let (status, body) = get(&http, &format!("{base}/v1/segment/{VICTIM}")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (500, Some("store_corrupt")),
        "{body}"
    );
    let (status, body) = get(&http, &format!("{base}/readyz")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("store_corrupt")),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("malformed") && message.contains("backup"),
        "{message}"
    );

    // Intact pages still answer, but the node stays not ready: the latch holds.
    assert_eq!(get(&http, &other).await.0, 200);
    assert_eq!(get(&http, &format!("{base}/readyz")).await.0, 503);
    let client = redis::Client::open(server.resp.as_str()).unwrap();
    let mut resp = client.get_multiplexed_async_connection().await.unwrap();
    let refused: redis::RedisResult<i64> =
        redis::cmd("INCR").arg(VICTIM).query_async(&mut resp).await;
    let error = refused.unwrap_err();
    assert!(error.to_string().contains("store_corrupt"), "{error}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(get(&http, &format!("{base}/readyz")).await.0, 503);
}
