//! The settings of `idmint serve`, and how their layers combine.
//!
//! Every setting can come from a command-line flag, an `IDMINT_*` environment variable, a TOML
//! file (`--config FILE`) or its default, in that order of precedence. The command line and the
//! environment arrive together (clap reads both) as one [`PartialConfig`], the file as another;
//! [`ServeConfig::resolve`] takes each field from the first layer that has it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use idmint_core::{Layout, SnowflakeConfig};

use crate::error::ServerError;
use crate::ids::{IdsConfig, LeaseConfig, SegmentOptions};

/// The layout when none is given: 41 bits of milliseconds, 1,024 workers, 4,096 IDs per ms each.
pub const DEFAULT_LAYOUT: &str = "time:41@1ms,worker:10,seq:12";

/// One layer of settings, every field optional: the one definition of each setting. clap reads
/// the command line and the `IDMINT_*` variables into it (its field docs are `--help`), and the
/// TOML file deserializes into it under the same names with underscores (`worker_id = "auto"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct PartialConfig {
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

impl PartialConfig {
    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| ServerError::Config {
            setting: "config".into(),
            reason: format!("cannot read {}: {e}", path.display()),
        })?;
        toml::from_str(&text).map_err(|e| ServerError::Config {
            setting: "config".into(),
            reason: format!("{}: {e}", path.display()),
        })
    }

    /// Each field from `self`, else from `lower`.
    fn over(self, lower: Self) -> Self {
        Self {
            data_dir: self.data_dir.or(lower.data_dir),
            store: self.store.or(lower.store),
            http: self.http.or(lower.http),
            resp: self.resp.or(lower.resp),
            layout: self.layout.or(lower.layout),
            epoch: self.epoch.or(lower.epoch),
            datacenter: self.datacenter.or(lower.datacenter),
            worker_id: self.worker_id.or(lower.worker_id),
            node_name: self.node_name.or(lower.node_name),
            admin_token: self.admin_token.or(lower.admin_token),
            auto_create_tags: self.auto_create_tags.or(lower.auto_create_tags),
            default_step: self.default_step.or(lower.default_step),
            allow_non_durable: self.allow_non_durable.or(lower.allow_non_durable),
            io_threads: self.io_threads.or(lower.io_threads),
            namespace: self.namespace.or(lower.namespace),
            clock_policy: self.clock_policy.or(lower.clock_policy),
            lease_ttl: self.lease_ttl.or(lower.lease_ttl),
            lease_renew: self.lease_renew.or(lower.lease_renew),
            hwm_lead: self.hwm_lead.or(lower.hwm_lead),
            max_lead: self.max_lead.or(lower.max_lead),
            max_wait: self.max_wait.or(lower.max_wait),
            worker_wait: self.worker_wait.or(lower.worker_wait),
        }
    }
}

/// The resolved settings of one `idmint serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Store URL.
    pub store: String,
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
    /// Admin token.
    pub admin_token: Option<String>,
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
}

