//! The settings table: every setting of `idmint serve` as a field of [`PartialConfig`] (its
//! flag, `IDMINT_*` variable, TOML key, type and help) and its default in
//! [`PartialConfig::defaults`]. The one place a setting is defined; everything else in
//! `config/` reads it, so this file alone may grow with the settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use idmint_core::SnowflakeConfig;

use crate::ids::{ClockPolicy, LeaseConfig, SegmentOptions};

/// The layout when none is given: 41 bits of milliseconds, 1,024 workers, 4,096 IDs per ms each.
pub const DEFAULT_LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// The listen backlog when none is given: Redis' `tcp-backlog` and nginx's default on Linux.
/// tokio's `TcpListener::bind` takes 128, which a flood of connections overflowed.
pub const DEFAULT_LISTEN_BACKLOG: u32 = 511;

/// One layer of settings, every field optional: the one definition of each setting. clap reads
/// the command line and the `IDMINT_*` variables into it (its field docs are `--help`), and the
/// TOML file deserializes into it under the same names with underscores (`worker_id = "auto"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct PartialConfig {
    /// Folder of the embedded store (used when --store is not given).
    #[arg(long, value_name = "DIR", env = "IDMINT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Store URL: sqlite://PATH, postgres://..., mysql://... or redis://... Given several
    /// times (or several URLs separated by spaces), a store set: each store serves its own
    /// share of the IDs, so any one of them can fail (docs/stores.md, "Store sets"). The order
    /// is part of the set. A password in a flag shows in the process list: prefer --store-file
    /// or the variable. [default: sqlite://DATA_DIR/idmint.db]
    #[arg(
        long,
        value_name = "URL",
        env = "IDMINT_STORE",
        value_delimiter = ' ',
        hide_env_values = true
    )]
    #[serde(default, deserialize_with = "one_or_many")]
    pub store: Option<Vec<String>>,

    /// File holding the store URL, or the URLs of a store set one a line in their order (e.g.
    /// a systemd credential or a Kubernetes secret); instead of --store.
    #[arg(long, value_name = "FILE", env = "IDMINT_STORE_FILE")]
    pub store_file: Option<PathBuf>,

    /// The store of the set this node asks first (its position in the --store list, from 0),
    /// e.g. the one in its own datacenter. [default: chosen from the node's name]
    #[arg(long, value_name = "N", env = "IDMINT_HOME_STORE")]
    pub home_store: Option<usize>,

    /// The longest one store call may take before it counts as failed: in a store set, how
    /// long a node waits for a store that hangs before it turns to another.
    #[arg(long, value_name = "DURATION", env = "IDMINT_STORE_CALL_TIMEOUT", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub store_call_timeout: Option<Duration>,

    /// IDs per block of a store set's segment partitions; fixed when the set is created.
    #[arg(long, value_name = "N", env = "IDMINT_STORE_BLOCK")]
    pub store_block: Option<u64>,

    /// HTTP (JSON and Leaf API) listen address.
    #[arg(long, value_name = "ADDR", env = "IDMINT_HTTP")]
    pub http: Option<SocketAddr>,

    /// Redis-protocol listen address.
    #[arg(long, value_name = "ADDR", env = "IDMINT_RESP")]
    pub resp: Option<SocketAddr>,

    /// Snowflake layout: a preset (twitter, discord, instagram, sonyflake, js-safe) or fields
    /// like time:41@1ms,worker:10,seq:12.
    #[arg(long, value_name = "SPEC", env = "IDMINT_LAYOUT")]
    pub layout: Option<String>,

    /// Layout epoch: ms since 1970, RFC 3339 or YYYY-MM-DD. [default: the layout's own]
    #[arg(long, value_name = "EPOCH", env = "IDMINT_EPOCH")]
    pub epoch: Option<String>,

    /// Datacenter ID placed in every snowflake (layouts with a dc field).
    #[arg(long, value_name = "N", env = "IDMINT_DATACENTER")]
    pub datacenter: Option<u64>,

    /// Worker ID: `auto` (leased from the store) or a fixed N, registered in the store and
    /// refused while another live node holds it.
    #[arg(long, value_name = "auto|N", env = "IDMINT_WORKER_ID")]
    pub worker_id: Option<WorkerChoice>,

    /// This node's stable name: it gets its previous worker ID back. [default: the host name]
    #[arg(long, value_name = "NAME", env = "IDMINT_NODE_NAME")]
    pub node_name: Option<String>,

    /// Put this node's datacenter and leased worker ID in a node field of its 128-bit IDs
    /// (UUIDv7, ULID), so two nodes never give the same one even if their random bits met; they
    /// are then fenced by the lease's high-water mark, as snowflakes are. The field is as wide
    /// as the layout's dc and worker fields together (at most 24 bits), taken from the random
    /// bits.
    #[arg(long, value_name = "BOOL", env = "IDMINT_ID128_NODE")]
    pub id128_node: Option<bool>,

    /// Token of the admin scope (everything), for HTTP (Authorization: Bearer) and the Redis
    /// protocol (AUTH). Prefer --admin-token-file or --tokens-file: a flag shows in the process
    /// list. With any token set, nothing but health checks is served without one.
    /// [default: none]
    #[arg(
        long,
        value_name = "TOKEN",
        env = "IDMINT_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,

    /// File holding the admin token (its only line), e.g. a systemd credential or a
    /// Kubernetes secret.
    #[arg(long, value_name = "FILE", env = "IDMINT_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,

    // clap's help text, not markdown: `[[token]]` is the TOML table, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// TOML file of scoped tokens ([[token]] with name, scope = admin|mint|metrics, optional
    /// tag patterns, and the secret or its sha256); reloaded on SIGHUP. See SECURITY.md.
    #[arg(long, value_name = "FILE", env = "IDMINT_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,

    /// Certificate chain (PEM) for TLS on both listeners; with --tls-key. Reloaded on SIGHUP.
    /// [default: none, plain TCP]
    #[arg(long, value_name = "FILE", env = "IDMINT_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", env = "IDMINT_TLS_KEY")]
    pub tls_key: Option<PathBuf>,

    /// File holding a secret key (32 hex digits, from `idmint permutation-key`): every ID is
    /// then handed out permuted, showing neither order, volume nor time. Part of the pinned
    /// ID space, so only for a new namespace, and every node needs the same key.
    /// [default: none, plain IDs]
    #[arg(long, value_name = "FILE", env = "IDMINT_PERMUTATION_KEY_FILE")]
    pub permutation_key_file: Option<PathBuf>,

    /// Most connections each listener serves at once; one beyond it is refused.
    #[arg(long, value_name = "N", env = "IDMINT_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Most connections one client address may hold on each listener; 0: no limit. Every
    /// client behind one NAT or proxy address shares it: raise it (or set 0) for such clients.
    #[arg(long, value_name = "N", env = "IDMINT_MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<usize>,

    /// Length of each listener's queue of connections the kernel has accepted but idmint has
    /// not yet taken (the backlog of listen(2)), 1 to 65535; the kernel caps it at
    /// net.core.somaxconn. A flood beyond it makes real clients wait for SYN retries.
    #[arg(long, value_name = "N", env = "IDMINT_LISTEN_BACKLOG")]
    pub listen_backlog: Option<u32>,

    /// How long a new connection has to authenticate (with tokens) or send its first request
    /// (without), TLS handshake included, before it is closed.
    #[arg(long, value_name = "DURATION", env = "IDMINT_AUTH_TIMEOUT", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub auth_timeout: Option<Duration>,

    /// Close connections idle for longer than this; 0: never (as Redis' `timeout 0`).
    #[arg(long, value_name = "DURATION", env = "IDMINT_IDLE_TIMEOUT", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub idle_timeout: Option<Duration>,

    /// Most tags this node serves; creating (or loading) one more is refused with
    /// `too_many_tags`. Each token of the mint scope has a quota too, `max_tags` in
    /// --tokens-file (default: a tenth of this), refused with `tag_quota`.
    #[arg(long, value_name = "N", env = "IDMINT_MAX_TAGS")]
    pub max_tags: Option<usize>,

    /// The part of --max-tags only the admin scope may fill: tokens of other scopes together
    /// stop at --max-tags minus this, so tenants cannot lock the operator out. [default: a
    /// tenth of --max-tags]
    #[arg(long, value_name = "N", env = "IDMINT_ADMIN_TAG_RESERVE")]
    pub admin_tag_reserve: Option<usize>,

    /// Most IDs one request may ask for (HTTP `count`, RESP `COUNT` and `INCRBY`).
    #[arg(long, value_name = "N", env = "IDMINT_MAX_COUNT")]
    pub max_count: Option<u64>,

    /// Largest segment lease one request may take (`POST /v1/segment/{tag}/lease?size=N`).
    #[arg(long, value_name = "N", env = "IDMINT_MAX_LEASE_SIZE")]
    pub max_lease_size: Option<u64>,

    /// Create unknown tags on first use.
    #[arg(long, value_name = "BOOL", env = "IDMINT_AUTO_CREATE_TAGS")]
    pub auto_create_tags: Option<bool>,

    /// Step of tags created on first use.
    #[arg(long, value_name = "N", env = "IDMINT_DEFAULT_STEP")]
    pub default_step: Option<u64>,

    /// Accept a store that cannot promise durability (a crash may then reissue IDs).
    #[arg(long, value_name = "BOOL", env = "IDMINT_ALLOW_NON_DURABLE")]
    pub allow_non_durable: Option<bool>,

    /// Threads that serve client connections (HTTP and Redis protocol), each connection on
    /// one of them for its whole life; 0 serves them on the main runtime's work-stealing
    /// workers. [default: one fewer than the CPUs, at least 1: the kernel's TCP work and the
    /// store calls get a CPU of their own]
    #[arg(long, value_name = "N", env = "IDMINT_IO_THREADS")]
    pub io_threads: Option<usize>,

    /// Prefix of idmint's tables (or Redis keys) in the store: [a-z0-9_]{1,32}, so several
    /// deployments can share one database.
    #[arg(long, value_name = "NAME", env = "IDMINT_NAMESPACE")]
    pub namespace: Option<String>,

    /// When the worker ID's high-water mark is ahead of the clock by more than --max-lead
    /// (a restart after the clock stepped back): `switch` takes another worker ID whose mark
    /// is below the clock, `wait` keeps it and answers snowflake calls with clock_behind until
    /// the clock catches up, `fail` refuses to start.
    #[arg(long, value_name = "wait|switch|fail", env = "IDMINT_CLOCK_POLICY")]
    pub clock_policy: Option<ClockPolicy>,

    /// How long the worker lease lasts unless renewed: how soon another node may take the
    /// worker ID of a node that died.
    #[arg(long, value_name = "DURATION", env = "IDMINT_LEASE_TTL", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub lease_ttl: Option<Duration>,

    /// How often the lease is renewed and the high-water mark raised (a failed renewal is retried
    /// within 0.5 s); below --lease-ttl.
    #[arg(long, value_name = "DURATION", env = "IDMINT_LEASE_RENEW", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub lease_renew: Option<Duration>,

    /// How far ahead of the clock the high-water mark is raised: how long snowflakes keep
    /// flowing while the store is down; above --lease-renew.
    #[arg(long, value_name = "DURATION", env = "IDMINT_HWM_LEAD", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub hwm_lead: Option<Duration>,

    /// How far ahead of the clock the generator may borrow time when a tick's sequence is
    /// used up.
    #[arg(long, value_name = "DURATION", env = "IDMINT_MAX_LEAD", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub max_lead: Option<Duration>,

    /// The longest a snowflake request waits for the clock or the store before an error.
    #[arg(long, value_name = "DURATION", env = "IDMINT_MAX_WAIT", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub max_wait: Option<Duration>,

    /// How long a starting node waits for a worker lease to expire when every worker ID (or
    /// its --worker-id) is held, e.g. by a node killed a moment ago: it logs the lease it waits
    /// for, and fails when none expired in time. 0 fails at once. [default: the --lease-ttl
    /// value, the longest a dead node's lease lives on]
    #[arg(long, value_name = "DURATION", env = "IDMINT_WORKER_WAIT", value_parser = humantime::parse_duration)]
    #[serde(default, with = "humantime_serde")]
    pub worker_wait: Option<Duration>,

    /// How log lines are written on stderr: `text` for people (coloured only on a terminal,
    /// never with NO_COLOR set) or `json`, one object a line (timestamp, level, target,
    /// message and the event's fields) for a log collector.
    #[arg(long, value_name = "text|json", env = "IDMINT_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,

    /// Which log lines are written: a level (error, warn, info, debug, trace) and per-module
    /// levels, as RUST_LOG reads them: `info,idmint_server=debug`. RUST_LOG is read when this
    /// setting is not given.
    #[arg(long, value_name = "DIRECTIVES", env = "IDMINT_LOG_FILTER")]
    pub log_filter: Option<String>,
}

