//! `idmint serve` on a SQLite file whose pages are damaged for real (bytes overwritten on
//! disk): refused at start with the file, the problems and what to do; damage met while it
//! serves makes `/readyz` fail with `store_corrupt`, and it stays failed.

use crate::common;

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use idmint_test_support::sqlite_damage::{damage_pages_of, raw, OTHER, VICTIM};
use sqlx::AssertSqlSafe;

/// A store file at `url` (default namespace) with the fixture's tags, every page in the main
/// file.
async fn file_with_tags(url: &str) {
    let options = idmint_store::StoreOptions::default();
    drop(idmint_store::open(url, &options).await.unwrap());
    idmint_test_support::sqlite_damage::fill_with_tags(url, "idmint_segments").await;
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
