//! `idmint serve`: the store, the ID service and both front ends, started and stopped in order.
//!
//! Start: check every setting that can be checked without side effects and bind HTTP and the
//! Redis protocol, then open the store (durability and schema checked), take a worker lease, log
//! what was bound. A wrong setting or a port in use thus stops the node before it creates a
//! store file, writes a row or holds a worker ID for a lease period. Stop (the `shutdown`
//! future resolves, e.g. on SIGTERM): stop accepting, let requests in flight finish (bounded),
//! then give unused segment tails back and release the worker lease with the last tick issued,
//! so a restart continues with no gap and without borrowing time.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::layout::{format_ms_rfc3339, parse_epoch};
use idmint_core::{Clock, FieldKind, Layout, Permutation, SystemClock};
use idmint_store::{Location, StoreOptions};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;

use crate::auth::{Auth, TokenSources, Tokens};
use crate::config::ServeConfig;
use crate::error::ServerError;
use crate::http::{self, ConnectionOptions, HttpOptions};
use crate::ids::Ids;
use crate::io_threads::IoThreads;
use crate::resp::{self, RespOptions};
use crate::store::main_runtime;
use crate::store::metered::metered;
use crate::telemetry;
use crate::tls::Tls;

/// Runs the server until `shutdown` resolves, then stops it gracefully.
pub async fn run(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    let metrics = install_metrics();
    let upkeep = metrics
        .clone()
        .map(|handle| tokio::spawn(metrics_upkeep(handle)));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let Checked {
        layout,
        tokens,
        tls,
        permutation,
    } = check(&config, clock.now_ms())?;
    for caution in cautions(&config, &tokens) {
        tracing::warn!(setting = caution.setting, "{}", caution.text);
    }
    let auth = Arc::new(Auth::new(tokens));
    let http_listener = bind("http", "HTTP", config.http, config.listen_backlog)?;
    let resp_listener = bind("resp", "Redis protocol", config.resp, config.listen_backlog)?;
    let store_options = StoreOptions {
        allow_non_durable: config.allow_non_durable,
        namespace: config.namespace.clone(),
        call_timeout: config.store_call_timeout,
    };
    let store = main_runtime::on_main_runtime(
        metered(
            idmint_store::open_set(&config.stores, &store_options, &config.set_options()).await?,
        ),
        tokio::runtime::Handle::current(),
    );
    tracing::info!(store = %store.display_url, "store opened");
    let mut ids_config = config.ids_config(&layout);
    ids_config.permutation = permutation;
    let ids = Ids::start(ids_config, store, clock).await?;
    log_started(&config, &layout, &ids, &http_listener, &resp_listener);

    // Cancelled when `shutdown` resolves: each front end stops accepting and drains.
    let stop = CancellationToken::new();
    let router = http::router(
        Arc::clone(&ids),
        HttpOptions {
            auth: Arc::clone(&auth),
            max_count: config.max_count,
            max_lease_size: config.max_lease_size,
            metrics,
        },
    );
    let io = match config.io_threads {
        0 => None,
        threads => Some(Arc::new(
            IoThreads::start(threads).map_err(ServerError::IoThreads)?,
        )),
    };
    let connections = ConnectionOptions {
        io: io.clone(),
        limits: config.limits,
        tls: tls.clone(),
        ..ConnectionOptions::default()
    };
    let http_task = tokio::spawn(http::serve_with(
        http_listener,
        router,
        connections,
        stop.clone().cancelled_owned(),
    ));
    let resp_options = RespOptions {
        auth: Arc::clone(&auth),
        io: io.clone(),
        max_count: config.max_count,
        connections: config.limits,
        tls: tls.clone(),
        ..RespOptions::default()
    };
    let resp_task = tokio::spawn(resp::serve(
        resp_listener,
        Arc::clone(&ids),
        resp_options,
        stop.clone().cancelled_owned(),
    ));

    // The handler is installed here, before the task first runs: a SIGHUP that comes as the
    // node starts serving reloads instead of ending the process.
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    let reloads = tokio::spawn(reload_on_sighup(
        hangups,
        config.tokens.clone(),
        Arc::clone(&auth),
        tls,
    ));

    shutdown.await;
    reloads.abort();
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    stop.cancel();
    let drained = tokio::time::timeout(config.drain_timeout, async {
        let http = http_task.await;
        let resp = resp_task.await;
        (http, resp)
    })
    .await;
    let outcome = match drained {
        Ok((Ok(Err(source)), _)) => Err(ServerError::Serve {
            what: "HTTP",
            source,
        }),
        Ok((_, Ok(Err(source)))) => Err(ServerError::Serve {
            what: "Redis protocol",
            source,
        }),
        Ok(_) => Ok(()),
        Err(_) => {
            tracing::warn!(timeout = ?config.drain_timeout, "requests still in flight at the drain timeout");
            Ok(())
        }
    };
    if let Some(io) = io {
        // Joins the connection threads, which end at once: their connections have drained.
        let _ = tokio::task::spawn_blocking(move || io.stop()).await;
    }
    ids.shutdown().await?;
    if let Some(upkeep) = upkeep {
        upkeep.abort();
    }
    tracing::info!("worker lease released; stopped");
    outcome
}

