//! The Grafana dashboard (`deploy/grafana/idmint.json`) against a running node: every metric
//! one of its queries names must be in the node's `/metrics`, so a renamed or removed metric
//! cannot leave a panel silently empty.

use std::collections::BTreeSet;

use crate::common::{sqlite_url, Server};
use crate::security::{address, http, Resp};

const ADMIN: &str = "dashboard-admin-token";

/// Every `idmint_*` name in the dashboard's queries (`expr` and template queries).
fn queried_metrics(dashboard: &serde_json::Value, found: &mut BTreeSet<String>) {
    match dashboard {
        serde_json::Value::Object(fields) => {
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("expr" | "query", serde_json::Value::String(text)) => {
                        for (start, _) in text.match_indices("idmint_") {
                            let name: String = text[start..]
                                .chars()
                                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                                .collect();
                            found.insert(name);
                        }
                    }
                    _ => queried_metrics(value, found),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| queried_metrics(v, found)),
        _ => {}
    }
}

#[test]
fn every_metric_the_grafana_dashboard_queries_is_exported() {
    let path = crate::clients::repo().join("deploy/grafana/idmint.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut names = BTreeSet::new();
    queried_metrics(&dashboard, &mut names);
    assert!(names.len() >= 15, "{names:?}");

    // A node on a store set of two, so the set's metrics exist, with a token.
    let (a, b) = (sqlite_url("dashboard-a"), sqlite_url("dashboard-b"));
    let server = Server::start_with(&a, "dashboard", &["--store", &b, "--admin-token", ADMIN]);
    let (web, redis) = (address(&server.http), address(&server.resp));
    // What the panels show: IDs of both kinds over both front ends, an error, a wrong token.
    assert_eq!(http(web, "GET", "/v1/snowflake", Some(ADMIN)).0, 200);
    assert_eq!(http(web, "GET", "/v1/segment/orders", Some(ADMIN)).0, 200);
    assert_eq!(http(web, "GET", "/v1/nowhere", Some(ADMIN)).0, 404);
    assert_eq!(http(web, "GET", "/v1/snowflake", Some("wrong")).0, 403);
    let mut resp = Resp::connect(redis);
    assert_eq!(resp.call(&["AUTH", ADMIN]), "+OK");
    assert!(resp.call(&["INCR", "orders"]).starts_with(':'));
    let (status, _, metrics) = http(web, "GET", "/metrics", Some(ADMIN));
    assert_eq!(status, 200, "{metrics}");

    let exported: BTreeSet<&str> = metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(|n| n.trim_end_matches("_sum").trim_end_matches("_count"))
        .collect();
    let missing: Vec<_> = names
        .iter()
        .filter(|n| !exported.contains(n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "queried but not exported: {missing:?}\n{metrics}"
    );
    server.stop();
}
