//! 128-bit IDs: the layouts bit for bit (the vectors every idmint implementation shares), every
//! text form reading back what it wrote and sorting as the IDs, strict order across threads,
//! the counter borrowing the next millisecond, clocks stepped back, generators restarted, the
//! node field without randomness, and a forked child never repeating its parent's IDs.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idmint_core::id128::{Id128Fields, COUNTER_BITS};
use idmint_core::{Clock, Id128, Id128Form, Id128Generator, Id128Kind, ManualClock};
use proptest::prelude::*;
use serde_json::Value;

const NOW_MS: u64 = 1_764_201_600_000;

const TEXT_FORMS: [Id128Form; 3] = [Id128Form::Uuid, Id128Form::Hex, Id128Form::Ulid];

fn kinds() -> impl Strategy<Value = Id128Kind> {
    prop::sample::select(vec![Id128Kind::Uuid7, Id128Kind::Ulid])
}

fn generator(kind: Id128Kind, clock: &Arc<ManualClock>) -> idmint_core::id128::Id128Builder {
    Id128Generator::builder(kind).clock(clock.clone())
}

fn bytes_of(id: Id128) -> Vec<u8> {
    let mut buf = [0u8; 36];
    Id128Form::Bytes.encode(id, &mut buf).to_vec()
}

