//! The settings of `idmint serve`, and how their layers combine.
//!
//! Every setting is defined once, as a field of [`PartialConfig`] with its type and doc; its
//! default, where it has a plain one, once, in [`PartialConfig::defaults`]. The layers are the
//! command line with the `IDMINT_*` variables (clap reads both), a TOML file (`--config FILE`)
//! and the defaults, in that order of precedence; `--help` and docs/settings.md's table show the
//! defaults from the same place ([`with_defaults_shown`], [`settings_table`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use idmint_core::{Layout, SegmentConfig, SnowflakeConfig};

use crate::auth::TokenSources;
use crate::error::ServerError;
use crate::ids::{ClockPolicy, IdsConfig, LeaseConfig, SegmentOptions};

/// The layout when none is given: 41 bits of milliseconds, 1,024 workers, 4,096 IDs per ms each.
pub const DEFAULT_LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// The listen backlog when none is given: Redis' `tcp-backlog` and nginx's default on Linux.
/// tokio's `TcpListener::bind` takes 128, which a flood of connections overflowed.
pub const DEFAULT_LISTEN_BACKLOG: u32 = 511;

/// How a secret given as a value shows in what the settings print.
pub const HIDDEN: &str = "<hidden>";

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

/// How `idmint serve` logs: resolved from `--log-format` and `--log-filter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The lines' form.
    pub format: LogFormat,
    /// The directives, checked to parse.
    pub filter: String,
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
    /// The others are derived in [`ServeConfig::resolve`] and described in their docs.
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

    /// Reads a TOML file. An error names the file, the line and the setting, and never quotes
    /// the file: its lines may hold a token or a store password.
    pub fn from_file(path: &Path) -> Result<Self, ServerError> {
        let error = |reason: String| ServerError::Config {
            setting: "config".into(),
            reason: format!("{}: {reason}", path.display()),
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
        Self::from_toml(&text, path)
    }

    /// Parses the TOML text of the file at `path` (named in errors), as [`Self::from_file`].
    fn from_toml(text: &str, path: &Path) -> Result<Self, ServerError> {
        let error = |reason: String| ServerError::Config {
            setting: "config".into(),
            reason: format!("{}: {reason}", path.display()),
        };
        toml::from_str(text).map_err(|e| {
            let Some(span) = e.span() else {
                return error(e.message().to_owned());
            };
            let line_start = text[..span.start].rfind('\n').map_or(0, |at| at + 1);
            let line = text[..span.start].matches('\n').count() + 1;
            // The key of the line, when it looks like one (a bare TOML key, not a value).
            let key = text[line_start..]
                .split(['=', '\n'])
                .next()
                .map(str::trim)
                .filter(|key| {
                    (1..=64).contains(&key.len())
                        && key
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                });
            // Setting names and the values a setting may take (`text`, `json`, `switch`...)
            // are the format's words, not secrets: an error keeps them.
            let words = Self::format_words();
            let message = without_quoted_values(e.message(), |quoted| {
                words.iter().any(|word| word == quoted)
            });
            match key {
                // A value of a known setting: the error names that setting, and says the file.
                Some(key) if Self::setting_names().any(|name| name == key) => ServerError::Config {
                    setting: key.replace('_', "-"),
                    reason: format!("{}: line {line}, `{key}`: {message}", path.display()),
                },
                Some(key) => error(format!("line {line}, `{key}`: {message}")),
                None => error(format!("line {line}: {message}")),
            }
        })
    }

    /// Each field from `self`, else from `lower`: both as JSON objects, merged key by key.
    fn over(self, lower: Self) -> Result<Self, ServerError> {
        let merge_error = |e: serde_json::Error| ServerError::Config {
            setting: "config".into(),
            reason: format!("combining the settings: {e}"),
        };
        let (Value::Object(mut upper), Value::Object(lower)) = (
            serde_json::to_value(self).map_err(merge_error)?,
            serde_json::to_value(lower).map_err(merge_error)?,
        ) else {
            return Err(merge_error(serde::ser::Error::custom("not a table")));
        };
        for (key, value) in lower {
            if upper.get(&key).is_none_or(Value::is_null) {
                upper.insert(key, value);
            }
        }
        serde_json::from_value(Value::Object(upper)).map_err(merge_error)
    }

    /// The settings this layer gives a value, by flag name without dashes (`max-count`): to
    /// say where a refused value came from.
    pub fn given(&self) -> Vec<String> {
        match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields
                .into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, _)| key.replace('_', "-"))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The TOML keys, which are the flags' names with underscores.
    fn setting_names() -> impl Iterator<Item = String> {
        let command = <Self as clap::Args>::augment_args(clap::Command::new("serve"));
        let names: Vec<String> = command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .map(|long| long.replace('-', "_"))
            .collect();
        names.into_iter()
    }

    /// The TOML keys and every value a setting of a fixed set of values may take, as clap
    /// lists them or its value name spells them out (`text|json`, `wait|switch|fail`, `true`).
    fn format_words() -> Vec<String> {
        let command = <Self as clap::Args>::augment_args(clap::Command::new("serve"));
        let mut words: Vec<String> = Self::setting_names().collect();
        for arg in command.get_arguments() {
            words.extend(
                arg.get_possible_values()
                    .iter()
                    .map(|value| value.get_name().to_owned()),
            );
            for name in arg.get_value_names().into_iter().flatten() {
                if name.contains('|') {
                    words.extend(name.split('|').map(str::to_owned));
                }
            }
        }
        words
    }

    /// Each setting's default as shown to people, by TOML key.
    fn default_texts() -> serde_json::Map<String, Value> {
        match serde_json::to_value(Self::defaults()) {
            Ok(Value::Object(defaults)) => defaults,
            _ => serde_json::Map::new(),
        }
    }
}

