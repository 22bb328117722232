//! One tenant must not lock the others out, against a real `idmint serve` on SQLite and on
//! PostgreSQL: two tenants (mint tokens with tag patterns and quotas) and the admin share a
//! node's `--max-tags`. A tenant stops at its quota (`tag_quota`, on both front ends) and
//! its tags keep working; tenants together stop short of the admin reserve; after a restart
//! the store still holds the tenant to its quota.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::{idmint_command, sqlite_url, Server};
use crate::security::{address, folder, http, incr_flood, Resp, ADMIN};
use crate::starting::{fresh_namespace, postgres_url};

const ORDERS: &str = "orders-tenant-0123456789abcdef";
const PAYMENTS: &str = "payments-tenant-0123456789abcdef";

/// `--max-tags 12 --admin-tag-reserve 2`: tenants together may load 10.
const NODE: [&str; 4] = ["--max-tags", "12", "--admin-tag-reserve", "2"];

/// The admin, `orders` (tags `orders-*`, at most 5) and `payments` (tags `payments-*`, at
/// most 6).
fn tenants_file(name: &str) -> PathBuf {
    let dir = folder(name);
    let path = dir.join("tokens.toml");
    std::fs::write(
        &path,
        format!(
            "[[token]]\nname = \"ops\"\nscope = \"admin\"\nsecret = \"{ADMIN}\"\n\n\
             [[token]]\nname = \"orders\"\nscope = \"mint\"\ntags = [\"orders-*\"]\nmax_tags = 5\nsecret = \"{ORDERS}\"\n\n\
             [[token]]\nname = \"payments\"\nscope = \"mint\"\ntags = [\"payments-*\"]\nmax_tags = 6\nsecret = \"{PAYMENTS}\"\n"
        ),
    )
    .unwrap();
    path
}

/// `INCR tag` with `token` on a fresh connection: the reply line.
fn incr(redis: SocketAddr, token: &str, tag: &str) -> String {
    let mut resp = Resp::connect(redis);
    assert_eq!(resp.call(&["AUTH", token]), "+OK");
    resp.call(&["INCR", tag])
}

/// `GET /v1/segment/{tag}` with `token`: the status and the error code, if any.
fn segment(web: SocketAddr, token: &str, tag: &str) -> (u16, String) {
    let (status, _, body) = http(web, "GET", &format!("/v1/segment/{tag}"), Some(token));
    let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (status, code)
}

fn start(store: &str, node: &str, tokens: &Path, namespace: &str) -> Server {
    let tokens = tokens.to_str().unwrap();
    let mut args = vec!["--tokens-file", tokens, "--namespace", namespace];
    args.extend(NODE);
    Server::start_with(store, node, &args)
}

fn tenants_share_the_tags(store: &str, label: &str) {
    let tokens = tenants_file(label);
    let namespace = fresh_namespace("tenants");
    let server = start(store, label, &tokens, &namespace);
    let (web, redis) = (address(&server.http), address(&server.resp));

    // `orders` asks for 12 new tags at once over both front ends: 5 are made, the rest are
    // refused naming the quota.
    let asked: Vec<_> = (0..12)
        .map(|i| {
            std::thread::spawn(move || {
                let tag = format!("orders-{i}");
                let made = if i % 2 == 0 {
                    let reply = incr(redis, ORDERS, &tag);
                    assert!(
                        reply.starts_with(':') || reply.starts_with("-ERR tag_quota "),
                        "{reply}"
                    );
                    reply.starts_with(':')
                } else {
                    let (status, code) = segment(web, ORDERS, &tag);
                    assert!(
                        status == 200 || (status == 409 && code == "tag_quota"),
                        "{status} {code}"
                    );
                    status == 200
                };
                (tag, made)
            })
        })
        .collect();
    let made: Vec<String> = asked
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter_map(|(tag, made)| made.then_some(tag))
        .collect();
    assert_eq!(made.len(), 5, "{made:?}");
    let reply = incr(redis, ORDERS, "orders-new");
    assert!(
        reply.starts_with("-ERR tag_quota ")
            && reply.contains("`orders`")
            && reply.contains("max_tags"),
        "{reply}"
    );
    assert_eq!(
        segment(web, ORDERS, "orders-new"),
        (409, "tag_quota".to_owned())
    );
    // Its tags keep working, for it and for the admin.
    for tag in &made {
        assert!(incr(redis, ORDERS, tag).starts_with(':'));
        assert_eq!(segment(web, ADMIN, tag).0, 200);
    }

    // `payments` still gets its tags, until tenants together hold 10: the admin reserve.
    for i in 0..5 {
        assert_eq!(segment(web, PAYMENTS, &format!("payments-{i}")).0, 200);
    }
    assert_eq!(
        segment(web, PAYMENTS, "payments-5"),
        (409, "too_many_tags".to_owned())
    );
    assert!(incr(redis, PAYMENTS, "payments-5").starts_with("-ERR too_many_tags "));
    // The admin has the reserve, and tags the tenants' patterns match count for them too.
    assert!(incr(redis, ADMIN, "orders-by-admin").starts_with(':'));
    assert_eq!(segment(web, ADMIN, "ops-1").0, 200);
    assert_eq!(
        segment(web, ADMIN, "ops-2"),
        (409, "too_many_tags".to_owned())
    );
    server.stop();

    // After a restart the node's memory is empty, the store is not: `orders` holds 6 tags
    // matching its patterns, over its quota, so it makes none; its tags work.
    let server = start(store, label, &tokens, &namespace);
    let (web, redis) = (address(&server.http), address(&server.resp));
    let reply = incr(redis, ORDERS, "orders-after");
    assert!(
        reply.starts_with("-ERR tag_quota ") && reply.contains("in the store"),
        "{reply}"
    );
    assert_eq!(
        segment(web, ORDERS, "orders-after"),
        (409, "tag_quota".to_owned())
    );
    for tag in &made {
        assert_eq!(segment(web, ORDERS, tag).0, 200, "{tag}");
    }
    // It may not load more than its quota on a node either, even tags that exist.
    let reply = incr(redis, ORDERS, "orders-by-admin");
    assert!(
        reply.starts_with("-ERR tag_quota ") && reply.contains("loaded on this node"),
        "{reply}"
    );
    // `payments` (5 of 6 in the store) makes its sixth, then is refused.
    assert_eq!(segment(web, PAYMENTS, "payments-5").0, 200);
    let (status, code) = segment(web, PAYMENTS, "payments-6");
    assert_eq!((status, code.as_str()), (409, "tag_quota"));
    assert!(incr(redis, ADMIN, "ops-3").starts_with(':'));
    server.stop();
}

