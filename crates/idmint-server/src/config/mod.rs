//! The settings of `idmint serve`, and how their layers combine.
//!
//! Every setting is defined once, as a field of [`PartialConfig`] with its type and doc; its
//! default, where it has a plain one, once, in [`PartialConfig::defaults`]. The layers are the
//! command line with the `IDMINT_*` variables (clap reads both), a TOML file (`--config FILE`)
//! and the defaults, in that order of precedence; `--help` and docs/settings.md's table show the
//! defaults from the same place ([`with_defaults_shown`], [`settings_table`]).
//!
//! One concern a file, so that adding a setting touches the table and, at most, its check:
//! - `definitions.rs`: the settings table, each setting's flag, variable, TOML key, type, doc
//!   and default;
//! - `layers.rs`: one layer read from a TOML file, and layers merged one over another;
//! - `resolve.rs`: the layers resolved into the [`ServeConfig`] a node runs with;
//! - `checks.rs`: the checks resolution makes, each refusal naming its setting;
//! - `render.rs`: what is made for people from the definitions: the defaults in `--help`,
//!   docs/settings.md's table, the sample `deploy/idmint.toml`, [`ServeConfig::shown`].

mod checks;
mod definitions;
mod layers;
mod render;
mod resolve;

pub use self::definitions::{
    LogFormat, PartialConfig, WorkerChoice, DEFAULT_LAYOUT, DEFAULT_LISTEN_BACKLOG,
};
pub use self::render::{sample_config_file, settings_table, with_defaults_shown, HIDDEN};
pub use self::resolve::{
    default_io_threads, ConnectionLimits, LogSettings, ServeConfig, TlsFiles, MAX_IO_THREADS,
};
