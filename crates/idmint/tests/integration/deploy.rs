//! What the repository ships to run idmint in production, checked with the tools that judge
//! each: the OCI image (`scripts/image`, built with buildah; its root runs idmint under chroot;
//! the `Dockerfile` declares the same), the systemd unit (`systemd-analyze verify` and
//! `security`; idmint run with the unit's settings, credentials and privileges, its system calls
//! held against the unit's filter) and the Kubernetes manifests (`kubernetes-validate`, strict,
//! against a current Kubernetes). `tests/deploy/setup` installs the tools.
//!
//! Each checker is also shown a broken copy and must reject it, so a pass means something.

mod image;
mod kubernetes;
mod systemd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

/// The longest a graceful stop takes: requests drain for at most 10 s, then the segment tails
/// and the worker lease go back to the store in calls of at most `--store-call-timeout` (5 s).
/// The unit's `TimeoutStopSec` and the pods' grace period must be longer.
pub(crate) const STOP_TAKES_AT_MOST: Duration = Duration::from_secs(15);

/// Where `tests/deploy/setup` found or installed the tools.
pub(crate) struct Tools {
    pub(crate) buildah: String,
    pub(crate) strace: String,
    pub(crate) systemd_analyze: String,
    /// A Python with `kubernetes_validate` and `yaml`.
    pub(crate) python: String,
}

/// Installs the tools once per test run (the virtualenv is cached between runs).
pub(crate) fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let [buildah, strace, systemd_analyze, python] = crate::common::run_setup(
            "tests/deploy/setup",
            &["buildah", "strace", "systemd_analyze", "python"],
        )
        .try_into()
        .expect("four values");
        Tools {
            buildah,
            strace,
            systemd_analyze,
            python,
        }
    })
}

/// A file of the repository.
pub(crate) fn repo_file(path: &str) -> PathBuf {
    crate::clients::repo().join(path)
}

/// Runs `command` to its end; its status, stdout and stderr.
pub(crate) fn run(command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{command:?} did not start: {e}"))
}

/// stdout of `command`, which must succeed, trimmed.
pub(crate) fn run_ok(command: &mut Command) -> String {
    let output = run(command);
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The YAML documents of `path` as JSON values, read by PyYAML (safe_load).
pub(crate) fn yaml_documents(path: &Path) -> Vec<Value> {
    let json = run_ok(
        Command::new(&tools().python)
            .args([
                "-c",
                "import json, sys, yaml\n\
                 with open(sys.argv[1]) as f: json.dump(list(yaml.safe_load_all(f)), sys.stdout)",
            ])
            .arg(path),
    );
    let documents: Vec<Value> = serde_json::from_str(&json).unwrap();
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

/// The `IDMINT_*` variables `idmint serve` reads, as its help lists them (`[env: NAME=]`).
pub(crate) fn serve_variables() -> Vec<String> {
    let help = run_ok(Command::new(env!("CARGO_BIN_EXE_idmint")).args(["serve", "--help"]));
    help.split("[env: ")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(['=', ']'])?;
            Some(rest[..end].to_owned())
        })
        .collect()
}
