//! Stores of a set (docs/ARCHITECTURE.md, "Store sets"): each store hands out only its
//! partition's worker IDs and segment IDs, so no two stores of a set ever yield the same one,
//! and a node moving between stores with a floor keeps its IDs of a tag increasing. Run on sets
//! of three stores of each backend (three namespaces of one server) and on a mixed set of every
//! backend.

use crate::common;

mod suite {
    use super::common;
    use std::collections::HashSet;
    use std::ops::Range;
    use std::time::Duration;

    use idmint_core::store::{LeaseRequest, Partition, RangeRequest, TagSettings};
    use idmint_core::{Error, Tag};
    use idmint_store::Store;

    /// Small blocks, so that ranges cross many block boundaries.
    const BLOCK: u64 = 100;

    fn tag(name: &str) -> Tag {
        Tag::new(name).unwrap()
    }

    pub fn partition(index: usize, count: usize) -> Partition {
        Partition::new(index as u64, count as u64, BLOCK).unwrap()
    }

    /// Records each store as its place in one new set.
    pub async fn joined(set: Vec<Store>) -> Vec<Store> {
        let set_id = format!("set-{}", common::fresh_namespace());
        for (k, store) in set.iter().enumerate() {
            let record = store
                .leases
                .join_store_set(&set_id, partition(k, set.len()))
                .await
                .unwrap();
            assert_eq!(record.partition, partition(k, set.len()));
        }
        set
    }

    /// Creates `name` in every store of the set, each starting at its partition's first ID.
    async fn create_everywhere(set: &[Store], name: &str) -> Tag {
        let t = tag(name);
        for (k, store) in set.iter().enumerate() {
            let settings = TagSettings {
                step: 10,
                first_id: partition(k, set.len()).first_id(1).unwrap(),
                ..TagSettings::default()
            };
            store.segments.create_tag(&t, &settings).await.unwrap();
        }
        t
    }

    fn request(step: u64, at_least: u64, partition: Partition) -> RangeRequest {
        RangeRequest {
            step,
            at_least,
            partition,
        }
    }

    /// Two tasks per store take ranges of varied steps at once; some of them with a floor
    /// taken from what the other stores handed out (as a node that moved would ask). No ID is
    /// handed out twice, and each lies in its store's partition.
    pub async fn stores_of_a_set_never_yield_the_same_segment_id(set: Vec<Store>) {
        let t = create_everywhere(&set, "orders").await;
        let count = set.len();
        let mut tasks = Vec::new();
        for (k, store) in set.iter().enumerate() {
            for task in 0..2u64 {
                let (segments, t) = (store.segments.clone(), t.clone());
                let part = partition(k, count);
                tasks.push(tokio::spawn(async move {
                    let mut ranges: Vec<Range<u64>> = Vec::new();
                    for i in 0..150u64 {
                        let step = 1 + (i * 37 + task * 11) % 230;
                        let at_least = if i % 10 == 9 { (i + 1) * 160 } else { 0 };
                        let range = segments
                            .allocate_in(&t, request(step, at_least, part))
                            .await
                            .unwrap();
                        assert!(range.start < range.end && range.end - range.start <= step);
                        assert!(range.start >= at_least);
                        assert!(part.owns_id(range.start) && part.owns_id(range.end - 1));
                        ranges.push(range);
                    }
                    ranges
                }));
            }
        }
        let mut all: Vec<Range<u64>> = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_by_key(|r| r.start);
        for pair in all.windows(2) {
            assert!(
                pair[0].end <= pair[1].start,
                "{:?} and {:?} overlap",
                pair[0],
                pair[1]
            );
        }
    }

