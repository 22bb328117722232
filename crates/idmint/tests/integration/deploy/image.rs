//! The OCI image: `scripts/image` builds it from the test's own binary (no release build) into
//! buildah storage of the test's own, which goes at the end; the image's root is mounted and runs
//! `idmint` under chroot as the image's user, serving from its volume; its configuration is the
//! one the `Dockerfile` declares.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{repo_file, run, run_ok, tools};
use crate::common::Server;
use crate::security::{address, folder, http};

/// The image's user and group.
const USER: &str = "10001:10001";
/// Where the binary is in the image.
const BINARY: &str = "/usr/local/bin/idmint";

/// buildah storage (vfs driver) of one test, with every container and image in it removed when
/// dropped, passed or failed.
struct Storage {
    dir: PathBuf,
}

impl Storage {
    fn new(name: &str) -> Self {
        Self { dir: folder(name) }
    }

    /// buildah on this storage.
    fn buildah(&self) -> Command {
        let mut command = Command::new(&tools().buildah);
        command
            .args(["--storage-driver", "vfs", "--root"])
            .arg(self.dir.join("root"))
            .arg("--runroot")
            .arg(self.dir.join("run"));
        command
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        for args in [&["rm", "--all"][..], &["rmi", "--all", "--force"]] {
            let _ = self
                .buildah()
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `scripts/image` builds an image whose root, mounted, runs idmint: its version, its settings
/// check, a node that serves IDs as the image's user from the image's volume, and the health
/// check against it; the image declares the user, entry point, command, volume, ports, health
/// check and labels.
#[test]
fn image_root_runs_idmint() {
    let storage = Storage::new("image");
    let built = run(Command::new(repo_file("scripts/image"))
        .env("IDMINT_IMAGE_BINARY", env!("CARGO_BIN_EXE_idmint"))
        .env("IDMINT_IMAGE_STORAGE", &storage.dir)
        .env_remove("IDMINT_IMAGE_NAME")
        .stderr(Stdio::inherit()));
    assert!(built.status.success(), "scripts/image failed");
    let stdout = String::from_utf8_lossy(&built.stdout);
    let name = stdout.lines().last().unwrap_or_default().to_owned();
    assert_eq!(
        name,
        format!("localhost/idmint:{}", env!("CARGO_PKG_VERSION"))
    );

    let config = image_config(&storage, &name);
    assert_eq!(config["User"], USER, "not the image's own user: {config}");
    assert_eq!(config["Entrypoint"], json!([BINARY]));
    assert_eq!(config["Cmd"], json!(["serve"]));
    assert_eq!(config["WorkingDir"], "/data");
    assert_eq!(config["Volumes"], json!({"/data": {}}));
    assert_eq!(
        config["ExposedPorts"],
        json!({"8080/tcp": {}, "6380/tcp": {}})
    );
    assert_eq!(
        config["Healthcheck"]["Test"],
        json!(["CMD", BINARY, "health"])
    );
    let env = image_env(&config);
    assert_eq!(env["IDMINT_DATA_DIR"], "/data");
    assert_eq!(env["IDMINT_HTTP"], "0.0.0.0:8080");
    assert_eq!(env["IDMINT_RESP"], "0.0.0.0:6380");
    let labels = &config["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    assert!(labels["org.opencontainers.image.source"]
        .as_str()
        .is_some_and(|s| s.starts_with("https://")));
    assert_same_as_dockerfile(&config);

    let container = run_ok(storage.buildah().args(["from", "--pull-never", &name]));
    let root = PathBuf::from(run_ok(storage.buildah().args(["mount", &container])));
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(passwd.contains(":10001:10001:"), "{passwd}");
    assert!(root.join("etc/ssl/certs/ca-certificates.crt").is_file());

    // Only what the image holds: every library the binary links came along.
    let version = run_ok(chroot(&root, USER, &env).arg("--version"));
    assert_eq!(version, format!("idmint {}", env!("CARGO_PKG_VERSION")));
    // The image's settings resolve and check; nothing is opened, so /data stays empty.
    let check = run_ok(chroot(&root, USER, &env).args(["serve", "--check"]));
    for line in [
        "data_dir = \"/data\"",
        "http = \"0.0.0.0:8080\"",
        "resp = \"0.0.0.0:6380\"",
    ] {
        assert!(check.lines().any(|l| l == line), "no `{line}` in:\n{check}");
    }
    assert_eq!(std::fs::read_dir(root.join("data")).unwrap().count(), 0);
    let bad = run(chroot(&root, USER, &env).args(["serve", "--check", "--max-count", "0"]));
    assert_eq!(bad.status.code(), Some(2), "a bad setting passed the check");

    // A node as the container runs it: the image's variables and user, its store in /data
    // (loopback ports of the test's choice instead of 0.0.0.0).
    let mut serve = chroot(&root, USER, &env);
    serve
        .args(["serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .args(["--node-name", "image"]);
    let server = Server::start_command(serve);
    let addr = address(&server.http);
    let (status, _, body) = http(addr, "GET", "/healthz", None);
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = http(addr, "GET", "/v1/snowflake", None);
    assert_eq!(status, 200, "{body}");
    // The image's health check, run from the image's root, passes while the node serves and
    // fails once it stopped.
    let health = config["Healthcheck"]["Test"].as_array().unwrap().clone();
    let health: Vec<&str> = health[2..].iter().map(|a| a.as_str().unwrap()).collect();
    let server_url = ["--server", server.http.as_str()];
    for ready in [&[][..], &["--ready"]] {
        let answer = run(chroot(&root, USER, &env)
            .args(&health)
            .args(server_url)
            .args(ready));
        assert!(
            answer.status.success(),
            "idmint health {ready:?}: {answer:?}"
        );
    }
    let url = server.http.clone();
    server.stop();
    let answer = run(chroot(&root, USER, &env)
        .args(&health)
        .args(["--server", &url]));
    assert_eq!(
        answer.status.code(),
        Some(1),
        "healthy after the stop: {answer:?}"
    );
    let store = std::fs::metadata(root.join("data/idmint.db")).unwrap();
    assert_eq!(store.uid(), 10001, "the store is not the image user's");

    let _ = run(storage.buildah().args(["umount", &container]));
}

/// `chroot ROOT` running the image's binary as `user` with only the image's variables (and the
/// log settings the test harness reads).
fn chroot(root: &Path, user: &str, env: &BTreeMap<String, String>) -> Command {
    let mut command = Command::new("/usr/sbin/chroot");
    command
        .arg(format!("--userspec={user}"))
        .arg(root)
        .arg(BINARY)
        .env_clear()
        .envs(env)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    command
}

/// The image's configuration (Docker format), as `buildah inspect` shows it.
fn image_config(storage: &Storage, name: &str) -> Value {
    let inspect = run_ok(storage.buildah().args(["inspect", "--type", "image", name]));
    let inspect: Value = serde_json::from_str(&inspect).unwrap();
    inspect["Docker"]["config"].clone()
}

/// The image's variables by name.
fn image_env(config: &Value) -> BTreeMap<String, String> {
    config["Env"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| entry.as_str()?.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The Dockerfile's runtime stage declares what `scripts/image` configured, and pins its base
/// images by digest.
fn assert_same_as_dockerfile(config: &Value) {
    let dockerfile = Dockerfile::read();
    for from in &dockerfile.from {
        let digest = from.split_once("@sha256:").map(|(_, d)| d).unwrap_or("");
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "FROM {from}: not pinned by digest"
        );
    }
    let image_env = image_env(config);
    for (name, value) in &dockerfile.env {
        assert_eq!(image_env.get(name), Some(value), "ENV {name}");
    }
    for name in image_env.keys().filter(|n| n.starts_with("IDMINT_")) {
        assert!(
            dockerfile.env.contains_key(name),
            "{name} not in Dockerfile"
        );
    }
    let one = |keyword: &str| dockerfile.one(keyword);
    assert_eq!(config["User"], one("USER"));
    assert_eq!(config["WorkingDir"], one("WORKDIR"));
    assert_eq!(config["StopSignal"], one("STOPSIGNAL"));
    assert_eq!(config["Entrypoint"], json_array(&one("ENTRYPOINT")));
    assert_eq!(config["Cmd"], json_array(&one("CMD")));
    let volumes: Vec<String> = serde_json::from_value(json_array(&one("VOLUME"))).unwrap();
    let volumes: BTreeMap<_, _> = volumes.into_iter().map(|v| (v, json!({}))).collect();
    assert_eq!(config["Volumes"], json!(volumes));
    let ports: BTreeMap<_, _> = dockerfile
        .all("EXPOSE")
        .iter()
        .flat_map(|line| line.split_whitespace())
        .map(|port| (port.to_owned(), json!({})))
        .collect();
    assert_eq!(config["ExposedPorts"], json!(ports));

    // HEALTHCHECK --interval=10s ... CMD ["..."]
    let health = one("HEALTHCHECK");
    let (options, test) = health
        .split_once("CMD ")
        .expect("HEALTHCHECK ... CMD [...]");
    let mut wanted_test = vec![json!("CMD")];
    wanted_test.extend(json_array(test).as_array().cloned().unwrap_or_default());
    assert_eq!(config["Healthcheck"]["Test"], json!(wanted_test));
    for option in options.split_whitespace() {
        let (key, value) = option
            .trim_start_matches("--")
            .split_once('=')
            .expect("--key=value");
        let field = match key {
            "interval" => "Interval",
            "timeout" => "Timeout",
            "start-period" => "StartPeriod",
            "retries" => "Retries",
            other => panic!("HEALTHCHECK option {other} not compared"),
        };
        let wanted = if key == "retries" {
            value.parse::<u64>().unwrap()
        } else {
            u64::try_from(humantime::parse_duration(value).unwrap().as_nanos()).unwrap()
        };
        assert_eq!(config["Healthcheck"][field], wanted, "HEALTHCHECK --{key}");
    }

    for (label, value) in &dockerfile.labels {
        if label.ends_with(".revision") {
            continue; // the commit, given to either at build time
        }
        assert_eq!(config["Labels"][label], json!(value), "LABEL {label}");
    }
    assert_eq!(
        dockerfile.args.get("IDMINT_VERSION").map(String::as_str),
        Some(env!("CARGO_PKG_VERSION")),
        "the Dockerfile's default version is not the crate's"
    );
}

/// A JSON array instruction's argument (`["a", "b"]`).
fn json_array(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not a JSON array: {text}: {e}"))
}

/// The Dockerfile's instructions that say what the image is: the base images of every stage and
/// the runtime (last) stage's instructions.
struct Dockerfile {
    from: Vec<String>,
    args: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    /// Every other instruction of the last stage: keyword, then the rest of its line.
    instructions: Vec<(String, String)>,
}

impl Dockerfile {
    fn read() -> Self {
        let text = std::fs::read_to_string(repo_file("Dockerfile")).unwrap();
        // Continuation lines joined; comments and blank lines dropped.
        let mut lines = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') || trimmed.is_empty() {
                continue;
            }
            match trimmed.strip_suffix('\\') {
                Some(head) => current.push_str(head),
                None => {
                    current.push_str(trimmed);
                    lines.push(std::mem::take(&mut current));
                }
            }
        }
        let mut dockerfile = Self {
            from: Vec::new(),
            args: BTreeMap::new(),
            env: BTreeMap::new(),
            labels: BTreeMap::new(),
            instructions: Vec::new(),
        };
        for line in lines {
            let (keyword, rest) = line.split_once(' ').unwrap_or((&line, ""));
            let rest = rest.trim().to_owned();
            match keyword.to_ascii_uppercase().as_str() {
                "FROM" => {
                    dockerfile.from.push(
                        rest.split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                    // A new stage: only the last one's instructions count.
                    dockerfile.args.clear();
                    dockerfile.env.clear();
                    dockerfile.labels.clear();
                    dockerfile.instructions.clear();
                }
                "ARG" => {
                    let (name, value) = rest.split_once('=').unwrap_or((&rest, ""));
                    dockerfile.args.insert(name.to_owned(), value.to_owned());
                }
                "ENV" => {
                    let (name, value) = rest.split_once('=').expect("ENV NAME=VALUE");
                    dockerfile.env.insert(name.to_owned(), value.to_owned());
                }
                "LABEL" => {
                    let (name, value) = rest.split_once('=').expect("LABEL NAME=VALUE");
                    let mut value = value.trim_matches('"').to_owned();
                    for (arg, default) in &dockerfile.args {
                        value = value.replace(&format!("${{{arg}}}"), default);
                    }
                    dockerfile.labels.insert(name.to_owned(), value);
                }
                other => dockerfile.instructions.push((other.to_owned(), rest)),
            }
        }
        dockerfile
    }

    /// The arguments of every `keyword` instruction of the last stage.
    fn all(&self, keyword: &str) -> Vec<String> {
        self.instructions
            .iter()
            .filter(|(k, _)| k == keyword)
            .map(|(_, rest)| rest.clone())
            .collect()
    }

    /// The arguments of the last stage's one `keyword` instruction.
    fn one(&self, keyword: &str) -> String {
        let all = self.all(keyword);
        assert_eq!(
            all.len(),
            1,
            "the Dockerfile's last stage needs one {keyword}"
        );
        all[0].clone()
    }
}
