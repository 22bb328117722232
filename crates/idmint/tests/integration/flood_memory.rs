//! Memory after a connection flood (issue 27, item 5): a node gives back what a flood of
//! connections took once they are gone. With glibc's allocator a node went from 32 MB to
//! 148 MB RSS after this flood and stayed there; with jemalloc's background purging it is back
//! near where it started within seconds (SECURITY.md, "Connection floods").

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::{sqlite_url, Server};

/// Client addresses of the flood (127.0.0.2 and on), as several machines would be.
const ADDRESSES: u8 = 12;
/// Connections from each address to each listener.
const PER_ADDRESS: usize = 400;
/// How far above its RSS before the flood a node may stay once it is over (the bound).
const MARGIN_KB: u64 = 64 * 1024;
/// How long after the flood the node has to get there.
const SETTLE: Duration = Duration::from_secs(30);

/// The resident set and open descriptors of process `pid`.
fn footprint(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss_kb, fds)
}

/// One flood: every address opens `per_address` connections to `addr`, each sends `request` and reads
/// the start of its reply, and all stay open until every one has been answered.
async fn flood(addr: std::net::SocketAddr, per_address: usize, request: &'static [u8]) -> usize {
    let mut tasks = Vec::new();
    for a in 0..ADDRESSES {
        for _ in 0..per_address {
            let local = std::net::SocketAddr::from(([127, 0, 0, 2 + a], 0));
            tasks.push(tokio::spawn(async move {
                let socket = TcpSocket::new_v4().ok()?;
                socket.bind(local).ok()?;
                let mut stream: TcpStream = socket.connect(addr).await.ok()?;
                stream.write_all(request).await.ok()?;
                let mut reply = [0u8; 64];
                let read = stream.read(&mut reply).await.ok()?;
                (read > 0).then_some(stream)
            }));
        }
    }
    let mut open = Vec::new();
    for task in tasks {
        if let Ok(Some(stream)) = task.await {
            open.push(stream);
        }
    }
    let answered = open.len();
    drop(open);
    answered
}

#[test]
fn a_node_gives_back_the_memory_of_a_connection_flood() {
    let server = Server::start(&sqlite_url("flood-memory"), "flood-memory");
    let pid = server.pid();
    let http: std::net::SocketAddr = server.http.trim_start_matches("http://").parse().unwrap();
    let resp: std::net::SocketAddr = server
        .resp
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    // Warm: the first requests load the ID machinery, which stays.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let _ = flood_once(http, resp, 1).await;
    });
    let (before_kb, before_fds) = footprint(pid);

    let mut peak_kb = before_kb;
    for _ in 0..2 {
        let answered = runtime.block_on(flood_once(http, resp, PER_ADDRESS));
        assert!(
            answered > ADDRESSES as usize * PER_ADDRESS,
            "the flood should be answered on both listeners, got {answered} replies"
        );
        peak_kb = peak_kb.max(footprint(pid).0);
    }

    let settled = Instant::now();
    let (after_kb, after_fds) = loop {
        let (rss_kb, fds) = footprint(pid);
        if rss_kb <= before_kb + MARGIN_KB && fds <= before_fds || settled.elapsed() > SETTLE {
            break (rss_kb, fds);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!(
        "flood memory: RSS {before_kb} kB before, {peak_kb} kB at the peak, {after_kb} kB \
         {:.1} s after; descriptors {before_fds} before, {after_fds} after",
        settled.elapsed().as_secs_f64()
    );
    assert!(
        after_kb <= before_kb + MARGIN_KB,
        "RSS stayed at {after_kb} kB, {} kB above the {before_kb} kB before the flood",
        after_kb - before_kb
    );
    assert!(
        after_fds <= before_fds,
        "{after_fds} descriptors open after the flood, {before_fds} before"
    );
    server.stop();
}

/// Floods both listeners at once with `per_address` connections from each address; returns
/// how many were answered.
async fn flood_once(
    http: std::net::SocketAddr,
    resp: std::net::SocketAddr,
    per_address: usize,
) -> usize {
    let (a, b) = tokio::join!(
        flood(
            http,
            per_address,
            b"GET /v1/snowflake?count=100 HTTP/1.1\r\nHost: idmint\r\n\r\n"
        ),
        flood(
            resp,
            per_address,
            b"*3\r\n$16\r\nIDMINT.SNOWFLAKE\r\n$5\r\nCOUNT\r\n$3\r\n100\r\n"
        ),
    );
    a + b
}