/// What the checks before start-up read: the layout, the tokens, the TLS certificate and the
/// permutation key, each from its setting.
pub struct Checked {
    /// `--layout` with `--epoch`.
    pub layout: Layout,
    /// The tokens of every token setting.
    pub tokens: Tokens,
    /// The certificate and key, when TLS is on.
    pub tls: Option<Tls>,
    /// The permutation, when IDs are handed out permuted.
    pub permutation: Option<Permutation>,
}

/// Every check start-up makes before it binds a port or opens a store: the layout and epoch
/// (and that the layout has not run out at `now_ms`), the fields that must fit the layout, the
/// store URLs' form, the namespace, and the files the settings name (tokens, certificate,
/// permutation key), read and parsed. `idmint serve --check` runs this and nothing else, so
/// it creates no file, binds no port and touches no store.
pub fn check(config: &ServeConfig, now_ms: u64) -> Result<Checked, ServerError> {
    let layout = parse_layout(config)?;
    refuse_exhausted_layout(&layout, config.epoch.is_some(), now_ms)?;
    check_settings(config, &layout, now_ms)?;
    let tokens = config.tokens.load()?;
    let tls = config.tls.as_ref().map(Tls::load).transpose()?;
    let permutation = config
        .permutation_key_file
        .as_deref()
        .map(|path| crate::permutation_key::load(path, &config.namespace))
        .transpose()?;
    if permutation.is_some() && layout.total_bits() < 63 {
        return Err(ServerError::Config {
            setting: "permutation-key-file".into(),
            reason: format!(
                "the layout {layout} is {} bits wide, and permuted IDs take all 63 (a \
                 js-safe ID would no longer be exact in JavaScript): use a 63-bit layout",
                layout.total_bits()
            ),
        });
    }
    Ok(Checked {
        layout,
        tokens,
        tls,
        permutation,
    })
}

/// The layout of `--layout` with the epoch of `--epoch`, each refused under its own flag.
fn parse_layout(config: &ServeConfig) -> Result<Layout, ServerError> {
    let refused = |setting: &str, error: idmint_core::Error| ServerError::Config {
        setting: setting.into(),
        reason: error.to_string(),
    };
    let layout = Layout::parse(&config.layout).map_err(|error| refused("layout", error))?;
    match config.epoch.as_deref() {
        Some(epoch) => parse_epoch(epoch)
            .and_then(|epoch_ms| layout.with_epoch(epoch_ms))
            .map_err(|error| refused("epoch", error)),
        None => Ok(layout),
    }
}

/// A layout that has run out can mint no snowflake: refuse it before the store is opened, so
/// the node takes no worker lease (which would hold a worker ID for a lease period and raise
/// its high-water mark for nothing). The error is the `--epoch`'s when one was given, else the
/// `--layout`'s (a preset such as uid-generator, whose epoch of 2016 ran out in 2024), and says
/// what to do: a later epoch, with the date it would run until.
fn refuse_exhausted_layout(
    layout: &Layout,
    epoch_given: bool,
    now_ms: u64,
) -> Result<(), ServerError> {
    if now_ms < layout.ends_at_ms() {
        return Ok(());
    }
    const DAY_MS: u64 = 24 * 60 * 60 * 1000;
    let today_ms = now_ms - now_ms % DAY_MS;
    let today = format_ms_rfc3339(today_ms);
    let today = today.get(..10).unwrap_or(&today);
    // Today's date, or this moment for a layout too short to last the rest of the day.
    let later = [(today.to_owned(), today_ms), (now_ms.to_string(), now_ms)]
        .into_iter()
        .find_map(|(shown, epoch_ms)| {
            let later = layout.clone().with_epoch(epoch_ms).ok()?;
            (later.ends_at_ms() > now_ms).then_some((shown, later.ends_at_ms()))
        });
    let advice = match later {
        Some((epoch, ends_at_ms)) => format!(
            "give a later epoch, e.g. --epoch {epoch}, which runs it until {}, or another \
             layout (`idmint layout --layout SPEC --epoch DATE` shows when one runs out)",
            format_ms_rfc3339(ends_at_ms)
        ),
        None => "give a later --epoch, or another layout".to_owned(),
    };
    Err(ServerError::Config {
        setting: if epoch_given { "epoch" } else { "layout" }.into(),
        reason: format!(
            "{layout} ran out at {}: its {}-bit time field, counted from the epoch {}, is used \
             up, so it can mint no ID; {advice}",
            format_ms_rfc3339(layout.ends_at_ms()),
            layout.field(FieldKind::Time).map_or(0, |field| field.bits),
            format_ms_rfc3339(layout.epoch_ms()),
        ),
    })
}

