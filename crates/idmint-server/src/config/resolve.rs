//! The layers (command line and variables, file, defaults) resolved into the [`ServeConfig`]
//! a node runs with, and the types it holds. Apart from the definitions (`definitions.rs`), the
//! checks on the values (`checks.rs`) and what is shown of the result (`render.rs`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use idmint_core::{Layout, SegmentConfig, SnowflakeConfig};

use super::checks::{
    check_data_dir, check_durations, check_lease_timing, check_log_filter, check_store_list,
    read_store_file,
};
use super::{LogFormat, PartialConfig, WorkerChoice};
use crate::auth::TokenSources;
use crate::error::ServerError;
use crate::ids::{IdsConfig, LeaseConfig, SegmentOptions};

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
            id128_node: defaulted(layers.id128_node, "id128-node")?,
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

/// How `idmint serve` logs: resolved from `--log-format` and `--log-filter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The lines' form.
    pub format: LogFormat,
    /// The directives, checked to parse.
    pub filter: String,
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

/// A setting after the defaults layer: [`PartialConfig::defaults`] gives it a value, so `None`
/// would be a setting added without its default, refused rather than guessed.
fn defaulted<T>(value: Option<T>, setting: &str) -> Result<T, ServerError> {
    value.ok_or_else(|| ServerError::Config {
        setting: setting.into(),
        reason: "has no default (a bug: PartialConfig::defaults lacks it)".into(),
    })
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
#[path = "resolve_tests.rs"]
mod tests;
