//! `idmint serve` on a store set: when the node's own store stops answering (SIGSTOP of a
//! redis-server started here), the node takes a worker lease from another store of the set
//! and goes on minting, its IDs still increasing, without waiting for the old lease to expire.

use std::time::{Duration, Instant};

use crate::common::{ids_of, sqlite_url, Server};
use crate::own_redis::OwnRedis;

/// The worker field of an ID of the default layout (`time:41@1ms,worker:10,seq:12`).
fn worker_of(id: u64) -> u64 {
    (id >> 12) & 0x3FF
}

async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

async fn take(http: &reqwest::Client, url: &str) -> Result<Vec<u64>, String> {
    let response = http
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {body}"));
    }
    Ok(ids_of(&body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_moves_to_another_store_when_its_own_stops_answering() {
    let redis = OwnRedis::start("set-move");
    let (first, third) = (sqlite_url("set-move-0"), sqlite_url("set-move-2"));
    let redis_url = redis.url();
    // Store 1, the Redis one, is the node's home: its lease and ranges come from there.
    let server = Server::start_with(
        &first,
        "set-mover",
        &[
            "--store",
            &redis_url,
            "--store",
            &third,
            "--home-store",
            "1",
            // A hanging store counts as failed after 2 s instead of the default 5 s.
            "--store-call-timeout",
            "2s",
        ],
    );
    let http = reqwest::Client::new();
    let snowflakes = format!("{}/v1/snowflake?count=20", server.http);
    let segments = format!("{}/v1/segment/orders?count=20", server.http);
    let mut minted: Vec<u64> = Vec::new();
    let mut segment_ids: Vec<u64> = Vec::new();
    for _ in 0..20 {
        minted.extend(take(&http, &snowflakes).await.unwrap());
        segment_ids.extend(take(&http, &segments).await.unwrap());
    }
    let home_worker = worker_of(minted[0]);
    assert_eq!(home_worker % 3, 1, "the lease comes from the home store");

    // Freeze the home store and keep minting: every request succeeds, and within the
    // renewal period plus the store call timeout the node holds another store's worker ID.
    redis.signal("-STOP");
    let frozen_at = Instant::now();
    let mut failures = Vec::new();
    let mut moved_after = None;
    let mut slowest = Duration::ZERO;
    while frozen_at.elapsed() < Duration::from_secs(20) {
        let asked = Instant::now();
        match take(&http, &snowflakes).await {
            Ok(ids) => {
                if moved_after.is_none() && ids.iter().any(|&id| worker_of(id) != home_worker) {
                    moved_after = Some(frozen_at.elapsed());
                }
                minted.extend(ids);
            }
            Err(error) => failures.push(error),
        }
        match take(&http, &segments).await {
            Ok(ids) => segment_ids.extend(ids),
            Err(error) => failures.push(error),
        }
        slowest = slowest.max(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let moved_after = moved_after.expect("the node never moved off the frozen store");
    // Within a renewal period (2 s) and the call timeout (2 s), plus the acquisition.
    assert!(
        moved_after < Duration::from_secs(6),
        "moved only after {moved_after:?}"
    );
    println!(
        "store set: moved {moved_after:?} after the freeze; slowest request pair {slowest:?}; \
         {} snowflakes, {} segment IDs; failures {failures:?}",
        minted.len(),
        segment_ids.len()
    );
    assert!(failures.is_empty(), "{failures:?}");
    let new_worker = worker_of(*minted.last().unwrap());
    assert_ne!(new_worker % 3, 1, "the new lease comes from another store");
    // One client, one node: its IDs increase across the move.
    assert!(
        minted.windows(2).all(|w| w[0] < w[1]),
        "snowflakes out of order"
    );
    assert!(
        segment_ids.windows(2).all(|w| w[0] < w[1]),
        "segment IDs out of order"
    );
    assert!(server
        .log()
        .iter()
        .any(|line| line.contains("moved to another store of the set")));
    // Ready while any store answers, and it says which one does not.
    let ready = get_json(&http, &format!("{}/readyz", server.http)).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let up: Vec<bool> = ready["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["up"].as_bool().unwrap())
        .collect();
    assert_eq!(up, [true, false, true], "{ready}");
    assert_eq!(ready["stores"][1]["home"], true);
    let workers = get_json(&http, &format!("{}/v1/workers", server.http)).await;
    assert_eq!(workers["stores"][1]["up"], false, "{workers}");
    let held = workers["node"]["worker_id"].as_u64().unwrap();
    let row = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["worker_id"] == held)
        .unwrap_or_else(|| panic!("the node's lease is not listed: {workers}"));
    assert_eq!(row["store"], held % 3, "{workers}");
    assert_ne!(held % 3, 1);
    let metrics = http
        .get(format!("{}/metrics", server.http))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("idmint_lease_moves_total") && !l.ends_with(" 0")),
        "no lease move counted"
    );
    assert!(
        metrics.contains("idmint_store_up{store=\"1\"} 0"),
        "{metrics}"
    );

    // The store returns: nothing special is needed (it is up again at the next probe), and
    // the node stops cleanly.
    redis.signal("-CONT");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let ready = get_json(&http, &format!("{}/readyz", server.http)).await;
        if ready["stores"][1]["up"] == true {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "store 1 never came back: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    minted.extend(take(&http, &snowflakes).await.unwrap());
    assert!(minted.windows(2).all(|w| w[0] < w[1]));
    server.stop();
}

/// A store that was frozen when the set first opened (and the ID space was pinned) is skipped,
/// then, once it answers, opened in the background: it joins the set at its place and gets the
/// pinned ID space, so a node that moves to it later is granted a lease there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_down_at_the_first_start_joins_and_gets_the_id_space_later() {
    use idmint_core::store::{LeaseRequest, Partition};
    use idmint_core::{IdSpace, IdSpaceRecord, Layout};
    use idmint_store::{open_set, SetOptions, StoreOptions};

    let redis = OwnRedis::start("set-late");
    redis.signal("-STOP");
    let urls = [
        sqlite_url("set-late-0"),
        redis.url(),
        sqlite_url("set-late-2"),
    ];
    let options = StoreOptions {
        call_timeout: Duration::from_secs(1),
        ..StoreOptions::default()
    };
    let set_options = SetOptions {
        home: Some(0),
        ..SetOptions::default()
    };
    let set = open_set(&urls, &options, &set_options).await.unwrap();
    let status = set.set.clone().unwrap();
    let space = IdSpace::of(&Layout::parse("twitter").unwrap(), 0);
    set.leases
        .record_id_space(&IdSpaceRecord::first(space.clone()), 0)
        .await
        .unwrap();

    redis.signal("-CONT");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let states = status.probe(Duration::from_secs(1)).await;
        if states[1].up {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "store 1 never opened: {states:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let alone = idmint_store::open(&urls[1], &options).await.unwrap();
    let record = alone.leases.store_set().await.unwrap().unwrap();
    assert_eq!(record.partition.index, 1);
    let spaces = alone.leases.id_spaces().await.unwrap();
    assert_eq!(spaces.len(), 1);
    assert_eq!(spaces[0].space, space);
    // A lease of the pinned space is granted there.
    let lease = alone
        .leases
        .acquire(&LeaseRequest {
            node_name: "late".into(),
            worker_count: 1024,
            worker_id: None,
            ttl: Duration::from_secs(10),
            id_space: Some(1),
            partition: record.partition,
        })
        .await
        .unwrap();
    assert_eq!(Partition::of_worker(lease.worker_id, 3), 1);
}
