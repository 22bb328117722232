//! The systemd unit, `deploy/systemd/idmint.service`: `systemd-analyze verify` finds nothing
//! to say about it (and does about broken copies), `systemd-analyze security` scores it as
//! deploy/README.md says, and idmint runs with what the unit gives it. systemd is not the init
//! process of the machines the tests run on, so the unit cannot be started; instead idmint runs
//! with the unit's variables and credentials, as an unprivileged user with no capabilities and
//! no new privileges (setpriv), under strace, and every system call and socket family it used
//! must be one the unit's filters allow.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{repo_file, run, run_ok, serve_variables, tools, STOP_TAKES_AT_MOST};
use crate::common::Server;
use crate::security::{address, folder, http, Resp};

/// Where the unit expects the binary.
const EXEC_PATH: &str = "/usr/local/bin/idmint";
/// A user ID from the range systemd gives dynamic users (61184–65519).
const DYNAMIC_UID: u32 = 61184;
const ADMIN: &str = "unit-admin-token-0123456789abcdef";
const METRICS: &str = "unit-metrics-token-0123456789abcdef";

/// The unit's text.
fn unit() -> String {
    std::fs::read_to_string(repo_file("deploy/systemd/idmint.service")).unwrap()
}

/// The values of `key=` lines of the unit, in order; with `commented`, also those of lines
/// commented out (`#key=`: the optional ones a user enables).
fn values(unit: &str, key: &str, commented: bool) -> Vec<String> {
    let prefix = format!("{key}=");
    unit.lines()
        .filter_map(|line| {
            let line = if commented {
                line.trim_start_matches('#')
            } else {
                line
            };
            line.strip_prefix(&prefix).map(str::to_owned)
        })
        .collect()
}

/// `systemd-analyze verify` on `text` saved as idmint.service (the name systemd derives the
/// unit's from), with the binary path pointing at the test's binary; its exit status and
/// everything it printed.
fn verify(dir: &Path, text: &str) -> (bool, String) {
    let path = dir.join("idmint.service");
    std::fs::write(&path, text.replace(EXEC_PATH, env!("CARGO_BIN_EXE_idmint"))).unwrap();
    let output = run(Command::new(&tools().systemd_analyze)
        .args(["verify", "--man=no"])
        .arg(&path));
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), said)
}

/// The unit verifies with nothing to report; each broken copy makes the verifier speak or fail
/// (it only warns about a bad value, so any output counts as a rejection).
#[test]
fn unit_verifies_and_broken_units_do_not() {
    let dir = folder("systemd-verify");
    let unit = unit();
    let (ok, said) = verify(&dir, &unit);
    assert!(
        ok && said.trim().is_empty(),
        "systemd-analyze verify: {said}"
    );

    let broken = [
        ("ProtectSystem=strict", "ProtectSystem=sideways"),
        ("Type=exec", "Type=exce"),
        ("NoNewPrivileges=yes", "NoNewPrivilege=yes"),
        (
            "SystemCallFilter=@system-service",
            "SystemCallFilter=@system-servic",
        ),
        (EXEC_PATH, "/nonexistent/idmint"),
    ];
    for (from, to) in broken {
        assert!(unit.contains(from), "the unit has no {from}");
        let text = if from == EXEC_PATH {
            unit.replace(from, to)
        } else {
            unit.replacen(from, to, 1)
        };
        let (ok, said) = verify(&dir, &text);
        assert!(
            !ok || !said.trim().is_empty(),
            "systemd-analyze verify took `{to}` without a word"
        );
    }
}

/// `systemd-analyze security` gives the unit a low exposure, the one deploy/README.md states;
/// without its sandbox lines the same unit scores far worse, so the score measures them.
#[test]
fn unit_security_exposure_is_low_and_documented() {
    let dir = folder("systemd-security");
    let unit = unit();
    let score = exposure(&dir, &unit);
    assert!(score <= 2.0, "exposure {score}, above 2.0");
    let readme = std::fs::read_to_string(repo_file("deploy/README.md")).unwrap();
    let stated = format!("overall exposure level **{score:.1}**");
    assert!(
        readme.contains(&stated),
        "deploy/README.md does not say {stated}"
    );

    let sandbox_start = unit.find("# Sandbox.").expect("a # Sandbox. section");
    let sandbox_end = unit[sandbox_start..]
        .find("\n\n")
        .map_or(unit.len(), |end| sandbox_start + end);
    let open = format!("{}{}", &unit[..sandbox_start], &unit[sandbox_end..]);
    let open_score = exposure(&dir, &open);
    assert!(
        open_score > score + 3.0,
        "without its sandbox the unit scores {open_score} (with it, {score})"
    );
}

