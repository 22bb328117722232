//! `idmint serve`: every setting as a flag, an `IDMINT_*` variable or a TOML file entry (flag >
//! variable > file > default), then the server until SIGINT or SIGTERM.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use idmint_server::config::{PartialConfig, ServeConfig};

/// Settings of `idmint serve`. Each is also read from the variable shown and from the
/// `--config` file under the same name with underscores (`worker_id = "auto"`).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (flags and variables override it).
    #[arg(long, value_name = "FILE", env = "IDMINT_CONFIG")]
    pub config: Option<PathBuf>,

    /// Folder of the embedded store (used when --store is not given). [default: ./idmint-data]
    #[arg(long, value_name = "DIR", env = "IDMINT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Store URL: sqlite://PATH, postgres://..., mysql://... or redis://...
    /// [default: sqlite://<data-dir>/idmint.db]
    #[arg(long, value_name = "URL", env = "IDMINT_STORE")]
    pub store: Option<String>,

    /// HTTP (JSON and Leaf API) listen address. [default: 127.0.0.1:8080]
    #[arg(long, value_name = "ADDR", env = "IDMINT_HTTP")]
    pub http: Option<String>,

    /// Redis-protocol listen address. [default: 127.0.0.1:6380]
    #[arg(long, value_name = "ADDR", env = "IDMINT_RESP")]
    pub resp: Option<String>,

    /// Snowflake layout: a preset (twitter, discord, instagram, sonyflake, js-safe) or fields
    /// like time:41@1ms,worker:10,seq:12. [default: time:41@1ms,worker:10,seq:12]
    #[arg(long, value_name = "SPEC", env = "IDMINT_LAYOUT")]
    pub layout: Option<String>,

    /// Layout epoch: ms since 1970, RFC 3339 or YYYY-MM-DD. [default: the layout's own]
    #[arg(long, value_name = "EPOCH", env = "IDMINT_EPOCH")]
    pub epoch: Option<String>,

    /// Datacenter ID placed in every snowflake (layouts with a dc field). [default: 0]
    #[arg(long, value_name = "N", env = "IDMINT_DATACENTER")]
    pub datacenter: Option<u64>,

    /// Worker ID: `auto` (leased from the store) or a fixed N, registered in the store and
    /// refused while another live node holds it. [default: auto]
    #[arg(long, value_name = "auto|N", env = "IDMINT_WORKER_ID")]
    pub worker_id: Option<String>,

    /// This node's stable name: it gets its previous worker ID back. [default: the host name]
    #[arg(long, value_name = "NAME", env = "IDMINT_NODE_NAME")]
    pub node_name: Option<String>,

    /// Token required by admin routes (Authorization: Bearer) and Redis AUTH. [default: none]
    #[arg(
        long,
        value_name = "TOKEN",
        env = "IDMINT_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,

    /// Create unknown tags on first use. [default: true]
    #[arg(long, value_name = "BOOL", env = "IDMINT_AUTO_CREATE_TAGS")]
    pub auto_create_tags: Option<bool>,

    /// Step of tags created on first use. [default: 1000]
    #[arg(long, value_name = "N", env = "IDMINT_DEFAULT_STEP")]
    pub default_step: Option<u64>,

    /// Accept a store that cannot promise durability (a crash may then reissue IDs).
    /// [default: false]
    #[arg(long, value_name = "BOOL", env = "IDMINT_ALLOW_NON_DURABLE")]
    pub allow_non_durable: Option<bool>,

    /// Threads that serve client connections (HTTP and Redis protocol), each connection on
    /// one of them for its whole life; 0 serves them on the main runtime's work-stealing
    /// workers. [default: one fewer than the CPUs, at least 1: the kernel's TCP work and the
    /// store calls get a CPU of their own]
    #[arg(long, value_name = "N", env = "IDMINT_IO_THREADS")]
    pub io_threads: Option<usize>,

    /// Prefix of idmint's tables (or Redis keys) in the store: [a-z0-9_]{1,32}, so several
    /// deployments can share one database. [default: idmint]
    #[arg(long, value_name = "NAME", env = "IDMINT_NAMESPACE")]
    pub namespace: Option<String>,

    /// When the worker ID's high-water mark is ahead of the clock by more than --max-lead
    /// (a restart after the clock stepped back): `switch` takes another worker ID whose mark
    /// is below the clock, `wait` keeps it and answers snowflake calls with clock_behind until
    /// the clock catches up, `fail` refuses to start. [default: switch]
    #[arg(long, value_name = "wait|switch|fail", env = "IDMINT_CLOCK_POLICY")]
    pub clock_policy: Option<String>,

    /// How long the worker lease lasts unless renewed: how soon another node may take the
    /// worker ID of a node that died. [default: 10s]
    #[arg(long, value_name = "DURATION", env = "IDMINT_LEASE_TTL")]
    pub lease_ttl: Option<String>,

    /// How often the lease is renewed and the high-water mark raised; below --lease-ttl.
    /// [default: 2s]
    #[arg(long, value_name = "DURATION", env = "IDMINT_LEASE_RENEW")]
    pub lease_renew: Option<String>,

    /// How far ahead of the clock the high-water mark is raised: how long snowflakes keep
    /// flowing while the store is down; above --lease-renew. [default: 10s]
    #[arg(long, value_name = "DURATION", env = "IDMINT_HWM_LEAD")]
    pub hwm_lead: Option<String>,

    /// How far ahead of the clock the generator may borrow time when a tick's sequence is
    /// used up. [default: 1s]
    #[arg(long, value_name = "DURATION", env = "IDMINT_MAX_LEAD")]
    pub max_lead: Option<String>,

    /// The longest a snowflake request waits for the clock or the store before an error.
    /// [default: 1s]
    #[arg(long, value_name = "DURATION", env = "IDMINT_MAX_WAIT")]
    pub max_wait: Option<String>,

    /// How long a starting node waits for a worker lease to expire when every worker ID (or
    /// its --worker-id) is held, e.g. by a node killed a moment ago: it logs the lease it waits
    /// for, and fails when none expired in time. 0 fails at once. [default: the --lease-ttl
    /// value, the longest a dead node's lease lives on]
    #[arg(long, value_name = "DURATION", env = "IDMINT_WORKER_WAIT")]
    pub worker_wait: Option<String>,
}