impl ServeConfig {
    /// Combines the layers: `command_line` (flags and `IDMINT_*` variables) over `file` over the
    /// defaults; `default_node_name` is the host's name. Every error names the setting.
    pub fn resolve(
        command_line: PartialConfig,
        file: PartialConfig,
        default_node_name: &str,
    ) -> Result<Self, ServerError> {
        let layers = command_line.over(file);
        let data_dir = layers
            .data_dir
            .unwrap_or_else(|| PathBuf::from("./idmint-data"));
        let store = layers
            .store
            .unwrap_or_else(|| embedded_store_url(&data_dir));
        let worker_id = match layers.worker_id.as_deref().map(str::trim) {
            None | Some("auto") => None,
            Some(text) => Some(text.parse::<u64>().map_err(|_| ServerError::Config {
                setting: "worker-id".into(),
                reason: format!("`{text}` is neither `auto` nor a whole number"),
            })?),
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
        let default_step = layers.default_step.unwrap_or(1_000);
        if default_step == 0 {
            return Err(ServerError::Config {
                setting: "default-step".into(),
                reason: "must be at least 1".into(),
            });
        }
        let defaults = LeaseConfig::default();
        let ttl = duration("lease-ttl", layers.lease_ttl.as_deref(), defaults.ttl)?;
        let lease = LeaseConfig {
            node_name: node_name.clone(),
            worker_id,
            ttl,
            renew_every: duration(
                "lease-renew",
                layers.lease_renew.as_deref(),
                defaults.renew_every,
            )?,
            hwm_lead: duration("hwm-lead", layers.hwm_lead.as_deref(), defaults.hwm_lead)?,
            clock_policy: match layers.clock_policy.as_deref() {
                None => defaults.clock_policy,
                Some(text) => text.parse().map_err(|reason| ServerError::Config {
                    setting: "clock-policy".into(),
                    reason,
                })?,
            },
            // One TTL: the longest a killed node's lease outlives it, so a node restarted right
            // after the kill gets a worker ID by default.
            worker_wait: duration("worker-wait", layers.worker_wait.as_deref(), ttl)?,
            // Set from the store at start: the ID space pinned there.
            ..defaults
        };
        lease.validate().map_err(|error| ServerError::Config {
            setting: "lease-ttl, lease-renew, hwm-lead".into(),
            reason: error.to_string(),
        })?;
        let generator_defaults = SnowflakeConfig::default();
        let snowflake = SnowflakeConfig {
            max_lead: duration(
                "max-lead",
                layers.max_lead.as_deref(),
                generator_defaults.max_lead,
            )?,
            max_wait: duration(
                "max-wait",
                layers.max_wait.as_deref(),
                generator_defaults.max_wait,
            )?,
            ..generator_defaults
        };
        Ok(Self {
            store,
            http: address("http", layers.http.as_deref().unwrap_or("127.0.0.1:8080"))?,
            resp: address("resp", layers.resp.as_deref().unwrap_or("127.0.0.1:6380"))?,
            layout: layers.layout.unwrap_or_else(|| DEFAULT_LAYOUT.to_owned()),
            epoch: layers.epoch,
            datacenter: layers.datacenter.unwrap_or(0),
            worker_id,
            node_name,
            admin_token: layers.admin_token.filter(|token| !token.is_empty()),
            auto_create_tags: layers.auto_create_tags.unwrap_or(true),
            default_step,
            allow_non_durable: layers.allow_non_durable.unwrap_or(false),
            io_threads: layers.io_threads.unwrap_or_else(|| {
                default_io_threads(
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                )
            }),
            namespace: layers.namespace.unwrap_or_else(|| "idmint".to_owned()),
            drain_timeout: Duration::from_secs(10),
            lease,
            snowflake,
        })
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
                ..SegmentOptions::default()
            },
        }
    }
}

