//! What is made for people from the settings' definitions: the defaults appended to `--help`,
//! docs/settings.md's table, the sample `deploy/idmint.toml` and the resolved settings with
//! secrets hidden ([`ServeConfig::shown`], printed by `serve --check`). Apart from the
//! definitions so that the table holds nothing but settings, and tested against the files it
//! makes (`IDMINT_BLESS=1` rewrites them).

use std::time::Duration;

use serde_json::Value;

use super::{PartialConfig, ServeConfig, WorkerChoice};

/// How a secret given as a value shows in what the settings print.
pub const HIDDEN: &str = "<hidden>";

impl PartialConfig {
    /// Each setting's default as shown to people, by TOML key.
    fn default_texts() -> serde_json::Map<String, Value> {
        match serde_json::to_value(Self::defaults()) {
            Ok(Value::Object(defaults)) => defaults,
            _ => serde_json::Map::new(),
        }
    }
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

impl ServeConfig {
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
            id128_node: Some(self.lease.id128_node),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::Path;

    use super::*;

    /// docs/settings.md's table is what the definitions produce; `IDMINT_BLESS=1` rewrites it.
    #[test]
    fn the_settings_reference_lists_every_setting_as_defined() {
        const BEGIN: &str =
            "<!-- settings: generated from crates/idmint-server/src/config/definitions.rs -->\n";
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
}