/// Checks the settings the layout and the store URL decide, before anything is opened: the epoch
/// is not in the future, the datacenter and a static worker ID fit the layout's fields, and the
/// store URL is well formed. Each would otherwise be found only after the store was opened (its
/// file created, its schema written) and a worker lease taken, by the store or the generator.
/// The other settings (addresses, durations, numbers) were checked when they were resolved.
fn check_settings(config: &ServeConfig, layout: &Layout, now_ms: u64) -> Result<(), ServerError> {
    let refused = |setting: &str, error: idmint_core::Error| ServerError::Config {
        setting: setting.into(),
        reason: match error {
            idmint_core::Error::InvalidArgument { reason, .. } => reason,
            other => other.to_string(),
        },
    };
    layout.check_epoch_not_future(now_ms).map_err(|error| {
        // The epoch is the layout's own (a preset's) unless --epoch gave one.
        refused(
            if config.epoch.is_some() {
                "epoch"
            } else {
                "layout"
            },
            error,
        )
    })?;
    layout
        .check_fits(FieldKind::Dc, config.datacenter)
        .map_err(|error| refused("datacenter", error))?;
    if let Some(worker_id) = config.worker_id {
        layout
            .check_fits(FieldKind::Worker, worker_id)
            .map_err(|error| refused("worker-id", error))?;
    }
    for store in &config.stores {
        Location::parse(store).map_err(|error| refused("store", error))?;
    }
    StoreOptions {
        namespace: config.namespace.clone(),
        ..StoreOptions::default()
    }
    .validate()
    .map_err(|error| refused("namespace", error))?;
    Ok(())
}

/// Reads the tokens and the TLS certificate again on each SIGHUP (a rotated token file, a
/// renewed certificate). What fails to load is logged and the settings in use are kept.
/// Without this handler SIGHUP would end the process, its default action.
async fn reload_on_sighup(
    hangups: std::io::Result<tokio::signal::unix::Signal>,
    tokens: TokenSources,
    auth: Arc<Auth>,
    tls: Option<Tls>,
) {
    let Ok(mut hangups) = hangups else {
        tracing::warn!("SIGHUP cannot be handled: tokens and certificates load only at start");
        return;
    };
    while hangups.recv().await.is_some() {
        if tokens.any() {
            match tokens
                .load()
                .map(|loaded| (loaded.len(), auth.replace(loaded)))
            {
                Ok((count, Ok(()))) => tracing::info!(tokens = count, "tokens reloaded"),
                Ok((_, Err(reason))) => tracing::warn!(reason, "tokens not reloaded"),
                Err(error) => tracing::warn!(%error, "tokens not reloaded; the ones in use stay"),
            }
        }
        if let Some(tls) = &tls {
            match tls.reload() {
                Ok(()) => tracing::info!("TLS certificate reloaded"),
                Err(error) => {
                    tracing::warn!(%error, "TLS certificate not reloaded; the one in use stays")
                }
            }
        }
    }
}

/// A setting that works but deserves a look: logged as a warning at start, and printed by
/// `idmint serve --check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caution {
    /// The setting it is about, without dashes (`http`).
    pub setting: &'static str,
    /// What is the matter and what to do.
    pub text: String,
}

