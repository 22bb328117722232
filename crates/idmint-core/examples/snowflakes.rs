//! Mints a few snowflake IDs in a layout and takes them apart again: what a program that makes
//! its own IDs does with this crate.
//!
//! `cargo run -p idmint-core --example snowflakes -- [LAYOUT]`, where `LAYOUT` is a preset
//! (`twitter`, the default, `discord`, `sonyflake`, ...) or a spec such as
//! `"time:39@10ms,worker:16,seq:8"`.
//!
//! The generator is unfenced: nothing stops another process from using worker 1 at the same
//! time. A worker lease from idmint-store (or IDs from idmint nodes through idmint-client) is
//! what keeps worker IDs unique across processes.

use idmint_core::{FieldKind, IdForm, Layout, Radix, SnowflakeGenerator};

fn main() -> Result<(), idmint_core::Error> {
    let spec = std::env::args().nth(1).unwrap_or_else(|| "twitter".into());
    let layout = Layout::parse(&spec)?;
    println!("layout      {}", layout.spec());
    println!(
        "capacity    {} workers x {} datacenters, {} IDs per second per worker",
        layout.worker_count(),
        layout.dc_count(),
        layout.ids_per_second_per_worker()
    );

    // Only the fields the layout has may be set: a value for a missing field is refused.
    let has_worker = layout.field(FieldKind::Worker).is_some();
    let mut builder = SnowflakeGenerator::builder(layout);
    if has_worker {
        builder = builder.worker(1);
    }
    let ids = builder.build()?;

    let base62 = IdForm::new(Radix::Base62);
    println!(
        "\n{:>20}  {:>11}  {:<24}  worker  seq",
        "id", "base62", "minted at"
    );
    for _ in 0..5 {
        let id = ids.next_id()?;
        let parts = ids.layout().decode(id)?;
        let worker = parts.worker.map_or("-".to_string(), |w| w.to_string());
        println!(
            "{id:>20}  {:>11}  {:<24}  {worker:>6}  {}",
            base62.encode(id),
            parts.time,
            parts.seq
        );
    }
    Ok(())
}
