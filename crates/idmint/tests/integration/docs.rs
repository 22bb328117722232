//! The doc tests: the runnable blocks of the docs run against a real node, and every relative
//! link of the repository's Markdown files resolves.
//!
//! A fenced block is runnable when its info string carries a marker (docs/testing.md says the
//! same for writers):
//!
//! - ```` ```sh run ````: shell commands. A block whose lines start with `$ ` is a transcript:
//!   each `$ command` (continued by a trailing `\`) runs, and the lines after it, when there are
//!   any, are what it must print on stdout. Otherwise the block runs as it stands.
//! - ```` ```sh serve ````: one `idmint serve ...` command. The file's node is stopped
//!   (SIGTERM, it must exit cleanly) and started again so.
//! - ```` ```python run ````: Python, run by the Python in which `tests/clients/setup`
//!   installed idmint-client.
//!
//! Each doc file runs in one bash with `set -e`, its blocks in order, in a fresh folder
//! (so `./idmint-data` is the node's default store), with a node started by `idmint serve`
//! before the first block (unless that block is a `sh serve`) and stopped after the last. The
//! node listens on free ports: 8080 and 6380 standing alone in a block are rewritten to them,
//! and `IDMINT_HTTP`, `IDMINT_RESP` and `IDMINT_SERVER` point there. `idmint` on the PATH is
//! the binary under test; `redis-cli` prints as it does at a terminal (`--no-raw`), as readers
//! see it. A shown output matches line by line, where a run of digits in the doc matches any
//! run of digits (IDs, times and counters differ from run to run), a UUID (8-4-4-4-12 lowercase
//! hex) any UUID, a ULID (26 characters of Crockford's base32) any ULID, `...` matches any
//! text, and a line of only `...` any number of lines.

#[path = "docs/extract.rs"]
mod extract;
#[path = "docs/links.rs"]
mod links;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::clients::repo;
use crate::common::free_port;

/// The longest one doc file may run.
const FILE_TIMEOUT: Duration = Duration::from_secs(300);

/// A folder holding `idmint` (the binary under test) and a `redis-cli` that prints as at a
/// terminal, put first on the blocks' PATH; made once per test run.
fn tools() -> &'static Path {
    static TOOLS: OnceLock<PathBuf> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let [redis_cli] = crate::common::run_setup("tests/docs/setup", &["redis_cli"])
            .try_into()
            .expect("one value");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("idmint-docs-bin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_idmint"), dir.join("idmint")).unwrap();
        let wrapper = dir.join("redis-cli");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh\nexec '{redis_cli}' --no-raw \"$@\"\n"),
        )
        .unwrap();
        Command::new("chmod")
            .args(["+x"])
            .arg(&wrapper)
            .status()
            .unwrap();
        dir
    })
}

