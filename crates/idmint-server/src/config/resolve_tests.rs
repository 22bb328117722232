//! [`ServeConfig::resolve`]: the layers' precedence, the defaults, and refusals naming their
//! setting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use idmint_core::Layout;

use super::super::{default_io_threads, PartialConfig, ServeConfig, DEFAULT_LAYOUT};
use crate::error::ServerError;

#[test]
fn defaults_serve_on_loopback_with_the_embedded_store() {
    let config =
        ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "host-1").unwrap();
    assert_eq!(config.stores, ["sqlite://./idmint-data/idmint.db"]);
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
        http: Some("127.0.0.1:9100".parse().unwrap()),
        ..PartialConfig::default()
    };
    let config = ServeConfig::resolve(command_line, file, "h").unwrap();
    assert_eq!(config.http.to_string(), "127.0.0.1:9100");
    assert_eq!(config.stores, ["postgres://db/ids"]);
    assert_eq!(config.worker_id, Some(7));
    assert!(!config.auto_create_tags);
}

#[test]
fn store_urls_come_from_a_file_one_a_line_never_beside_store() {
    let dir = std::env::temp_dir().join(format!("idmint-store-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let resolve = |text: &str, store: Option<&str>| {
        let path = dir.join("store-url");
        std::fs::write(&path, text).unwrap();
        let command_line = PartialConfig {
            store: store.map(|s| vec![s.to_owned()]),
            store_file: Some(path),
            ..PartialConfig::default()
        };
        ServeConfig::resolve(command_line, PartialConfig::default(), "h")
    };
    let one = resolve("postgres://u:pa55@db/ids\n", None).unwrap();
    assert_eq!(one.stores, ["postgres://u:pa55@db/ids"]);
    let set = resolve("  postgres://a/ids\r\n\nredis://:pa55@b/\n", None).unwrap();
    assert_eq!(set.stores, ["postgres://a/ids", "redis://:pa55@b/"]);
    for (text, store, expected) in [
        (
            "postgres://db/ids\n",
            Some("redis://b/"),
            "together with --store",
        ),
        ("\n  \n", None, "holds no store URL"),
        (
            "redis://:pa55@a/\nredis://:pa55@a/\n",
            None,
            "repeats an earlier one",
        ),
    ] {
        match resolve(text, store) {
            Err(ServerError::Config { setting, reason }) => {
                assert_eq!(setting, "store-file", "{text:?}");
                assert!(reason.contains(expected), "{text:?}: {reason}");
                assert!(!reason.contains("pa55"), "{text:?}: {reason}");
            }
            other => panic!("{text:?} accepted: {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_store_set_is_a_list_from_flags_or_the_file() {
    let file: PartialConfig =
        toml::from_str("store = [\"postgres://a/ids\", \"redis://b/\"]\nhome_store = 1\n").unwrap();
    let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
    assert_eq!(config.stores, ["postgres://a/ids", "redis://b/"]);
    assert_eq!(config.home_store, Some(1));
    let one: PartialConfig = toml::from_str("store = \"redis://b/\"\n").unwrap();
    let config = ServeConfig::resolve(PartialConfig::default(), one, "h").unwrap();
    assert_eq!(config.stores, ["redis://b/"]);
    let refused = |stores: &[&str], home: Option<usize>| {
        let command_line = PartialConfig {
            store: Some(stores.iter().map(|s| (*s).to_owned()).collect()),
            home_store: home,
            ..PartialConfig::default()
        };
        match ServeConfig::resolve(command_line, PartialConfig::default(), "h") {
            Err(ServerError::Config { setting, .. }) => setting,
            other => panic!("{stores:?} {home:?} accepted: {other:?}"),
        }
    };
    assert_eq!(refused(&["redis://a/", "redis://a/"], None), "store");
    assert_eq!(refused(&["redis://a/", ""], None), "store");
    assert_eq!(
        refused(&["redis://a/", "redis://b/"], Some(2)),
        "home-store"
    );
    let small_block = PartialConfig {
        store_block: Some(10),
        ..PartialConfig::default()
    };
    assert!(ServeConfig::resolve(small_block, PartialConfig::default(), "h").is_err());
    let no_timeout = PartialConfig {
        store_call_timeout: Some(Duration::ZERO),
        ..PartialConfig::default()
    };
    assert!(ServeConfig::resolve(no_timeout, PartialConfig::default(), "h").is_err());
    let file: PartialConfig = toml::from_str("store_call_timeout = \"1500ms\"\n").unwrap();
    let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
    assert_eq!(config.store_call_timeout, Duration::from_millis(1500));
}

#[test]
fn the_data_dir_places_the_embedded_store() {
    let command_line = PartialConfig {
        data_dir: Some("/var/lib/idmint".into()),
        ..PartialConfig::default()
    };
    let config = ServeConfig::resolve(command_line, PartialConfig::default(), "h").unwrap();
    assert_eq!(config.stores, ["sqlite:///var/lib/idmint/idmint.db"]);
    let store_in = |dir: &str| {
        let command_line = PartialConfig {
            data_dir: Some(dir.into()),
            ..PartialConfig::default()
        };
        ServeConfig::resolve(command_line, PartialConfig::default(), "h")
            .unwrap()
            .stores
            .remove(0)
    };
    assert_eq!(store_in("../ids"), "sqlite://../ids/idmint.db");
    // Not `sqlite://me@box/...`, which reads as a user at a host.
    assert_eq!(store_in("me@box"), "sqlite://./me@box/idmint.db");
}

#[test]
fn bad_settings_are_named() {
    let bad =
        |partial: PartialConfig| match ServeConfig::resolve(partial, PartialConfig::default(), "h")
        {
            Err(ServerError::Config { setting, .. }) => setting,
            other => panic!("expected a config error, got {other:?}"),
        };
    assert_eq!(
        bad(PartialConfig {
            default_step: Some(0),
            ..Default::default()
        }),
        "default-step"
    );
    for empty in ["", "  "] {
        let config = ServeConfig::resolve(
            PartialConfig {
                admin_token: Some(empty.into()),
                ..Default::default()
            },
            PartialConfig::default(),
            "h",
        )
        .unwrap();
        assert!(matches!(
            config.tokens.load(),
            Err(ServerError::Config { setting, .. }) if setting == "admin-token"
        ));
    }
    assert_eq!(
        bad(PartialConfig {
            tls_cert: Some("cert.pem".into()),
            ..Default::default()
        }),
        "tls-key"
    );
    assert_eq!(
        bad(PartialConfig {
            auth_timeout: Some(Duration::ZERO),
            ..Default::default()
        }),
        "auth-timeout"
    );
    assert_eq!(
        bad(PartialConfig {
            lease_ttl: Some(Duration::from_secs(1)),
            lease_renew: Some(Duration::from_secs(2)),
            ..Default::default()
        }),
        "lease-ttl"
    );
    // A value of the wrong form is refused where it is read, naming its setting.
    let file_error = |text: &str| match PartialConfig::from_toml(text, Path::new("ids.toml")) {
        Err(ServerError::Config { reason, .. }) => reason,
        other => panic!("expected a config error for {text:?}, got {other:?}"),
    };
    for (text, key) in [
        ("worker_id = \"x\"", "worker_id"),
        ("http = \"localhost\"", "http"),
        ("resp = \"1.2.3.4:99999\"", "resp"),
        ("clock_policy = \"panic\"", "clock_policy"),
        ("\nhwm_lead = \"ten seconds\"", "hwm_lead"),
        ("colour = \"blue\"", "colour"),
        ("clock_policy = \"s3cret\"", "clock_policy"),
    ] {
        let reason = file_error(text);
        assert!(reason.starts_with("ids.toml: line "), "{reason}");
        assert!(reason.contains(key), "{text}: {reason}");
    }
    let command = <PartialConfig as clap::Args>::augment_args(clap::Command::new("serve"));
    for (flag, value) in [("--http", "localhost"), ("--lease-ttl", "soon")] {
        let error = command
            .clone()
            .try_get_matches_from(["serve", flag, value])
            .unwrap_err()
            .to_string();
        assert!(error.contains(flag) && error.contains(value), "{error}");
    }
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
    let defaults = ServeConfig::resolve(PartialConfig::default(), PartialConfig::default(), "h")
        .unwrap()
        .ids_config(&layout);
    assert_eq!(defaults.lease.clock_policy, crate::ids::ClockPolicy::Switch);
    assert_eq!(defaults.lease.ttl, Duration::from_secs(10));
    assert_eq!(defaults.lease.worker_wait, Duration::from_secs(10));
}

#[test]
fn the_worker_wait_defaults_to_the_lease_ttl_and_zero_means_none() {
    let resolve = |lease_ttl: Option<u64>, worker_wait: Option<u64>| {
        let command_line = PartialConfig {
            lease_ttl: lease_ttl.map(Duration::from_millis),
            worker_wait: worker_wait.map(Duration::from_millis),
            ..PartialConfig::default()
        };
        ServeConfig::resolve(command_line, PartialConfig::default(), "h")
            .map(|config| config.lease.worker_wait)
    };
    assert_eq!(resolve(Some(3_000), None).unwrap(), Duration::from_secs(3));
    assert_eq!(
        resolve(Some(3_000), Some(500)).unwrap(),
        Duration::from_millis(500)
    );
    assert_eq!(resolve(None, Some(0)).unwrap(), Duration::ZERO);
    let file: PartialConfig = toml::from_str("worker_wait = \"1m\"\n").unwrap();
    let config = ServeConfig::resolve(PartialConfig::default(), file, "h").unwrap();
    assert_eq!(config.lease.worker_wait, Duration::from_secs(60));
}
