#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::error::Error;
use crate::layout::{FieldKind, Layout};
use crate::snowflake::tests::{
    assert_increasing, distinct_ids_on_threads, generator_since, now_ms, shared_on_system_clock,
};
use crate::snowflake::{Fence, SnowflakeConfig};

fn generator(spec: &str, clock: &Arc<ManualClock>, config: SnowflakeConfig) -> SnowflakeGenerator {
    fenced(spec, clock, config, Fence::unfenced())
}

fn fenced(
    spec: &str,
    clock: &Arc<ManualClock>,
    config: SnowflakeConfig,
    fence: Fence,
) -> SnowflakeGenerator {
    let layout = Layout::parse(spec).unwrap();
    let worker = if layout.field(FieldKind::Worker).is_some() {
        3
    } else {
        0
    };
    SnowflakeGenerator::builder(layout)
        .worker(worker)
        .clock(clock.clone())
        .config(config)
        .fence(fence)
        .build()
        .unwrap()
}

fn tick_of(gen: &SnowflakeGenerator, id: u64) -> u64 {
    gen.layout().decode(id).unwrap().tick
}

#[test]
fn a_handle_issues_increasing_ids_of_the_current_tick_and_grows_its_batch() {
    let clock = ManualClock::shared(now_ms());
    let gen = generator(
        "time:41@1ms,worker:4,seq:18",
        &clock,
        SnowflakeConfig::default(),
    );
    let now_tick = gen.layout().tick_at(now_ms()).unwrap();
    let mut local = gen.local();
    assert_eq!(local.batch_size(), 1);
    let ids: Vec<u64> = (0..1_000).map(|_| local.next_id().unwrap()).collect();
    assert_increasing(&ids);
    // Same worker and time as the generator's own IDs, and nothing skipped within the tick.
    for (seq, &id) in ids.iter().enumerate() {
        let decoded = gen.layout().decode(id).unwrap();
        assert_eq!((decoded.tick, decoded.worker), (now_tick, Some(3)));
        assert_eq!(decoded.seq, seq as u64);
    }
    // Used up within the tick, batch after batch: 1, 2, 4, ... up to the bound.
    assert_eq!(local.batch_size(), MAX_LOCAL_BATCH);
    // The generator's own calls continue above the handle's reservations.
    assert!(gen.next_id().unwrap() > *ids.last().unwrap());
}

#[test]
fn a_batch_is_dropped_once_the_tick_moves_on() {
    let clock = ManualClock::shared(now_ms());
    let gen = generator("time:41@1ms,seq:22", &clock, SnowflakeConfig::default());
    let mut local = gen.local();
    // 1 + 2 + 4 + 8 IDs use up four batches; the 16th ID opens a batch of 16.
    let ids: Vec<u64> = (0..16).map(|_| local.next_id().unwrap()).collect();
    let tick = tick_of(&gen, ids[0]);
    assert_eq!(local.batch_size(), 16);
    assert_eq!(local.end - local.next, 15, "15 IDs of the batch left");

    clock.advance(Duration::from_millis(1));
    let after = local.next_id().unwrap();
    // No ID of the old tick is handed out once the clock is past it.
    let decoded = gen.layout().decode(after).unwrap();
    assert_eq!((decoded.tick, decoded.seq), (tick + 1, 0));
    // Dropped with IDs left: the next reservation is smaller.
    assert_eq!(local.batch_size(), 8);
    assert!(after > *ids.last().unwrap());

    // A clock stepping back leaves the batch current: its IDs are ahead of the clock, not stale.
    clock.step_back(Duration::from_secs(5));
    let next = local.next_id().unwrap();
    assert_eq!(tick_of(&gen, next), tick + 1);
}

#[test]
fn a_slow_thread_reserves_one_id_at_a_time_and_wastes_nothing() {
    let clock = ManualClock::shared(now_ms());
    let gen = generator("twitter", &clock, SnowflakeConfig::default());
    let mut local = gen.local();
    for _ in 0..50 {
        let id = local.next_id().unwrap();
        assert_eq!(gen.layout().decode(id).unwrap().seq, 0);
        // The generator's next ID in the same tick follows directly: nothing was reserved
        // beyond what the handle used.
        let shared = gen.next_id().unwrap();
        assert_eq!(gen.layout().decode(shared).unwrap().seq, 1);
        assert_eq!(local.batch_size(), 1);
        clock.advance(Duration::from_millis(1));
    }
}

