//! What only the Redis store can get wrong: values above 2^53 (Lua numbers are doubles), the
//! search for never-used worker IDs in a wide layout, the durability check, and a server killed
//! and restarted under a live store. Runs against `IDMINT_TEST_REDIS_URL` (set by
//! `scripts/with-stores`) and against servers of its own started with `redis-server`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use idmint_core::store::{LeaseRequest, TagSettings};
use idmint_core::{Error, Tag};
use tokio::process::{Child, Command};

use crate::{Store, StoreOptions};

/// The shared test server. A missing server fails the test, never skips it.
fn server_url() -> String {
    std::env::var("IDMINT_TEST_REDIS_URL").unwrap_or_else(|_| {
        panic!("IDMINT_TEST_REDIS_URL is not set: run the tests through scripts/with-stores")
    })
}

/// A namespace of its own per test and run.
fn namespace() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "u{}_{nanos:x}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn options(namespace: &str) -> StoreOptions {
    StoreOptions {
        namespace: namespace.to_owned(),
        call_timeout: Duration::from_secs(2),
        ..StoreOptions::default()
    }
}

async fn open(url: &str) -> (Store, String) {
    let ns = namespace();
    (crate::open(url, &options(&ns)).await.unwrap(), ns)
}

fn request(node: &str, worker_id: Option<u64>, count: u64) -> LeaseRequest {
    LeaseRequest {
        node_name: node.into(),
        worker_count: count,
        worker_id,
        ttl: Duration::from_secs(60),
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
    }
}

/// A `redis-server` of a test's own, killed when dropped.
struct Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    args: Vec<String>,
}