    /// A node takes ranges from one store, then another, then the first again, each time
    /// asking for IDs above the last one it got: its IDs strictly increase across the moves,
    /// and a store that lagged behind jumps ahead.
    pub async fn a_node_moving_between_stores_keeps_increasing(set: Vec<Store>) {
        let t = create_everywhere(&set, "moves").await;
        let count = set.len();
        let mut last_end = 0;
        let mut issued: Vec<Range<u64>> = Vec::new();
        for (round, k) in [0, 0, 1, 1, 2, 0, 2, 1, 0].into_iter().enumerate() {
            let k = k % count;
            let range = set[k]
                .segments
                .allocate_in(&t, request(70, last_end, partition(k, count)))
                .await
                .unwrap();
            assert!(
                range.start >= last_end,
                "round {round}: {range:?} from store {k} is below {last_end}"
            );
            last_end = range.end;
            issued.push(range);
        }
        assert!(issued.windows(2).all(|w| w[0].end <= w[1].start));
        // A lagging store was moved past what the others handed out.
        let behind = set[1 % count].segments.tag_info(&t).await.unwrap().unwrap();
        assert!(behind.max_id > issued[1].end || count == 1);
    }

    /// Each store of the set leases only its own worker IDs: together they lease every worker
    /// ID of the layout exactly once, and a static worker ID of another store is refused.
    pub async fn stores_of_a_set_lease_disjoint_worker_ids(set: Vec<Store>) {
        const WORKERS: u64 = 16;
        let count = set.len();
        let ask = |node: String, worker_id: Option<u64>, part: Partition| LeaseRequest {
            node_name: node,
            worker_count: WORKERS,
            worker_id,
            ttl: Duration::from_secs(60),
            id_space: None,
            partition: part,
        };
        let mut leased = HashSet::new();
        for (k, store) in set.iter().enumerate() {
            let part = partition(k, count);
            for n in 0.. {
                match store
                    .leases
                    .acquire(&ask(format!("node-{k}-{n}"), None, part))
                    .await
                {
                    Ok(lease) => {
                        assert!(
                            part.owns_worker(lease.worker_id),
                            "{lease:?} from store {k}"
                        );
                        assert!(leased.insert(lease.worker_id), "{lease:?} leased twice");
                    }
                    Err(Error::NoWorkerFree { .. }) => break,
                    Err(other) => panic!("store {k}: {other}"),
                }
            }
            assert_eq!(
                store.leases.list_leases().await.unwrap().len() as u64,
                part.worker_slots(WORKERS)
            );
            if count > 1 {
                let foreign = (k as u64 + 1) % count as u64;
                let refused = store
                    .leases
                    .acquire(&ask("static".into(), Some(foreign), part))
                    .await;
                assert!(
                    matches!(
                        refused,
                        Err(Error::InvalidArgument {
                            name: "worker_id",
                            ..
                        })
                    ),
                    "{refused:?}"
                );
            }
        }
        assert_eq!(leased, (0..WORKERS).collect::<HashSet<_>>());
    }

    /// A store joins a set once, and only while it holds nothing; from then on it leases only
    /// to nodes that name its place, and a store that joined no set only to single-store
    /// nodes.
    pub async fn a_store_joins_a_set_once_and_only_while_empty(url: String) {
        let ask = |partition: Partition| LeaseRequest {
            node_name: "n".into(),
            worker_count: 16,
            worker_id: None,
            ttl: Duration::from_secs(60),
            id_space: None,
            partition,
        };
        let store = common::open(&url).await.0;
        assert_eq!(store.leases.store_set().await.unwrap(), None);
        let second = partition(1, 3);
        let record = store.leases.join_store_set("s1", second).await.unwrap();
        assert_eq!((record.set_id.as_str(), record.partition), ("s1", second));
        assert_eq!(
            store.leases.store_set().await.unwrap(),
            Some(record.clone())
        );
        // The same again is accepted (a creator retrying); anything else is refused.
        assert_eq!(
            store.leases.join_store_set("s1", second).await.unwrap(),
            record
        );
        for (set_id, other) in [
            ("s2", second),
            ("s1", partition(0, 3)),
            ("s1", partition(1, 2)),
        ] {
            let refused = store.leases.join_store_set(set_id, other).await;
            assert!(
                matches!(refused, Err(Error::StoreConflict { .. })),
                "{refused:?}"
            );
        }
        // Leases: only for its own place.
        for wrong in [Partition::WHOLE, partition(0, 3), partition(1, 2)] {
            let refused = store.leases.acquire(&ask(wrong)).await;
            assert!(
                matches!(refused, Err(Error::StoreInvalid { .. })),
                "{refused:?}"
            );
        }
        assert_eq!(
            store.leases.acquire(&ask(second)).await.unwrap().worker_id,
            1
        );

        // A store with a tag, or with a lease row, cannot join.
        let with_tag = common::open(&url).await.0;
        with_tag
            .segments
            .create_tag(&tag("t"), &TagSettings::default())
            .await
            .unwrap();
        let with_lease = common::open(&url).await.0;
        with_lease
            .leases
            .acquire(&ask(Partition::WHOLE))
            .await
            .unwrap();
        for full in [with_tag, with_lease] {
            let refused = full.leases.join_store_set("s1", partition(0, 3)).await;
            assert!(
                matches!(refused, Err(Error::StoreInvalid { .. })),
                "{refused:?}"
            );
            assert_eq!(full.leases.store_set().await.unwrap(), None);
            // A single store leases only to single-store nodes.
            let refused = full.leases.acquire(&ask(partition(0, 3))).await;
            assert!(
                matches!(refused, Err(Error::StoreInvalid { .. })),
                "{refused:?}"
            );
        }
    }

