//! Issues IDs in a tight loop, for profilers: `cargo run --release --example hot_loop -- 50000000`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::sync::Arc;
use std::time::{Duration, Instant};

use idmint_core::layout::Layout;
use idmint_core::snowflake::Fence;
use idmint_core::{Clock, SnowflakeConfig, SnowflakeGenerator, SystemClock};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = SnowflakeConfig {
        max_lead: Duration::from_secs(1),
        ..SnowflakeConfig::default()
    };
    let layout = Layout::parse("time:41@1ms,seq:22").unwrap();
    let gen = SnowflakeGenerator::new(layout, 0, 0, clock, &config, Fence::unfenced()).unwrap();
    let start = Instant::now();
    let mut acc = 0u64;
    for _ in 0..n {
        acc ^= gen.next_id().unwrap();
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{ns:.2} ns per ID ({acc})");
}