/// What the settings leave open or cannot have: a listener reachable from other machines with
/// no token configured (anyone who reaches the port may take IDs, create tags and read the
/// metrics), and a listen backlog the kernel caps.
pub fn cautions(config: &ServeConfig, tokens: &Tokens) -> Vec<Caution> {
    let mut cautions = Vec::new();
    if tokens.is_empty() {
        for (setting, address) in beyond_this_machine(config) {
            cautions.push(Caution {
                setting,
                text: format!(
                    "--{setting} {address} listens beyond this machine and no token is \
                     configured: anyone who can reach it may take IDs, create tags and read the \
                     metrics; set --tokens-file or --admin-token-file (SECURITY.md)"
                ),
            });
        }
    }
    if let Some(cap) = somaxconn().filter(|cap| config.listen_backlog > *cap) {
        cautions.push(Caution {
            setting: "listen-backlog",
            text: format!(
                "--listen-backlog {} is above the kernel's net.core.somaxconn, {cap}, which caps it",
                config.listen_backlog
            ),
        });
    }
    cautions
}

/// The listeners (setting name, address) reachable from other machines: any address but a
/// loopback one, an IPv4-mapped IPv6 loopback (`::ffff:127.0.0.1`) counting as loopback.
fn beyond_this_machine(config: &ServeConfig) -> Vec<(&'static str, SocketAddr)> {
    [("http", config.http), ("resp", config.resp)]
        .into_iter()
        .filter(|(_, address)| !address.ip().to_canonical().is_loopback())
        .collect()
}

/// Installs the Prometheus recorder for the process; a second server in the same process (tests)
/// shares the first one's.
fn install_metrics() -> Option<PrometheusHandle> {
    // Request latency in fixed buckets (cheap to record, and they add up across nodes); the
    // store calls keep the default summary.
    let builder = PrometheusBuilder::new();
    let builder = match builder.set_buckets_for_metric(
        Matcher::Full(telemetry::HTTP_REQUEST_SECONDS.to_owned()),
        crate::http::timing::BUCKETS,
    ) {
        Ok(builder) => builder,
        Err(error) => {
            tracing::warn!(%error, "request latency buckets refused; using a summary");
            PrometheusBuilder::new()
        }
    };
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    match metrics::set_global_recorder(recorder) {
        Ok(()) => Some(handle),
        Err(_) => {
            tracing::debug!("a metrics recorder is already installed in this process");
            None
        }
    }
}

/// How often histogram samples are folded into their summaries.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

/// Folds recorded histogram samples into their summaries every [`METRICS_UPKEEP`].
///
/// The recorder queues every sample until something drains the queue; only a scrape of
/// `/metrics` did, so a node nobody scraped kept every store call's latency in memory (27 MiB
/// after 20,000 segment fetches).
async fn metrics_upkeep(handle: PrometheusHandle) {
    let mut ticks = tokio::time::interval(METRICS_UPKEEP);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        handle.run_upkeep();
    }
}

/// Binds `address`, the value of the setting `--{setting}`, for the protocol `what`, with a
/// queue of `backlog` connections not yet accepted (`--listen-backlog`; tokio's
/// `TcpListener::bind` would take 128).
fn bind(
    setting: &'static str,
    what: &'static str,
    address: SocketAddr,
    backlog: u32,
) -> Result<TcpListener, ServerError> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    };
    // As `TcpListener::bind` does on Unix: a restarted node binds its port again at once,
    // whatever connections of the previous one linger in TIME_WAIT.
    socket
        .and_then(|socket| {
            #[cfg(unix)]
            socket.set_reuseaddr(true)?;
            socket.bind(address)?;
            socket.listen(backlog)
        })
        .map_err(|source| ServerError::Bind {
            setting,
            what,
            address,
            source,
        })
}