    /// The compare-and-set under `allocate_in`: moves only from the expected value, says so,
    /// and refuses an unknown tag.
    pub async fn max_id_moves_only_from_the_expected_value(store: Store) {
        let t = tag("cas");
        store
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        let segments = &store.segments;
        assert!(!segments.compare_and_set_max_id(&t, 5, 50).await.unwrap());
        assert!(segments.compare_and_set_max_id(&t, 1, 50).await.unwrap());
        assert!(segments.compare_and_set_max_id(&t, 50, 50).await.unwrap());
        assert!(!segments.compare_and_set_max_id(&t, 1, 60).await.unwrap());
        assert_eq!(segments.tag_info(&t).await.unwrap().unwrap().max_id, 50);
        assert!(matches!(
            segments.compare_and_set_max_id(&tag("nope"), 1, 2).await,
            Err(Error::UnknownTag { .. })
        ));
        // A single store with a floor above its max_id jumps to the floor.
        let range = segments
            .allocate_in(&t, request(10, 1_000, Partition::WHOLE))
            .await
            .unwrap();
        assert_eq!(range, 1_000..1_010);
        let range = segments
            .allocate_in(&t, request(10, 0, Partition::WHOLE))
            .await
            .unwrap();
        assert_eq!(range, 1_010..1_020);
    }
}

/// Three stores of one backend (three namespaces of one server or file), joined as a set.
async fn three_of(url: &str) -> Vec<idmint_store::Store> {
    let mut set = Vec::new();
    for _ in 0..3 {
        set.push(common::open(url).await.0);
    }
    suite::joined(set).await
}