/// `message` (a TOML or serde error) with each value it quotes between backticks or double
/// quotes replaced by `…`, unless `known` says it is a name of the file's format (a setting,
/// a field, a variant): "unknown variant `s3cret`" could otherwise print a secret written
/// under the wrong key or in the wrong form.
pub(crate) fn without_quoted_values(message: &str, known: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find(['`', '"']) {
        let quote = rest[open..].chars().next().unwrap_or('`');
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(quote) else {
            out.push('…');
            return out;
        };
        let quoted = &after[..close];
        out.push_str(if known(quoted) { quoted } else { "…" });
        out.push(quote);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `command` (the `serve` subcommand, or any command holding [`PartialConfig`]) with each
/// setting's default from [`PartialConfig::defaults`] appended to its help.
pub fn with_defaults_shown(command: clap::Command) -> clap::Command {
    let defaults = PartialConfig::default_texts();
    command.mut_args(|arg| {
        let shown = arg
            .get_long()
            .and_then(|long| defaults.get(&long.replace('-', "_")))
            .and_then(|value| match value {
                Value::Null => None,
                Value::String(text) => Some(text.clone()),
                other => Some(other.to_string()),
            });
        match (shown, arg.get_help().map(ToString::to_string)) {
            // clap drops the last period of a one-sentence doc; the default follows a sentence.
            (Some(shown), Some(help)) => {
                let help = help.trim_end_matches('.');
                arg.help(format!("{help}. [default: {shown}]"))
            }
            _ => arg,
        }
    })
}

/// The resolved settings of one `idmint serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Folder of the embedded store (its URL is in `stores` when it is the store).
    pub data_dir: PathBuf,
    /// Store URLs: one store, or the stores of a set in their order.
    pub stores: Vec<String>,
    /// The file the store URLs were read from, if they were.
    pub store_file: Option<PathBuf>,
    /// The store of the set this node asks first; `None`: chosen from the node's name.
    pub home_store: Option<usize>,
    /// IDs per block of a set's segment partitions.
    pub store_block: u64,
    /// The longest one store call may take.
    pub store_call_timeout: Duration,
    /// HTTP listen address.
    pub http: SocketAddr,
    /// Redis-protocol listen address.
    pub resp: SocketAddr,
    /// Layout spec or preset.
    pub layout: String,
    /// Layout epoch, if not the layout's own.
    pub epoch: Option<String>,
    /// Datacenter ID.
    pub datacenter: u64,
    /// Static worker ID, or `None` for `auto`.
    pub worker_id: Option<u64>,
    /// Node name.
    pub node_name: String,
    /// Where the tokens come from.
    pub tokens: TokenSources,
    /// TLS certificate and key files, when TLS is on.
    pub tls: Option<TlsFiles>,
    /// The permutation key's file, when IDs are handed out permuted.
    pub permutation_key_file: Option<PathBuf>,
    /// Bounds on each listener's connections.
    pub limits: ConnectionLimits,
    /// The backlog of both listening sockets (listen(2)).
    pub listen_backlog: u32,
    /// Most IDs one request may ask for.
    pub max_count: u64,
    /// Largest segment lease.
    pub max_lease_size: u64,
    /// Most tags served.
    pub max_tags: usize,
    /// The part of `max_tags` only the admin scope may fill.
    pub admin_tag_reserve: usize,
    /// Create unknown tags on first use.
    pub auto_create_tags: bool,
    /// Step of tags created on first use.
    pub default_step: u64,
    /// Accept a non-durable store.
    pub allow_non_durable: bool,
    /// Threads that serve client connections, each a single-threaded runtime
    /// ([`IoThreads`](crate::io_threads::IoThreads)); 0 serves them on the main runtime.
    /// Default: [`default_io_threads`].
    pub io_threads: usize,
    /// Prefix of idmint's tables or keys in the store.
    pub namespace: String,
    /// How long shutdown waits for in-flight requests.
    pub drain_timeout: Duration,
    /// Worker lease timing and the clock policy (the node name and worker ID are copied from
    /// the fields above).
    pub lease: LeaseConfig,
    /// The snowflake generator's bounds.
    pub snowflake: SnowflakeConfig,
    /// The log's form and filter.
    pub log: LogSettings,
}

impl ServeConfig {
    /// How this node uses its stores when there are several.
    pub fn set_options(&self) -> idmint_store::SetOptions {
        idmint_store::SetOptions {
            block: self.store_block,
            home: self.home_store,
            node_name: self.node_name.clone(),
        }
    }

    /// Combines the layers: `command_line` (flags and `IDMINT_*` variables) over `file` over the
    /// defaults; `default_node_name` is the host's name. Every error names the setting.
    pub fn resolve(
        command_line: PartialConfig,
        file: PartialConfig,
        default_node_name: &str,
    ) -> Result<Self, ServerError> {
        let given = command_line.over(file)?;
        let layers = given.clone().over(PartialConfig::defaults())?;
        check_durations(&layers)?;
        let data_dir = defaulted(layers.data_dir, "data-dir")?;
        let (stores, store_setting) = match (layers.store, &layers.store_file) {
            (Some(_), Some(_)) => {
                return Err(ServerError::Config {
                    setting: "store-file".into(),
                    reason: "is set together with --store: give one".into(),
                })
            }
            (None, Some(path)) => (read_store_file(path)?, "store-file"),
            (Some(stores), None) if !stores.is_empty() => (stores, "store"),
            _ => {
                check_data_dir(&data_dir)?;
                (vec![embedded_store_url(&data_dir)], "store")
            }
        };
        check_store_list(&stores, store_setting, layers.home_store)?;
        let store_block = defaulted(layers.store_block, "store-block")?;
        let store_call_timeout = defaulted(layers.store_call_timeout, "store-call-timeout")?;
        if store_call_timeout.is_zero() {
            return Err(ServerError::Config {
                setting: "store-call-timeout".into(),
                reason: "must be above zero".into(),
            });
        }
        if store_block < SegmentConfig::default().max_step {
            return Err(ServerError::Config {
                setting: "store-block".into(),
                reason: format!(
                    "{store_block} is below the largest range a node takes at once ({}): ranges \
                     would be cut at every block",
                    SegmentConfig::default().max_step
                ),
            });
        }
        let worker_id = match defaulted(layers.worker_id, "worker-id")? {
            WorkerChoice::Auto => None,
            WorkerChoice::Fixed(id) => Some(id),
        };
        let node_name = layers
            .node_name
            .unwrap_or_else(|| default_node_name.to_owned());
        if node_name.is_empty() || node_name.len() > 255 {
            return Err(ServerError::Config {
                setting: "node-name".into(),
                reason: "must be 1 to 255 bytes".into(),
            });
        }
        let tls = match (layers.tls_cert, layers.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            (cert, _) => {
                return Err(ServerError::Config {
                    setting: if cert.is_some() {
                        "tls-key"
                    } else {
                        "tls-cert"
                    }
                    .into(),
                    reason: "--tls-cert and --tls-key go together: give both or neither".into(),
                })
            }
        };
        let limits = ConnectionLimits {
            max_connections: defaulted(layers.max_connections, "max-connections")?,
            per_address: defaulted(
                layers.max_connections_per_address,
                "max-connections-per-address",
            )?,
            auth_timeout: defaulted(layers.auth_timeout, "auth-timeout")?,
            idle_timeout: Some(defaulted(layers.idle_timeout, "idle-timeout")?)
                .filter(|idle| !idle.is_zero()),
        };
        let listen_backlog = defaulted(layers.listen_backlog, "listen-backlog")?;
        if !(1..=65_535).contains(&listen_backlog) {
            return Err(ServerError::Config {
                setting: "listen-backlog".into(),
                reason: format!("{listen_backlog} is outside 1..=65535"),
            });
        }
        for (setting, zero) in [
            ("max-connections", limits.max_connections == 0),
            ("auth-timeout", limits.auth_timeout.is_zero()),
        ] {
            if zero {
                return Err(ServerError::Config {
                    setting: setting.into(),
                    reason: "must be above 0".into(),
                });
            }
        }
        let max_count = defaulted(layers.max_count, "max-count")?;
        let max_lease_size = defaulted(layers.max_lease_size, "max-lease-size")?;
        let max_tags = defaulted(layers.max_tags, "max-tags")?;
        for (setting, zero) in [
            ("max-count", max_count == 0),
            ("max-lease-size", max_lease_size == 0),
            ("max-tags", max_tags == 0),
        ] {
            if zero {
                return Err(ServerError::Config {
                    setting: setting.into(),
                    reason: "must be at least 1".into(),
                });
            }
        }
        let admin_tag_reserve = layers
            .admin_tag_reserve
            .unwrap_or_else(|| crate::ids::default_admin_reserve(max_tags));
        if admin_tag_reserve >= max_tags {
            return Err(ServerError::Config {
                setting: "admin-tag-reserve".into(),
                reason: format!(
                    "{admin_tag_reserve} leaves no tag of --max-tags ({max_tags}) to tokens of \
                     the mint scope: give less than --max-tags"
                ),
            });
        }
        let default_step = defaulted(layers.default_step, "default-step")?;
        if default_step == 0 {
            return Err(ServerError::Config {
                setting: "default-step".into(),
                reason: "must be at least 1".into(),
            });
        }
        let ttl = defaulted(layers.lease_ttl, "lease-ttl")?;
        let lease = LeaseConfig {
            node_name: node_name.clone(),
            worker_id,
            ttl,
            renew_every: defaulted(layers.lease_renew, "lease-renew")?,
            hwm_lead: defaulted(layers.hwm_lead, "hwm-lead")?,
            clock_policy: defaulted(layers.clock_policy, "clock-policy")?,
            // One TTL: the longest a killed node's lease outlives it, so a node restarted right
            // after the kill gets a worker ID by default.
            worker_wait: layers.worker_wait.unwrap_or(ttl),
            // Set from the store at start: the ID space pinned there.
            ..LeaseConfig::default()
        };
        check_lease_timing(&lease, &given)?;
        let snowflake = SnowflakeConfig::default()
            .with_max_lead(defaulted(layers.max_lead, "max-lead")?)
            .with_max_wait(defaulted(layers.max_wait, "max-wait")?);
        Ok(Self {
            data_dir,
            stores,
            store_file: layers.store_file,
            home_store: layers.home_store,
            store_block,
            store_call_timeout,
            http: defaulted(layers.http, "http")?,
            resp: defaulted(layers.resp, "resp")?,
            layout: defaulted(layers.layout, "layout")?,
            epoch: layers.epoch,
            datacenter: defaulted(layers.datacenter, "datacenter")?,
            worker_id,
            node_name,
            tokens: TokenSources {
                admin_token: layers.admin_token,
                admin_token_file: layers.admin_token_file,
                tokens_file: layers.tokens_file,
            },
            tls,
            permutation_key_file: layers.permutation_key_file,
            limits,
            listen_backlog,
            max_count,
            max_lease_size,
            max_tags,
            admin_tag_reserve,
            auto_create_tags: defaulted(layers.auto_create_tags, "auto-create-tags")?,
            default_step,
            allow_non_durable: defaulted(layers.allow_non_durable, "allow-non-durable")?,
            io_threads: match layers.io_threads {
                Some(threads) if threads > MAX_IO_THREADS => {
                    return Err(ServerError::Config {
                        setting: "io-threads".into(),
                        reason: format!(
                            "{threads} is above {MAX_IO_THREADS}: each is a thread with a \
                             runtime of its own; one per CPU is the most that helps"
                        ),
                    })
                }
                Some(threads) => threads,
                None => default_io_threads(
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                ),
            },
            namespace: defaulted(layers.namespace, "namespace")?,
            drain_timeout: Duration::from_secs(10),
            lease,
            snowflake,
            log: LogSettings {
                format: defaulted(layers.log_format, "log-format")?,
                filter: check_log_filter(defaulted(layers.log_filter, "log-filter")?)?,
            },
        })
    }

    /// The resolved settings as a layer of settings, every one given, secrets masked: what
    /// `idmint serve --check` prints. Store URLs go through [`idmint_store::redact`], a token
    /// given as a value shows as `<hidden>`; files are named, never read out.
    pub fn shown(&self) -> PartialConfig {
        PartialConfig {
            data_dir: Some(self.data_dir.clone()),
            store: Some(
                self.stores
                    .iter()
                    .map(|url| idmint_store::redact(url))
                    .collect(),
            ),
            store_file: self.store_file.clone(),
            home_store: self.home_store,
            store_call_timeout: Some(self.store_call_timeout),
            store_block: Some(self.store_block),
            http: Some(self.http),
            resp: Some(self.resp),
            layout: Some(self.layout.clone()),
            epoch: self.epoch.clone(),
            datacenter: Some(self.datacenter),
            worker_id: Some(
                self.worker_id
                    .map_or(WorkerChoice::Auto, WorkerChoice::Fixed),
            ),
            node_name: Some(self.node_name.clone()),
            admin_token: self.tokens.admin_token.as_ref().map(|_| HIDDEN.to_owned()),
            admin_token_file: self.tokens.admin_token_file.clone(),
            tokens_file: self.tokens.tokens_file.clone(),
            tls_cert: self.tls.as_ref().map(|tls| tls.cert.clone()),
            tls_key: self.tls.as_ref().map(|tls| tls.key.clone()),
            permutation_key_file: self.permutation_key_file.clone(),
            max_connections: Some(self.limits.max_connections),
            max_connections_per_address: Some(self.limits.per_address),
            listen_backlog: Some(self.listen_backlog),
            auth_timeout: Some(self.limits.auth_timeout),
            idle_timeout: Some(self.limits.idle_timeout.unwrap_or(Duration::ZERO)),
            max_tags: Some(self.max_tags),
            admin_tag_reserve: Some(self.admin_tag_reserve),
            max_count: Some(self.max_count),
            max_lease_size: Some(self.max_lease_size),
            auto_create_tags: Some(self.auto_create_tags),
            default_step: Some(self.default_step),
            allow_non_durable: Some(self.allow_non_durable),
            io_threads: Some(self.io_threads),
            namespace: Some(self.namespace.clone()),
            clock_policy: Some(self.lease.clock_policy),
            lease_ttl: Some(self.lease.ttl),
            lease_renew: Some(self.lease.renew_every),
            hwm_lead: Some(self.lease.hwm_lead),
            max_lead: Some(self.snowflake.max_lead),
            max_wait: Some(self.snowflake.max_wait),
            worker_wait: Some(self.lease.worker_wait),
            log_format: Some(self.log.format),
            log_filter: Some(self.log.filter.clone()),
        }
    }

    /// The ID service's settings for `layout` (parsed from [`layout`](Self::layout)).
    pub fn ids_config(&self, layout: &Layout) -> IdsConfig {
        IdsConfig {
            layout: layout.clone(),
            datacenter: self.datacenter,
            lease: self.lease.clone(),
            snowflake: self.snowflake,
            segments: SegmentOptions {
                auto_create_tags: self.auto_create_tags,
                default_step: self.default_step,
                max_tags: self.max_tags,
                admin_reserve: self.admin_tag_reserve,
                ..SegmentOptions::default()
            },
            // Read by `serve` from `permutation_key_file`: a file, so it can fail.
            permutation: None,
        }
    }
}

/// The certificate chain and private key of TLS, PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--tls-cert`.
    pub cert: PathBuf,
    /// `--tls-key`.
    pub key: PathBuf,
}

