//! The checks before start-up: every setting that can be checked with no port bound and no
//! store opened ([`check`], all that `idmint serve --check` does), and the settings that work
//! but deserve a look ([`cautions`]). Apart from starting (`serve/mod.rs`), which runs them
//! first, because `--check` runs them alone.

use std::net::SocketAddr;

use idmint_core::layout::{format_ms_rfc3339, parse_epoch};
use idmint_core::{FieldKind, Layout, Permutation};
use idmint_store::{Location, StoreOptions};

use crate::auth::Tokens;
use crate::config::ServeConfig;
use crate::error::ServerError;
use crate::tls::Tls;

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
    if config.lease.id128_node {
        crate::ids::node_field_width(layout).map_err(|error| refused("id128-node", error))?;
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

/// The kernel's cap on listen backlogs, when it can be read.
fn somaxconn() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
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
