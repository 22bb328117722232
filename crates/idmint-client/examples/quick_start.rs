//! The README's quick start: IDs from idmint nodes, from the client's memory.

use idmint_client::{Client, ClientConfig};

#[tokio::main]
async fn main() -> Result<(), idmint_client::Error> {
    // The nodes: one on this machine (`idmint serve`), or several, comma-separated.
    let nodes = std::env::var("IDMINT_NODES").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let mut config = ClientConfig::new(nodes.split(','));
    if let Ok(token) = std::env::var("IDMINT_TOKEN") {
        config = config.with_token(token); // a token of the nodes, when they have tokens
    }
    let ids = Client::new(config)?;

    let order_id = ids.next("orders").await?; // segment ID, from memory
    let event_id = ids.snowflake().await?; // snowflake, from a recent batch
    println!("order {order_id}, event {event_id}");

    ids.close().await; // gives the unused IDs back
    Ok(())
}