/// Stamps out the suite for one backend: `$url` is an expression giving the store URL.
macro_rules! store_sets {
    ($backend:ident, $url:expr) => {
        mod $backend {
            use super::{common, suite, three_of};

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stores_of_a_set_never_yield_the_same_segment_id() {
                suite::stores_of_a_set_never_yield_the_same_segment_id(three_of(&$url).await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_node_moving_between_stores_keeps_increasing() {
                suite::a_node_moving_between_stores_keeps_increasing(three_of(&$url).await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stores_of_a_set_lease_disjoint_worker_ids() {
                suite::stores_of_a_set_lease_disjoint_worker_ids(three_of(&$url).await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_store_joins_a_set_once_and_only_while_empty() {
                suite::a_store_joins_a_set_once_and_only_while_empty($url).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn max_id_moves_only_from_the_expected_value() {
                suite::max_id_moves_only_from_the_expected_value(common::open(&$url).await.0).await;
            }
        }
    };
}

store_sets!(sqlite, common::sqlite_url());
#[cfg(feature = "postgres")]
store_sets!(postgres, common::server_url("IDMINT_TEST_POSTGRES_URL"));
#[cfg(feature = "mysql")]
store_sets!(mysql, common::server_url("IDMINT_TEST_MYSQL_URL"));
#[cfg(feature = "redis")]
store_sets!(redis, common::server_url("IDMINT_TEST_REDIS_URL"));

/// One store of every backend this build has, as one set (SQLite first, then the servers).
#[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
mod mixed {
    use super::{common, suite};

    async fn mixed_set() -> Vec<idmint_store::Store> {
        let urls = [
            common::sqlite_url(),
            common::server_url("IDMINT_TEST_POSTGRES_URL"),
            common::server_url("IDMINT_TEST_MYSQL_URL"),
            common::server_url("IDMINT_TEST_REDIS_URL"),
        ];
        let mut set = Vec::new();
        for url in &urls {
            set.push(common::open(url).await.0);
        }
        suite::joined(set).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_of_a_set_never_yield_the_same_segment_id() {
        suite::stores_of_a_set_never_yield_the_same_segment_id(mixed_set().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_node_moving_between_stores_keeps_increasing() {
        suite::a_node_moving_between_stores_keeps_increasing(mixed_set().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_of_a_set_lease_disjoint_worker_ids() {
        suite::stores_of_a_set_lease_disjoint_worker_ids(mixed_set().await).await;
    }
}

/// Sets opened from a list of URLs, as a node opens them (`open_set`).
mod opened {
    use idmint_core::store::{LeaseRequest, Partition, TagSettings};
    use idmint_core::{Error, Tag};
    use idmint_store::{open_set, SetOptions, Store};

    use super::common;

    const BLOCK: u64 = 1_000;

    fn set_options(home: usize) -> SetOptions {
        SetOptions {
            block: BLOCK,
            home: Some(home),
            node_name: "n".into(),
        }
    }

    async fn open(urls: &[String], namespace: &str, home: usize) -> Result<Store, Error> {
        open_set(urls, &common::options(namespace), &set_options(home)).await
    }

    fn lease_request(node: &str) -> LeaseRequest {
        LeaseRequest {
            node_name: node.into(),
            worker_count: 8,
            worker_id: None,
            ttl: std::time::Duration::from_secs(60),
            id_space: None,
            partition: Partition::WHOLE,
        }
    }

    /// The first open creates the set in every store; later opens must bring the same list:
    /// another order, another number of stores, another block size, one store alone, or a store
    /// with data of its own are refused.
    async fn created_once_then_checked(urls: Vec<String>) {
        let namespace = common::fresh_namespace();
        let set = open(&urls, &namespace, 0).await.unwrap();
        let record = set.leases.store_set().await.unwrap().unwrap();
        for (k, url) in urls.iter().enumerate() {
            let alone = idmint_store::open(url, &common::options(&namespace))
                .await
                .unwrap();
            let member = alone.leases.store_set().await.unwrap().unwrap();
            assert_eq!(member.set_id, record.set_id);
            assert_eq!(
                member.partition,
                Partition::new(k as u64, urls.len() as u64, BLOCK).unwrap()
            );
        }
        // Opened again, the same list is accepted.
        open(&urls, &namespace, 1).await.unwrap();
        let mut swapped = urls.clone();
        swapped.swap(0, 1);
        let refusals = [
            open(&swapped, &namespace, 0).await.err(),
            open(&urls[..2], &namespace, 0).await.err(),
            open(&urls[..1], &namespace, 0).await.err(),
            open_set(
                &urls,
                &common::options(&namespace),
                &SetOptions {
                    block: BLOCK * 2,
                    ..set_options(0)
                },
            )
            .await
            .err(),
        ];
        for refusal in refusals {
            assert!(
                matches!(refusal, Some(Error::StoreInvalid { .. })),
                "{refusal:?}"
            );
        }
        // A store that served alone cannot be made part of a set.
        let used = common::sqlite_url();
        let alone = idmint_store::open(&used, &common::options(&namespace))
            .await
            .unwrap();
        alone
            .segments
            .create_tag(&Tag::new("mine").unwrap(), &TagSettings::default())
            .await
            .unwrap();
        let with_used = [common::sqlite_url(), used];
        let refused = open(&with_used, &namespace, 0).await;
        assert!(
            matches!(refused, Err(Error::StoreInvalid { .. })),
            "{refused:?}"
        );
    }

    /// Through the set: a tag is created in every store at its first ID, ranges come from the
    /// home store, leases from the home store's worker IDs, and a second node with another
    /// home draws from its own store without ever overlapping the first.
    async fn routes_to_the_home_store(urls: Vec<String>) {
        let namespace = common::fresh_namespace();
        let count = urls.len() as u64;
        let first = open(&urls, &namespace, 0).await.unwrap();
        let second = open(&urls, &namespace, 1).await.unwrap();
        let t = Tag::new("orders").unwrap();
        first
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        let mut all = Vec::new();
        for (node, home) in [(&first, 0u64), (&second, 1u64)] {
            let mut last = 0;
            for _ in 0..30 {
                let range = node.segments.allocate(&t, 300).await.unwrap();
                assert_eq!(
                    Partition::of_id(range.start, count, BLOCK),
                    home,
                    "{range:?}"
                );
                assert!(range.start >= last);
                last = range.end;
                all.push(range);
            }
            let lease = node.leases.acquire(&lease_request("n")).await.unwrap();
            assert_eq!(Partition::of_worker(lease.worker_id, count), home);
        }
        all.sort_by_key(|r| r.start);
        assert!(all.windows(2).all(|w| w[0].end <= w[1].start));
        let tags = first.segments.list_tags().await.unwrap();
        assert_eq!(tags.len(), 1);
        // Created, and its step changed, in every store: each at its partition's IDs.
        let changed = idmint_core::store::TagUpdate {
            step: Some(777),
            description: None,
        };
        assert_eq!(
            second.segments.update_tag(&t, &changed).await.unwrap().step,
            777
        );
        for (k, url) in urls.iter().enumerate() {
            let alone = idmint_store::open(url, &common::options(&namespace))
                .await
                .unwrap();
            let info = alone.segments.tag_info(&t).await.unwrap().unwrap();
            assert_eq!(info.step, 777, "store {k}");
            // `max_id` is the next ID (in the store's partition) or the end of its last range.
            let owner = |id: u64| Partition::of_id(id, count, BLOCK);
            assert!(
                owner(info.max_id) == k as u64 || owner(info.max_id - 1) == k as u64,
                "store {k}: {info:?}"
            );
        }
        let leases = first.leases.list_leases().await.unwrap();
        assert_eq!(leases.len(), 2);
    }

    /// A store that does not answer at open is skipped: the set serves from the others, and
    /// a node whose home it is draws from the next store.
    async fn serves_with_a_store_down(mut urls: Vec<String>) {
        urls.insert(1, "postgres://idmint:idmint@127.0.0.1:1/nothing".into());
        let count = urls.len() as u64;
        let namespace = common::fresh_namespace();
        let set = open(&urls, &namespace, 1).await.unwrap();
        let t = Tag::new("down").unwrap();
        set.segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        let mut last = 0;
        for _ in 0..20 {
            let range = set.segments.allocate(&t, 500).await.unwrap();
            assert_ne!(Partition::of_id(range.start, count, BLOCK), 1, "{range:?}");
            assert!(range.start >= last);
            last = range.end;
        }
        let lease = set.leases.acquire(&lease_request("n")).await.unwrap();
        assert_ne!(Partition::of_worker(lease.worker_id, count), 1);
        assert_eq!(set.segments.tag_info(&t).await.unwrap().unwrap().tag, t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_sets_are_created_once_then_checked() {
        created_once_then_checked((0..3).map(|_| common::sqlite_url()).collect()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_sets_route_to_the_home_store() {
        routes_to_the_home_store((0..3).map(|_| common::sqlite_url()).collect()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_sets_serve_with_a_store_down() {
        serves_with_a_store_down((0..2).map(|_| common::sqlite_url()).collect()).await;
    }

    #[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
    fn mixed_urls() -> Vec<String> {
        vec![
            common::server_url("IDMINT_TEST_POSTGRES_URL"),
            common::server_url("IDMINT_TEST_MYSQL_URL"),
            common::server_url("IDMINT_TEST_REDIS_URL"),
        ]
    }

    #[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mixed_sets_are_created_once_then_checked() {
        created_once_then_checked(mixed_urls()).await;
    }

    #[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mixed_sets_route_to_the_home_store() {
        routes_to_the_home_store(mixed_urls()).await;
    }

    #[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mixed_sets_serve_with_a_store_down() {
        serves_with_a_store_down(mixed_urls()).await;
    }
}