/// Bounds on the connections of each listener (HTTP and the Redis protocol alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Most connections from one address; 0: no limit.
    pub per_address: usize,
    /// How long a new connection has to authenticate (or send its first request).
    pub auth_timeout: Duration,
    /// Idle connections are closed after this; `None`: never.
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            per_address: 0,
            auth_timeout: Duration::from_secs(5),
            idle_timeout: None,
        }
    }
}

/// Most connection threads (`--io-threads`): far above any machine's CPUs, well below what
/// would exhaust the process's threads (a typo of a zero too many once panicked at start).
pub const MAX_IO_THREADS: usize = 1024;

/// The longest any duration setting may be, but `--idle-timeout`: a day is far beyond any
/// sensible lease, wait or timeout, and keeps every deadline computed from one far from
/// overflowing (`--store-call-timeout 580000000000years` once panicked at the first call).
const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest `--idle-timeout`: a year (0 already means never).
const MAX_IDLE_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Refuses a duration setting above its bound ([`MAX_DURATION`], [`MAX_IDLE_TIMEOUT`]).
fn check_durations(layers: &PartialConfig) -> Result<(), ServerError> {
    let bounded = [
        (
            "store-call-timeout",
            layers.store_call_timeout,
            MAX_DURATION,
        ),
        ("auth-timeout", layers.auth_timeout, MAX_DURATION),
        ("idle-timeout", layers.idle_timeout, MAX_IDLE_TIMEOUT),
        ("lease-ttl", layers.lease_ttl, MAX_DURATION),
        ("lease-renew", layers.lease_renew, MAX_DURATION),
        ("hwm-lead", layers.hwm_lead, MAX_DURATION),
        ("max-lead", layers.max_lead, MAX_DURATION),
        ("max-wait", layers.max_wait, MAX_DURATION),
        ("worker-wait", layers.worker_wait, MAX_DURATION),
    ];
    for (setting, value, max) in bounded {
        if let Some(value) = value.filter(|value| *value > max) {
            return Err(ServerError::Config {
                setting: setting.into(),
                reason: format!(
                    "{} is above the most it may be, {}",
                    humantime::format_duration(value),
                    humantime::format_duration(max)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a `--data-dir` that cannot hold the embedded store: empty, or a file. A folder that
/// does not exist yet is fine (the store creates it); one that cannot be created fails when the
/// store opens, which may be passing (a volume not mounted yet).
fn check_data_dir(data_dir: &Path) -> Result<(), ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "data-dir".into(),
        reason,
    };
    if data_dir.as_os_str().is_empty() {
        return Err(refused(
            "is empty: name a folder, e.g. ./idmint-data".into(),
        ));
    }
    if data_dir.exists() && !data_dir.is_dir() {
        return Err(refused(format!(
            "{} is not a folder: the embedded store needs a folder to keep its files in",
            data_dir.display()
        )));
    }
    Ok(())
}

/// Checks the lease timing ([`LeaseConfig::validate`]), naming the setting to change: of a
/// pair in the wrong order, the one the operator gave (`given`: flags, variables and file), or
/// the first of the pair when both or neither were given.
fn check_lease_timing(lease: &LeaseConfig, given: &PartialConfig) -> Result<(), ServerError> {
    if lease.renew_every.is_zero() {
        return Err(ServerError::Config {
            setting: "lease-renew".into(),
            reason: "must be above 0".into(),
        });
    }
    // (larger setting, its value, smaller setting, its value, given, what goes wrong)
    let pairs = [
        (
            ("lease-ttl", lease.ttl, given.lease_ttl.is_some()),
            (
                "lease-renew",
                lease.renew_every,
                given.lease_renew.is_some(),
            ),
            "the lease would lapse between renewals",
        ),
        (
            ("hwm-lead", lease.hwm_lead, given.hwm_lead.is_some()),
            (
                "lease-renew",
                lease.renew_every,
                given.lease_renew.is_some(),
            ),
            "snowflakes would stall between renewals",
        ),
    ];
    for ((large, large_value, large_given), (small, small_value, small_given), harm) in pairs {
        if large_value > small_value {
            continue;
        }
        let shown = |d: Duration| humantime::format_duration(d).to_string();
        let reason = if small_given && !large_given {
            format!(
                "{} is not below --{large} ({}): {harm}",
                shown(small_value),
                shown(large_value)
            )
        } else {
            format!(
                "{} is not above --{small} ({}): {harm}",
                shown(large_value),
                shown(small_value)
            )
        };
        return Err(ServerError::Config {
            setting: if small_given && !large_given {
                small
            } else {
                large
            }
            .into(),
            reason,
        });
    }
    lease.validate().map_err(|error| ServerError::Config {
        setting: "lease-ttl".into(),
        reason: error.to_string(),
    })
}

/// A setting after the defaults layer: [`PartialConfig::defaults`] gives it a value, so `None`
/// would be a setting added without its default, refused rather than guessed.
/// The store URLs in the file at `path` (`--store-file`): one a line, spaces around each and
/// blank lines (a trailing line break) ignored. Errors never quote the file.
fn read_store_file(path: &Path) -> Result<Vec<String>, ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "store-file".into(),
        reason: format!("{}: {reason}", path.display()),
    };
    let text = std::fs::read_to_string(path).map_err(|e| refused(format!("cannot read: {e}")))?;
    let stores: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if stores.is_empty() {
        return Err(refused(
            "holds no store URL (one a line: the store, or each store of a set)".into(),
        ));
    }
    Ok(stores)
}

/// Refuses an empty URL, a URL given twice (one store cannot be two parts of a set) and a
/// home store outside the list; `setting` gave the list.
fn check_store_list(
    stores: &[String],
    setting: &str,
    home: Option<usize>,
) -> Result<(), ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: setting.into(),
        reason,
    };
    for (i, url) in stores.iter().enumerate() {
        if url.trim().is_empty() {
            return Err(refused("an empty store URL".into()));
        }
        if stores[..i].contains(url) {
            return Err(refused(format!(
                "store {i} repeats an earlier one ({}): each store of a set must be its own",
                idmint_store::redact(url)
            )));
        }
    }
    match home {
        Some(home) if home >= stores.len() => Err(ServerError::Config {
            setting: "home-store".into(),
            reason: format!("{home} is not a store of the list (0..{})", stores.len()),
        }),
        _ => Ok(()),
    }
}

