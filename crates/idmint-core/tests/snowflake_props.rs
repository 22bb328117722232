//! Properties of the snowflake generator under a misbehaving clock: whatever the interleaving
//! of clock moves (forward, back, stalls), calls, batches, restarts with a handed-over
//! high-water mark and HWM raises, no ID repeats, IDs of the worker strictly increase, and no
//! ID's tick is above the granted HWM.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

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
    (0u64..6, 0u64..5, 0u32..3).prop_map(|(lead, wait, spread)| SnowflakeConfig {
        max_lead: Duration::from_millis(lead),
        max_wait: Duration::from_millis(wait),
        spread_bits: spread,
    })
}

fn start(
    layout: &Layout,
    clock: &Arc<ManualClock>,
    config: &SnowflakeConfig,
    fence: Fence,
) -> SnowflakeGenerator {
    SnowflakeGenerator::new(layout.clone(), 0, 5, clock.clone(), config, fence).unwrap()
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
