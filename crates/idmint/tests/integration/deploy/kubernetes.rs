//! The Kubernetes manifests, `deploy/kubernetes/`: every resource validates, strictly (no field
//! the API does not know), against the newest Kubernetes `kubernetes-validate` knows and an older
//! one still in use, and broken copies do not; each kustomization names files that exist and
//! leaves none out; the pods are set up as idmint needs (probes, grace, node name, secrets,
//! security context, resources), and idmint serves with their settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{repo_file, run, serve_variables, tools, yaml_documents, STOP_TAKES_AT_MOST};
use crate::common::Server;
use crate::security::{address, folder, http};

/// The Kubernetes versions the manifests must validate against: the newest the pinned
/// kubernetes-validate ships, and an older one clusters still run.
const VERSIONS: [&str; 2] = ["1.37.0", "1.31.0"];
/// The two layouts: nodes on an external store, and one node on the embedded store.
const LAYOUTS: [&str; 2] = ["cluster", "single"];
/// Where the pods mount the Secret `idmint`.
const SECRETS: &str = "/run/secrets/idmint";

/// A folder of deploy/kubernetes.
fn layout_dir(layout: &str) -> PathBuf {
    repo_file("deploy/kubernetes").join(layout)
}

/// The YAML files of `dir`, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// `kubernetes-validate --strict` of `files` against `version`: whether it passed, and what
/// it said.
fn validate(version: &str, files: &[PathBuf]) -> (bool, String) {
    let validator = Path::new(&tools().python).with_file_name("kubernetes-validate");
    let output = run(Command::new(validator)
        .args(["--strict", "-k", version])
        .args(files));
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), said)
}

/// Every resource of both layouts (and the example Secrets) passes strict validation, each one
/// named as passed, with no warning; the kustomizations list only files that exist, and every
/// resource file but the examples.
#[test]
fn manifests_validate_and_broken_ones_do_not() {
    let mut resources = Vec::new();
    let mut documents = 0;
    for layout in LAYOUTS {
        let dir = layout_dir(layout);
        let kustomization = &yaml_documents(&dir.join("kustomization.yaml"))[0];
        assert_eq!(kustomization["kind"], "Kustomization");
        let listed: Vec<&str> = kustomization["resources"]
            .as_array()
            .expect("a resources list")
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        for file in &listed {
            assert!(dir.join(file).is_file(), "{layout}: {file} does not exist");
        }
        for file in yaml_files(&dir) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name == "kustomization.yaml" {
                continue;
            }
            assert!(
                listed.contains(&name.as_str()) || name.ends_with(".example.yaml"),
                "{layout}: {name} is neither in the kustomization nor an example"
            );
            documents += yaml_documents(&file).len();
            resources.push(file);
        }
    }
    for version in VERSIONS {
        let (ok, said) = validate(version, &resources);
        assert!(ok, "kubernetes-validate {version}: {said}");
        let passed = said.lines().filter(|l| l.contains(" passed for ")).count();
        assert_eq!(passed, documents, "not every resource passed: {said}");
        assert!(!said.contains("WARN") && !said.contains("ERROR"), "{said}");
    }

    // Broken copies: a misspelt field, a number that is not, a port that is not a number.
    let dir = folder("kubernetes-broken");
    let statefulset =
        std::fs::read_to_string(layout_dir("cluster").join("statefulset.yaml")).unwrap();
    let service = std::fs::read_to_string(layout_dir("cluster").join("service.yaml")).unwrap();
    let broken = [
        (
            "statefulset.yaml",
            &statefulset,
            "readinessProbe:",
            "readinesProbe:",
        ),
        (
            "statefulset.yaml",
            &statefulset,
            "replicas: 3",
            "replicas: three",
        ),
        ("service.yaml", &service, "port: 8080", "port: eighty"),
    ];
    for (name, text, from, to) in broken {
        assert!(text.contains(from), "{name} has no {from}");
        let file = dir.join(name);
        std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
        let (ok, said) = validate(VERSIONS[0], &[file]);
        assert!(
            !ok && said.contains("ERROR"),
            "kubernetes-validate took `{to}`: {said}"
        );
    }
}