/// The settings as a Markdown table (flag, variable, TOML key, meaning with its default), made
/// from the same definitions as `--help`: README.md carries it, and a test keeps the two equal.
pub fn settings_table() -> String {
    let command = <PartialConfig as clap::Args>::augment_args(clap::Command::new("serve"));
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

/// Parses a duration setting (`10s`, `500ms`, `2m`), or gives `default` when unset.
fn duration(setting: &str, text: Option<&str>, default: Duration) -> Result<Duration, ServerError> {
    let Some(text) = text else {
        return Ok(default);
    };
    humantime::parse_duration(text.trim()).map_err(|e| ServerError::Config {
        setting: setting.into(),
        reason: format!("`{text}` is not a duration like 10s or 500ms: {e}"),
    })
}

/// Parses a listen address, naming the setting when it is wrong.
fn address(setting: &str, text: &str) -> Result<SocketAddr, ServerError> {
    text.parse().map_err(|_| ServerError::Config {
        setting: setting.into(),
        reason: format!("`{text}` is not an address like 127.0.0.1:8080"),
    })
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

    /// README.md's settings table is what the definitions produce; `IDMINT_BLESS=1` rewrites it.
    #[test]
    fn the_readme_lists_every_setting_as_defined() {
        const BEGIN: &str =
            "<!-- settings: generated from crates/idmint-server/src/config.rs -->\n";
        const END: &str = "<!-- settings end -->";
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let start = readme
            .find(BEGIN)
            .expect("README.md has no settings table marker")
            + BEGIN.len();
        let end = start
            + readme[start..]
                .find(END)
                .expect("README.md has no end marker");
        let table = settings_table();
        if std::env::var_os("IDMINT_BLESS").is_some() {
            let blessed = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(&path, blessed).unwrap();
            return;
        }
        assert_eq!(
            readme[start..end],
            table,
            "README.md's settings table is stale: run IDMINT_BLESS=1 cargo test -p idmint-server settings"
        );
    }

    #[test]
    fn defaults_serve_on_loopback_with_the_embedded_store() {
        let config =
            ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "host-1")
                .unwrap();
        assert_eq!(config.store, "sqlite://./idmint-data/idmint.db");
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
            http: Some("127.0.0.1:9100".into()),
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, file, "h").unwrap();
        assert_eq!(config.http.to_string(), "127.0.0.1:9100");
        assert_eq!(config.store, "postgres://db/ids");
        assert_eq!(config.worker_id, Some(7));
        assert!(!config.auto_create_tags);
    }

    #[test]
    fn the_data_dir_places_the_embedded_store() {
        let command_line = PartialConfig {
            data_dir: Some("/var/lib/idmint".into()),
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, PartialConfig::default(), "h").unwrap();
        assert_eq!(config.store, "sqlite:///var/lib/idmint/idmint.db");
        let store_in = |dir: &str| {
            let command_line = PartialConfig {
                data_dir: Some(dir.into()),
                ..PartialConfig::default()
            };
            ServeConfig::resolve(command_line, PartialConfig::default(), "h")
                .unwrap()
                .store
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
                worker_id: Some("x".into()),
                ..Default::default()
            }),
            "worker-id"
        );
        assert_eq!(
            bad(PartialConfig {
                http: Some("localhost".into()),
                ..Default::default()
            }),
            "http"
        );
        assert_eq!(
            bad(PartialConfig {
                resp: Some("1.2.3.4:99999".into()),
                ..Default::default()
            }),
            "resp"
        );
        assert_eq!(
            bad(PartialConfig {
                default_step: Some(0),
                ..Default::default()
            }),
            "default-step"
        );
        assert!(toml::from_str::<PartialConfig>("colour = \"blue\"").is_err());
        assert_eq!(
            bad(PartialConfig {
                clock_policy: Some("panic".into()),
                ..Default::default()
            }),
            "clock-policy"
        );
        assert_eq!(
            bad(PartialConfig {
                hwm_lead: Some("ten seconds".into()),
                ..Default::default()
            }),
            "hwm-lead"
        );
        assert_eq!(
            bad(PartialConfig {
                lease_ttl: Some("1s".into()),
                lease_renew: Some("2s".into()),
                ..Default::default()
            }),
            "lease-ttl, lease-renew, hwm-lead"
        );
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
        let resolve = |lease_ttl: Option<&str>, worker_wait: Option<&str>| {
            let command_line = PartialConfig {
                lease_ttl: lease_ttl.map(str::to_owned),
                worker_wait: worker_wait.map(str::to_owned),
                ..PartialConfig::default()
            };
            ServeConfig::resolve(command_line, PartialConfig::default(), "h")
                .map(|config| config.lease.worker_wait)
        };
        assert_eq!(resolve(Some("3s"), None).unwrap(), Duration::from_secs(3));
        assert_eq!(
            resolve(Some("3s"), Some("500ms")).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(resolve(None, Some("0s")).unwrap(), Duration::ZERO);
        let file: PartialConfig = toml::from_str("worker_wait = \"1m\"\n").unwrap();
        let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
        assert_eq!(config.lease.worker_wait, Duration::from_secs(60));
        assert!(matches!(
            resolve(None, Some("soon")),
            Err(ServerError::Config { setting, .. }) if setting == "worker-wait"
        ));
    }
}