impl Server {
    /// Starts a server on a free loopback port with extra `config` directives.
    async fn start(config: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("idmint-redis-test-{}", namespace()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--dir",
            dir.to_str().unwrap(),
            "--save",
            "",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(config.iter().map(|s| (*s).to_owned()));
        let mut server = Self {
            child: None,
            port,
            dir,
            args,
        };
        server.spawn().await;
        server
    }

    /// (Re)starts the process and waits until it answers.
    async fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server on PATH");
        self.child = Some(child);
        let client = redis::Client::open(self.url()).unwrap();
        for _ in 0..100 {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                let pong: redis::RedisResult<String> =
                    redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    /// Kills the process with SIGKILL: no shutdown, no final AOF rewrite.
    async fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn ids_near_the_largest_are_exact_and_never_passed() {
    let (store, _) = open(&server_url()).await;
    let tag = Tag::new("edge").unwrap();
    let max = i64::MAX as u64;
    let settings = TagSettings {
        step: 5,
        first_id: max - 10,
        ..TagSettings::default()
    };
    store.segments.create_tag(&tag, &settings).await.unwrap();
    assert_eq!(
        store.segments.allocate(&tag, 5).await.unwrap(),
        max - 10..max - 5
    );
    // Give-back compares and writes the exact values, far above 2^53.
    assert!(!store
        .segments
        .give_back(&tag, max - 7..max - 6)
        .await
        .unwrap());
    assert!(store
        .segments
        .give_back(&tag, max - 7..max - 5)
        .await
        .unwrap());
    assert_eq!(
        store.segments.allocate(&tag, 2).await.unwrap(),
        max - 7..max - 5
    );
    // A step that does not fit takes the rest, exactly, up to the end.
    assert_eq!(
        store.segments.allocate(&tag, 6).await.unwrap(),
        max - 5..max
    );
    let err = store.segments.allocate(&tag, 1).await.unwrap_err();
    assert_eq!(err, Error::TagExhausted { tag: "edge".into() });
    // The refused allocation changed nothing.
    let info = store.segments.tag_info(&tag).await.unwrap().unwrap();
    assert_eq!(info.max_id, max);
    // A step that does not fit a signed 64-bit integer never reaches Redis.
    assert!(matches!(
        store.segments.allocate(&tag, u64::MAX).await,
        Err(Error::InvalidArgument { .. })
    ));
}

#[tokio::test]
async fn hwm_above_2_pow_53_is_kept_exactly() {
    let (store, _) = open(&server_url()).await;
    let lease = store.leases.acquire(&request("a", None, 4)).await.unwrap();
    let high = (1u64 << 60) + 1;
    let ttl = Duration::from_secs(60);
    assert_eq!(
        store.leases.renew(&lease, high, ttl).await.unwrap().hwm_ms,
        high
    );
    // One below (the same double): still not lowered.
    assert_eq!(
        store
            .leases
            .renew(&lease, high - 1, ttl)
            .await
            .unwrap()
            .hwm_ms,
        high
    );
    store.leases.release(&lease, high + 2).await.unwrap();
    let next = store.leases.acquire(&request("b", None, 1)).await.unwrap();
    assert_eq!((next.worker_id, next.hwm_ms), (0, high + 2));
    assert!(next.token > lease.token);
}

#[tokio::test]
async fn never_used_worker_ids_are_found_in_wide_layouts() {
    let (store, _) = open(&server_url()).await;
    let wide = 1 << 22;
    for id in [0, 1, 3, wide - 1] {
        store
            .leases
            .acquire(&request(&format!("static-{id}"), Some(id), wide))
            .await
            .unwrap();
    }
    let mut auto = Vec::new();
    for i in 0..3 {
        let lease = store
            .leases
            .acquire(&request(&format!("auto-{i}"), None, wide))
            .await
            .unwrap();
        auto.push(lease.worker_id);
    }
    assert_eq!(auto, [2, 4, 5]);
    // The widest layout served: IDs up to 2^53 - 1 stay exact.
    let widest = 1u64 << 53;
    let top = store
        .leases
        .acquire(&request("top", Some(widest - 1), widest))
        .await
        .unwrap();
    assert_eq!(top.worker_id, widest - 1);
    assert_eq!(
        store
            .leases
            .acquire(&request("next", None, widest))
            .await
            .unwrap()
            .worker_id,
        6
    );
    assert!(matches!(
        store.leases.acquire(&request("x", None, widest + 1)).await,
        Err(Error::InvalidArgument { .. })
    ));
    let ids: Vec<u64> = store
        .leases
        .list_leases()
        .await
        .unwrap()
        .iter()
        .map(|l| l.worker_id)
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, wide - 1, widest - 1]);
}

#[tokio::test]
async fn listing_pages_through_many_leases() {
    let (store, _) = open(&server_url()).await;
    let total = super::LEASE_PAGE as u64 + 1;
    for i in 0..total {
        let lease = store
            .leases
            .acquire(&request(&format!("n{i}"), None, 1 << 16))
            .await
            .unwrap();
        assert_eq!(lease.worker_id, i);
    }
    let leases = store.leases.list_leases().await.unwrap();
    let ids: Vec<u64> = leases.iter().map(|l| l.worker_id).collect();
    assert_eq!(ids, (0..total).collect::<Vec<_>>());
    assert!(leases
        .iter()
        .all(|l| l.live && l.node_name == format!("n{}", l.worker_id)));
}

#[tokio::test]
async fn a_node_gets_back_its_most_recent_id_and_others_the_longest_expired() {
    let (store, _) = open(&server_url()).await;
    let short = |node: &str, id: Option<u64>| LeaseRequest {
        ttl: Duration::from_millis(100),
        id_space: None,
        partition: idmint_core::store::Partition::WHOLE,
        ..request(node, id, 4)
    };
    // Node a held 0 first, then 2 (its most recent); b holds 1; 3 never used yet.
    let a0 = store.leases.acquire(&short("a", Some(0))).await.unwrap();
    store.leases.acquire(&short("b", Some(1))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    store.leases.acquire(&short("a", Some(2))).await.unwrap();
    store.leases.release(&a0, 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    // All expired: a gets 2 back (its latest), c the never-used 3, then d the longest expired
    // (0, released: expires = 0), then e the next (1).
    let take = |node: &'static str| {
        let leases = store.leases.clone();
        async move {
            leases
                .acquire(&request(node, None, 4))
                .await
                .unwrap()
                .worker_id
        }
    };
    assert_eq!(take("a").await, 2);
    assert_eq!(take("c").await, 3);
    assert_eq!(take("d").await, 0);
    assert_eq!(take("e").await, 1);
    assert!(matches!(
        store.leases.acquire(&request("f", None, 4)).await,
        Err(Error::NoWorkerFree { worker_count: 4 })
    ));
}

#[tokio::test]
async fn a_newer_key_layout_is_refused() {
    let url = server_url();
    let (_, ns) = open(&url).await;
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{{{ns}}}:schema"))
        .arg(99)
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = crate::open(&url, &options(&ns)).await.unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("version 99") && m.contains("newer")),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_named_without_its_password() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://:secret@127.0.0.1:{port}/");
    let err = crate::open(&url, &options(&namespace())).await.unwrap_err();
    let shown = format!("redis://:***@127.0.0.1:{port}/");
    assert!(
        matches!(&err, Error::StoreUnavailable { message: m, .. } if m.contains(&shown) && !m.contains("secret")),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_without_fsync_always_is_refused_unless_allowed() {
    let server = Server::start(&["--appendonly", "yes", "--appendfsync", "everysec"]).await;
    let err = crate::open(&server.url(), &options(&namespace()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("appendfsync everysec") && m.contains("appendfsync always")),
        "{err}"
    );
    let allowed = StoreOptions {
        allow_non_durable: true,
        ..options(&namespace())
    };
    let store = crate::open(&server.url(), &allowed).await.unwrap();
    let tag = Tag::new("t").unwrap();
    store
        .segments
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    assert_eq!(store.segments.allocate(&tag, 3).await.unwrap(), 1..4);
}

#[tokio::test]
async fn a_server_hiding_its_configuration_is_refused_unless_allowed() {
    let server = Server::start(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--rename-command",
        "CONFIG",
        "",
    ])
    .await;
    let err = crate::open(&server.url(), &options(&namespace()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("CONFIG GET")),
        "{err}"
    );
    let allowed = StoreOptions {
        allow_non_durable: true,
        ..options(&namespace())
    };
    assert!(crate::open(&server.url(), &allowed).await.is_ok());
}

#[tokio::test]
async fn a_killed_and_restarted_server_loses_nothing_acknowledged() {
    let mut server = Server::start(&["--appendonly", "yes", "--appendfsync", "always"]).await;
    let (store, _) = open(&server.url()).await;
    let tag = Tag::new("survivor").unwrap();
    store
        .segments
        .create_tag(&tag, &TagSettings::default())
        .await
        .unwrap();
    let mut last = 0..0;
    for _ in 0..50 {
        last = store.segments.allocate(&tag, 10).await.unwrap();
    }
    let lease = store.leases.acquire(&request("n", None, 8)).await.unwrap();
    let hwm = 1_800_000_000_000;
    store
        .leases
        .renew(&lease, hwm, Duration::from_secs(60))
        .await
        .unwrap();

    server.crash().await;
    assert!(matches!(
        store.segments.allocate(&tag, 10).await,
        Err(Error::StoreUnavailable { .. })
    ));
    server.spawn().await;

    // The same store reconnects by itself, and the restarted server has no scripts cached.
    let mut next = None;
    for _ in 0..50 {
        match store.segments.allocate(&tag, 10).await {
            Ok(range) => {
                next = Some(range);
                break;
            }
            Err(Error::StoreUnavailable { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    let next = next.expect("the store never came back");
    assert_eq!(next.start, last.end);
    // The acknowledged HWM survived; the old token still holds the lease.
    let renewal = store
        .leases
        .renew(&lease, 5, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(renewal.hwm_ms, hwm);
}
