//! Connections under load, against a real `idmint serve`: the listen backlog is a setting that
//! reaches both listening sockets, and the per-address cap names itself in every refusal and
//! is counted by reason in `/metrics`.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use crate::common::{idmint_command, sqlite_url, Server};
use crate::security::{address, metric, Resp, ADMIN};

/// The backlog of the socket listening on `addr`, as the kernel reports it: `ss` shows it as
/// the Send-Q of a listening socket.
fn listen_backlog(addr: SocketAddr) -> u32 {
    let out = Command::new("ss")
        .args(["-ltnH", &format!("sport = :{}", addr.port())])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|line| line.contains(&format!(":{} ", addr.port())))
        .unwrap_or_else(|| panic!("ss shows no listener on {addr}: {text}"));
    // State, Recv-Q, Send-Q, local address, peer address.
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn the_listen_backlog_is_a_setting_of_both_listeners() {
    let server = Server::start(&sqlite_url("backlog-default"), "backlog-default");
    let (web, redis) = (address(&server.http), address(&server.resp));
    assert_eq!(listen_backlog(web), 511);
    assert_eq!(listen_backlog(redis), 511);
    server.stop();

    let server = Server::start_with_env(
        &sqlite_url("backlog-set"),
        "backlog-set",
        &["--listen-backlog", "1000"],
        &[],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    assert_eq!(listen_backlog(web), 1000);
    assert_eq!(listen_backlog(redis), 1000);
    server.stop();
    let server = Server::start_with_env(
        &sqlite_url("backlog-env"),
        "backlog-env",
        &[],
        &[("IDMINT_LISTEN_BACKLOG", "700")],
    );
    assert_eq!(listen_backlog(address(&server.resp)), 700);
    server.stop();

    for bad in ["0", "65536"] {
        let out = idmint_command()
            .args(["serve", "--store", &sqlite_url("backlog-bad")])
            .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
            .args(["--listen-backlog", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("error: --listen-backlog: ") && stderr.contains("1..=65535"),
            "{stderr}"
        );
    }
}

#[test]
fn the_per_address_cap_names_itself_and_is_counted_by_reason() {
    let server = Server::start_with(
        &sqlite_url("per-address-named"),
        "per-address-named",
        &[
            "--admin-token",
            ADMIN,
            "--max-connections-per-address",
            "3",
            "--auth-timeout",
            "60s",
        ],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    let held: Vec<TcpStream> = (0..3)
        .flat_map(|_| [TcpStream::connect(web), TcpStream::connect(redis)])
        .map(Result::unwrap)
        .collect();
    std::thread::sleep(Duration::from_millis(100));

    let mut fourth = Resp::connect(redis);
    let reply = fourth.reply();
    assert!(
        reply.starts_with("-ERR ")
            && reply.contains("this address has 3 connections open")
            && reply.contains("--max-connections-per-address"),
        "{reply}"
    );
    let mut fourth = TcpStream::connect(web).unwrap();
    fourth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    let _ = fourth.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["error"]["code"], "too_many_connections", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--max-connections-per-address"),
        "{message}"
    );

    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    for listener in ["http", "resp"] {
        let series = format!(
            "idmint_connections_refused_total{{listener=\"{listener}\",reason=\"per_address\"}}"
        );
        assert_eq!(metric(web, &series), 1.0, "{series}");
    }
    let logged = server.log().iter().any(|line| {
        line.contains("too many from one address") && line.contains("--max-connections-per-address")
    });
    assert!(logged, "{:?}", server.log());
    server.stop();
}
