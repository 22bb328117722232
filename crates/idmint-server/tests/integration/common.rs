//! What the server's tests share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use idmint_core::{Layout, SnowflakeConfig};
use idmint_server::ids::{IdsConfig, LeaseConfig, SegmentOptions};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The process's Prometheus recorder: `metrics` takes one global recorder, so every test of
/// the binary that reads metrics reads this one, installed by whichever asks first.
pub fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| PrometheusBuilder::new().install_recorder().unwrap())
}

/// A fresh SQLite store URL in the test binary's temporary folder, its file named after
/// `prefix` and unique in this run.
pub fn sqlite_url(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idmint-server-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let file = dir.join(format!("{prefix}-{}-{n}.db", std::process::id()));
    let _ = std::fs::remove_file(&file);
    format!("sqlite://{}", file.display())
}

/// The ID service's settings the tests start from: `layout`, node `node`, a 3 s lease renewed
/// every 200 ms with the HWM 1 s ahead, everything else at its default.
pub fn ids_config(layout: &str, node: &str) -> IdsConfig {
    IdsConfig {
        layout: Layout::parse(layout).unwrap(),
        datacenter: 0,
        lease: LeaseConfig {
            node_name: node.into(),
            worker_id: None,
            ttl: Duration::from_secs(3),
            renew_every: Duration::from_millis(200),
            hwm_lead: Duration::from_secs(1),
            ..LeaseConfig::default()
        },
        snowflake: SnowflakeConfig::default(),
        segments: SegmentOptions::default(),
        permutation: None,
    }
}