/// The resources of a layout by kind (`StatefulSet`, ...), then name.
fn resources(layout: &str) -> BTreeMap<(String, String), Value> {
    let mut found = BTreeMap::new();
    for file in yaml_files(&layout_dir(layout)) {
        for document in yaml_documents(&file) {
            let kind = document["kind"].as_str().unwrap().to_owned();
            let name = document["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            found.insert((kind, name), document);
        }
    }
    found
}

/// `labels` (a JSON object) holds every pair of `selector`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// The pods of both layouts are what idmint needs: probes on /readyz and /healthz of the named
/// HTTP port, a grace period longer than a graceful stop, the pod's name as the node name, the
/// store URL (cluster) and tokens from the Secret, the embedded store on a volume at /data
/// (single), a non-root read-only container with no capabilities, resource requests and
/// limits; the PodDisruptionBudget and the Services select the pods, and the ServiceMonitor
/// scrapes /metrics on the Service's `http` port.
#[test]
fn manifests_give_idmint_what_it_needs() {
    let known = serve_variables();
    for layout in LAYOUTS {
        let found = resources(layout);
        let set = &found[&("StatefulSet".to_owned(), "idmint".to_owned())];
        let spec = &set["spec"];
        let labels = &spec["template"]["metadata"]["labels"];
        assert!(selects(&spec["selector"]["matchLabels"], labels));
        let pod = &spec["template"]["spec"];
        let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
        assert!(
            grace > STOP_TAKES_AT_MOST.as_secs(),
            "{layout}: grace {grace} s"
        );
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        assert_eq!(pod["automountServiceAccountToken"], false);

        let container = &pod["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["readOnlyRootFilesystem"], true);
        assert_eq!(security["allowPrivilegeEscalation"], false);
        assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
        for kind in ["requests", "limits"] {
            for resource in ["cpu", "memory"] {
                assert!(
                    container["resources"][kind][resource].is_string(),
                    "{kind}.{resource}"
                );
            }
        }
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["port"], "http");
        let ports: BTreeMap<&str, u64> = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["containerPort"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ports, BTreeMap::from([("http", 8080), ("resp", 6380)]));

        let env = container_env(container);
        for name in env.keys() {
            assert!(known.contains(name), "{layout}: idmint reads no {name}");
        }
        let node_name = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "IDMINT_NODE_NAME")
            .expect("IDMINT_NODE_NAME");
        assert_eq!(
            node_name["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name"
        );
        assert!(env["IDMINT_ADMIN_TOKEN_FILE"].starts_with(SECRETS));
        assert!(env["IDMINT_TOKENS_FILE"].starts_with(SECRETS));
        let mounts = container["volumeMounts"].as_array().unwrap();
        let mount_of = |path: &str| {
            mounts
                .iter()
                .find(|m| m["mountPath"] == path)
                .and_then(|m| m["name"].as_str())
                .unwrap_or_else(|| panic!("{layout}: nothing mounted at {path}"))
                .to_owned()
        };
        let secret_volume = mount_of(SECRETS);
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == secret_volume.as_str())
            .unwrap();
        assert_eq!(volume["secret"]["secretName"], "idmint");
        // Every secret file the pod reads is a key of the example Secret.
        let secret = &found[&("Secret".to_owned(), "idmint".to_owned())]["stringData"];
        for (name, value) in &env {
            if let Some(key) = value.strip_prefix(&format!("{SECRETS}/")) {
                assert!(secret.get(key).is_some(), "{layout}: {name}: no key {key}");
            }
        }
        match layout {
            "cluster" => {
                assert!(spec["replicas"].as_u64().unwrap() >= 2);
                assert!(env["IDMINT_STORE_FILE"].starts_with(SECRETS));
                assert!(!env.contains_key("IDMINT_DATA_DIR"));
            }
            _ => {
                assert_eq!(spec["replicas"], 1);
                assert_eq!(env["IDMINT_DATA_DIR"], "/data");
                let data = mount_of("/data");
                let claims = spec["volumeClaimTemplates"].as_array().unwrap();
                assert!(claims
                    .iter()
                    .any(|c| c["metadata"]["name"] == data.as_str()));
            }
        }

        let budget = &found[&("PodDisruptionBudget".to_owned(), "idmint".to_owned())];
        assert!(selects(&budget["spec"]["selector"]["matchLabels"], labels));
        let service = &found[&("Service".to_owned(), "idmint".to_owned())];
        assert!(selects(&service["spec"]["selector"], labels));
        let service_ports: BTreeMap<&str, (u64, &str)> = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let target = p["targetPort"].as_str().unwrap();
                (
                    p["name"].as_str().unwrap(),
                    (p["port"].as_u64().unwrap(), target),
                )
            })
            .collect();
        assert_eq!(
            service_ports,
            BTreeMap::from([("http", (8080, "http")), ("resp", (6380, "resp"))])
        );
        assert_eq!(spec["serviceName"], "idmint-nodes");
        let governing = &found[&("Service".to_owned(), "idmint-nodes".to_owned())];
        assert_eq!(governing["spec"]["clusterIP"], "None");

        let monitor = &yaml_documents(&repo_file("deploy/kubernetes/servicemonitor.yaml"))[0];
        assert_eq!(monitor["kind"], "ServiceMonitor");
        assert!(selects(
            &monitor["spec"]["selector"]["matchLabels"],
            &service["metadata"]["labels"]
        ));
        assert!(!selects(
            &monitor["spec"]["selector"]["matchLabels"],
            &governing["metadata"]["labels"]
        ));
        assert_eq!(monitor["spec"]["endpoints"][0]["port"], "http");
        assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");
    }
}