#[test]
fn batches_are_bounded_by_a_share_of_the_sequence() {
    let clock = ManualClock::shared(now_ms());
    for (spec, bound) in [
        ("time:41@1ms,seq:22", MAX_LOCAL_BATCH),
        ("twitter", 64),
        ("instagram", 16),
        ("time:41@1ms,seq:8", 4),
        ("time:41@1ms,seq:3", 1),
    ] {
        let gen = generator(spec, &clock, SnowflakeConfig::default());
        let mut local = gen.local();
        assert_eq!(local.max_size, bound, "{spec}");
        for _ in 0..300 {
            local.next_id().unwrap();
            assert!(local.batch_size() <= bound);
        }
        clock.advance(Duration::from_millis(1_000));
    }
}

#[test]
fn handles_and_the_shared_path_interleaved_never_share_an_id() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        max_lead: Duration::from_millis(3),
        max_wait: Duration::from_millis(10),
        ..SnowflakeConfig::default()
    };
    // 8 sequence bits: 256 IDs per tick and handle batches of up to 4; the shared batches of
    // up to 256 IDs run ticks out, so handles also reserve in borrowed ticks and wait.
    let gen = generator("time:41@1ms,worker:4,seq:8", &clock, config);
    let mut handles: Vec<_> = (0..3).map(|_| gen.local()).collect();
    let mut per_handle: Vec<Vec<u64>> = vec![Vec::new(); 3];
    let mut shared = Vec::new();
    let mut all = HashSet::new();
    // A fixed pseudo-random schedule (xorshift), so the test is repeatable.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..50_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let now_tick = gen.layout().tick_at(clock.now_ms()).unwrap();
        let issued = match state % 128 {
            0 => {
                clock.advance(Duration::from_millis(state >> 62));
                continue;
            }
            1..=4 => vec![gen.next_id().unwrap()],
            5 | 6 => gen.next_batch(1 + (state >> 56), 0).unwrap().collect(),
            _ => {
                let h = ((state >> 8) % 3) as usize;
                let id = handles[h].next_id().unwrap();
                per_handle[h].push(id);
                vec![id]
            }
        };
        if (1..=6).contains(&(state % 128)) {
            shared.extend(&issued);
        }
        for id in issued {
            assert!(all.insert(id), "{id} issued twice");
            // Never stale: an ID's tick is at or after the clock's when it is handed out.
            assert!(tick_of(&gen, id) >= now_tick);
        }
    }
    // The schedule did run ticks out: calls borrowed up to max_lead and then waited.
    assert!(clock.slept() > Duration::ZERO);
    for ids in &per_handle {
        assert!(ids.len() > 1_000);
        assert_increasing(ids);
    }
    assert_increasing(&shared);
}

#[test]
fn lead_waits_are_those_of_next_id() {
    let clock = ManualClock::shared(now_ms());
    let config = SnowflakeConfig {
        max_lead: Duration::ZERO,
        max_wait: Duration::from_millis(30),
        ..SnowflakeConfig::default()
    };
    let gen = generator("twitter", &clock, config);
    let now_tick = gen.layout().tick_at(now_ms()).unwrap();
    let mut local = gen.local();
    let ids: Vec<u64> = (0..4096).map(|_| local.next_id().unwrap()).collect();
    assert_increasing(&ids);
    assert_eq!(clock.slept(), Duration::ZERO);
    // The tick's sequence is used up and no lead is allowed: wait for the next tick.
    let next = local.next_id().unwrap();
    assert_eq!(tick_of(&gen, next), now_tick + 1);
    assert_eq!(clock.slept(), Duration::from_millis(1));
    assert_eq!(local.batch_size(), 1);
    // Far behind: fails at once with the error `next_id` gives.
    clock.step_back(Duration::from_secs(60));
    let err = loop {
        if let Err(err) = local.next_id() {
            break err;
        }
    };
    assert!(matches!(err, Error::ClockBehind { waited, .. } if waited == Duration::ZERO));
    assert_eq!(gen.next_id().unwrap_err(), err);
}