/// The overall exposure `systemd-analyze security --offline=true` gives `text` as a unit.
fn exposure(dir: &Path, text: &str) -> f64 {
    let path = dir.join("idmint.service");
    std::fs::write(&path, text.replace(EXEC_PATH, env!("CARGO_BIN_EXE_idmint"))).unwrap();
    let report = run_ok(
        Command::new(&tools().systemd_analyze)
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&path),
    );
    let line = report
        .lines()
        .find(|line| line.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no overall exposure in: {report}"));
    line.rsplit(':')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|figure| figure.parse().ok())
        .unwrap_or_else(|| panic!("no figure in: {line}"))
}

/// A folder under /tmp that the dynamic user can reach (the target folder is under root's
/// home), removed when dropped.
struct Reachable {
    dir: PathBuf,
}

impl Reachable {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("idmint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    /// A folder of `mode` owned by the dynamic user.
    fn owned(&self, name: &str, mode: u32) -> PathBuf {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(DYNAMIC_UID), Some(DYNAMIC_UID)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    }
}

impl Drop for Reachable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// idmint serves with the unit's variables and every credential the unit names (optional ones
/// enabled), as a dynamic user without capabilities or new privileges; the unit stops it in
/// time; every system call idmint made over HTTP, the Redis protocol, a reload and a graceful
/// stop is one the unit's system call filter allows, and every socket it opened of a family
/// the unit allows.
#[test]
fn idmint_runs_with_the_units_settings_and_privileges() {
    let unit = unit();
    let stop: u64 = values(&unit, "TimeoutStopSec", false)[0].parse().unwrap();
    assert!(
        stop > STOP_TAKES_AT_MOST.as_secs(),
        "TimeoutStopSec={stop} is not above the {STOP_TAKES_AT_MOST:?} a graceful stop takes"
    );
    assert_eq!(values(&unit, "DynamicUser", false), ["yes"]);
    assert_eq!(values(&unit, "StateDirectory", false), ["idmint"]);
    assert_eq!(
        values(&unit, "ExecReload", false),
        ["/bin/kill -HUP $MAINPID"]
    );

    let place = Reachable::new("unit");
    let state = place.owned("state", 0o755);
    let state_dir = place.owned("state/idmint", 0o700);
    let credentials = place.owned("credentials", 0o500);
    let trace_dir = place.owned("trace", 0o700);
    let binary = place.dir.join("idmint");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_idmint"), &binary).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_idmint"), &binary).unwrap();
    }

    // The credentials the unit loads, by name, as files only the service's user reads.
    let mut loaded = BTreeSet::new();
    for credential in values(&unit, "LoadCredential", true) {
        let (name, _source) = credential.split_once(':').expect("NAME:PATH");
        let content = match name {
            "admin-token" => format!("{ADMIN}\n"),
            "tokens.toml" => format!(
                "[[token]]\nname = \"prometheus\"\nscope = \"metrics\"\nsecret = \"{METRICS}\"\n"
            ),
            "store" => format!("sqlite://{}/ids.db\n", state_dir.display()),
            other => panic!("a credential the test does not know: {other}"),
        };
        let file = credentials.join(name);
        std::fs::write(&file, content).unwrap();
        std::os::unix::fs::chown(&file, Some(DYNAMIC_UID), Some(DYNAMIC_UID)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        loaded.insert(name.to_owned());
    }

    // The unit's variables, with %S (the state root) and %d (the credentials folder) as
    // systemd fills them in.
    let known = serve_variables();
    let mut env = Vec::new();
    for assignment in values(&unit, "Environment", true) {
        let (name, value) = assignment.split_once('=').expect("NAME=VALUE");
        assert!(known.iter().any(|k| k == name), "idmint reads no {name}");
        if let Some(credential) = value.strip_prefix("%d/") {
            assert!(
                loaded.contains(credential),
                "{name} names an unloaded {credential}"
            );
        }
        let value = value
            .replace("%S", &state.display().to_string())
            .replace("%d", &credentials.display().to_string());
        env.push((name.to_owned(), value));
    }

    // The settings check passes on them and shows no secret.
    let check = run(Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(["serve", "--check"])
        .env_clear()
        .envs(env.iter().map(|(n, v)| (n, v))));
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "serve --check: {check:?}");
    assert!(
        !shown.contains(ADMIN) && !shown.contains(METRICS),
        "{shown}"
    );

    // The unit's privileges: its own user, no capabilities, no new privileges.
    let trace = trace_dir.join("trace");
    let mut command = Command::new("/usr/bin/setpriv");
    command
        .arg(format!("--reuid={DYNAMIC_UID}"))
        .arg(format!("--regid={DYNAMIC_UID}"))
        .args(["--clear-groups", "--no-new-privs"])
        .args(["--bounding-set=-all", "--inh-caps=-all"])
        .arg(&tools().strace)
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .arg(&binary)
        .args(["serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .current_dir(&state_dir)
        .env_clear()
        .envs(env)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let server = Server::start_command(command);
    let idmint = traced_child(server.pid());

    let addr = address(&server.http);
    assert_eq!(http(addr, "GET", "/healthz", None).0, 200);
    assert_eq!(
        http(addr, "GET", "/v1/snowflake", None).0,
        401,
        "no token asked"
    );
    assert_eq!(http(addr, "GET", "/v1/snowflake", Some(ADMIN)).0, 200);
    assert_eq!(http(addr, "GET", "/metrics", Some(METRICS)).0, 200);
    let mut resp = Resp::connect(address(&server.resp));
    assert_eq!(resp.call(&["AUTH", ADMIN]), "+OK");
    assert_eq!(resp.call(&["INCR", "unit"]), ":1");
    assert!(resp.call(&["INFO"]).contains("idmint_version"));
    drop(resp);
    // A reload, as ExecReload sends it: the tokens file read again.
    assert!(Command::new("kill")
        .args(["-HUP", &idmint.to_string()])
        .status()
        .unwrap()
        .success());
    let reloaded = std::time::Instant::now();
    while !server
        .log()
        .iter()
        .any(|line| line.contains("tokens reloaded"))
    {
        assert!(
            reloaded.elapsed() < std::time::Duration::from_secs(10),
            "no reload logged"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server.stop_through(idmint);
    assert!(
        state_dir.join("ids.db").is_file(),
        "the store is not where the unit put it"
    );

    let trace = std::fs::read_to_string(&trace).unwrap();
    let (calls, families) = calls_and_families(&trace);
    assert!(
        calls.contains("accept4") && calls.contains("fsync"),
        "{calls:?}"
    );
    let mut filter = values(&unit, "SystemCallFilter", false);
    let allowed = filter_allows(&filter);
    let refused: Vec<_> = calls.difference(&allowed).collect();
    assert!(
        refused.is_empty(),
        "idmint made system calls the unit's SystemCallFilter refuses: {refused:?}"
    );
    // The comparison can fail: a filter without network I/O refuses calls idmint made.
    filter.push("~@network-io".to_owned());
    assert!(!calls.is_subset(&filter_allows(&filter)));
    let allowed_families: BTreeSet<String> = values(&unit, "RestrictAddressFamilies", false)
        .iter()
        .flat_map(|line| line.split_whitespace().map(str::to_owned))
        .collect();
    let refused: Vec<_> = families.difference(&allowed_families).collect();
    assert!(
        refused.is_empty(),
        "idmint opened sockets of families the unit refuses: {refused:?}"
    );
    assert!(families.contains("AF_INET"), "no socket seen: {families:?}");
}

/// The process strace runs (its only child).
fn traced_child(strace: u32) -> u32 {
    let children =
        std::fs::read_to_string(format!("/proc/{strace}/task/{strace}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .expect("strace runs no child")
}

/// The names of the system calls in an strace log (`PID name(...`, `PID <... name resumed>`),
/// and the address families of the sockets it opened.
fn calls_and_families(trace: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut calls = BTreeSet::new();
    let mut families = BTreeSet::new();
    for line in trace.lines() {
        let rest = line
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        let rest = rest.strip_prefix("<... ").unwrap_or(rest);
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[name.len()..];
        if name.is_empty() || !(after.starts_with('(') || after.starts_with(" resumed")) {
            continue;
        }
        if name == "socket" || name == "socketpair" {
            if let Some(family) = after
                .trim_start_matches('(')
                .split([',', ')'])
                .next()
                .filter(|f| f.starts_with("AF_"))
            {
                families.insert(family.to_owned());
            }
        }
        calls.insert(name);
    }
    (calls, families)
}

/// The system calls `SystemCallFilter=` lines allow: the first line's groups and names, less
/// those of later `~` lines.
fn filter_allows(lines: &[String]) -> BTreeSet<String> {
    let mut allowed = BTreeSet::new();
    for line in lines {
        let (deny, list) = match line.strip_prefix('~') {
            Some(list) => (true, list),
            None => (false, line.as_str()),
        };
        for item in list.split_whitespace() {
            let names = expand(item);
            if deny {
                allowed.retain(|name| !names.contains(name));
            } else {
                allowed.extend(names);
            }
        }
    }
    allowed
}

/// The system calls of `item`: a name, or a `@group` as `systemd-analyze syscall-filter` lists
/// it, its subgroups expanded.
fn expand(item: &str) -> BTreeSet<String> {
    if !item.starts_with('@') {
        return BTreeSet::from([item.to_owned()]);
    }
    let listing =
        run_ok(Command::new(&tools().systemd_analyze).args(["syscall-filter", "--no-pager", item]));
    let mut names = BTreeSet::new();
    for line in listing.lines().skip(1) {
        let entry = line.trim();
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        names.extend(expand(entry));
    }
    assert!(!names.is_empty(), "systemd-analyze knows no {item}");
    names
}
