//! What the benches of generators shared by threads have in common: one way to fold a 128-bit
//! ID, to run two threads together, to set a group's sampling.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Throughput};

/// A 128-bit ID folded to 64 bits.
#[inline]
pub fn fold(id: u128) -> u64 {
    (id as u64) ^ ((id >> 64) as u64)
}

/// Runs `per_thread(n)` on two threads started together, `iters` IDs in total; the wall time.
pub fn two_threads(iters: u64, per_thread: &(dyn Fn(u64) + Sync)) -> Duration {
    let barrier = Barrier::new(3);
    std::thread::scope(|scope| {
        for n in [iters / 2, iters - iters / 2] {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                per_thread(n);
            });
        }
        barrier.wait();
        // Leaving the scope joins both threads.
        Instant::now()
    })
    .elapsed()
}

pub fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .throughput(Throughput::Elements(1))
        .sample_size(30)
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(2));
}