/// The kernel's cap on listen backlogs, when it can be read.
fn somaxconn() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// What an operator needs to see at start: where it listens, what it mints, until when.
fn log_started(
    config: &ServeConfig,
    layout: &Layout,
    ids: &Ids,
    http: &TcpListener,
    resp: &TcpListener,
) {
    let address = |listener: &TcpListener| {
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default()
    };
    let lease = ids.keeper().lease();
    tracing::info!(
        http = %address(http),
        resp = %address(resp),
        layout = %layout,
        epoch = %format_ms_rfc3339(layout.epoch_ms()),
        layout_runs_out = %format_ms_rfc3339(layout.ends_at_ms()),
        worker_id = lease.worker_id,
        datacenter = config.datacenter,
        node = %config.node_name,
        permutation = ids
            .id_spaces()
            .last()
            .and_then(|record| record.space.permutation.as_deref())
            .unwrap_or("none"),
        "idmint serving"
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::config::PartialConfig;

    use super::*;

    /// The setting named by a refused [`check_settings`], or a panic.
    fn refused_setting(config: &ServeConfig, layout: &str) -> (String, String) {
        let Ok(layout) = Layout::parse_with_epoch(layout, config.epoch.as_deref()) else {
            panic!("the layout does not parse");
        };
        match check_settings(config, &layout, idmint_core::clock::wall_clock_ms()) {
            Err(ServerError::Config { setting, reason }) => (setting, reason),
            other => panic!("expected a refused setting, got {other:?}"),
        }
    }

    #[test]
    fn settings_the_layout_and_store_decide_are_checked_before_anything_opens() {
        let Ok(base) =
            ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "h")
        else {
            panic!("the defaults do not resolve");
        };
        let layout = "time:41@1ms,dc:2,worker:3,seq:12";
        let Ok(parsed) = Layout::parse(layout) else {
            panic!("the layout does not parse");
        };
        assert!(check_settings(&base, &parsed, idmint_core::clock::wall_clock_ms()).is_ok());
        let with = |change: &dyn Fn(&mut ServeConfig)| {
            let mut config = base.clone();
            change(&mut config);
            config
        };
        let (setting, reason) = refused_setting(&with(&|c| c.datacenter = 4), layout);
        assert_eq!(setting, "datacenter");
        assert!(reason.contains("does not fit in 2 bits"), "{reason}");
        let (setting, reason) = refused_setting(&with(&|c| c.worker_id = Some(8)), layout);
        assert_eq!(setting, "worker-id");
        assert!(reason.contains("does not fit in 3 bits"), "{reason}");
        let (setting, _) = refused_setting(&with(&|c| c.worker_id = Some(1)), "time:41@1ms,seq:12");
        assert_eq!(setting, "worker-id");
        let (setting, reason) =
            refused_setting(&with(&|c| c.epoch = Some("2100-01-01".into())), layout);
        assert_eq!(setting, "epoch");
        assert!(reason.contains("in the future"), "{reason}");
        let (setting, reason) = refused_setting(
            &with(&|c| c.stores = vec!["sqlite://user:secret@/tmp/x.db".into()]),
            layout,
        );
        assert_eq!(setting, "store");
        assert!(!reason.contains("secret"), "{reason}");
    }

    #[test]
    fn a_layout_that_ran_out_is_refused_before_the_store() {
        // 1 s ticks, 4 of them: the layout runs 4 s from its epoch, 1970-01-01.
        let Ok(layout) = Layout::parse_with_epoch("time:2@1s,seq:8", Some("0")) else {
            panic!("the layout does not parse");
        };
        assert_eq!(layout.ends_at_ms(), 4_000);
        assert!(refuse_exhausted_layout(&layout, true, 3_999).is_ok());
        for (epoch_given, setting) in [(true, "epoch"), (false, "layout")] {
            let refused = refuse_exhausted_layout(&layout, epoch_given, 4_000);
            assert!(
                matches!(
                    &refused,
                    Err(ServerError::Config { setting: named, reason })
                        if named == setting
                            && reason.contains("ran out at 1970-01-01T00:00:04.000Z")
                            && reason.contains("--epoch 4000, which runs it until 1970-01-01T00:00:08.000Z")
                ),
                "{refused:?}"
            );
        }
    }

    /// The listeners the startup warning names: only those other machines can reach.
    fn exposed(http: &str, resp: &str) -> Vec<&'static str> {
        let command_line = PartialConfig {
            http: Some(http.parse().unwrap()),
            resp: Some(resp.parse().unwrap()),
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, PartialConfig::default(), "h").unwrap();
        beyond_this_machine(&config)
            .into_iter()
            .map(|(setting, _)| setting)
            .collect()
    }

    #[test]
    fn the_open_network_warning_names_listeners_beyond_loopback() {
        assert!(exposed("127.0.0.1:8080", "[::1]:6379").is_empty());
        assert!(exposed("127.0.0.2:8080", "[::ffff:127.0.0.1]:6379").is_empty());
        assert_eq!(exposed("0.0.0.0:8080", "127.0.0.1:6379"), ["http"]);
        assert_eq!(exposed("127.0.0.1:8080", "[::]:6379"), ["resp"]);
        assert_eq!(
            exposed("10.1.2.3:8080", "[::ffff:10.1.2.3]:6379"),
            ["http", "resp"]
        );
    }
}
