//! What an operator runs around the server: `serve --check`, the log formats, `idmint health`,
//! the shell completions and the manual pages.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_port, idmint_command, sqlite_url, Server};

/// A fresh, empty folder under the test target's temporary folder.
fn fresh_folder(label: &str) -> PathBuf {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("idmint-operating-tests")
        .join(format!("{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// Runs `idmint args...` to the end, with `env` set, in `cwd`; stdout and stderr kept.
fn idmint(args: &[&str], env: &[(&str, &str)], cwd: &PathBuf) -> Output {
    idmint_command()
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `serve --check` resolves flags over variables over the file, prints every setting with the
/// secrets hidden, and touches nothing: no store folder, no port (one held here stays ours).
#[test]
fn serve_check_prints_every_setting_resolved_with_secrets_hidden_and_opens_nothing() {
    let cwd = fresh_folder("check");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let held_address = held.local_addr().unwrap().to_string();
    let store_file = cwd.join("store-url");
    std::fs::write(
        &store_file,
        "postgres://idmint:pg-s3cret@db.example:5432/ids\n",
    )
    .unwrap();
    let config = cwd.join("idmint.toml");
    std::fs::write(
        &config,
        "max_count = 7\ndefault_step = 50\nadmin_token = \"file-s3cret\"\nlog_format = \"json\"\n",
    )
    .unwrap();
    let out = idmint(
        &[
            "serve",
            "--check",
            "--config",
            config.to_str().unwrap(),
            "--store-file",
            store_file.to_str().unwrap(),
            "--http",
            &held_address,
            "--max-count",
            "9",
        ],
        &[("IDMINT_DEFAULT_STEP", "60"), ("RUST_LOG", "warn")],
        &cwd,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr, "", "a good check says nothing on stderr");
    for secret in ["pg-s3cret", "file-s3cret"] {
        assert!(!stdout.contains(secret), "{secret} shown:\n{stdout}");
    }
    // What it prints is TOML with every setting a node has no matter what is given.
    let shown: toml::Table = stdout.parse().unwrap();
    let expect = |key: &str, value: &str| {
        assert_eq!(
            shown.get(key).map(ToString::to_string).as_deref(),
            Some(value),
            "{key}:\n{stdout}"
        );
    };
    expect("max_count", "9"); // the flag over the file's 7
    expect("default_step", "60"); // the variable over the file's 50
    expect("log_format", "\"json\""); // the file over the default
    expect("log_filter", "\"warn\""); // RUST_LOG, when --log-filter is not given
    expect("admin_token", "\"<hidden>\"");
    expect("http", &format!("\"{held_address}\""));
    expect("store", "[\"postgres://idmint:***@db.example:5432/ids\"]");
    let command = <idmint_server::config::PartialConfig as clap::Args>::augment_args(
        clap::Command::new("serve"),
    );
    let optional = [
        "home_store",
        "epoch",
        "admin_token_file",
        "tokens_file",
        "tls_cert",
        "tls_key",
        "permutation_key_file",
    ];
    for key in command
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .map(|long| long.replace('-', "_"))
        .filter(|key| !optional.contains(&key.as_str()))
    {
        assert!(shown.contains_key(&key), "{key} not shown:\n{stdout}");
    }
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        2,
        "only the two files written here are in the working folder"
    );
    drop(held);

    // What start-up would warn of is a warning on stderr, the settings still good: a listener
    // beyond this machine with no token; none once a token is set.
    let open = idmint(&["serve", "--check", "--http", "0.0.0.0:0"], &[], &cwd);
    assert!(open.status.success(), "{}", text(&open.stderr));
    let warning = text(&open.stderr);
    assert!(
        warning.starts_with("warning: --http 0.0.0.0:0 listens beyond this machine")
            && warning.lines().count() == 1,
        "{warning}"
    );
    let closed = idmint(
        &["serve", "--check", "--http", "0.0.0.0:0"],
        &[("IDMINT_ADMIN_TOKEN", "t0ken")],
        &cwd,
    );
    assert!(closed.status.success());
    assert_eq!(text(&closed.stderr), "");

    // The embedded default: nothing is created where the store would be.
    let out = idmint(&["serve", "--check"], &[], &cwd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !cwd.join("idmint-data").exists(),
        "--check made the data folder"
    );
    assert!(text(&out.stdout).contains("idmint-data/idmint.db"));
}

/// `--log-format json`: every line the server writes, from start to stop, is one JSON object
/// with a timestamp, a level, a target and a message, and the event's fields beside them.
#[test]
fn json_logs_are_one_object_a_line_with_the_fields() {
    let cwd = fresh_folder("json-logs");
    let (http, resp) = (free_port(), free_port());
    let mut child = idmint_command()
        .current_dir(&cwd)
        .args(["serve", "--log-format", "json", "--log-filter", "info"])
        .args(["--store", &sqlite_url("json-logs")])
        .args(["--http", &format!("127.0.0.1:{http}")])
        .args(["--resp", &format!("127.0.0.1:{resp}")])
        .args(["--node-name", "json-node"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let line = lines.next().expect("the log ended before serving").unwrap();
        let serving = line.contains("idmint serving");
        seen.push(line);
        if serving {
            break;
        }
    }
    let taken = idmint(
        &[
            "next",
            "--count",
            "2",
            "--server",
            &format!("http://127.0.0.1:{http}"),
        ],
        &[],
        &cwd,
    );
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    assert_eq!(text(&taken.stdout).lines().count(), 2);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    seen.extend(lines.map_while(Result::ok));
    assert!(child.wait().unwrap().success());

    assert!(seen.len() >= 4, "{seen:#?}");
    for line in &seen {
        let object: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON object ({e}): {line}"));
        for key in ["timestamp", "level", "target", "message"] {
            assert!(object[key].is_string(), "{key} missing: {line}");
        }
        let timestamp = object["timestamp"].as_str().unwrap();
        assert!(
            timestamp.len() == 24 && timestamp.ends_with('Z') && timestamp.starts_with("20"),
            "{timestamp}"
        );
        assert!(!line.contains('\u{1b}'), "colour codes in {line}");
    }
    let serving: serde_json::Value =
        serde_json::from_str(seen.iter().find(|l| l.contains("idmint serving")).unwrap()).unwrap();
    assert_eq!(serving["level"], "INFO");
    assert_eq!(serving["node"], "json-node");
    assert_eq!(serving["http"], format!("127.0.0.1:{http}"));
    assert!(serving["worker_id"].is_u64(), "{serving}");
}

/// Text logs into a pipe carry no colour codes, even with NO_COLOR unset.
#[test]
fn text_logs_into_a_pipe_have_no_colour() {
    // An empty NO_COLOR is as good as none (no-color.org).
    let server = Server::start_with_env(
        &sqlite_url("text-logs"),
        "text-node",
        &[],
        &[("NO_COLOR", "")],
    );
    let log = [server.startup.clone(), vec![server.serving.clone()]].concat();
    server.stop();
    assert!(log.iter().all(|line| !line.contains('\u{1b}')), "{log:#?}");
}

/// `idmint health` says by its exit status whether a server lives and is ready; one that is
/// not there is a failure (1) naming it, a bad flag a usage error (2).
#[test]
fn health_asks_a_running_server() {
    let server = Server::start(&sqlite_url("health"), "health-node");
    let cwd = fresh_folder("health");
    for args in [vec!["health"], vec!["health", "--ready"]] {
        let out = idmint(
            &[&args[..], &["--server", &server.http]].concat(),
            &[],
            &cwd,
        );
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("\"status\""),
            "{}",
            text(&out.stdout)
        );
    }
    // The variable the other client commands read names the server too.
    let out = idmint(&["health"], &[("IDMINT_SERVER", &server.http)], &cwd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    server.stop();

    let gone = format!("http://127.0.0.1:{}", free_port());
    let out = idmint(&["health", "--server", &gone, "--timeout", "2s"], &[], &cwd);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with(&format!("error: cannot reach the server at {gone}")),
        "{}",
        text(&out.stderr)
    );
    let out = idmint(&["health", "--server", "127.0.0.1:8080"], &[], &cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: --server: "));
}

/// The completion scripts and the manual pages come from the command definitions: they name
/// the newest settings, the bash script is valid bash, the pages are roff `man` can read.
#[test]
fn completions_and_manual_pages_are_made_from_the_definitions() {
    let cwd = fresh_folder("docs");
    for (shell, mark) in [
        ("bash", "complete -F _idmint"),
        ("zsh", "#compdef idmint"),
        ("fish", "complete -c idmint"),
    ] {
        let out = idmint(&["completions", shell], &[], &cwd);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(mark), "{shell}: no `{mark}`");
        for name in ["serve", "log-format", "check", "health"] {
            assert!(script.contains(name), "{shell}: no {name}");
        }
    }
    let bash = idmint(&["completions", "bash"], &[], &cwd).stdout;
    let mut check = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    check.stdin.take().unwrap().write_all(&bash).unwrap();
    assert!(
        check.wait().unwrap().success(),
        "bash -n refused the script"
    );
    let out = idmint(&["completions", "tcsh"], &[], &cwd);
    assert_eq!(out.status.code(), Some(2));

    let page = text(&idmint(&["man"], &[], &cwd).stdout);
    assert!(page.contains(".TH idmint 1"), "{page}");
    assert!(page.contains("idmint\\-serve(1)"), "{page}");
    let serve = text(&idmint(&["man", "serve"], &[], &cwd).stdout);
    assert!(serve.contains(".TH idmint-serve 1"), "{serve}");
    assert!(
        serve.contains("IDMINT_LOG_FORMAT"),
        "no variables in the page"
    );
    assert!(
        serve.contains("[default: 127.0.0.1:8080]"),
        "no defaults in the page"
    );
    let out = idmint(&["man", "serv"], &[], &cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: COMMAND: `serv` is not a command"));

    let pages = cwd.join("man1");
    std::fs::create_dir_all(&pages).unwrap();
    let out = idmint(&["man", "--dir", pages.to_str().unwrap()], &[], &cwd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for name in [
        "idmint.1",
        "idmint-serve.1",
        "idmint-next.1",
        "idmint-health.1",
    ] {
        assert!(pages.join(name).is_file(), "{name} not written");
    }
    // `man` renders each page without a warning.
    for name in ["idmint.1", "idmint-serve.1"] {
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(pages.join(name))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{name}: man warned");
        assert!(text(&out.stdout).contains("idmint"));
    }
}
