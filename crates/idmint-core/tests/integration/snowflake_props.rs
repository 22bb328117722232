//! Properties of the snowflake generator under a misbehaving clock: whatever the interleaving
//! of clock moves (forward, back, stalls), calls, batches, restarts with a handed-over
//! high-water mark and HWM raises, no ID repeats, IDs of the worker strictly increase, and no
//! ID's tick is above the granted HWM.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::layout::Layout;
use idmint_core::snowflake::Fence;
use idmint_core::{Clock, Error, ManualClock, SnowflakeConfig, SnowflakeGenerator};
use proptest::prelude::*;

const START_MS: u64 = 1_790_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    StepBack(u64),
    Next,
    /// Many single IDs in a row: runs the sequence out, so calls borrow and then wait.
    Burst(u64),
    Batch(u64),
    Restart,
    RaiseGranted(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0u64..20).prop_map(Op::Advance),
        1 => (1u64..10_000).prop_map(Op::StepBack),
        6 => Just(Op::Next),
        2 => (1u64..100).prop_map(Op::Burst),
        3 => (1u64..200).prop_map(Op::Batch),
        1 => Just(Op::Restart),
        1 => (0u64..50).prop_map(Op::RaiseGranted),
    ];
    prop::collection::vec(op, 1..300)
}

fn config() -> impl Strategy<Value = SnowflakeConfig> {
    (0u64..6, 0u64..5, 0u32..3).prop_map(|(lead, wait, spread)| {
        SnowflakeConfig::default()
            .with_max_lead(Duration::from_millis(lead))
            .with_max_wait(Duration::from_millis(wait))
            .with_spread_bits(spread)
    })
}

fn start(
    layout: &Layout,
    clock: &Arc<ManualClock>,
    config: &SnowflakeConfig,
    fence: Fence,
) -> SnowflakeGenerator {
    SnowflakeGenerator::builder(layout.clone())
        .worker(5)
        .clock(clock.clone())
        .config(*config)
        .fence(fence)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn no_duplicate_no_decrease_under_any_clock(ops in ops(), config in config(), granted_ahead in 0u64..30) {
        // 4 sequence bits: 16 IDs per ms, so exhaustion, borrowing and waits happen often.
        let layout = Layout::parse("time:41@1ms,worker:4,seq:4").unwrap();
        let clock = ManualClock::shared(START_MS);
        let now_tick = layout.tick_at(START_MS).unwrap();
        let fence = Fence { after_tick: None, granted_tick: now_tick + granted_ahead };
        let mut gen = start(&layout, &clock, &config, fence);
        let mut seen = HashSet::new();
        let mut last = 0u64;
        let mut highest_tick = now_tick;
        for op in ops {
            highest_tick = highest_tick.max(layout.tick_at(clock.now_ms()).unwrap_or(0));
            let issued: Vec<u64> = match op {
                Op::Advance(ms) => { clock.advance(Duration::from_millis(ms)); continue; }
                Op::StepBack(ms) => { clock.step_back(Duration::from_millis(ms)); continue; }
                Op::RaiseGranted(ticks) => {
                    let now = layout.tick_at(clock.now_ms()).unwrap_or(0);
                    gen.raise_granted_tick(now + ticks);
                    continue;
                }
                Op::Restart => {
                    // The old holder stops; the new one is fenced above everything it issued.
                    let fence = Fence { after_tick: Some(gen.issued_tick()), granted_tick: gen.granted_tick() };
                    gen = start(&layout, &clock, &config, fence);
                    continue;
                }
                Op::Next => match gen.next_id() {
                    Ok(id) => vec![id],
                    Err(err) => { prop_assert!(is_wait_error(&err), "{err:?}"); vec![] }
                },
                Op::Burst(n) => {
                    let mut ids = Vec::new();
                    for _ in 0..n {
                        match gen.next_id() {
                            Ok(id) => ids.push(id),
                            Err(err) => { prop_assert!(is_wait_error(&err), "{err:?}"); break; }
                        }
                    }
                    ids
                }
                Op::Batch(n) => match gen.next_batch(n, 0) {
                    Ok(batch) => batch.collect(),
                    Err(err) => { prop_assert!(is_wait_error(&err), "{err:?}"); vec![] }
                },
            };
            highest_tick = highest_tick.max(layout.tick_at(clock.now_ms()).unwrap_or(0));
            let max_lead_ticks = u64::try_from(config.max_lead.as_millis()).unwrap();
            for id in issued {
                prop_assert!(id > last, "{id} after {last}");
                prop_assert!(seen.insert(id));
                let tick = layout.decompose(id).unwrap().tick;
                prop_assert!(tick <= gen.granted_tick());
                // Borrowing is bounded: never more than max_lead past the clock's highest reading.
                prop_assert!(tick <= highest_tick + max_lead_ticks, "tick {tick}, clock {highest_tick}");
                last = id;
            }
        }
    }
}

