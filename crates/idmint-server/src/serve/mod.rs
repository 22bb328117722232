//! `idmint serve`: the store, the ID service and both front ends, started and stopped in order.
//!
//! Start: check every setting that can be checked without side effects and bind HTTP and the
//! Redis protocol, then open the store (durability and schema checked), take a worker lease, log
//! what was bound. A wrong setting or a port in use thus stops the node before it creates a
//! store file, writes a row or holds a worker ID for a lease period. Stop (the `shutdown`
//! future resolves, e.g. on SIGTERM): stop accepting, let requests in flight finish (bounded),
//! then give unused segment tails back and release the worker lease with the last tick issued,
//! so a restart continues with no gap and without borrowing time.
//!
//! The checks made before anything starts are `checks.rs`'s ([`check`], [`cautions`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::layout::format_ms_rfc3339;
use idmint_core::{Clock, Layout, SystemClock};
use idmint_store::StoreOptions;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;

use crate::auth::{Auth, TokenSources};
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

mod checks;

pub use self::checks::{cautions, check, Caution, Checked};

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
