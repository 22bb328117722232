//! Whether the test runs as root, and running set-up commands, for the support files that start
//! servers as their service users or mount file systems (included with `#[path]`).
// Each test binary that includes this file uses part of it.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// Whether the effective user is root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|id| id == "0"))
        .unwrap_or(false)
}

/// Panics unless the test runs as root, naming what needs it: such a test must never pass by
/// skipping.
pub fn require_root(what: &str) {
    assert!(
        is_root(),
        "{what} needs root (mount, chattr), as CI runs the tests: run them as root"
    );
}

/// Runs a set-up command (initdb, a client's SQL, a mount) quietly; panics with its output when
/// it fails.
pub fn run_quietly(command: &mut Command) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