#[test]
fn the_granted_hwm_is_never_passed() {
    let clock = ManualClock::shared(now_ms());
    let layout = Layout::parse("twitter").unwrap();
    let now_tick = layout.tick_at(now_ms()).unwrap();
    let config = SnowflakeConfig {
        max_wait: Duration::from_millis(20),
        ..SnowflakeConfig::default()
    };
    let fence = Fence {
        after_tick: None,
        granted_tick: now_tick,
    };
    let gen = fenced("twitter", &clock, config, fence);
    let mut local = gen.local();
    let ids: Vec<u64> = (0..4096).map(|_| local.next_id().unwrap()).collect();
    assert!(ids.iter().all(|&id| tick_of(&gen, id) == now_tick));
    // The next tick is not granted: a bounded wait, then the typed error.
    let err = local.next_id().unwrap_err();
    assert!(matches!(err, Error::HwmNotGranted { granted, .. } if granted == now_tick));
    assert_eq!(clock.slept(), Duration::from_millis(20));
    gen.raise_granted_tick(now_tick + 1_000);
    let next = local.next_id().unwrap();
    assert!(next > *ids.last().unwrap());
    assert!(tick_of(&gen, next) <= now_tick + 1_000);
}

#[test]
fn a_closed_generator_stops_handles_at_their_next_reservation() {
    let clock = ManualClock::shared(now_ms());
    let gen = generator("time:41@1ms,seq:22", &clock, SnowflakeConfig::default());
    let mut local = gen.local();
    let ids: Vec<u64> = (0..20).map(|_| local.next_id().unwrap()).collect();
    let held = local.end - local.next;
    assert!(held > 0);
    let closed_at = gen.close();
    // The batch already reserved may be finished within its tick; it is below the closing tick.
    for _ in 0..held {
        let id = local.next_id().unwrap();
        assert!(id > *ids.last().unwrap());
        assert!(tick_of(&gen, id) <= closed_at);
    }
    assert_eq!(local.next_id(), Err(Error::GeneratorClosed));
    assert_eq!(gen.local().next_id(), Err(Error::GeneratorClosed));
    // A handle holding a batch stops as soon as the tick moves on.
    let gen = generator("time:41@1ms,seq:22", &clock, SnowflakeConfig::default());
    let mut local = gen.local();
    for _ in 0..20 {
        local.next_id().unwrap();
    }
    gen.close();
    clock.advance(Duration::from_millis(1));
    assert_eq!(local.next_id(), Err(Error::GeneratorClosed));
}

#[test]
fn the_end_of_the_layout_is_an_error_never_a_wrapped_id() {
    let (_, _, gen) = generator_since("time:8@1s,seq:4", 255_000);
    let mut local = gen.local();
    let ids: Vec<u64> = (0..16).map(|_| local.next_id().unwrap()).collect();
    assert_increasing(&ids);
    assert_eq!(*ids.last().unwrap(), (1 << 12) - 1);
    assert!(matches!(
        local.next_id(),
        Err(Error::LayoutExhausted { .. })
    ));
}

#[test]
fn threads_with_handles_and_the_shared_path_never_share_an_id() {
    let gen = shared_on_system_clock();
    let distinct = distinct_ids_on_threads(3, move |i| {
        if i == 0 {
            (0..50_000).map(|_| gen.next_id().unwrap()).collect()
        } else {
            let mut local = LocalSnowflakes::new(Arc::clone(&gen));
            (0..50_000).map(|_| local.next_id().unwrap()).collect()
        }
    });
    assert_eq!(distinct, 150_000);
}

#[test]
fn a_handle_may_move_to_another_thread() {
    fn send<T: Send>(value: T) -> T {
        value
    }
    let clock = ManualClock::shared(now_ms());
    let gen = Arc::new(generator("twitter", &clock, SnowflakeConfig::default()));
    let mut local = send(LocalSnowflakes::new(Arc::clone(&gen)));
    let first = local.next_id().unwrap();
    let second = std::thread::spawn(move || local.next_id().unwrap())
        .join()
        .unwrap();
    assert!(first < second);
    assert!(std::ptr::eq(
        gen.as_ref(),
        LocalSnowflakes::new(&*gen).generator()
    ));
}
