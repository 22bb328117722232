//! Issues IDs in a tight loop, for profilers and quick A/B runs:
//! `cargo run --release --example hot_loop -- [N] [shared|local] [THREADS]`: `N` IDs in total
//! (default 50,000,000) through the generator's `next_id` (`shared`, the default) or one
//! `LocalSnowflakes` handle per thread (`local`), on `THREADS` threads (default 1) sharing one
//! generator. Prints the wall ns per ID and how many cores the process used meanwhile (CPU
//! time over wall time, from `/proc/self/stat`; 0 where that is unavailable): on a shared
//! machine a 2-thread run that got fewer than 2 cores measures the scheduler, not the code.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use idmint_core::layout::Layout;
use idmint_core::{Clock, SnowflakeConfig, SnowflakeGenerator, SystemClock};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let local = args.get(2).is_some_and(|arg| arg == "local");
    let threads: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = SnowflakeConfig::default().with_max_lead(Duration::from_secs(1));
    let layout = Layout::parse("time:41@1ms,seq:22").unwrap();
    let gen = SnowflakeGenerator::builder(layout)
        .clock(clock)
        .config(config)
        .build()
        .unwrap();
    let barrier = Barrier::new(threads as usize + 1);
    let cpu_before = cpu_ticks();
    let (start, acc) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut acc = 0u64;
                    barrier.wait();
                    if local {
                        let mut handle = gen.local();
                        for _ in 0..n / threads {
                            acc ^= handle.next_id().unwrap();
                        }
                    } else {
                        for _ in 0..n / threads {
                            acc ^= gen.next_id().unwrap();
                        }
                    }
                    acc
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let acc = workers
            .into_iter()
            .fold(0, |acc, w| acc ^ w.join().unwrap());
        (start, acc)
    });
    let wall = start.elapsed();
    let cores = cpu_ticks().saturating_sub(cpu_before) as f64 / 100.0 / wall.as_secs_f64();
    let ns = wall.as_nanos() as f64 / (n / threads * threads) as f64;
    println!("{ns:.2} ns per ID, {cores:.2} cores ({acc})");
}

/// User plus system time of this process in clock ticks (1/100 s on Linux), 0 if unknown.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields 14 and 15 (utime, stime), counted after the parenthesised command name.
    let after_name = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0)
}