#[test]
fn the_shared_vectors_compose_render_and_read_back() {
    let vectors: Value = serde_json::from_str(include_str!(
        "../../../../clients/conformance/id128_vectors.json"
    ))
    .unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let kind = Id128Kind::parse(case["kind"].as_str().unwrap()).unwrap();
        let fields = Id128Fields {
            ms: case["ms"].as_u64().unwrap(),
            counter: case["counter"].as_u64().unwrap() as u32,
            node_bits: case["node_bits"].as_u64().unwrap() as u32,
            node: case["node"].as_u64().unwrap() as u32,
            random: u64::from_str_radix(case["random_hex"].as_str().unwrap(), 16).unwrap(),
        };
        let id = Id128::compose(kind, &fields);
        assert_eq!(Id128Form::Uuid.render(id), case["uuid"], "{case}");
        assert_eq!(Id128Form::Hex.render(id), case["hex"], "{case}");
        assert_eq!(Id128Form::Ulid.render(id), case["ulid"], "{case}");
        let bytes_hex: String = bytes_of(id).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(bytes_hex, case["bytes_hex"], "{case}");
        for form in ["uuid", "hex", "ulid"] {
            assert_eq!(Id128::parse(case[form].as_str().unwrap()).unwrap(), id);
        }
        assert_eq!(id.fields(kind, fields.node_bits).unwrap(), fields, "{case}");
        assert_eq!(id.is_uuid7(), kind == Id128Kind::Uuid7);
    }
    for refused in vectors["refused"].as_array().unwrap() {
        let text = refused.as_str().unwrap();
        let error = Id128::parse(text).unwrap_err().to_string();
        assert!(error.contains("is not a 128-bit ID"), "{text:?}: {error}");
    }
    for accepted in vectors["accepted"].as_array().unwrap() {
        let id = Id128::parse(accepted["text"].as_str().unwrap()).unwrap();
        assert_eq!(Id128Form::Hex.render(id), accepted["hex"]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_form_reads_back_what_it_wrote(value in any::<u128>()) {
        let id = Id128::from_u128(value);
        for form in TEXT_FORMS {
            prop_assert_eq!(Id128::parse(&form.render(id)).unwrap(), id);
            prop_assert_eq!(Id128::parse(&form.render(id).to_ascii_uppercase()).unwrap(), id);
        }
        prop_assert_eq!(Id128::parse_bytes(&bytes_of(id)).unwrap(), id);
        prop_assert_eq!(id.to_string(), Id128Form::Uuid.render(id));
    }

    #[test]
    fn texts_and_bytes_sort_as_the_ids(a in any::<u128>(), b in any::<u128>()) {
        let (a, b) = (Id128::from_u128(a), Id128::from_u128(b));
        for form in TEXT_FORMS {
            prop_assert_eq!(form.render(a).cmp(&form.render(b)), a.cmp(&b));
        }
        prop_assert_eq!(bytes_of(a).cmp(&bytes_of(b)), a.cmp(&b));
    }

    #[test]
    fn text_that_is_not_an_id_is_refused_or_read_exactly(text in "[0-9a-zA-Z-]{0,40}|[ -~]{0,40}") {
        if let Ok(id) = Id128::parse(&text) {
            let lower = text.to_ascii_lowercase();
            let upper = text.to_ascii_uppercase();
            prop_assert!(
                Id128Form::Uuid.render(id) == lower
                    || Id128Form::Hex.render(id) == lower
                    || Id128Form::Ulid.render(id) == upper,
                "{} read as {}", text, id
            );
        }
    }

    #[test]
    fn generated_ids_carry_their_time_kind_and_node(
        kind in kinds(),
        at in 0u64..(1 << 48) - 1_000,
        (node_bits, node) in (0u32..=24).prop_flat_map(|bits| (Just(bits), 0u32..(1 << bits).max(1))),
    ) {
        let clock = ManualClock::shared(at);
        let ids = generator(kind, &clock).node(node_bits, node).build().unwrap();
        let mut last = None;
        for id in ids.next_ids(50).unwrap() {
            let decoded = id.decode(Some(kind), node_bits).unwrap();
            prop_assert_eq!(decoded.ms, at);
            prop_assert_eq!(decoded.node, (node_bits > 0).then_some(node));
            prop_assert_eq!(decoded.kind, kind);
            if kind == Id128Kind::Uuid7 {
                prop_assert!(id.is_uuid7());
                prop_assert_eq!((decoded.version, decoded.variant), (Some(7), Some(0b10)));
            } else {
                // A ULID's own text says it is one, whatever its bits look like.
                let text = Id128Form::Ulid.render(id);
                let hinted = id.decode(Id128Kind::of_text(text.as_bytes()), node_bits).unwrap();
                prop_assert_eq!(hinted, decoded);
            }
            prop_assert!(last < Some(id));
            last = Some(id);
        }
    }
}

#[test]
fn threads_get_ids_in_the_order_they_took_them() {
    for kind in [Id128Kind::Uuid7, Id128Kind::Ulid] {
        let ids = Arc::new(Id128Generator::builder(kind).build().unwrap());
        // Taken under a lock, the order in the list is the order of generation.
        let in_order = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (ids, in_order) = (ids.clone(), in_order.clone());
                std::thread::spawn(move || {
                    let mut own = Vec::with_capacity(100_000);
                    for i in 0..100_000 {
                        if i % 10 == 0 {
                            let mut list = in_order.lock().unwrap();
                            list.push(ids.next_id().unwrap());
                        } else {
                            own.push(ids.next_id().unwrap());
                        }
                    }
                    own
                })
            })
            .collect();
        let mut all = HashSet::new();
        for thread in threads {
            let own = thread.join().unwrap();
            assert!(
                own.windows(2).all(|w| w[0] < w[1]),
                "{kind}: a thread's IDs went down"
            );
            for id in own {
                assert!(all.insert(id));
            }
        }
        let in_order = in_order.lock().unwrap();
        assert!(
            in_order.windows(2).all(|w| w[0] < w[1]),
            "{kind}: not in generation order"
        );
        for id in in_order.iter() {
            assert!(all.insert(*id), "{kind}: {id} twice");
        }
        assert_eq!(all.len(), 400_000);
    }
}

#[test]
fn a_full_counter_borrows_the_next_millisecond_and_waits_past_the_lead() {
    let clock = ManualClock::shared(NOW_MS);
    let ids = generator(Id128Kind::Uuid7, &clock)
        .fixed_randomness_for_tests(0)
        .max_lead(Duration::from_millis(1))
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap();
    let counters = 1u64 << COUNTER_BITS;
    let mut last = ids.next_id().unwrap();
    assert_eq!(
        (last.ms(), last.fields(Id128Kind::Uuid7, 0).unwrap().counter),
        (NOW_MS, 0)
    );
    let mut taken = 1;
    // Two whole milliseconds' counters: the first borrows NOW+1 (within the 1 ms lead), the
    // second would need NOW+2, so the call waits for the clock (a manual clock moves when slept).
    while taken < 2 * counters + 10 {
        let batch = ids.next_ids(1_000_000).unwrap();
        for id in batch {
            assert!(id > last);
            last = id;
        }
        taken += 1_000_000;
    }
    assert_eq!(last.ms(), NOW_MS + 2);
    assert!(
        clock.slept() >= Duration::from_millis(1),
        "never waited past the lead"
    );
    assert!(clock.now_ms() > NOW_MS);
}

