//! The store of a deployment, as the operator's commands open it: with the settings of
//! `idmint serve` that name it, and never creating an embedded store that is not there.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use idmint_server::config::{PartialConfig, ServeConfig};
use idmint_store::{Backend, Location, SetOptions, Store, StoreOptions};

use crate::error::InputError;

/// Which store and namespace: the settings of `idmint serve` that name them.
// The field docs are clap's help text, not markdown: `<data-dir>` names a value, not a tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, Args)]
pub struct StoreOpts {
    /// The TOML file of the node (only its store settings are read).
    #[arg(long, value_name = "FILE", env = "IDMINT_CONFIG")]
    config: Option<PathBuf>,

    /// Folder of the embedded store (when --store is not given). [default: ./idmint-data]
    #[arg(long, value_name = "DIR", env = "IDMINT_DATA_DIR")]
    data_dir: Option<PathBuf>,

    /// Store URL: sqlite://PATH, postgres://..., mysql://... or redis://...; given several
    /// times (or separated by spaces), the stores of a set, in their order. A password in a
    /// flag shows in the process list: prefer --store-file or the variable.
    /// [default: sqlite://<data-dir>/idmint.db]
    #[arg(
        long,
        value_name = "URL",
        env = "IDMINT_STORE",
        value_delimiter = ' ',
        hide_env_values = true
    )]
    store: Option<Vec<String>>,

    /// File holding the store URL, or the URLs of a set one a line; instead of --store.
    #[arg(long, value_name = "FILE", env = "IDMINT_STORE_FILE")]
    store_file: Option<PathBuf>,

    /// The deployment's prefix in the store. [default: idmint]
    #[arg(long, value_name = "NAME", env = "IDMINT_NAMESPACE")]
    namespace: Option<String>,

    /// Accept a store that cannot promise durability. [default: false]
    #[arg(long, value_name = "BOOL", env = "IDMINT_ALLOW_NON_DURABLE")]
    allow_non_durable: Option<bool>,
}

impl StoreOpts {
    /// Opens the store these settings name, as `idmint serve` would.
    pub fn open(&self, runtime: &tokio::runtime::Runtime) -> Result<(Store, String)> {
        let (urls, options, set) = self.settings()?;
        let store = open_existing(runtime, &urls, &options, &set)?;
        Ok((store, options.namespace))
    }

    /// The store URLs and how to open them, as `idmint serve` would resolve them.
    pub fn settings(&self) -> Result<(Vec<String>, StoreOptions, SetOptions)> {
        let file = match &self.config {
            Some(path) => PartialConfig::from_file(path)?,
            None => PartialConfig::default(),
        };
        let command_line = PartialConfig {
            data_dir: self.data_dir.clone(),
            store: self.store.clone(),
            store_file: self.store_file.clone(),
            namespace: self.namespace.clone(),
            allow_non_durable: self.allow_non_durable,
            ..PartialConfig::default()
        };
        let config = ServeConfig::resolve(command_line, file, "idmint")?;
        let options = StoreOptions {
            namespace: config.namespace.clone(),
            allow_non_durable: config.allow_non_durable,
            ..StoreOptions::default()
        };
        Ok((config.stores.clone(), options, config.set_options()))
    }
}

/// The single-threaded runtime a command's store or server calls run on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Opens the store (or the set) at `urls` for a command that only reads or changes what is
/// there: a SQLite file that does not exist is refused (a mistyped path would otherwise create
/// an empty store and report that nothing is recorded).
pub fn open_existing(
    runtime: &tokio::runtime::Runtime,
    urls: &[String],
    options: &StoreOptions,
    set: &SetOptions,
) -> Result<Store> {
    for url in urls {
        let location = Location::parse(url).map_err(|e| InputError::new("--store", e))?;
        if location.backend == Backend::Sqlite && !Path::new(location.sqlite_path()).exists() {
            return Err(InputError::new(
                "--store",
                format!(
                    "no store at `{}`: the file does not exist",
                    location.display
                ),
            )
            .into());
        }
    }
    // An unreachable or refusing store is a failure (exit 1), not a usage error.
    let store = runtime.block_on(idmint_store::open_set(urls, options, set))?;
    Ok(store)
}
