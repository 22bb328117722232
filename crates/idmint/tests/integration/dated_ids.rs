//! Dated sequences (a tag made with `period`): IDs that start again every day, month or year
//! with the date in front, on every backend, through HTTP and the Redis protocol; what is
//! refused (bad settings, ranges a client would keep past the period); a restart that goes on
//! where it stopped; and the boundary judged by the store's clock, with two nodes racing it on
//! a PostgreSQL server whose clock libfaketime puts just before midnight while the nodes' own
//! clocks are hours away from it.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idmint_core::{DatedForm, Dating, Period};
use redis::Value;
use serde_json::json;

use crate::common::{sqlite_url, Server};
use crate::id_space::{get_json, namespace, on_every_store, server_url};
use crate::in_database::FaketimeServer;
use crate::permuted_ids::{call, text};

/// Milliseconds since the Unix epoch by this machine's clock.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `PUT /v1/tags/{tag}` with `body`: the status and the answer.
async fn put_tag(
    http: &reqwest::Client,
    server: &Server,
    tag: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let answer = http
        .put(format!("{}/v1/tags/{tag}", server.http))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap())
}

/// The keys a dated tag may carry now: the period at the start of the call and at its end
/// (they differ only when the test runs across a boundary).
fn keys_around(dating: &Dating, started_ms: u64) -> [u64; 2] {
    [
        dating.period_at(started_ms).unwrap().key,
        dating.period_at(now_ms()).unwrap().key,
    ]
}