#[test]
fn one_tenant_cannot_lock_the_others_out_on_sqlite() {
    tenants_share_the_tags(&sqlite_url("tenants"), "tenants-sqlite");
}

#[test]
fn one_tenant_cannot_lock_the_others_out_on_postgres() {
    tenants_share_the_tags(&postgres_url(), "tenants-postgres");
}

/// The flood, with default settings: one tenant asks 10,000 new tags over 32
/// connections, pipelined. It gets its default quota (a tenth of `--max-tags`), the other
/// tenant and the admin still create tags, and a restart gives it none.
#[test]
fn a_tenants_tag_flood_stops_at_its_default_quota() {
    const ASKED: usize = 10_000;
    const CONNECTIONS: usize = 32;
    const QUOTA: usize = 1_000; // a tenth of the default --max-tags
    let dir = folder("tenant-flood");
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        format!(
            "[[token]]\nname = \"ops\"\nscope = \"admin\"\nsecret = \"{ADMIN}\"\n\n\
             [[token]]\nname = \"orders\"\nscope = \"mint\"\ntags = [\"orders-*\"]\nsecret = \"{ORDERS}\"\n\n\
             [[token]]\nname = \"payments\"\nscope = \"mint\"\ntags = [\"payments-*\"]\nsecret = \"{PAYMENTS}\"\n"
        ),
    )
    .unwrap();
    let store = sqlite_url("tenant-flood");
    let args = ["--tokens-file", tokens.to_str().unwrap()];
    let server = Server::start_with(&store, "tenant-flood", &args);
    let (web, redis) = (address(&server.http), address(&server.resp));
    let started = Instant::now();
    let (ok, refused) = incr_flood(
        redis,
        Some(ORDERS),
        "orders",
        ASKED,
        CONNECTIONS,
        "-ERR tag_quota ",
    );
    let flood_took = started.elapsed();
    assert_eq!((ok, refused), (QUOTA, ASKED - QUOTA));
    assert_eq!(segment(web, PAYMENTS, "payments-1").0, 200);
    assert!(incr(redis, ADMIN, "ops-1").starts_with(':'));
    server.stop();
    let server = Server::start_with(&store, "tenant-flood", &args);
    let (web, redis) = (address(&server.http), address(&server.resp));
    let restarted = Instant::now();
    let reply = incr(redis, ORDERS, "orders-after-restart");
    assert!(reply.starts_with("-ERR tag_quota "), "{reply}");
    let refused_in = restarted.elapsed();
    assert_eq!(segment(web, ORDERS, "orders-7").0, 200);
    assert_eq!(segment(web, PAYMENTS, "payments-2").0, 200);
    server.stop();
    eprintln!(
        "{ASKED} new tags asked by one tenant over {CONNECTIONS} connections, default \
         --max-tags: {ok} made (its default quota), {refused} refused tag_quota, in \
         {flood_took:?}; the other tenant and the admin still create tags; after a restart \
         its next new tag is refused in {refused_in:?}"
    );
}

#[test]
fn an_admin_reserve_of_every_tag_is_refused() {
    let out = idmint_command()
        .args(["serve", "--store", &sqlite_url("reserve-bad")])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .args(["--max-tags", "10", "--admin-tag-reserve", "10"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: --admin-tag-reserve: 10 leaves no tag"),
        "{stderr}"
    );
}