impl ServeArgs {
    /// The command-line layer.
    fn partial(&self) -> PartialConfig {
        PartialConfig {
            data_dir: self.data_dir.clone(),
            store: self.store.clone(),
            http: self.http.clone(),
            resp: self.resp.clone(),
            layout: self.layout.clone(),
            epoch: self.epoch.clone(),
            datacenter: self.datacenter,
            worker_id: self.worker_id.clone(),
            node_name: self.node_name.clone(),
            admin_token: self.admin_token.clone(),
            auto_create_tags: self.auto_create_tags,
            default_step: self.default_step,
            allow_non_durable: self.allow_non_durable,
            io_threads: self.io_threads,
            namespace: self.namespace.clone(),
            clock_policy: self.clock_policy.clone(),
            lease_ttl: self.lease_ttl.clone(),
            lease_renew: self.lease_renew.clone(),
            hwm_lead: self.hwm_lead.clone(),
            max_lead: self.max_lead.clone(),
            max_wait: self.max_wait.clone(),
            worker_wait: self.worker_wait.clone(),
        }
    }
}

/// Resolves the settings and serves until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> Result<()> {
    let file = match &args.config {
        Some(path) => PartialConfig::from_file(path)?,
        None => PartialConfig::default(),
    };
    let config = ServeConfig::resolve(args.partial(), file, &host_name())?;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(idmint_server::serve::run(config, stop_signal()))?;
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn stop_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// The host's name (`/etc/hostname`, then `$HOSTNAME`), or `idmint`.
fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "idmint".to_owned())
}