#[test]
fn the_lead_is_bounded_by_max_wait() {
    let clock = ManualClock::shared(NOW_MS);
    let ids = generator(Id128Kind::Ulid, &clock)
        .fixed_randomness_for_tests(0)
        .max_lead(Duration::ZERO)
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    // The counter starts at 0 (randomness fixed at 0): 2^24 IDs fit in the millisecond.
    for _ in 0..16 {
        assert_eq!(ids.next_ids(1_000_000).unwrap().count(), 1_000_000);
    }
    let error = ids.next_ids(777_217).unwrap_err();
    assert!(error.to_string().contains("behind"), "{error}");
    // Nothing was taken by the refusals: the rest of the millisecond is still there.
    for _ in 0..100 {
        assert!(ids.next_ids(1_000_000).is_err());
    }
    let rest: Vec<_> = ids.next_ids(777_216).unwrap().collect();
    assert_eq!(rest[777_215].ms(), NOW_MS);
    assert!(ids.next_id().is_err());
    clock.advance(Duration::from_millis(1));
    assert_eq!(ids.next_id().unwrap().ms(), NOW_MS + 1);
}

#[test]
fn a_clock_stepped_back_never_makes_a_generator_repeat_or_go_down() {
    let clock = ManualClock::shared(NOW_MS);
    let ids = generator(Id128Kind::Uuid7, &clock).build().unwrap();
    let before: Vec<_> = ids.next_ids(1_000).unwrap().collect();
    clock.step_back(Duration::from_secs(30));
    let after: Vec<_> = ids.next_ids(1_000).unwrap().collect();
    assert!(after[0] > before[999]);
    assert_eq!(
        after[999].ms(),
        NOW_MS,
        "the time in IDs does not go back with the clock"
    );
    // It counts on in the millisecond it was in, as long as the clock is behind, and borrows
    // the next ones within the lead, without waiting for the clock.
    let mut last = after[999];
    for _ in 0..20 {
        let mut batch = ids.next_ids(1_000_000).unwrap();
        let first = batch.next().unwrap();
        assert!(first > last);
        last = batch.last().unwrap();
        assert!(last > first);
    }
    assert!(last.ms() > NOW_MS && last.ms() <= NOW_MS + 2);
    assert_eq!(clock.slept(), Duration::ZERO);
}

#[test]
fn a_restarted_generator_with_its_clock_stepped_back_never_repeats() {
    let clock = ManualClock::shared(NOW_MS);
    let mut seen = HashSet::new();
    for restart in 0..20u64 {
        // Every restart starts 5 ms earlier: its milliseconds are the previous run's.
        clock.set_ms(NOW_MS - 5 * restart);
        let ids = generator(Id128Kind::Uuid7, &clock).build().unwrap();
        for _ in 0..10 {
            for id in ids.next_ids(1_000).unwrap() {
                assert!(seen.insert(id), "{id} again after restart {restart}");
            }
            clock.advance(Duration::from_millis(1));
        }
    }
}

#[test]
fn nodes_never_collide_even_when_randomness_is_broken() {
    let clock = ManualClock::shared(NOW_MS);
    for kind in [Id128Kind::Uuid7, Id128Kind::Ulid] {
        let make = |node| {
            generator(kind, &clock)
                .node(10, node)
                .fixed_randomness_for_tests(42)
                .build()
                .unwrap()
        };
        let (a, b) = (make(1), make(2));
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            assert!(seen.insert(a.next_id().unwrap()));
            assert!(seen.insert(b.next_id().unwrap()));
        }
        // Without the node field, the same broken generators repeat each other at once.
        let (c, d) = (
            generator(kind, &clock)
                .fixed_randomness_for_tests(42)
                .build()
                .unwrap(),
            generator(kind, &clock)
                .fixed_randomness_for_tests(42)
                .build()
                .unwrap(),
        );
        assert_eq!(c.next_id().unwrap(), d.next_id().unwrap());
    }
}