/// The container's plain variables (`value:`), by name.
fn container_env(container: &Value) -> BTreeMap<String, String> {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let value = e["value"].as_str().unwrap_or_default().to_owned();
            (e["name"].as_str().unwrap().to_owned(), value)
        })
        .collect()
}

/// idmint serves with each layout's pod settings: the example Secret's files where the pod
/// mounts them (the cluster's store URL a SQLite file here), the data volume a folder; the
/// probes' paths answer 200 without a token while every other request needs one.
#[test]
fn pods_settings_start_idmint() {
    for layout in LAYOUTS {
        let found = resources(layout);
        let set = &found[&("StatefulSet".to_owned(), "idmint".to_owned())];
        let container = &set["spec"]["template"]["spec"]["containers"][0];
        let dir = folder(&format!("kubernetes-{layout}"));
        let secrets = dir.join("secrets");
        let data = dir.join("data");
        std::fs::create_dir_all(&secrets).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        let secret = &found[&("Secret".to_owned(), "idmint".to_owned())]["stringData"];
        for (key, value) in secret.as_object().unwrap() {
            let value = match key.as_str() {
                "store" => format!("sqlite://{}/shared.db\n", data.display()),
                _ => value.as_str().unwrap().to_owned(),
            };
            std::fs::write(secrets.join(key), value).unwrap();
        }
        let env: Vec<(String, String)> = container_env(container)
            .into_iter()
            .filter(|(name, _)| name != "IDMINT_NODE_NAME")
            .map(|(name, value)| {
                let value = value
                    .replace(SECRETS, &secrets.display().to_string())
                    .replace("/data", &data.display().to_string());
                (name, value)
            })
            .collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let server = Server::start_without_store("idmint-0", &[], &env);
        assert!(
            server.serving.contains("node=idmint-0"),
            "{}",
            server.serving
        );
        let addr = address(&server.http);
        for path in ["/healthz", "/readyz"] {
            let (status, _, body) = http(addr, "GET", path, None);
            assert_eq!(status, 200, "{layout}: {path}: {body}");
        }
        assert_eq!(http(addr, "GET", "/v1/snowflake", None).0, 401);
        let admin = secret["admin-token"].as_str().unwrap().trim();
        assert_eq!(http(addr, "GET", "/v1/snowflake", Some(admin)).0, 200);
        server.stop();
        let store = if layout == "cluster" {
            "shared.db"
        } else {
            "idmint.db"
        };
        assert!(data.join(store).is_file(), "{layout}: no {store}");
    }
}
