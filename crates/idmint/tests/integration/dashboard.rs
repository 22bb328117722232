//! The operator's views against a running node: the Grafana dashboard
//! (`deploy/grafana/idmint.json`), every metric of which must be in the node's `/metrics` (a
//! renamed or removed metric cannot leave a panel silently empty), and the routes of the page
//! `/ui` (`/v1/node`, `/v1/buffers`, Leaf's `/cache` and `/db`).

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

#[test]
fn the_page_and_its_routes_show_the_node_its_tags_and_workers() {
    let store = sqlite_url("dashboard-ui");
    let server = Server::start_with(
        &store,
        "ui-node",
        &["--admin-token", ADMIN, "--layout", "discord"],
    );
    let (web, redis) = (address(&server.http), address(&server.resp));
    // The page holds no data: it is open; what it reads needs the admin scope.
    let (status, head, page) = http(web, "GET", "/ui", None);
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/html"),
        "{head}"
    );
    assert!(page.contains("<title>idmint</title>"));
    for path in ["/v1/node", "/v1/buffers"] {
        assert_eq!(http(web, "GET", path, None).0, 401, "{path}");
    }
    // Leaf's monitor paths lead to the matching views.
    for (path, view) in [("/cache", "/ui#tags"), ("/db", "/ui#workers")] {
        let (status, head, _) = http(web, "GET", path, None);
        assert_eq!(status, 303, "{path}: {head}");
        assert!(
            head.contains(&format!("location: {view}")),
            "{path}: {head}"
        );
    }

    let mut resp = Resp::connect(redis);
    assert_eq!(resp.call(&["AUTH", ADMIN]), "+OK");
    assert!(resp.call(&["INCRBY", "orders", "500"]).starts_with(':'));
    let json = |path: &str| -> serde_json::Value {
        let (status, _, body) = http(web, "GET", path, Some(ADMIN));
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    let node = json("/v1/node");
    assert_eq!(node["node_name"], "ui-node");
    assert_eq!(node["layout"], "time:41@1ms,dc:5,worker:5,seq:12");
    assert_eq!(node["lease_held"], true);
    assert!(node["hwm_lead_ms"].as_i64().unwrap() > 0, "{node}");
    assert!(
        node["layout_ends"].as_str().unwrap().starts_with("2084-"),
        "{node}"
    );
    let buffers = json("/v1/buffers");
    let row = &buffers["buffers"][0];
    assert_eq!(row["tag"], "orders", "{buffers}");
    assert_eq!(row["position"], "500", "{buffers}");
    assert!(row["next_ready"].is_boolean() && row["step"].as_u64().unwrap() >= 500);
    // The decoder's route, with Discord's documented ID (2016-04-30 11:18:25.796 UTC, internal
    // worker 1, process 0, increment 7: idmint's dc, worker and seq).
    let decoded = json("/v1/decode/175928847299117063");
    assert_eq!(decoded["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(
        (
            decoded["dc"].as_u64(),
            decoded["worker"].as_u64(),
            decoded["seq"].as_u64()
        ),
        (Some(1), Some(0), Some(7))
    );
    server.stop();
}