#[test]
fn node_fields_that_do_not_fit_are_refused() {
    assert!(Id128Generator::builder(Id128Kind::Uuid7)
        .node(25, 1)
        .build()
        .is_err());
    assert!(Id128Generator::builder(Id128Kind::Uuid7)
        .node(4, 16)
        .build()
        .is_err());
    assert!(Id128Generator::builder(Id128Kind::Uuid7)
        .node(0, 1)
        .build()
        .is_err());
    assert!(Id128Generator::builder(Id128Kind::Uuid7)
        .node(24, (1 << 24) - 1)
        .build()
        .is_ok());
    let ids = Id128Generator::uuid7().unwrap();
    assert!(ids.next_ids(0).is_err());
    assert!(ids.next_ids(1_000_001).is_err());
}

/// `n` IDs of `ids` made in a child process forked from this thread, which checks that it
/// counted the fork (it writes nothing otherwise).
#[cfg(unix)]
#[allow(unsafe_code)]
fn ids_of_a_child(ids: &Id128Generator, n: usize) -> Vec<Id128> {
    use std::io::Read;
    use std::os::fd::FromRawFd;

    assert!(n <= 100);
    let forks_before = idmint_core::id128::forks_counted();
    let mut fds = [0i32; 2];
    // SAFETY: a pipe into a local array; the child only draws IDs into a stack buffer (no
    // locks, no allocation), writes them and leaves with _exit.
    let pid = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::fork()
    };
    assert!(pid >= 0);
    if pid == 0 {
        let mut out = [0u8; 16 * 100];
        let counted = idmint_core::id128::forks_counted() == forks_before + 1;
        for (slot, id) in out
            .chunks_mut(16)
            .zip(ids.next_ids(n as u32).into_iter().flatten())
        {
            slot.copy_from_slice(&id.to_bytes());
        }
        // SAFETY: writes a buffer this child owns, then ends without unwinding.
        unsafe {
            libc::write(
                fds[1],
                out.as_ptr().cast(),
                if counted { 16 * n } else { 0 },
            );
            libc::_exit(0);
        }
    }
    // SAFETY: this process's own descriptors, each closed once (the File owns the read end).
    let mut pipe = unsafe {
        libc::close(fds[1]);
        std::fs::File::from_raw_fd(fds[0])
    };
    let mut bytes = Vec::new();
    pipe.read_to_end(&mut bytes).unwrap();
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    assert_eq!(
        bytes.len(),
        16 * n,
        "the child did not count the fork or draw its IDs"
    );
    bytes
        .chunks(16)
        .map(|c| Id128::parse_bytes(c).unwrap())
        .collect()
}

/// A child process made by `fork` starts with copies of its parent's generator and random
/// state; it must still never give an ID its parent gives.
#[cfg(unix)]
#[test]
fn a_forked_child_never_repeats_its_parent() {
    let clock = ManualClock::shared(NOW_MS);
    let ids = generator(Id128Kind::Uuid7, &clock).build().unwrap();
    let _ = ids.next_id().unwrap(); // this thread's random state exists before the fork
    let child = ids_of_a_child(&ids, 100);
    let parent: Vec<Id128> = ids.next_ids(100).unwrap().collect();
    // Same clock, same copied counter: the same (ms, counter) pairs in both processes, told
    // apart only by the random bits, which the child reseeded.
    for (p, c) in parent.iter().zip(&child) {
        let (pf, cf) = (
            p.fields(Id128Kind::Uuid7, 0).unwrap(),
            c.fields(Id128Kind::Uuid7, 0).unwrap(),
        );
        assert_eq!((pf.ms, pf.counter), (cf.ms, cf.counter));
        assert_ne!(
            pf.random, cf.random,
            "the child repeated its parent's random bits"
        );
    }
}