/// `filter` if it parses as `RUST_LOG`-style directives. tracing-subscriber drops a directive
/// it cannot parse with a warning nobody sees before the log exists, so a typo would silently
/// log less than asked: refused here instead.
fn check_log_filter(filter: String) -> Result<String, ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "log-filter".into(),
        reason,
    };
    if filter.len() > 4_096 {
        return Err(refused("is longer than 4096 bytes".into()));
    }
    for directive in filter.split(',').filter(|d| !d.trim().is_empty()) {
        directive
            .trim()
            .parse::<tracing_subscriber::filter::Directive>()
            .map_err(|e| {
                refused(format!(
                    "`{}` is not a log directive: {e}",
                    directive.trim()
                ))
            })?;
    }
    Ok(filter)
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

fn defaulted<T>(value: Option<T>, setting: &str) -> Result<T, ServerError> {
    value.ok_or_else(|| ServerError::Config {
        setting: setting.into(),
        reason: "has no default (a bug: PartialConfig::defaults lacks it)".into(),
    })
}

/// The settings as a Markdown table (flag, variable, TOML key, meaning with its default), made
/// from the same definitions as `--help`: docs/settings.md carries it, and a test keeps the two equal.
pub fn settings_table() -> String {
    let command = with_defaults_shown(<PartialConfig as clap::Args>::augment_args(
        clap::Command::new("serve"),
    ));
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut table =
        String::from("| flag | variable | TOML key | meaning |\n| --- | --- | --- | --- |\n");
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let value = arg
            .get_value_names()
            .and_then(|names| names.first())
            .map(|name| format!(" {name}"))
            .unwrap_or_default();
        let env = arg
            .get_env()
            .map(|env| env.to_string_lossy().into_owned())
            .unwrap_or_default();
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        table.push_str(&format!(
            "| `--{long}{value}` | `{env}` | `{key}` | {help} |\n",
            value = cell(&value),
            key = long.replace('-', "_"),
            help = cell(&help),
        ));
    }
    table
}

