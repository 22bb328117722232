//! The conformance suite: written once, run against every backend. What it checks is what
//! uniqueness rests on (docs/ARCHITECTURE.md, "Uniqueness"): ranges never overlap, two holders never share
//! a worker ID, a stale holder can change nothing, a new holder starts above the old one's HWM.

use crate::common;

mod suite {
    use std::collections::HashSet;
    use std::ops::Range;
    use std::time::Duration;

    use idmint_core::store::{LeaseRequest, TagSettings, TagUpdate, MAX_SEGMENT_ID};
    use idmint_core::{Error, IdSpace, IdSpaceRecord, Tag};
    use idmint_store::Store;

    use super::common;

    fn tag(name: &str) -> Tag {
        Tag::new(name).unwrap()
    }

    fn request(node: &str, worker_id: Option<u64>, count: u64, ttl: Duration) -> LeaseRequest {
        LeaseRequest {
            node_name: node.into(),
            worker_count: count,
            worker_id,
            ttl,
            id_space: None,
            partition: idmint_core::store::Partition::WHOLE,
        }
    }

    /// 8 tasks x 1,000 allocations on one tag: disjoint ranges that tile the sequence.
    pub async fn concurrent_allocations_tile_without_overlap(store: Store) {
        let orders = tag("orders");
        let settings = TagSettings {
            step: 10,
            first_id: 1,
            ..TagSettings::default()
        };
        store.segments.create_tag(&orders, &settings).await.unwrap();
        let tasks: Vec<_> = (0..8u64)
            .map(|task| {
                let segments = store.segments.clone();
                let orders = orders.clone();
                tokio::spawn(async move {
                    let mut ranges = Vec::new();
                    for i in 0..1_000u64 {
                        let range = segments
                            .allocate(&orders, 1 + (task + i) % 7)
                            .await
                            .unwrap();
                        assert_eq!(range.end - range.start, 1 + (task + i) % 7);
                        ranges.push(range);
                    }
                    ranges
                })
            })
            .collect();
        let mut all: Vec<Range<u64>> = Vec::new();
        for task in tasks {
            let ranges = task.await.unwrap();
            // Each task's own ranges come in allocation order.
            assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start));
            all.extend(ranges);
        }
        all.sort_by_key(|r| r.start);
        assert_eq!(all[0].start, 1);
        for pair in all.windows(2) {
            assert_eq!(
                pair[0].end, pair[1].start,
                "gap or overlap between {:?} and {:?}",
                pair[0], pair[1]
            );
        }
        let info = store.segments.tag_info(&orders).await.unwrap().unwrap();
        assert_eq!(info.max_id, all.last().unwrap().end);
    }

    /// Give-back returns the tail only when nobody allocated after it.
    pub async fn give_back_only_when_nobody_allocated_after(store: Store) {
        let t = tag("gb");
        store
            .segments
            .create_tag(
                &t,
                &TagSettings {
                    step: 10,
                    ..TagSettings::default()
                },
            )
            .await
            .unwrap();
        let first = store.segments.allocate(&t, 10).await.unwrap();
        let second = store.segments.allocate(&t, 10).await.unwrap();
        assert!(!store
            .segments
            .give_back(&t, first.start + 3..first.end)
            .await
            .unwrap());
        assert!(store
            .segments
            .give_back(&t, second.start + 4..second.end)
            .await
            .unwrap());
        assert_eq!(
            store.segments.tag_info(&t).await.unwrap().unwrap().max_id,
            second.start + 4
        );
        // Twice is refused: the tail no longer ends at max_id.
        assert!(!store
            .segments
            .give_back(&t, second.start + 4..second.end)
            .await
            .unwrap());
        assert_eq!(
            store.segments.allocate(&t, 2).await.unwrap(),
            second.start + 4..second.start + 6
        );
    }

    /// Tags: create, refuse twice, set step and description, list, unknown tags refused.
    pub async fn tags_are_managed_and_unknown_ones_refused(store: Store) {
        let a = tag("a.tag:1");
        let b = tag("b-tag_2");
        let created = store
            .segments
            .create_tag(
                &a,
                &TagSettings {
                    step: 5,
                    description: "orders".into(),
                    first_id: 100,
                    dating: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            (created.max_id, created.step, created.description.as_str()),
            (100, 5, "orders")
        );
        assert!(matches!(
            store.segments.create_tag(&a, &TagSettings::default()).await,
            Err(Error::TagExists { .. })
        ));
        store
            .segments
            .create_tag(&b, &TagSettings::default())
            .await
            .unwrap();
        let update = TagUpdate {
            step: Some(50),
            description: None,
        };
        let updated = store.segments.update_tag(&a, &update).await.unwrap();
        assert_eq!((updated.step, updated.description.as_str()), (50, "orders"));
        let update = TagUpdate {
            step: None,
            description: Some("renamed".into()),
        };
        assert_eq!(
            store
                .segments
                .update_tag(&a, &update)
                .await
                .unwrap()
                .description,
            "renamed"
        );
        // A dated tag keeps its dating through every read and an update.
        let dated = tag("c.daily");
        let dating = idmint_core::Dating::parse("day:6:text:Asia/Shanghai").unwrap();
        let settings = TagSettings {
            dating: Some(dating),
            ..TagSettings::default()
        };
        let created = store.segments.create_tag(&dated, &settings).await.unwrap();
        assert_eq!(created.dating, Some(dating));
        let info = store.segments.tag_info(&dated).await.unwrap().unwrap();
        assert_eq!(info.dating, Some(dating));
        let update = TagUpdate {
            step: Some(7),
            description: None,
        };
        let updated = store.segments.update_tag(&dated, &update).await.unwrap();
        assert_eq!((updated.step, updated.dating), (7, Some(dating)));
        let listed: Vec<(String, Option<idmint_core::Dating>)> = store
            .segments
            .list_tags()
            .await
            .unwrap()
            .iter()
            .map(|t| (t.tag.to_string(), t.dating))
            .collect();
        assert_eq!(
            listed,
            [
                ("a.tag:1".to_owned(), None),
                ("b-tag_2".to_owned(), None),
                ("c.daily".to_owned(), Some(dating))
            ]
        );
        assert!(matches!(
            store.segments.create_tag(&dated, &settings).await,
            Err(Error::TagExists { .. })
        ));
        let unknown = tag("nope");
        assert!(matches!(
            store.segments.allocate(&unknown, 1).await,
            Err(Error::UnknownTag { .. })
        ));
        assert!(matches!(
            store.segments.update_tag(&unknown, &update).await,
            Err(Error::UnknownTag { .. })
        ));
        assert_eq!(store.segments.tag_info(&unknown).await.unwrap(), None);
        assert!(matches!(
            store.segments.allocate(&a, 0).await,
            Err(Error::InvalidArgument { .. })
        ));
        let zero = TagUpdate {
            step: Some(0),
            description: None,
        };
        assert!(matches!(
            store.segments.update_tag(&a, &zero).await,
            Err(Error::InvalidArgument { .. })
        ));
    }

    /// Concurrent acquirers never share a worker ID; when all are held, the rest are refused.
    pub async fn acquirers_never_share_a_worker_id(store: Store) {
        let tasks: Vec<_> = (0..12)
            .map(|i| {
                let leases = store.leases.clone();
                tokio::spawn(async move {
                    leases
                        .acquire(&request(
                            &format!("node-{i}"),
                            None,
                            8,
                            Duration::from_secs(60),
                        ))
                        .await
                })
            })
            .collect();
        let mut held = HashSet::new();
        let mut refused = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(lease) => assert!(
                    held.insert(lease.worker_id),
                    "worker {} handed out twice",
                    lease.worker_id
                ),
                Err(Error::NoWorkerFree { worker_count: 8 }) => refused += 1,
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!((held.len(), refused), (8, 4));
        assert_eq!(held, (0..8).collect());
    }

    /// A static worker ID is registered like any other and refused while another node holds it.
    pub async fn a_static_worker_id_is_refused_while_held(store: Store) {
        let ttl = Duration::from_secs(60);
        let lease = store
            .leases
            .acquire(&request("a", Some(5), 8, ttl))
            .await
            .unwrap();
        assert_eq!(lease.worker_id, 5);
        let err = store
            .leases
            .acquire(&request("b", Some(5), 8, ttl))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            Error::WorkerHeld {
                worker_id: 5,
                holder: "a".into()
            }
        );
        assert!(matches!(
            store.leases.acquire(&request("b", Some(8), 8, ttl)).await,
            Err(Error::InvalidArgument { .. })
        ));
        // An automatic acquirer skips the static one.
        let auto: Vec<u64> = {
            let mut ids = Vec::new();
            for i in 0..7 {
                ids.push(
                    store
                        .leases
                        .acquire(&request(&format!("n{i}"), None, 8, ttl))
                        .await
                        .unwrap()
                        .worker_id,
                );
            }
            ids
        };
        assert_eq!(auto, [0, 1, 2, 3, 4, 6, 7]);
    }

    /// A renew with a stale token fails and changes nothing; the new holder sees the old HWM;
    /// release records the final HWM and frees the ID at once.
    pub async fn stale_tokens_change_nothing_and_hwm_is_handed_over(store: Store) {
        let short = Duration::from_millis(200);
        let old = store
            .leases
            .acquire(&request("old", None, 4, short))
            .await
            .unwrap();
        let renewed = store.leases.renew(&old, 1_000_000, short).await.unwrap();
        assert_eq!(renewed.hwm_ms, 1_000_000);
        // Never lowered.
        assert_eq!(
            store.leases.renew(&old, 5, short).await.unwrap().hwm_ms,
            1_000_000
        );
        // Expired by the store's clock, taken by another node: the longest expired ID.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let new = store
            .leases
            .acquire(&request("new", None, 1, Duration::from_secs(60)))
            .await
            .unwrap();
        assert_eq!((new.worker_id, new.hwm_ms), (old.worker_id, 1_000_000));
        assert_ne!(new.token, old.token);
        // The old holder is fenced off.
        let stale = store.leases.renew(&old, 9_000_000, short).await;
        assert_eq!(
            stale,
            Err(Error::LeaseLost {
                worker_id: old.worker_id
            })
        );
        assert_eq!(
            store.leases.release(&old, 9_000_000).await,
            Err(Error::LeaseLost {
                worker_id: old.worker_id
            })
        );
        let rows = store.leases.list_leases().await.unwrap();
        assert_eq!(
            (rows[0].hwm_ms, rows[0].node_name.as_str(), rows[0].live),
            (1_000_000, "new", true)
        );
        // Release frees the ID at once and keeps the final HWM for the next holder.
        store.leases.release(&new, 2_000_000).await.unwrap();
        let rows = store.leases.list_leases().await.unwrap();
        assert_eq!((rows[0].hwm_ms, rows[0].live), (2_000_000, false));
        let next = store
            .leases
            .acquire(&request("third", None, 1, Duration::from_secs(60)))
            .await
            .unwrap();
        assert_eq!(next.hwm_ms, 2_000_000);
        // A holder raises the HWM ahead of the clock, but releases with the highest tick it
        // really issued: the stored HWM comes down to it, so the next holder need not borrow.
        let ttl = Duration::from_secs(60);
        store.leases.renew(&next, 9_000_000, ttl).await.unwrap();
        store.leases.release(&next, 2_500_000).await.unwrap();
        let fourth = store
            .leases
            .acquire(&request("fourth", None, 1, ttl))
            .await
            .unwrap();
        assert_eq!(fourth.hwm_ms, 2_500_000);
    }

    /// A node gets its own previous worker ID back once it is free.
    pub async fn a_node_gets_its_previous_worker_id_back(store: Store) {
        let ttl = Duration::from_secs(60);
        let mut leases = Vec::new();
        for node in ["a", "b", "c"] {
            leases.push(
                store
                    .leases
                    .acquire(&request(node, None, 8, ttl))
                    .await
                    .unwrap(),
            );
        }
        store.leases.release(&leases[1], 10).await.unwrap();
        store.leases.release(&leases[0], 10).await.unwrap();
        let again = store
            .leases
            .acquire(&request("b", None, 8, ttl))
            .await
            .unwrap();
        assert_eq!(again.worker_id, leases[1].worker_id);
    }

    /// The end of a tag is served exactly: a step larger than what is left takes the rest,
    /// then the tag is exhausted, and the refusal changes nothing (never an overflow).
    pub async fn the_end_of_a_tag_is_served_exactly_then_exhausted(store: Store) {
        let top = tag("top");
        let max = MAX_SEGMENT_ID;
        let settings = TagSettings {
            step: 5,
            description: String::new(),
            first_id: max - 10,
            dating: None,
        };
        store.segments.create_tag(&top, &settings).await.unwrap();
        assert_eq!(
            store.segments.allocate(&top, 5).await.unwrap(),
            max - 10..max - 5
        );
        assert_eq!(
            store.segments.allocate(&top, 1_000).await.unwrap(),
            max - 5..max,
            "a step larger than what is left takes exactly the rest"
        );
        let before = store.segments.tag_info(&top).await.unwrap().unwrap();
        assert_eq!(before.max_id, max);
        for step in [1, 5, max] {
            assert_eq!(
                store.segments.allocate(&top, step).await,
                Err(Error::TagExhausted { tag: "top".into() })
            );
        }
        assert_eq!(
            store.segments.tag_info(&top).await.unwrap(),
            Some(before),
            "the refused calls changed nothing"
        );
        // A tail given back at the end is served again, and the end stays exact.
        assert!(store.segments.give_back(&top, max - 2..max).await.unwrap());
        assert_eq!(
            store.segments.allocate(&top, 100).await.unwrap(),
            max - 2..max
        );
        // A tag created with nothing left, and an unknown tag, are told apart.
        let full = tag("full");
        let at_end = TagSettings {
            first_id: max,
            ..settings
        };
        store.segments.create_tag(&full, &at_end).await.unwrap();
        assert_eq!(
            store.segments.allocate(&full, 1).await,
            Err(Error::TagExhausted { tag: "full".into() })
        );
        assert!(matches!(
            store.segments.allocate(&tag("nope"), 1_000).await,
            Err(Error::UnknownTag { .. })
        ));
    }

    /// Two tasks racing to the end of a tag, each with its own step, until it is exhausted:
    /// their ranges tile exactly what was left, with no overlap. Repeated on fresh tags so the
    /// race at the very end happens many times.
    pub async fn racers_at_the_end_split_the_rest_exactly(store: Store) {
        for round in 0..20u64 {
            let left = 100 + round;
            let t = tag(&format!("race{round}"));
            let settings = TagSettings {
                step: 1,
                description: String::new(),
                first_id: MAX_SEGMENT_ID - left,
                dating: None,
            };
            store.segments.create_tag(&t, &settings).await.unwrap();
            let racers: Vec<_> = [30u64, 45]
                .into_iter()
                .map(|step| {
                    let (segments, t) = (store.segments.clone(), t.clone());
                    tokio::spawn(async move {
                        let mut ranges = Vec::new();
                        loop {
                            match segments.allocate(&t, step).await {
                                Ok(range) => ranges.push(range),
                                Err(Error::TagExhausted { .. }) => return ranges,
                                Err(other) => panic!("unexpected {other:?}"),
                            }
                        }
                    })
                })
                .collect();
            let mut all: Vec<Range<u64>> = Vec::new();
            for racer in racers {
                all.extend(racer.await.unwrap());
            }
            all.sort_by_key(|r| r.start);
            assert_eq!(all.first().map(|r| r.start), Some(MAX_SEGMENT_ID - left));
            assert_eq!(all.last().map(|r| r.end), Some(MAX_SEGMENT_ID));
            for pair in all.windows(2) {
                assert_eq!(
                    pair[0].end, pair[1].start,
                    "round {round}: gap or overlap between {:?} and {:?}",
                    pair[0], pair[1]
                );
            }
            assert!(all.iter().all(|r| r.start < r.end && r.end - r.start <= 45));
        }
    }

    /// Tags differ by case; give-back on an unknown tag is refused like any other call.
    pub async fn tags_are_case_sensitive(store: Store) {
        let (upper, lower) = (tag("Orders"), tag("orders"));
        let settings = |first_id| TagSettings {
            step: 5,
            description: String::new(),
            first_id,
            dating: None,
        };
        store
            .segments
            .create_tag(&upper, &settings(1))
            .await
            .unwrap();
        store
            .segments
            .create_tag(&lower, &settings(1_000))
            .await
            .unwrap();
        assert_eq!(store.segments.allocate(&upper, 5).await.unwrap(), 1..6);
        assert_eq!(
            store.segments.allocate(&lower, 5).await.unwrap(),
            1_000..1_005
        );
        let unknown = tag("ORDERS");
        assert!(matches!(
            store.segments.give_back(&unknown, 1..6).await,
            Err(Error::UnknownTag { .. })
        ));
    }

    /// Tags of any UTF-8 text (issue 27: Leaf takes any string key): each its own sequence,
    /// read back byte for byte, never confused with a neighbour that differs by an accent, a
    /// case, an inner space or a composed character (MySQL's default collations would fold
    /// them together), listed as they were written.
    pub async fn tags_of_any_text_are_kept_apart(store: Store) {
        let at_limit = format!("{}ab", "订".repeat(42));
        assert_eq!(at_limit.len(), 128);
        let names = [
            "订单".to_owned(),
            "a b".to_owned(),
            "ab".to_owned(),
            "tag/with/slash".to_owned(),
            "🦀".to_owned(),
            "é".to_owned(),
            "e\u{301}".to_owned(), // e and a combining accent: other bytes than é
            "e".to_owned(),
            "E".to_owned(),
            "a'\"\\%_*?[]{}".to_owned(),
            at_limit,
        ];
        let settings = |first_id| TagSettings {
            step: 5,
            description: String::new(),
            first_id,
            dating: None,
        };
        for (i, name) in names.iter().enumerate() {
            let first_id = 1 + 1_000 * i as u64;
            store
                .segments
                .create_tag(&tag(name), &settings(first_id))
                .await
                .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        }
        for (i, name) in names.iter().enumerate() {
            let first_id = 1 + 1_000 * i as u64;
            let range = store.segments.allocate(&tag(name), 5).await.unwrap();
            assert_eq!(range, first_id..first_id + 5, "{name:?}");
            let info = store.segments.tag_info(&tag(name)).await.unwrap().unwrap();
            assert_eq!(info.tag.as_str(), name);
        }
        let listed: HashSet<String> = store
            .segments
            .list_tags()
            .await
            .unwrap()
            .into_iter()
            .map(|info| info.tag.as_str().to_owned())
            .collect();
        for name in &names {
            assert!(listed.contains(name), "{name:?} not listed: {listed:?}");
        }
        assert!(store.segments.tag_info(&tag("订")).await.unwrap().is_none());
    }

    /// Several nodes opening the same new namespace at once all succeed (schema creation does
    /// not race), and see one schema.
    pub async fn concurrent_opens_of_one_namespace_agree(url: String) {
        let namespace = common::fresh_namespace();
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let (url, options) = (url.clone(), common::options(&namespace));
                tokio::spawn(async move { idmint_store::open(&url, &options).await })
            })
            .collect();
        let mut stores = Vec::new();
        for open in opens {
            stores.push(open.await.unwrap().unwrap());
        }
        let t = tag("shared");
        stores[0]
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        assert!(stores[5].segments.tag_info(&t).await.unwrap().is_some());
    }

    /// A record of `version`; versions from 2 on are permuted, so the key's fingerprint is
    /// round-tripped beside records without one.
    fn space_record(version: u64, epoch_ms: u64) -> IdSpaceRecord {
        IdSpaceRecord {
            version,
            space: IdSpace {
                layout: "time:41@1ms,worker:10,seq:12".into(),
                epoch_ms,
                datacenter: 3,
                permutation: (version > 1).then(|| format!("feistel63x8-siphash24:{version:016x}")),
            },
            issues_from_ms: 1_700_000_000_000 + version,
            first_id: version << 40,
            recorded_at_ms: 0,
        }
    }

    /// The ID space: recorded once per version, round-tripped, and a change is refused while
    /// a lease is live or above an HWM it was not judged by; it fences every old token, and
    /// leases are granted only under the space in force.
    pub async fn id_spaces_are_recorded_and_fence_leases(store: Store) {
        let leases = &store.leases;
        assert_eq!(leases.id_spaces().await.unwrap(), []);
        // The store's clock, which a change takes its moment from: this machine's, give or take.
        let local = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(leases.clock_ms().await.unwrap().abs_diff(local) < 5_000);
        let mut ask = request("a", None, 4, Duration::from_secs(30));
        ask.id_space = Some(1);
        assert!(matches!(
            leases.acquire(&ask).await,
            Err(Error::IdSpaceChanged { held: 1, stored: 0 })
        ));
        leases
            .record_id_space(&space_record(1, 1_000), 0)
            .await
            .unwrap();
        assert!(matches!(
            leases.record_id_space(&space_record(1, 2_000), 0).await,
            Err(Error::StoreConflict { .. })
        ));
        let history = leases.id_spaces().await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].space, space_record(1, 1_000).space);
        assert_eq!(history[0].first_id, 1 << 40);
        assert!(history[0].recorded_at_ms > 1_700_000_000_000);

        let lease = leases.acquire(&ask).await.unwrap();
        let hwm = 1_800_000_000_000;
        leases
            .renew(&lease, hwm, Duration::from_secs(30))
            .await
            .unwrap();
        let v2 = space_record(2, 900);
        assert!(matches!(
            leases.record_id_space(&v2, hwm).await,
            Err(Error::IdSpaceRefused { .. })
        ));
        leases.release(&lease, hwm).await.unwrap();
        // Released, the old token still renews (nothing else took the worker ID)...
        leases
            .renew(&lease, hwm, Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(matches!(
            leases.record_id_space(&v2, hwm - 1).await,
            Err(Error::StoreConflict { .. })
        ));
        assert!(matches!(
            leases.record_id_space(&space_record(3, 900), hwm).await,
            Err(Error::StoreConflict { .. })
        ));
        leases.record_id_space(&v2, hwm).await.unwrap();
        // ...but not after the change: every token moved on.
        assert!(matches!(
            leases.renew(&lease, hwm + 1, Duration::from_secs(30)).await,
            Err(Error::LeaseLost { .. })
        ));
        assert!(matches!(
            leases.acquire(&ask).await,
            Err(Error::IdSpaceChanged { held: 1, stored: 2 })
        ));
        ask.id_space = Some(2);
        let next = leases.acquire(&ask).await.unwrap();
        assert_eq!(next.worker_id, lease.worker_id);
        assert_eq!(next.hwm_ms, hwm);
        assert!(next.token > lease.token);
        let history = leases.id_spaces().await.unwrap();
        let versions: Vec<u64> = history.iter().map(|r| r.version).collect();
        assert_eq!(versions, [1, 2]);
        assert_eq!(history[1].space, v2.space);
        assert_eq!(history[1].issues_from_ms, v2.issues_from_ms);
        assert_eq!(history[1].first_id, v2.first_id);
    }

    /// Nodes recording the first space at once: exactly one wins, the others are told.
    pub async fn one_first_space_wins(store: Store) {
        let tries: Vec<_> = (0..6u64)
            .map(|i| {
                let leases = store.leases.clone();
                tokio::spawn(
                    async move { leases.record_id_space(&space_record(1, 1_000 + i), 0).await },
                )
            })
            .collect();
        let mut won = 0;
        for attempt in tries {
            match attempt.await.unwrap() {
                Ok(()) => won += 1,
                Err(Error::StoreConflict { .. }) => {}
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(won, 1);
        assert_eq!(store.leases.id_spaces().await.unwrap().len(), 1);
    }

    /// Opening again (same namespace) finds the schema in place and the data intact.
    pub async fn migration_rerun_is_a_no_op(url: String) {
        let namespace = common::fresh_namespace();
        let first = idmint_store::open(&url, &common::options(&namespace))
            .await
            .unwrap();
        let t = tag("kept");
        first
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        let range = first.segments.allocate(&t, 7).await.unwrap();
        let second = idmint_store::open(&url, &common::options(&namespace))
            .await
            .unwrap();
        let info = second.segments.tag_info(&t).await.unwrap().unwrap();
        assert_eq!(info.max_id, range.end);
    }
}

/// Stamps out the suite for one backend: `$url` is an expression giving the store URL.
macro_rules! conformance {
    ($backend:ident, $url:expr) => {
        mod $backend {
            use super::{common, suite};

            async fn store() -> idmint_store::Store {
                common::open(&$url).await.0
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_allocations_tile_without_overlap() {
                suite::concurrent_allocations_tile_without_overlap(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn give_back_only_when_nobody_allocated_after() {
                suite::give_back_only_when_nobody_allocated_after(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tags_are_managed_and_unknown_ones_refused() {
                suite::tags_are_managed_and_unknown_ones_refused(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn acquirers_never_share_a_worker_id() {
                suite::acquirers_never_share_a_worker_id(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_static_worker_id_is_refused_while_held() {
                suite::a_static_worker_id_is_refused_while_held(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stale_tokens_change_nothing_and_hwm_is_handed_over() {
                suite::stale_tokens_change_nothing_and_hwm_is_handed_over(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_node_gets_its_previous_worker_id_back() {
                suite::a_node_gets_its_previous_worker_id_back(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_end_of_a_tag_is_served_exactly_then_exhausted() {
                suite::the_end_of_a_tag_is_served_exactly_then_exhausted(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn racers_at_the_end_split_the_rest_exactly() {
                suite::racers_at_the_end_split_the_rest_exactly(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tags_are_case_sensitive() {
                suite::tags_are_case_sensitive(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tags_of_any_text_are_kept_apart() {
                suite::tags_of_any_text_are_kept_apart(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_opens_of_one_namespace_agree() {
                suite::concurrent_opens_of_one_namespace_agree($url).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn id_spaces_are_recorded_and_fence_leases() {
                suite::id_spaces_are_recorded_and_fence_leases(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn one_first_space_wins() {
                suite::one_first_space_wins(store().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn migration_rerun_is_a_no_op() {
                suite::migration_rerun_is_a_no_op($url).await;
            }
        }
    };
}

conformance!(sqlite, common::sqlite_url());
#[cfg(feature = "postgres")]
conformance!(postgres, common::server_url("IDMINT_TEST_POSTGRES_URL"));
#[cfg(feature = "mysql")]
conformance!(mysql, common::server_url("IDMINT_TEST_MYSQL_URL"));
#[cfg(feature = "redis")]
conformance!(redis, common::server_url("IDMINT_TEST_REDIS_URL"));