#[test]
fn a_generator_built_after_another_goes_on_above_it() {
    let clock = ManualClock::shared(NOW_MS);
    let first = generator(Id128Kind::Uuid7, &clock)
        .node(4, 1)
        .build()
        .unwrap();
    let last = first.next_ids(1_000).unwrap().last().unwrap();
    // Same millisecond, then a clock 10 s back: the successor is above either way.
    let second = generator(Id128Kind::Uuid7, &clock)
        .node(4, 2)
        .after(&first)
        .build()
        .unwrap();
    assert!(second.next_id().unwrap() > last);
    clock.step_back(Duration::from_secs(10));
    let third = generator(Id128Kind::Uuid7, &clock)
        .node(4, 3)
        .after(&second)
        .build()
        .unwrap();
    let next = third.next_id().unwrap();
    assert!(next > last && next.ms() == NOW_MS);
}

#[test]
fn a_clock_past_the_words_range_is_an_error_not_a_wrapped_id() {
    let clock = ManualClock::shared(NOW_MS);
    let ids = generator(Id128Kind::Uuid7, &clock).build().unwrap();
    let before = ids.next_id().unwrap();
    // 2^40 ms (34.8 years) after the build: the word cannot count that far.
    clock.set_ms(NOW_MS + (1 << 40) + 5);
    for _ in 0..3 {
        let error = ids.next_id().unwrap_err();
        assert!(error.to_string().contains("ran out"), "{error}");
        assert!(ids.next_ids(10).is_err());
    }
    // A generator built now is fine, and the end of 48-bit milliseconds is refused too.
    let fresh = generator(Id128Kind::Uuid7, &clock).build().unwrap();
    assert!(fresh.next_id().unwrap() > before);
    clock.set_ms((1 << 48) - 2);
    let last = generator(Id128Kind::Ulid, &clock)
        .fixed_randomness_for_tests(0)
        .build()
        .unwrap();
    assert_eq!(last.next_id().unwrap().ms(), (1 << 48) - 2);
    assert!(last.next_ids(1_000_000).is_ok());
    clock.set_ms((1 << 48) + 10);
    assert!(last.next_id().is_err());
}

/// Children forked from a thread that never drew an ID, and two children of one parent,
/// never share an ID: each thread reseeds before its first draw and after every fork.
#[cfg(unix)]
#[test]
fn children_of_a_parent_that_never_drew_and_siblings_never_repeat() {
    // The generator is built (and draws) on this thread; the forks happen on another, which
    // has drawn nothing for IDs (it used rand for something else).
    let clock = ManualClock::shared(NOW_MS);
    let ids = Arc::new(generator(Id128Kind::Ulid, &clock).build().unwrap());
    std::thread::spawn(move || {
        let _ = rand::random::<u64>();
        let (first, second) = (ids_of_a_child(&ids, 50), ids_of_a_child(&ids, 50));
        let parent: Vec<Id128> = ids.next_ids(50).unwrap().collect();
        let mut seen = HashSet::new();
        for id in first.iter().chain(&second).chain(&parent) {
            assert!(seen.insert(*id), "{id} made by two processes");
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_generator_not_before_a_millisecond_waits_for_the_clock_to_reach_it() {
    let clock = ManualClock::shared(NOW_MS);
    let fenced = generator(Id128Kind::Uuid7, &clock)
        .not_before_ms(NOW_MS + 5_000)
        .max_lead(Duration::from_secs(1))
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    let error = fenced.next_id().unwrap_err();
    assert!(error.to_string().contains("behind"), "{error}");
    clock.advance(Duration::from_secs(4));
    let batch = fenced.next_ids(3).unwrap();
    assert_eq!(batch.last_ms(), Some(NOW_MS + 5_000));
    let ids: Vec<_> = batch.collect();
    assert!(ids.iter().all(|id| id.ms() == NOW_MS + 5_000));
    // Not before a moment already past: the clock's millisecond, as without it.
    let plain = generator(Id128Kind::Ulid, &clock)
        .not_before_ms(NOW_MS)
        .build()
        .unwrap();
    assert_eq!(plain.next_id().unwrap().ms(), NOW_MS + 4_000);
}