/// `--log-format`: how the log's lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object a line, for collectors (journald, Loki, Elasticsearch, CloudWatch).
    Json,
}

/// `--worker-id`: leased from the store, or fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "WorkerIdValue", into = "String")]
pub enum WorkerChoice {
    /// Leased from the store: the node's previous one if free, else a free one.
    Auto,
    /// This worker ID, refused while another live node holds it.
    Fixed(u64),
}

impl std::str::FromStr for WorkerChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(WorkerChoice::Auto),
            text => text
                .parse()
                .map(WorkerChoice::Fixed)
                .map_err(|_| format!("`{text}` is neither `auto` nor a whole number")),
        }
    }
}

impl From<WorkerChoice> for String {
    fn from(choice: WorkerChoice) -> String {
        match choice {
            WorkerChoice::Auto => "auto".to_owned(),
            WorkerChoice::Fixed(id) => id.to_string(),
        }
    }
}

/// A worker ID as a TOML file may write it: `"auto"`, `"7"` or `7`.
#[derive(Deserialize)]
#[serde(untagged)]
enum WorkerIdValue {
    Number(u64),
    Text(String),
}

impl TryFrom<WorkerIdValue> for WorkerChoice {
    type Error = String;

    fn try_from(value: WorkerIdValue) -> Result<Self, String> {
        match value {
            WorkerIdValue::Number(id) => Ok(WorkerChoice::Fixed(id)),
            WorkerIdValue::Text(text) => text.parse(),
        }
    }
}

