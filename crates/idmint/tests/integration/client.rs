//! `idmint next` and `idmint tags` against a real `idmint serve` with an admin token.

use crate::common;

use std::process::{Command, Output};

use common::Server;

fn idmint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(args)
        .env_remove("IDMINT_SERVER")
        .env_remove("IDMINT_TOKEN")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn next_and_tags_drive_a_running_server() {
    let server = Server::start_with(
        &common::sqlite_url("client"),
        "client-test",
        &["--admin-token", "s3cret"],
    );
    let url = server.http.clone();

    // With a token configured, nothing is served without it.
    let refused = idmint(&["next", "--server", &url]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));
    let snowflakes: Vec<u64> = stdout(&idmint(&[
        "next", "--server", &url, "--count", "3", "--token", "s3cret",
    ]))
    .lines()
    .map(|line| line.parse().unwrap())
    .collect();
    assert_eq!(snowflakes.len(), 3);
    assert!(snowflakes.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        stdout(&idmint(&[
            "next", "--server", &url, "--tag", "orders", "--count", "2", "--token", "s3cret"
        ])),
        "1\n2\n"
    );

    // Admin routes need the token.
    let refused = idmint(&[
        "tags", "create", "invoices", "--step", "50", "--server", &url,
    ]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));
    let auth = ["--server", url.as_str(), "--admin-token", "s3cret"];
    let created = [
        &[
            "tags",
            "create",
            "invoices",
            "--step",
            "50",
            "--description",
            "bills",
        ][..],
        &auth[..],
    ]
    .concat();
    stdout(&idmint(&created));
    let list = stdout(&idmint(&[&["tags", "list"][..], &auth[..]].concat()));
    let invoices = list
        .lines()
        .find(|line| line.starts_with("invoices"))
        .unwrap();
    assert!(
        invoices.contains(" 50 ") && invoices.ends_with("bills"),
        "{invoices}"
    );
    stdout(&idmint(
        &[&["tags", "set-step", "invoices", "70"][..], &auth[..]].concat(),
    ));
    let json = stdout(&idmint(
        &[&["tags", "list", "--json"][..], &auth[..]].concat(),
    ));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let invoices = json["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "invoices")
        .unwrap();
    assert_eq!(invoices["step"], 70);

    // Bad input: usage errors naming the argument, before any request.
    let zero = idmint(&["next", "--server", &url, "--count", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--count"));
    let bad_tag = idmint(&["next", "--server", &url, "--tag", "a\tb"]);
    assert_eq!(bad_tag.status.code(), Some(2));

    // The Redis protocol wants the same token.
    let client = redis::Client::open(server.resp.as_str()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let refused: redis::RedisResult<u64> = redis::cmd("INCR").arg("orders").query(&mut conn);
    assert!(refused.unwrap_err().to_string().contains("NOAUTH"));
    let _: () = redis::cmd("AUTH").arg("s3cret").query(&mut conn).unwrap();
    let next: u64 = redis::cmd("INCR").arg("orders").query(&mut conn).unwrap();
    assert_eq!(next, 3);
    drop(conn);
    server.stop();

    // A server that is not there is named.
    let gone = idmint(&["next", "--server", "http://127.0.0.1:1"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr)
        .contains("cannot reach the server at http://127.0.0.1:1"));
}