/// Example values of the settings that have no plain default, for the sample file.
const SAMPLE_VALUES: &[(&str, &str)] = &[
    ("store", r#"["postgres://idmint@db-1.example:5432/idmint"]"#),
    ("store_file", r#""/run/credentials/idmint.service/store""#),
    ("home_store", "0"),
    ("epoch", r#""2025-01-01""#),
    ("node_name", r#""idmint-0""#),
    ("admin_token", r#""prefer admin_token_file""#),
    (
        "admin_token_file",
        r#""/run/credentials/idmint.service/admin-token""#,
    ),
    ("tokens_file", r#""/etc/idmint/tokens.toml""#),
    ("tls_cert", r#""/etc/idmint/tls/cert.pem""#),
    ("tls_key", r#""/etc/idmint/tls/key.pem""#),
    ("permutation_key_file", r#""/etc/idmint/permutation.key""#),
    ("admin_tag_reserve", "1000"),
    ("io_threads", "1"),
    ("worker_wait", r#""10s""#),
];

/// A sample `--config` file (`deploy/idmint.toml`), made from the same definitions as `--help`:
/// each setting's doc, flag and variable, then its key with the default (or an example where
/// there is no plain default), commented out, so the file as it is changes nothing.
pub fn sample_config_file() -> String {
    let command = <PartialConfig as clap::Args>::augment_args(clap::Command::new("serve"));
    let defaults = PartialConfig::default_texts();
    let mut file = String::from(
        "# Settings of `idmint serve`: a sample made from their definition (idmint serve --help,\n\
         # docs/settings.md). Give it with `idmint serve --config FILE`; flags and IDMINT_*\n\
         # variables override what it says. Every setting is commented out with its default (or an\n\
         # example, where it has none): uncomment what you change. Durations read like 10s or 500ms.\n",
    );
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let key = long.replace('-', "_");
        let mut help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        // clap drops the period of a one-sentence doc; a comment keeps it.
        if !help.ends_with(['.', ']']) {
            help.push('.');
        }
        file.push('\n');
        for line in wrapped(&help, 94) {
            file.push_str(&format!("# {line}\n"));
        }
        let env = arg
            .get_env()
            .map(|env| format!(", {}", env.to_string_lossy()))
            .unwrap_or_default();
        file.push_str(&format!("# (--{long}{env})\n"));
        let value = match defaults.get(&key) {
            Some(value) if !value.is_null() => toml_value(value),
            _ => SAMPLE_VALUES
                .iter()
                .find(|(name, _)| *name == key)
                .map_or_else(|| "\"\"".to_owned(), |(_, example)| (*example).to_owned()),
        };
        file.push_str(&format!("# {key} = {value}\n"));
    }
    file
}

/// A default, as JSON, written as a TOML value.
fn toml_value(value: &Value) -> String {
    match value {
        Value::String(text) => toml::Value::String(text.clone()).to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The `sqlite://` URL of the embedded store's file in `data_dir`.
///
/// A relative folder is written `./folder`: in `sqlite://folder/...` a first segment holding
/// `@` reads as `user@host` and is refused (`idmint_store::Location`), and `--data-dir` names a
/// folder, never a host.
fn embedded_store_url(data_dir: &Path) -> String {
    let file = data_dir.join("idmint.db");
    let explicit = file.is_absolute()
        || matches!(
            file.components().next(),
            Some(std::path::Component::CurDir | std::path::Component::ParentDir)
        );
    if explicit {
        format!("sqlite://{}", file.display())
    } else {
        format!("sqlite://./{}", file.display())
    }
}

/// Connection threads for a machine with `cpus` CPUs: one fewer than the CPUs, at least one.
///
/// Most of a request's CPU is spent in the kernel's TCP stack, partly in softirq work on
/// whichever CPU the packet lands on, and the main runtime runs the store calls, prefetches and
/// lease renewals: a CPU left to them pays for itself. With a thread per CPU, each thread runs
/// out of ready connections and sleeps in `epoll_wait` more often, which costs more CPU per
/// request (BENCHMARKS.md, "Figures behind design choices"). A large machine serving remote
/// clients loses one thread of many.
pub fn default_io_threads(cpus: usize) -> usize {
    cpus.saturating_sub(1).max(1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// docs/settings.md's table is what the definitions produce; `IDMINT_BLESS=1` rewrites it.
    #[test]
    fn the_settings_reference_lists_every_setting_as_defined() {
        const BEGIN: &str =
            "<!-- settings: generated from crates/idmint-server/src/config.rs -->\n";
        const END: &str = "<!-- settings end -->";
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/settings.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let start = readme
            .find(BEGIN)
            .expect("docs/settings.md has no settings table marker")
            + BEGIN.len();
        let end = start
            + readme[start..]
                .find(END)
                .expect("docs/settings.md has no end marker");
        let table = settings_table();
        if std::env::var_os("IDMINT_BLESS").is_some() {
            let blessed = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(&path, blessed).unwrap();
            return;
        }
        assert_eq!(
            readme[start..end],
            table,
            "docs/settings.md's table is stale: run IDMINT_BLESS=1 cargo test -p idmint-server settings"
        );
    }

    /// deploy/idmint.toml is what the definitions produce, and with every line uncommented it
    /// is a file of settings that parses; `IDMINT_BLESS=1` rewrites it.
    #[test]
    fn the_sample_config_file_lists_every_setting_as_defined() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/idmint.toml");
        let sample = sample_config_file();
        if std::env::var_os("IDMINT_BLESS").is_some() {
            std::fs::write(&path, &sample).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            on_disk, sample,
            "deploy/idmint.toml is stale: run IDMINT_BLESS=1 cargo test -p idmint-server sample"
        );
        assert!(PartialConfig::from_toml(&sample, &path).unwrap() == PartialConfig::default());
        let uncommented: String = sample
            .lines()
            .filter_map(|line| line.strip_prefix("# "))
            .filter(|line| {
                line.split_once(" = ")
                    .is_some_and(|(key, _)| PartialConfig::setting_names().any(|name| name == key))
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let every = PartialConfig::from_toml(&uncommented, &path).unwrap();
        for name in PartialConfig::setting_names() {
            assert!(
                every.given().contains(&name.replace('_', "-")),
                "{name} is not in the sample"
            );
        }
    }

    #[test]
    fn defaults_serve_on_loopback_with_the_embedded_store() {
        let config =
            ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "host-1")
                .unwrap();
        assert_eq!(config.stores, ["sqlite://./idmint-data/idmint.db"]);
        assert_eq!(config.http.to_string(), "127.0.0.1:8080");
        assert_eq!(config.resp.to_string(), "127.0.0.1:6380");
        assert_eq!(
            (config.layout.as_str(), config.node_name.as_str()),
            (DEFAULT_LAYOUT, "host-1")
        );
        assert_eq!(config.worker_id, None);
        assert!(config.auto_create_tags);
        assert!(config.io_threads >= 1);
    }

    #[test]
    fn connection_threads_leave_a_cpu_free_but_never_drop_to_zero() {
        let threads: Vec<usize> = [0, 1, 2, 4, 16].map(default_io_threads).to_vec();
        assert_eq!(threads, [1, 1, 1, 3, 15]);
    }

    #[test]
    fn the_command_line_wins_over_the_file_which_wins_over_defaults() {
        let file: PartialConfig = toml::from_str(
            "store = \"postgres://db/ids\"\nhttp = \"0.0.0.0:9000\"\nworker_id = \"7\"\nauto_create_tags = false\n",
        )
        .unwrap();
        let command_line = PartialConfig {
            http: Some("127.0.0.1:9100".parse().unwrap()),
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, file, "h").unwrap();
        assert_eq!(config.http.to_string(), "127.0.0.1:9100");
        assert_eq!(config.stores, ["postgres://db/ids"]);
        assert_eq!(config.worker_id, Some(7));
        assert!(!config.auto_create_tags);
    }

    #[test]
    fn store_urls_come_from_a_file_one_a_line_never_beside_store() {
        let dir = std::env::temp_dir().join(format!("idmint-store-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let resolve = |text: &str, store: Option<&str>| {
            let path = dir.join("store-url");
            std::fs::write(&path, text).unwrap();
            let command_line = PartialConfig {
                store: store.map(|s| vec![s.to_owned()]),
                store_file: Some(path),
                ..PartialConfig::default()
            };
            ServeConfig::resolve(command_line, PartialConfig::default(), "h")
        };
        let one = resolve("postgres://u:pa55@db/ids\n", None).unwrap();
        assert_eq!(one.stores, ["postgres://u:pa55@db/ids"]);
        let set = resolve("  postgres://a/ids\r\n\nredis://:pa55@b/\n", None).unwrap();
        assert_eq!(set.stores, ["postgres://a/ids", "redis://:pa55@b/"]);
        for (text, store, expected) in [
            (
                "postgres://db/ids\n",
                Some("redis://b/"),
                "together with --store",
            ),
            ("\n  \n", None, "holds no store URL"),
            (
                "redis://:pa55@a/\nredis://:pa55@a/\n",
                None,
                "repeats an earlier one",
            ),
        ] {
            match resolve(text, store) {
                Err(ServerError::Config { setting, reason }) => {
                    assert_eq!(setting, "store-file", "{text:?}");
                    assert!(reason.contains(expected), "{text:?}: {reason}");
                    assert!(!reason.contains("pa55"), "{text:?}: {reason}");
                }
                other => panic!("{text:?} accepted: {other:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_store_set_is_a_list_from_flags_or_the_file() {
        let file: PartialConfig =
            toml::from_str("store = [\"postgres://a/ids\", \"redis://b/\"]\nhome_store = 1\n")
                .unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
        assert_eq!(config.stores, ["postgres://a/ids", "redis://b/"]);
        assert_eq!(config.home_store, Some(1));
        let one: PartialConfig = toml::from_str("store = \"redis://b/\"\n").unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), one, "h").unwrap();
        assert_eq!(config.stores, ["redis://b/"]);
        let refused = |stores: &[&str], home: Option<usize>| {
            let command_line = PartialConfig {
                store: Some(stores.iter().map(|s| (*s).to_owned()).collect()),
                home_store: home,
                ..PartialConfig::default()
            };
            match ServeConfig::resolve(command_line, PartialConfig::default(), "h") {
                Err(ServerError::Config { setting, .. }) => setting,
                other => panic!("{stores:?} {home:?} accepted: {other:?}"),
            }
        };
        assert_eq!(refused(&["redis://a/", "redis://a/"], None), "store");
        assert_eq!(refused(&["redis://a/", ""], None), "store");
        assert_eq!(
            refused(&["redis://a/", "redis://b/"], Some(2)),
            "home-store"
        );
        let small_block = PartialConfig {
            store_block: Some(10),
            ..PartialConfig::default()
        };
        assert!(ServeConfig::resolve(small_block, PartialConfig::default(), "h").is_err());
        let no_timeout = PartialConfig {
            store_call_timeout: Some(Duration::ZERO),
            ..PartialConfig::default()
        };
        assert!(ServeConfig::resolve(no_timeout, PartialConfig::default(), "h").is_err());
        let file: PartialConfig = toml::from_str("store_call_timeout = \"1500ms\"\n").unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
        assert_eq!(config.store_call_timeout, Duration::from_millis(1500));
    }

    #[test]
    fn the_data_dir_places_the_embedded_store() {
        let command_line = PartialConfig {
            data_dir: Some("/var/lib/idmint".into()),
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, PartialConfig::default(), "h").unwrap();
        assert_eq!(config.stores, ["sqlite:///var/lib/idmint/idmint.db"]);
        let store_in = |dir: &str| {
            let command_line = PartialConfig {
                data_dir: Some(dir.into()),
                ..PartialConfig::default()
            };
            ServeConfig::resolve(command_line, PartialConfig::default(), "h")
                .unwrap()
                .stores
                .remove(0)
        };
        assert_eq!(store_in("../ids"), "sqlite://../ids/idmint.db");
        // Not `sqlite://me@box/...`, which reads as a user at a host.
        assert_eq!(store_in("me@box"), "sqlite://./me@box/idmint.db");
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = |partial: PartialConfig| match ServeConfig::resolve(
            partial,
            PartialConfig::default(),
            "h",
        ) {
            Err(ServerError::Config { setting, .. }) => setting,
            other => panic!("expected a config error, got {other:?}"),
        };
        assert_eq!(
            bad(PartialConfig {
                default_step: Some(0),
                ..Default::default()
            }),
            "default-step"
        );
        for empty in ["", "  "] {
            let config = ServeConfig::resolve(
                PartialConfig {
                    admin_token: Some(empty.into()),
                    ..Default::default()
                },
                PartialConfig::default(),
                "h",
            )
            .unwrap();
            assert!(matches!(
                config.tokens.load(),
                Err(ServerError::Config { setting, .. }) if setting == "admin-token"
            ));
        }
        assert_eq!(
            bad(PartialConfig {
                tls_cert: Some("cert.pem".into()),
                ..Default::default()
            }),
            "tls-key"
        );
        assert_eq!(
            bad(PartialConfig {
                auth_timeout: Some(Duration::ZERO),
                ..Default::default()
            }),
            "auth-timeout"
        );
        assert_eq!(
            bad(PartialConfig {
                lease_ttl: Some(Duration::from_secs(1)),
                lease_renew: Some(Duration::from_secs(2)),
                ..Default::default()
            }),
            "lease-ttl"
        );
        // A value of the wrong form is refused where it is read, naming its setting.
        let file_error = |text: &str| match PartialConfig::from_toml(text, Path::new("ids.toml")) {
            Err(ServerError::Config { reason, .. }) => reason,
            other => panic!("expected a config error for {text:?}, got {other:?}"),
        };
        for (text, key) in [
            ("worker_id = \"x\"", "worker_id"),
            ("http = \"localhost\"", "http"),
            ("resp = \"1.2.3.4:99999\"", "resp"),
            ("clock_policy = \"panic\"", "clock_policy"),
            ("\nhwm_lead = \"ten seconds\"", "hwm_lead"),
            ("colour = \"blue\"", "colour"),
            ("clock_policy = \"s3cret\"", "clock_policy"),
        ] {
            let reason = file_error(text);
            assert!(reason.starts_with("ids.toml: line "), "{reason}");
            assert!(reason.contains(key), "{text}: {reason}");
        }
        let command = <PartialConfig as clap::Args>::augment_args(clap::Command::new("serve"));
        for (flag, value) in [("--http", "localhost"), ("--lease-ttl", "soon")] {
            let error = command
                .clone()
                .try_get_matches_from(["serve", flag, value])
                .unwrap_err()
                .to_string();
            assert!(error.contains(flag) && error.contains(value), "{error}");
        }
    }

    /// A TOML file may hold a token or a store password: errors never quote its lines.
    #[test]
    fn file_errors_never_quote_the_file() {
        let secrets = "admin_token = \"s3cret\"\nstore = \"postgres://u:pw@db/x\"\n";
        for broken in [
            "admin_token = \"s3cret\" x",
            "oops s3cret",
            "http = \"s3cret\"",
            "clock_policy = \"s3cret\"",
            "max_tags = \"s3cret\"",
        ] {
            let text = format!("{secrets}{broken}\n");
            let Err(ServerError::Config { reason, .. }) =
                PartialConfig::from_toml(&text, Path::new("ids.toml"))
            else {
                panic!("{text:?} was accepted");
            };
            assert!(reason.contains("line 3"), "{reason}");
            assert!(
                !reason.contains("s3cret") && !reason.contains(":pw@"),
                "{reason}"
            );
        }
        // The values a setting may take are the format's words: named, so the fix is plain.
        for (broken, named) in [
            ("clock_policy = \"s3cret\"", "`wait`, `switch`, `fail`"),
            ("log_format = \"s3cret\"", "`text` or `json`"),
        ] {
            let Err(ServerError::Config { reason, .. }) =
                PartialConfig::from_toml(broken, Path::new("ids.toml"))
            else {
                panic!("{broken:?} was accepted");
            };
            assert!(
                reason.contains(named) && !reason.contains("s3cret"),
                "{reason}"
            );
        }
    }

    #[test]
    fn help_shows_the_defaults_from_their_one_definition() {
        let command = with_defaults_shown(<PartialConfig as clap::Args>::augment_args(
            clap::Command::new("serve"),
        ));
        let help = |long: &str| {
            command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(long))
                .and_then(|arg| arg.get_help())
                .map(ToString::to_string)
                .unwrap()
        };
        assert!(help("http").ends_with("[default: 127.0.0.1:8080]"));
        assert!(help("lease-ttl").ends_with("[default: 10s]"));
        assert!(help("clock-policy").ends_with("[default: switch]"));
        assert!(help("worker-id").ends_with("[default: auto]"));
        assert!(help("default-step").ends_with("[default: 1000]"));
        // Derived defaults are described in the doc, not shown twice.
        assert_eq!(help("store").matches("[default:").count(), 1);
        assert_eq!(help("worker-wait").matches("[default:").count(), 1);
    }

    #[test]
    fn lease_timing_and_the_clock_policy_reach_the_ids_config() {
        let file: PartialConfig = toml::from_str(
            "clock_policy = \"fail\"\nlease_ttl = \"3s\"\nlease_renew = \"500ms\"\nhwm_lead = \"1m\"\nmax_wait = \"250ms\"\n",
        )
        .unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
        let layout = Layout::parse(DEFAULT_LAYOUT).unwrap();
        let ids = config.ids_config(&layout);
        assert_eq!(ids.lease.clock_policy, crate::ids::ClockPolicy::Fail);
        assert_eq!(ids.lease.ttl, Duration::from_secs(3));
        assert_eq!(ids.lease.renew_every, Duration::from_millis(500));
        assert_eq!(ids.lease.hwm_lead, Duration::from_secs(60));
        assert_eq!(ids.lease.node_name, "h");
        assert_eq!(ids.snowflake.max_wait, Duration::from_millis(250));
        assert_eq!(ids.snowflake.max_lead, Duration::from_secs(1));
        let defaults =
            ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "h")
                .unwrap()
                .ids_config(&layout);
        assert_eq!(defaults.lease.clock_policy, crate::ids::ClockPolicy::Switch);
        assert_eq!(defaults.lease.ttl, Duration::from_secs(10));
        assert_eq!(defaults.lease.worker_wait, Duration::from_secs(10));
    }

    #[test]
    fn the_worker_wait_defaults_to_the_lease_ttl_and_zero_means_none() {
        let resolve = |lease_ttl: Option<u64>, worker_wait: Option<u64>| {
            let command_line = PartialConfig {
                lease_ttl: lease_ttl.map(Duration::from_millis),
                worker_wait: worker_wait.map(Duration::from_millis),
                ..PartialConfig::default()
            };
            ServeConfig::resolve(command_line, PartialConfig::default(), "h")
                .map(|config| config.lease.worker_wait)
        };
        assert_eq!(resolve(Some(3_000), None).unwrap(), Duration::from_secs(3));
        assert_eq!(
            resolve(Some(3_000), Some(500)).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(resolve(None, Some(0)).unwrap(), Duration::ZERO);
        let file: PartialConfig = toml::from_str("worker_wait = \"1m\"\n").unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
        assert_eq!(config.lease.worker_wait, Duration::from_secs(60));
    }
}