async fn dated_tags_start_again_each_period_and_keep_no_range(store: String) {
    let ns = namespace("dated");
    let node = Server::start_with(&store, "dated-a", &["--namespace", &ns]);
    let http = reqwest::Client::new();
    let started = now_ms();

    // Bad settings are refused, naming what is wrong, and create nothing.
    for (body, says) in [
        (json!({"period": "week"}), "week"),
        (
            json!({"period": "day", "time_zone": "Mars/Olympus"}),
            "time zone",
        ),
        (json!({"period": "day", "digits": 11}), "1 to 10 digits"),
        (json!({"period": "year", "digits": 0}), "1 to 14 digits"),
        (json!({"period": "day", "form": "roman"}), "text or numeric"),
        (json!({"time_zone": "UTC"}), "only with `period`"),
        (json!({"period": "day", "first_id": 5}), "starts at 1"),
    ] {
        let (status, answer) = put_tag(&http, &node, "orders", body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_dating", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let missing = http
        .get(format!("{}/v1/tags/orders", node.http))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let (status, created) = put_tag(
        &http,
        &node,
        "orders",
        json!({"period": "day", "time_zone": "Asia/Shanghai", "digits": 6, "step": 50}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["dating"],
        json!({"period": "day", "time_zone": "Asia/Shanghai", "digits": 6, "form": "text"})
    );
    let dating = Dating::new(
        Period::Day,
        Dating::zone("Asia/Shanghai").unwrap(),
        6,
        DatedForm::Text,
    )
    .unwrap();

    let mut issued = Vec::new();
    let body = get_json(&http, &node, "/v1/segment/orders?count=3").await;
    for text_id in body["ids"].as_array().unwrap() {
        issued.push(dating.read(text_id.as_str().unwrap()).unwrap());
    }
    let mut conn = redis::Client::open(node.resp.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    // IDMINT.NEXT shows the text form; INCR stays an integer like Redis' counter.
    let next = call(&mut conn, &["IDMINT.NEXT", "orders"]).unwrap();
    assert!(matches!(next, Value::BulkString(_)), "{next:?}");
    issued.push(dating.read(&text(&next)).unwrap());
    let incr = call(&mut conn, &["INCR", "orders"]).unwrap();
    let Value::Int(incr) = incr else {
        panic!("INCR answered {incr:?}");
    };
    issued.push(incr as u64);
    let Value::Array(batch) = call(&mut conn, &["IDMINT.NEXT", "orders", "COUNT", "2"]).unwrap()
    else {
        panic!("IDMINT.NEXT COUNT 2 is not an array");
    };
    for id in &batch {
        issued.push(dating.read(&text(id)).unwrap());
    }
    let integer = call(&mut conn, &["IDMINT.NEXT", "orders", "FORMAT", "INTEGER"]).unwrap();
    assert!(matches!(integer, Value::Int(_)), "{integer:?}");
    issued.push(text(&integer).parse().unwrap());
    let Value::Int(last) = call(&mut conn, &["INCRBY", "orders", "3"]).unwrap() else {
        panic!("INCRBY is not an integer");
    };
    issued.extend([last as u64 - 2, last as u64 - 1, last as u64]);
    let body = get_json(&http, &node, "/v1/segment/orders?count=2&format=decimal").await;
    for id in body["ids"].as_array().unwrap() {
        issued.push(id.as_str().unwrap().parse().unwrap());
    }

    // Counters 1, 2, 3, ... of today's key (Shanghai's day), strictly increasing.
    let keys = keys_around(&dating, started);
    for (i, id) in issued.iter().enumerate() {
        let (key, counter) = dating.split(*id);
        assert!(keys.contains(&key), "{id} is not dated {keys:?}");
        if keys[0] == keys[1] {
            assert_eq!(counter, i as u64 + 1, "{issued:?}");
        }
    }

    // What a client would keep past the period is refused; nothing is taken.
    let refused = call(&mut conn, &["IDMINT.RANGE", "orders", "5"]).unwrap_err();
    assert!(refused.starts_with("-ERR dated"), "{refused}");
    let lease = http
        .post(format!("{}/v1/segment/orders/lease?size=10", node.http))
        .send()
        .await
        .unwrap();
    assert_eq!(lease.status(), 409);
    let lease: serde_json::Value = lease.json().await.unwrap();
    assert_eq!(lease["error"]["code"], "dated", "{lease}");

    // Decoding gives the period and the counter, from either form.
    let fourth = dating.text(issued[3]);
    let decoded = get_json(&http, &node, &format!("/v1/decode/{fourth}?tag=orders")).await;
    assert_eq!(decoded["text"], fourth, "{decoded}");
    assert_eq!(decoded["counter"], 4, "{decoded}");
    assert_eq!(decoded["id"], issued[3].to_string(), "{decoded}");
    let bad = http
        .get(format!(
            "{}/v1/decode/20261131-000001?tag=orders",
            node.http
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    // The dating is fixed; the step is not.
    let (status, answer) = put_tag(&http, &node, "orders", json!({"period": "month"})).await;
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = put_tag(&http, &node, "orders", json!({"time_zone": "UTC"})).await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`time_zone`"),
        "{answer}"
    );
    let (status, answer) = put_tag(&http, &node, "orders", json!({"step": 80})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["step"], 80);
    assert_eq!(answer["dating"]["period"], "day", "{answer}");
    // The same settings again (a provisioning script run twice) are no change.
    let same = json!({"period": "day", "time_zone": "Asia/Shanghai", "digits": 6});
    let (status, answer) = put_tag(&http, &node, "orders", same).await;
    assert_eq!(status, 200, "{answer}");

    // A request larger than what is left of the period takes nothing: the rest stays.
    let (status, answer) =
        put_tag(&http, &node, "tiny", json!({"period": "day", "digits": 2})).await;
    assert_eq!(status, 201, "{answer}");
    let too_many = http
        .get(format!("{}/v1/segment/tiny?count=150", node.http))
        .send()
        .await
        .unwrap();
    assert_eq!(too_many.status(), 503);
    assert!(too_many.headers().get("retry-after").is_none());
    let too_many: serde_json::Value = too_many.json().await.unwrap();
    assert_eq!(
        too_many["error"]["code"], "period_unavailable",
        "{too_many}"
    );
    let body = get_json(&http, &node, "/v1/segment/tiny?count=5&format=decimal").await;
    let counters: Vec<u64> = body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().parse::<u64>().unwrap() % 100)
        .collect();
    assert_eq!(counters, [1, 2, 3, 4, 5], "{body}");

    // A numeric monthly tag.
    let (status, answer) = put_tag(
        &http,
        &node,
        "invoices",
        json!({"period": "month", "form": "numeric", "digits": 4}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let body = get_json(&http, &node, "/v1/segment/invoices?count=2").await;
    let monthly = Dating::new(
        Period::Month,
        Dating::zone("UTC").unwrap(),
        4,
        DatedForm::Numeric,
    )
    .unwrap();
    let months = keys_around(&monthly, started);
    for (i, id) in body["ids"].as_array().unwrap().iter().enumerate() {
        let id: u64 = id.as_str().unwrap().parse().unwrap();
        let (key, counter) = monthly.split(id);
        assert!(months.contains(&key), "{id}");
        assert_eq!(counter, i as u64 + 1);
    }

    // A restart goes on above everything handed out.
    node.stop();
    let again = Server::start_with(&store, "dated-a", &["--namespace", &ns]);
    let mut conn = redis::Client::open(again.resp.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let Value::Array(after) = call(&mut conn, &["IDMINT.NEXT", "orders", "COUNT", "5"]).unwrap()
    else {
        panic!("not an array");
    };
    let highest = *issued.iter().max().unwrap();
    let mut seen: HashSet<u64> = issued.iter().copied().collect();
    for id in &after {
        let id = dating.read(&text(id)).unwrap();
        assert!(id > highest, "{id} after {highest}");
        assert!(seen.insert(id), "{id} twice");
    }
    assert_eq!(seen.len(), issued.len() + 5);
    again.stop();
}

on_every_store!(
    dated_tags_start_again_each_period,
    dated_tags_start_again_each_period_and_keep_no_range
);

/// What one client of one node got, in the order it got it.
struct Taken {
    ids: Vec<u64>,
    /// Refusals by code (`period_unavailable` once the clock went back).
    refused: Vec<String>,
}

/// Takes one ID at a time from `node` over HTTP until `until`.
async fn take_until(http: reqwest::Client, base: String, until: Instant) -> Taken {
    let mut taken = Taken {
        ids: Vec::new(),
        refused: Vec::new(),
    };
    while Instant::now() < until {
        let answer = http
            .get(format!("{base}/v1/segment/orders?format=decimal"))
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        let body: serde_json::Value = answer.json().await.unwrap();
        if status == 200 {
            taken
                .ids
                .push(body["ids"][0].as_str().unwrap().parse().unwrap());
        } else {
            let code = body["error"]["code"].as_str().unwrap_or("?");
            let message = body["error"]["message"].as_str().unwrap_or("?");
            taken.refused.push(format!("{code}: {message}"));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    taken
}

/// Two nodes take IDs while the store's clock (and only the store's: the nodes' clocks are
/// hours from any midnight) passes midnight, then steps back an hour into the day before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_day_turns_over_by_the_store_s_clock_with_two_nodes_racing_it() {
    let dating = Dating::new(
        Period::Day,
        Dating::zone("Etc/GMT-5").unwrap(),
        6,
        DatedForm::Text,
    )
    .unwrap();
    // The store's clock is put 9 s before a midnight (UTC+5) at least 27 hours after the real
    // clock (the offset takes up to 2 s to apply, the nodes a moment to start): its day and the
    // next are never the real day, at any hour, so an ID dated by any clock but the store's
    // shows. (It was 3 hours: the faked day was the real one except from 16:00 to 19:00 UTC,
    // and a range dated by the real clock passed unseen the rest of the day.)
    let pg = FaketimeServer::start();
    let midnight = dating.period_at(now_ms() + 27 * 3_600_000).unwrap().ends_ms;
    let ahead_s = (midnight - 9_000 - now_ms()) / 1_000;
    pg.clock(&format!("+{ahead_s}s"));
    let ns = namespace("daily");
    // A call may wait 3 s rather than the default 1 s: at the store's midnight every client
    // needs the new period's first range at once, and each node may replace its buffer up to
    // three times while its estimate of the store's clock and the store's faked clock (which
    // libfaketime advances in steps) disagree. On a loaded machine that took over 1 s once (a
    // CI run beside a build); no ID was wrong. What this test checks is the turn of the day.
    let flags = ["--namespace", ns.as_str(), "--max-wait", "3s"];
    let (a, b) = (
        Server::start_with(&pg.url, "day-a", &flags),
        Server::start_with(&pg.url, "day-b", &flags),
    );
    let http = reqwest::Client::new();
    let (status, answer) = put_tag(
        &http,
        &a,
        "orders",
        json!({"period": "day", "time_zone": "Etc/GMT-5", "digits": 6, "step": 20}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let store_now = now_ms() + ahead_s * 1_000;
    let today = dating.period_at(store_now).unwrap();
    let tomorrow = dating.period_at(today.ends_ms).unwrap().key;
    let real_days = [now_ms(), now_ms() + 3_600_000].map(|ms| dating.period_at(ms).unwrap().key);
    assert!(
        !real_days.contains(&today.key) && !real_days.contains(&tomorrow),
        "the store's days {} and {tomorrow} are the real clock's {real_days:?}",
        today.key
    );
    assert!(
        today.ends_ms > store_now && today.ends_ms - store_now < 9_000,
        "the store's midnight is {} ms away",
        today.ends_ms.saturating_sub(store_now)
    );

    // Two clients per node, for the seconds around the store's midnight.
    let until = Instant::now() + Duration::from_millis(today.ends_ms - store_now + 4_000);
    let mut clients = Vec::new();
    for node in [&a, &b, &a, &b] {
        clients.push(tokio::spawn(take_until(
            http.clone(),
            node.http.clone(),
            until,
        )));
    }
    let mut runs = Vec::new();
    for client in clients {
        runs.push(client.await.unwrap());
    }
    let mut seen = HashSet::new();
    let mut tomorrow_counters = Vec::new();
    for run in &runs {
        assert!(run.refused.is_empty(), "refused: {:?}", run.refused);
        for pair in run.ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
        for id in &run.ids {
            assert!(seen.insert(*id), "{id} handed out twice");
            let (key, counter) = dating.split(*id);
            assert!(key == today.key || key == tomorrow, "{id}");
            if key == tomorrow {
                tomorrow_counters.push(counter);
            }
        }
    }
    let before = seen.len() - tomorrow_counters.len();
    assert!(before > 0, "no ID of {} was handed out", today.key);
    assert_eq!(
        tomorrow_counters.iter().min(),
        Some(&1),
        "the new day starts at 1"
    );

    // The store's clock goes back an hour, into the day before: what the nodes hold is still
    // handed out, then they are refused; nothing is dated back or handed out twice.
    pg.clock(&format!("+{}s", ahead_s - 3_600));
    let until = Instant::now() + Duration::from_secs(3);
    let mut clients = Vec::new();
    for node in [&a, &b] {
        clients.push(tokio::spawn(take_until(
            http.clone(),
            node.http.clone(),
            until,
        )));
    }
    let mut refused = 0;
    for client in clients {
        let run = client.await.unwrap();
        for id in &run.ids {
            assert!(
                seen.insert(*id),
                "{id} handed out twice after the step back"
            );
            assert_eq!(dating.split(*id).0, tomorrow, "{id} dated back");
        }
        assert!(
            run.refused
                .iter()
                .all(|refusal| refusal.starts_with("period_unavailable: ")),
            "{:?}",
            run.refused
        );
        refused += run.refused.len();
    }
    assert!(
        refused > 0,
        "the nodes went on taking ranges with the clock back"
    );
    a.stop();
    b.stop();
}

/// The Rust client on a dated tag: the nodes refuse it ranges, so it takes each ID from a node
/// (async and blocking, by name and through a tag handle), in order; a plain tag beside it is
/// still served from ranges. `idmint tags create --period` makes such a tag, and names the
/// flag of a bad setting.
#[test]
fn the_rust_client_and_the_cli_take_a_dated_tag_s_ids_as_they_come() {
    use idmint_client::{BlockingClient, ClientConfig};

    let server = Server::start(&sqlite_url("client-dated"), "client-dated");
    let cli = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--server", server.http.as_str()]);
        crate::id_space::run(&all)
    };
    let (code, _, err) = cli(&["tags", "create", "orders", "--period", "week"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--period"), "{err}");
    let (code, _, err) = cli(&[
        "tags", "create", "orders", "--period", "day", "--digits", "12",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--digits"), "{err}");
    let (code, out, err) = cli(&[
        "tags",
        "create",
        "orders",
        "--period",
        "day",
        "--time-zone",
        "UTC",
        "--step",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"period\":\"day\""), "{out}");
    let dating = Dating::new(
        Period::Day,
        Dating::zone("UTC").unwrap(),
        6,
        DatedForm::Text,
    )
    .unwrap();
    let started = now_ms();
    let (code, out, err) = cli(&["next", "--tag", "orders", "--count", "2"]);
    assert_eq!(code, 0, "{err}");
    let mut ids: Vec<u64> = out.lines().map(|line| dating.read(line).unwrap()).collect();

    let config = ClientConfig::new([server.resp.clone()]).with_max_wait(Duration::from_secs(5));
    let client = BlockingClient::new(config).unwrap();
    let began = Instant::now();
    for _ in 0..20 {
        ids.push(client.next("orders").unwrap());
    }
    let handle = client.tag("orders").unwrap();
    for _ in 0..5 {
        ids.push(handle.next().unwrap());
    }
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    let keys = keys_around(&dating, started);
    for (i, id) in ids.iter().enumerate() {
        let (key, counter) = dating.split(*id);
        assert!(keys.contains(&key), "{id}");
        if keys[0] == keys[1] {
            assert_eq!(counter, i as u64 + 1, "{ids:?}");
        }
    }
    let plain: Vec<u64> = (0..5).map(|_| client.next("plain").unwrap()).collect();
    assert_eq!(plain, [1, 2, 3, 4, 5]);
    drop(client);
    server.stop();
}
