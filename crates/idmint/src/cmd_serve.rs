//! `idmint serve`: every setting as a flag, an `IDMINT_*` variable or a TOML file entry (flag >
//! variable > file > default), then the server until SIGINT or SIGTERM.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use idmint_server::config::{PartialConfig, ServeConfig};
use idmint_server::ServerError;

/// Settings of `idmint serve`. Each is also read from the variable shown and from the
/// `--config` file under the same name with underscores (`worker_id = "auto"`).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (flags and variables override it).
    #[arg(long, value_name = "FILE", env = "IDMINT_CONFIG")]
    pub config: Option<PathBuf>,

    /// Resolve and check every setting (flags, variables, the file), print them as TOML with
    /// secrets hidden, and exit: 0 when they are all good (with a `warning:` line on stderr for
    /// what start-up would warn of), 2 naming the first bad one. Reads the files the settings
    /// name; opens no store and binds no port.
    #[arg(long)]
    pub check: bool,

    /// Every other setting.
    #[command(flatten)]
    pub settings: PartialConfig,
}

/// The settings whose value came from an `IDMINT_*` variable, each with its variable:
/// (`max-count`, `IDMINT_MAX_COUNT`). `matches` are the `serve` subcommand's, `command` the
/// whole command tree.
pub fn from_variables(
    matches: Option<&clap::ArgMatches>,
    command: &clap::Command,
) -> Vec<(String, String)> {
    let (Some(matches), Some(serve)) = (matches, command.find_subcommand("serve")) else {
        return Vec::new();
    };
    serve
        .get_arguments()
        .filter(|arg| {
            matches.value_source(arg.get_id().as_str())
                == Some(clap::parser::ValueSource::EnvVariable)
        })
        .filter_map(|arg| {
            Some((
                arg.get_long()?.to_owned(),
                arg.get_env()?.to_string_lossy().into_owned(),
            ))
        })
        .collect()
}

/// Resolves the settings and serves until SIGINT or SIGTERM, or with `--check` checks them,
/// prints them on `out` and returns. `from_variables`: the settings given by `IDMINT_*`
/// variables ([`from_variables`]), named in the error of a refused one.
pub fn run(
    args: &ServeArgs,
    from_variables: &[(String, String)],
    now_ms: u64,
    out: &mut impl Write,
) -> Result<()> {
    let file = match &args.config {
        Some(path) => PartialConfig::from_file(path)?,
        None => PartialConfig::default(),
    };
    let mut command_line = args.settings.clone();
    let mut variables = from_variables.to_vec();
    // RUST_LOG, the variable every Rust program's log reads, is --log-filter's second variable.
    if command_line.log_filter.is_none() {
        if let Some(filter) = std::env::var("RUST_LOG")
            .ok()
            .filter(|f| !f.trim().is_empty())
        {
            command_line.log_filter = Some(filter);
            variables.push(("log-filter".to_owned(), "RUST_LOG".to_owned()));
        }
    }
    let sources = Sources {
        variables: &variables,
        command_line: command_line.given(),
        file: args.config.as_deref().map(|path| (path, file.given())),
    };
    let config = ServeConfig::resolve(command_line, file, &host_name())
        .map_err(|error| sources.name(error))?;
    if args.check {
        let checked =
            idmint_server::serve::check(&config, now_ms).map_err(|error| sources.name(error))?;
        // What start-up would log as warnings: on stderr, the settings still good (exit 0).
        for caution in idmint_server::serve::cautions(&config, &checked.tokens) {
            eprintln!("warning: {}", caution.text);
        }
        let shown = toml::to_string(&config.shown()).context("showing the settings")?;
        writeln!(
            out,
            "# idmint serve: every setting resolved (flag > variable > file > default) and \
             checked; secrets hidden\n{shown}"
        )?;
        return Ok(());
    }
    crate::logging::init(&config.log);
    crate::allocator::purge_in_background();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(async {
            // Installed before anything is served: a SIGTERM that comes as the node starts
            // stops it gracefully rather than killing it (the default action).
            let stop = stop_signal();
            idmint_server::serve::run(config, stop).await
        })
        .map_err(|error| sources.name(error))?;
    Ok(())
}

/// Where the settings given came from, beside the command line: to say, of a refused value,
/// which variable or file to fix.
struct Sources<'a> {
    /// (setting, variable) of each setting an `IDMINT_*` variable gave.
    variables: &'a [(String, String)],
    /// The settings flags or variables gave, which win over the file.
    command_line: Vec<String>,
    /// The `--config` file and the settings it gives.
    file: Option<(&'a std::path::Path, Vec<String>)>,
}

impl Sources<'_> {
    /// `error` with the source of its setting appended, when a variable or the file gave it (a
    /// flag is in plain sight on the command line; a value the file could not parse is refused
    /// earlier, naming the file and the line).
    fn name(&self, error: ServerError) -> ServerError {
        let ServerError::Config { setting, reason } = error else {
            return error;
        };
        let variable = self
            .variables
            .iter()
            .find(|(name, _)| *name == setting)
            .map(|(_, variable)| format!("set by {variable}"));
        let file = self.file.as_ref().and_then(|(path, given)| {
            (given.contains(&setting) && !self.command_line.contains(&setting))
                .then(|| format!("set in {}", path.display()))
        });
        let reason = match variable.or(file) {
            Some(source) => format!("{reason} ({source})"),
            None => reason,
        };
        ServerError::Config { setting, reason }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM; the handlers are installed when it is called (in the
/// runtime), not when the future is first polled.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, Signal, SignalKind};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    let received = |installed: std::io::Result<Signal>| async move {
        match installed {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    async move {
        tokio::select! {
            () = received(interrupt) => {}
            () = received(terminate) => {}
        }
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
