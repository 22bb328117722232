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

    /// Every other setting.
    #[command(flatten)]
    pub settings: PartialConfig,
}

/// Resolves the settings and serves until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> Result<()> {
    let file = match &args.config {
        Some(path) => PartialConfig::from_file(path)?,
        None => PartialConfig::default(),
    };
    let config = ServeConfig::resolve(args.settings.clone(), file, &host_name())?;
    crate::logging::init();
    crate::allocator::purge_in_background();
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
