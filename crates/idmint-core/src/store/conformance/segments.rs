//! Range allocation and tags: ranges tile a tag's sequence without overlap, to its very end;
//! tags are managed, kept apart byte for byte, and unknown ones refused.

use std::collections::HashSet;
use std::ops::Range;

use super::{tag, Profile, Subject};
use crate::dating::Dating;
use crate::error::Error;
use crate::store::{TagSettings, TagUpdate, MAX_SEGMENT_ID};

/// 8 tasks x 1,000 allocations on one tag: disjoint ranges that tile the sequence.
///
/// A set's ranges are disjoint, but need not tile: a range asked of a store that is slow to
/// answer is asked of the next store too, and the range that loses is a gap. A set takes each
/// range with a read and a compare-and-set that the other tasks mostly win, so on a set each
/// task takes 100 ranges, which keep the race as tight in far less time.
pub async fn concurrent_allocations_tile_without_overlap(store: Subject, profile: Profile) {
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
                let ranges_per_task = if profile.set { 100 } else { 1_000 };
                for i in 0..ranges_per_task {
                    let range = loop {
                        match segments.allocate(&orders, 1 + (task + i) % 7).await {
                            // A set takes a range with a compare-and-set, and gives up after
                            // many rounds lost to the other tasks: the caller tries again.
                            Err(Error::StoreConflict { .. }) if profile.set => continue,
                            other => break other.unwrap(),
                        }
                    };
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
        if profile.set {
            assert!(
                pair[0].end <= pair[1].start,
                "overlap between {:?} and {:?}",
                pair[0],
                pair[1]
            );
            continue;
        }
        assert_eq!(
            pair[0].end, pair[1].start,
            "gap or overlap between {:?} and {:?}",
            pair[0], pair[1]
        );
    }
    if !profile.set {
        let info = store.segments.tag_info(&orders).await.unwrap().unwrap();
        assert_eq!(info.max_id, all.last().unwrap().end);
    }
}

/// Give-back returns the tail only when nobody allocated after it.
pub async fn give_back_only_when_nobody_allocated_after(store: Subject, profile: Profile) {
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
    // The tail is handed out again; a set hands it to another node, never to the one that
    // gave it back (whose IDs of a tag only increase, whichever store it asks).
    let again = store.segments.allocate(&t, 2).await.unwrap();
    let expected = if profile.set {
        second.end
    } else {
        second.start + 4
    };
    assert_eq!(again, expected..expected + 2);
    // An empty tail is nothing to give back, on any tag: no change, no error.
    let end = again.end;
    assert!(!store.segments.give_back(&t, end..end).await.unwrap());
    assert!(!store.segments.give_back(&tag("nope"), 5..5).await.unwrap());
}

/// `max_id` lives in a signed 64-bit value: a tag created past [`MAX_SEGMENT_ID`], or a
/// compare-and-set to past it, is refused as an invalid argument and changes nothing (a set
/// finds no first ID of its own there, and refuses the tag as exhausted).
pub async fn a_max_id_past_the_end_is_refused(store: Subject, profile: Profile) {
    let past = tag("past");
    let settings = TagSettings {
        first_id: MAX_SEGMENT_ID + 1,
        ..TagSettings::default()
    };
    let created = store.segments.create_tag(&past, &settings).await;
    if profile.set {
        assert!(
            matches!(created, Err(Error::TagExhausted { .. })),
            "{created:?}"
        );
    } else {
        assert!(
            matches!(created, Err(Error::InvalidArgument { .. })),
            "{created:?}"
        );
    }
    assert_eq!(store.segments.tag_info(&past).await.unwrap(), None);
    let t = tag("kept");
    let info = store
        .segments
        .create_tag(&t, &TagSettings::default())
        .await
        .unwrap();
    let moved = store
        .segments
        .compare_and_set_max_id(&t, info.max_id, u64::MAX)
        .await;
    assert!(
        matches!(moved, Err(Error::InvalidArgument { .. })),
        "{moved:?}"
    );
    let after = store.segments.tag_info(&t).await.unwrap().unwrap();
    assert_eq!(after.max_id, info.max_id);
}

/// Tags: create, refuse twice, set step and description, list, unknown tags refused.
///
/// A dated tag keeps its dating through every read and an update; a store set refuses one.
pub async fn tags_are_managed_and_unknown_ones_refused(store: Subject, profile: Profile) {
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
    let dated = tag("c.daily");
    let dating = Dating::parse("day:6:text:Asia/Shanghai").unwrap();
    let settings = TagSettings {
        dating: Some(dating),
        ..TagSettings::default()
    };
    let update = TagUpdate {
        step: Some(7),
        description: None,
    };
    let mut expected = vec![("a.tag:1".to_owned(), None), ("b-tag_2".to_owned(), None)];
    if profile.set {
        assert!(matches!(
            store.segments.create_tag(&dated, &settings).await,
            Err(Error::InvalidArgument { .. })
        ));
    } else {
        // A dated tag keeps its dating through every read and an update.
        let created = store.segments.create_tag(&dated, &settings).await.unwrap();
        assert_eq!(created.dating, Some(dating));
        let info = store.segments.tag_info(&dated).await.unwrap().unwrap();
        assert_eq!(info.dating, Some(dating));
        let updated = store.segments.update_tag(&dated, &update).await.unwrap();
        assert_eq!((updated.step, updated.dating), (7, Some(dating)));
        assert!(matches!(
            store.segments.create_tag(&dated, &settings).await,
            Err(Error::TagExists { .. })
        ));
        expected.push(("c.daily".to_owned(), Some(dating)));
    }
    let listed: Vec<(String, Option<Dating>)> = store
        .segments
        .list_tags()
        .await
        .unwrap()
        .iter()
        .map(|t| (t.tag.to_string(), t.dating))
        .collect();
    assert_eq!(listed, expected);
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

/// Tags differ by case; give-back on an unknown tag is refused like any other call.
pub async fn tags_are_case_sensitive(store: Subject) {
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
pub async fn tags_of_any_text_are_kept_apart(store: Subject) {
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

/// The end of a tag is served exactly: a step larger than what is left takes the rest,
/// then the tag is exhausted, and the refusal changes nothing (never an overflow).
pub async fn the_end_of_a_tag_is_served_exactly_then_exhausted(store: Subject) {
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
pub async fn racers_at_the_end_split_the_rest_exactly(store: Subject) {
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