fn is_wait_error(err: &Error) -> bool {
    matches!(err, Error::ClockBehind { .. } | Error::HwmNotGranted { .. })
}

/// Calls on a generator mixing its own path and per-thread handles.
#[derive(Debug, Clone)]
enum Mixed {
    Advance(u64),
    StepBack(u64),
    Shared,
    Batch(u64),
    /// `n` IDs from handle `h`.
    Local(usize, u64),
    RaiseGranted(u64),
}

fn mixed_ops() -> impl Strategy<Value = Vec<Mixed>> {
    let op = prop_oneof![
        3 => (0u64..4).prop_map(Mixed::Advance),
        1 => (1u64..10_000).prop_map(Mixed::StepBack),
        3 => Just(Mixed::Shared),
        2 => (1u64..100).prop_map(Mixed::Batch),
        8 => (0usize..3, 1u64..40).prop_map(|(h, n)| Mixed::Local(h, n)),
        1 => (0u64..50).prop_map(Mixed::RaiseGranted),
    ];
    prop::collection::vec(op, 1..200)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn handles_and_the_shared_path_never_share_an_id(ops in mixed_ops(), config in config(), granted_ahead in 0u64..30) {
        // 6 sequence bits: 64 IDs per ms, handle batches of 1; 10 bits: batches of up to 16.
        for spec in ["time:41@1ms,worker:4,seq:6", "time:41@1ms,worker:4,seq:10"] {
            let layout = Layout::parse(spec).unwrap();
            let clock = ManualClock::shared(START_MS);
            let now_tick = layout.tick_at(START_MS).unwrap();
            let fence = Fence { after_tick: None, granted_tick: now_tick + granted_ahead };
            let gen = start(&layout, &clock, &config, fence);
            let mut handles: Vec<_> = (0..3).map(|_| gen.local()).collect();
            let mut last_of_handle = [0u64; 3];
            let mut last_shared = 0u64;
            let mut seen = HashSet::new();
            let mut highest_tick = now_tick;
            let max_lead_ticks = u64::try_from(config.max_lead.as_millis()).unwrap();
            for op in &ops {
                let clock_tick = layout.tick_at(clock.now_ms()).unwrap_or(0);
                highest_tick = highest_tick.max(clock_tick);
                let (issued, from): (Vec<u64>, Option<usize>) = match *op {
                    Mixed::Advance(ms) => { clock.advance(Duration::from_millis(ms)); continue; }
                    Mixed::StepBack(ms) => { clock.step_back(Duration::from_millis(ms)); continue; }
                    Mixed::RaiseGranted(ticks) => { gen.raise_granted_tick(clock_tick + ticks); continue; }
                    Mixed::Shared => (gen.next_id().map(|id| vec![id]).or_else(wait_error)?, None),
                    Mixed::Batch(n) => (gen.next_batch(n, 0).map(Iterator::collect).or_else(wait_error)?, None),
                    Mixed::Local(h, n) => {
                        let mut ids = Vec::new();
                        for _ in 0..n {
                            match handles[h].next_id() {
                                Ok(id) => ids.push(id),
                                Err(err) => { prop_assert!(is_wait_error(&err), "{err:?}"); break; }
                            }
                        }
                        (ids, Some(h))
                    }
                };
                highest_tick = highest_tick.max(layout.tick_at(clock.now_ms()).unwrap_or(0));
                for id in issued {
                    prop_assert!(seen.insert(id), "{id} issued twice");
                    let last = match from { Some(h) => &mut last_of_handle[h], None => &mut last_shared };
                    prop_assert!(id > *last, "{id} after {last}");
                    *last = id;
                    let tick = layout.decompose(id).unwrap().tick;
                    prop_assert!(tick <= gen.granted_tick());
                    // Never stale, and borrowing stays bounded as on the shared path.
                    prop_assert!(tick >= clock_tick, "tick {tick} below the clock's {clock_tick}");
                    prop_assert!(tick <= highest_tick + max_lead_ticks, "tick {tick}, clock {highest_tick}");
                }
            }
        }
    }
}

/// An empty result for the errors a bounded wait may end in; any other error fails the case.
fn wait_error(err: Error) -> Result<Vec<u64>, TestCaseError> {
    if is_wait_error(&err) {
        Ok(Vec::new())
    } else {
        Err(TestCaseError::fail(format!("{err:?}")))
    }
}