/// Runs the runnable blocks of `markdown` (shown as `name` in failures); `Err` says which doc
/// line failed and why.
fn run_doc(name: &str, markdown: &str) -> Result<(), String> {
    let blocks = extract::blocks(markdown);
    if blocks.is_empty() {
        return Ok(());
    }
    let (http, resp) = (free_port(), free_port());
    let script = extract::script(&blocks, http, resp).map_err(|e| format!("{name}: {e}"))?;
    let python = if blocks.iter().any(|b| b.kind == extract::Kind::Python) {
        crate::clients::libraries().python.clone()
    } else {
        PathBuf::from("python3")
    };
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "idmint-docs-{}-{}",
        name.replace(['/', '.'], "-"),
        std::process::id()
    ));
    let (work, state) = (folder.join("work"), folder.join("state"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("script.sh"), &script.text).unwrap();
    let console = std::fs::File::create(state.join("console.log")).unwrap();

    let mut command = Command::new("bash");
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if (key.starts_with("IDMINT_") && !key.starts_with("IDMINT_TEST_")) || key == "RUST_LOG" {
            command.env_remove(&*key);
        }
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let mut child = command
        .arg(state.join("script.sh"))
        .current_dir(&work)
        .env("PATH", format!("{}:{path}", tools().display()))
        .env("NO_COLOR", "1")
        .env("IDMINT_HTTP", format!("127.0.0.1:{http}"))
        .env("IDMINT_RESP", format!("127.0.0.1:{resp}"))
        .env("IDMINT_SERVER", format!("http://127.0.0.1:{http}"))
        .env("IDMINT_DOCS_STATE", &state)
        .env("IDMINT_DOCS_PYTHON", &python)
        .stdin(Stdio::null())
        .stdout(console.try_clone().unwrap())
        .stderr(console)
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > FILE_TIMEOUT {
            // The whole group: bash, the node it started and whatever a block left running.
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            return Err(format!("{name}: still running after {FILE_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let console = std::fs::read_to_string(state.join("console.log")).unwrap_or_default();
    let tail = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    if !status.success() {
        let line = std::fs::read_to_string(state.join("failed_at"))
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .and_then(|n| script.doc_line(n))
            .map_or_else(|| "?".to_owned(), |n| n.to_string());
        return Err(format!(
            "{name}:{line}: the block failed ({status}); its output:\n{}",
            tail(&console)
        ));
    }
    for (k, check) in script.checks.iter().enumerate() {
        let printed = std::fs::read_to_string(state.join(format!("out-{k}"))).unwrap_or_default();
        let lines: Vec<&str> = printed.lines().collect();
        if !extract::output_matches(&check.expected, &lines) {
            return Err(format!(
                "{name}:{}: `{}` printed\n{}\nwhere the doc shows\n{}",
                check.line,
                check.command,
                printed.trim_end(),
                check.expected.join("\n")
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
    Ok(())
}

/// Runs the runnable blocks of the repository's file `path`, failing the test with the line.
fn check_file(path: &str) {
    let markdown = std::fs::read_to_string(repo().join(path)).unwrap();
    if let Err(failure) = run_doc(path, &markdown) {
        panic!("{failure}");
    }
}

/// A test per doc file with runnable blocks, and the list they make.
macro_rules! doc_files {
    ($($test:ident => $path:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_file($path);
            }
        )*
        const DOC_FILES: &[&str] = &[$($path),*];
    };
}

doc_files! {
    readme_runs => "README.md",
    getting_started_runs => "docs/getting-started.md",
    api_runs => "docs/api.md",
    layouts_runs => "docs/layouts.md",
    stores_runs => "docs/stores.md",
    operating_runs => "docs/operating.md",
    security_runs => "docs/security.md",
    clients_runs => "docs/clients.md",
    migrating_runs => "docs/migrating.md",
    id_forms_runs => "docs/id-forms.md",
    settings_runs => "docs/settings.md",
    python_client_readme_runs => "clients/python/README.md",
}

/// A new doc file with runnable blocks gets its test: none is left out of [`DOC_FILES`].
#[test]
fn every_doc_with_runnable_blocks_has_its_test() {
    let root = repo().canonicalize().unwrap();
    for file in links::markdown_files(&root) {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let markdown = std::fs::read_to_string(&file).unwrap();
        assert!(
            extract::blocks(&markdown).is_empty() || DOC_FILES.contains(&name.as_str()),
            "{name} has runnable blocks: add it to doc_files! in docs.rs"
        );
    }
}

/// Every relative link of every Markdown file names an existing file (and heading).
#[test]
fn every_relative_link_resolves() {
    let root = repo().canonicalize().unwrap();
    let broken: Vec<String> = links::markdown_files(&root)
        .iter()
        .flat_map(|file| links::broken_links(file, &root))
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The harness itself: a passing sample passes, and a failing command, a wrong output and a
/// malformed serve block are each caught with their line.
#[test]
fn the_harness_catches_broken_blocks() {
    let good = "# Sample\n\n```sh run\n$ idmint next --tag orders\n1\n$ echo 8080 6380\n...\n```\n\n```sh run\nidmint next --tag orders >/dev/null\n```\n";
    run_doc("good.md", good).unwrap();

    let failing = "# Sample\n\nText.\n\n```sh run\ntrue\nidmint no-such-command\n```\n";
    let failure = run_doc("failing.md", failing).unwrap_err();
    assert!(failure.starts_with("failing.md:7: "), "{failure}");

    let wrong = "```sh run\n$ idmint next --tag orders --count 2\n1\n```\n";
    let failure = run_doc("wrong.md", wrong).unwrap_err();
    assert!(failure.starts_with("wrong.md:2: "), "{failure}");

    let not_serve = "```sh serve\nidmint next --tag orders\n```\n";
    let failure = run_doc("serve.md", not_serve).unwrap_err();
    assert!(failure.contains("one `idmint serve ...`"), "{failure}");

    let dying = "```sh serve\nidmint serve --max-count 0\n```\n";
    let failure = run_doc("dying.md", dying).unwrap_err();
    assert!(failure.starts_with("dying.md:2: "), "{failure}");
    assert!(failure.contains("--max-count"), "{failure}");
}

/// The rules of the output check and the port rewriting, on their own.
#[test]
fn outputs_match_by_shape_and_ports_are_rewritten() {
    use extract::{line_matches, output_matches, rewrite_ports};
    assert!(line_matches(
        r#"{"ids":["250023905681473536","2"]}"#,
        r#"{"ids":["7","12345"]}"#
    ));
    assert!(!line_matches(r#"{"ids":["1"]}"#, r#"{"ids":["a"]}"#));
    assert!(!line_matches("(integer) 3", "(integer) "));
    assert!(line_matches(
        "error: ... (set by IDMINT_MAX_COUNT)",
        "error: --max-count: must be at least 1 (set by IDMINT_MAX_COUNT)"
    ));
    assert!(!line_matches("exact", "exactly"));
    // 128-bit IDs match by form: any UUID for a UUID, any ULID for a ULID, nothing else.
    let uuid = r#"{"ids":["019ac2a4-7c2e-7a3b-8d4e-5f60718293a4"]}"#;
    assert!(line_matches(
        uuid,
        r#"{"ids":["01a21f3f-6117-7469-8370-6b39032e5fd4"]}"#
    ));
    assert!(!line_matches(
        uuid,
        r#"{"ids":["01a21f3f-6117-7469-8370-6b39032e5fd"]}"#
    ));
    assert!(!line_matches(
        uuid,
        r#"{"ids":["01A21F3F-6117-7469-8370-6B39032E5FD4"]}"#
    ));
    assert!(line_matches(
        "\"01KB2Z6J7R5W3XQ0M8N4P2D9TA\"",
        "\"01M8FKYR975KWDK49PENVQXQRB\""
    ));
    assert!(!line_matches(
        "\"01KB2Z6J7R5W3XQ0M8N4P2D9TA\"",
        "\"01M8FKYR975KWDK49PENVQXQR\""
    ));
    assert!(!line_matches(
        "\"01KB2Z6J7R5W3XQ0M8N4P2D9TA\"",
        "\"01M8FKYR975KWDK49PENVQXQRU\""
    ));
    let expected: Vec<String> = ["first", "...", "last 1"].map(String::from).to_vec();
    assert!(output_matches(&expected, &["first", "a", "b", "last 99"]));
    assert!(output_matches(&expected, &["first", "last 2"]));
    assert!(!output_matches(&expected, &["first", "a"]));
    assert_eq!(
        rewrite_ports(
            "curl localhost:8080/x; redis-cli -p 6380; id 2508080123",
            1234,
            5678
        ),
        "curl localhost:1234/x; redis-cli -p 5678; id 2508080123"
    );
    let blocks =
        extract::blocks("```sh\nnot run\n```\n```sh run\nrun\n```\n````python run\nx\n````\n");
    assert_eq!(blocks.len(), 2);
    assert_eq!((blocks[0].kind, blocks[0].line), (extract::Kind::Shell, 5));
    assert_eq!(blocks[1].kind, extract::Kind::Python);
}

/// The link checker finds a missing file and a missing anchor, and GitHub's anchors.
#[test]
fn the_link_checker_catches_broken_links() {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("idmint-docs-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("b.md"),
        "# B\n\n## The `serve --check` flag: why?\n",
    )
    .unwrap();
    let sample = "[ok](b.md) [ok](b.md#the-serve---check-flag-why) [web](https://x.y/z.md)\n\
                  `[code](nowhere.md)`\n\n[gone](c.md)\n[bad anchor](b.md#nope)\n\
                  ```\n[in a block](nowhere.md)\n```\n";
    std::fs::write(folder.join("a.md"), sample).unwrap();
    let broken = links::broken_links(&folder.join("a.md"), &folder);
    assert_eq!(
        broken,
        [
            "a.md:4: c.md: no such file",
            "a.md:5: b.md#nope: no heading has this anchor"
        ]
    );
    let _ = std::fs::remove_dir_all(&folder);
}
