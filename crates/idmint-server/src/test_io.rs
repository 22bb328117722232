//! Socket helpers shared by the listeners' unit tests.

use std::error::Error;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Everything the server sends until it closes the connection, within 10 s.
pub(crate) async fn read_to_close(stream: &mut TcpStream) -> Result<String, Box<dyn Error>> {
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received)).await??;
    Ok(String::from_utf8_lossy(&received).into_owned())
}
