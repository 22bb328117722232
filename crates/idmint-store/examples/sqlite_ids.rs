//! Both kinds of IDs from one SQLite file, as a process with no idmint server would take them:
//! a range of a segment tag, and snowflakes from a worker ID leased and fenced by the store.
//!
//! `cargo run -p idmint-store --example sqlite_ids -- [FILE]` (default: `idmint-example.db` in
//! the system's temporary folder). Run it twice on the same file: the second run's segment IDs
//! follow the first's, and its snowflakes start above the last tick the first one issued.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idmint_core::store::{LeaseRequest, Partition, TagSettings};
use idmint_core::{Fence, Layout, SnowflakeGenerator, Tag};
use idmint_store::{Error, StoreOptions};

/// How long the lease lasts unless renewed: a process that dies frees its worker ID after this.
const LEASE_TTL: Duration = Duration::from_secs(30);
/// How far ahead of the clock the store confirms the high-water mark: the generator may issue
/// IDs up to this far in the future before it must renew.
const HWM_AHEAD_MS: u64 = 10_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("{}/idmint-example.db", std::env::temp_dir().display()));
    let store = idmint_store::open(&format!("sqlite://{file}"), &StoreOptions::default()).await?;
    println!("store     {}", store.display_url);

    // Segment IDs: a range of a tag, taken atomically; another process gets the next one.
    let tag = Tag::new("orders")?;
    if store.segments.tag_info(&tag).await?.is_none() {
        store
            .segments
            .create_tag(&tag, &TagSettings::default())
            .await?;
    }
    let range = store.segments.allocate(&tag, 5).await?;
    println!("orders    IDs {range:?} are this process's alone");

    // Snowflakes: lease a worker ID, have the store confirm a high-water mark ahead of the
    // clock, and build the generator inside that fence.
    let layout = Layout::parse("twitter")?;
    let lease = store
        .leases
        .acquire(&LeaseRequest {
            node_name: "example".into(),
            worker_count: layout.worker_count(),
            worker_id: None,
            ttl: LEASE_TTL,
            id_space: None,
            partition: Partition::WHOLE,
        })
        .await?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let renewal = store
        .leases
        .renew(&lease, now_ms.max(lease.hwm_ms) + HWM_AHEAD_MS, LEASE_TTL)
        .await?;
    let ids = SnowflakeGenerator::builder(layout.clone())
        .worker(lease.worker_id)
        .fence(Fence::from_hwm_ms(&layout, lease.hwm_ms, renewal.hwm_ms))
        .build()?;
    for _ in 0..3 {
        println!("snowflake {} (worker {})", ids.next_id()?, lease.worker_id);
    }

    // Hand the worker ID back with the last tick issued, so the next holder starts above it.
    let last_tick = ids.close();
    let last_ms = layout.tick_start_ms(last_tick);
    store
        .leases
        .release(&lease, last_ms.max(lease.hwm_ms))
        .await?;
    println!("released  worker {} at {last_ms} ms", lease.worker_id);
    Ok(())
}
