//! Takes IDs from idmint nodes through the client: a few segment IDs of a tag, a few
//! snowflakes, and what that cost in round trips.
//!
//! `cargo run -p idmint-client --example next_ids -- [NODE...]`, nodes as Redis URLs (default
//! `redis://127.0.0.1:6380`, the port `idmint serve` listens on). A node with tokens needs one
//! in `IDMINT_TOKEN`.

use idmint_client::{Client, ClientConfig};

#[tokio::main]
async fn main() -> Result<(), idmint_client::Error> {
    let mut nodes: Vec<String> = std::env::args().skip(1).collect();
    if nodes.is_empty() {
        nodes.push("redis://127.0.0.1:6380".into());
    }
    let mut config = ClientConfig::new(nodes);
    if let Ok(token) = std::env::var("IDMINT_TOKEN") {
        config = config.with_token(token);
    }
    let ids = Client::new(config)?;

    // A handle to one tag skips the lookup by name, for loops.
    let orders = ids.tag("orders")?;
    for _ in 0..5 {
        println!("orders    {}", orders.next().await?);
    }
    for id in ids.snowflakes(3).await? {
        println!("snowflake {id}");
    }

    println!("\n{:?}", ids.stats());
    // The unused rest of each tag's range goes back to the node, so no IDs are skipped.
    let tags = ids.close().await;
    println!("closed: {tags} tag(s) gave their unused IDs back");
    Ok(())
}