impl PartialConfig {
    /// The default of every setting that has a plain one: the one place they are written.
    /// The others are derived in [`ServeConfig::resolve`](super::ServeConfig::resolve) and
    /// described in their docs.
    pub fn defaults() -> Self {
        let lease = LeaseConfig::default();
        let generator = SnowflakeConfig::default();
        Self {
            data_dir: Some(PathBuf::from("./idmint-data")),
            store_block: Some(idmint_core::store::DEFAULT_BLOCK),
            store_call_timeout: Some(idmint_store::StoreOptions::default().call_timeout),
            http: Some(SocketAddr::from(([127, 0, 0, 1], 8080))),
            resp: Some(SocketAddr::from(([127, 0, 0, 1], 6380))),
            layout: Some(DEFAULT_LAYOUT.to_owned()),
            datacenter: Some(0),
            worker_id: Some(WorkerChoice::Auto),
            id128_node: Some(lease.id128_node),
            auto_create_tags: Some(true),
            default_step: Some(1_000),
            allow_non_durable: Some(false),
            namespace: Some("idmint".to_owned()),
            clock_policy: Some(lease.clock_policy),
            lease_ttl: Some(lease.ttl),
            lease_renew: Some(lease.renew_every),
            hwm_lead: Some(lease.hwm_lead),
            max_lead: Some(generator.max_lead),
            max_wait: Some(generator.max_wait),
            max_connections: Some(10_000),
            max_connections_per_address: Some(1_000),
            listen_backlog: Some(DEFAULT_LISTEN_BACKLOG),
            auth_timeout: Some(Duration::from_secs(5)),
            idle_timeout: Some(Duration::ZERO),
            max_tags: Some(SegmentOptions::default().max_tags),
            max_count: Some(10_000),
            max_lease_size: Some(1_000_000),
            log_format: Some(LogFormat::Text),
            log_filter: Some("info".to_owned()),
            ..Self::default()
        }
    }
}

/// A setting that is one value or a list in the file (`store = "..."` or `store = [...]`).
fn one_or_many<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(deserializer)? {
        None => None,
        Some(OneOrMany::One(one)) => Some(vec![one]),
        Some(OneOrMany::Many(many)) => Some(many),
    })
}
