//! The Rust runner of the clients' conformance suite (`clients/conformance`): plays every
//! scenario of `scenarios.json` with this crate, the conductor starting and killing the nodes.
//! Not part of `cargo test` (it needs the conductor); `clients/rust/test` runs it:
//!
//! ```sh
//! clients/conformance/run rust
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

use idmint_client::{Client, ClientConfig, Error};
use serde_json::{json, Value};

/// A scenario's failure, in words: which step and why.
type Outcome = Result<(), String>;

/// The conductor's HTTP API.
struct Conductor {
    url: String,
    http: reqwest::Client,
}

impl Conductor {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(body);
        }
        let answer = request
            .send()
            .await
            .map_err(|e| format!("conductor {path}: {e}"))?;
        let ok = answer.status().is_success();
        let body: Value = answer
            .json()
            .await
            .map_err(|e| format!("conductor {path}: {e}"))?;
        if ok {
            Ok(body)
        } else {
            Err(format!("conductor {path}: {}", body["error"]))
        }
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}

/// How a library's error is named in the scenarios.
fn category(error: &Error) -> String {
    match error {
        Error::Unavailable { .. } => "unavailable".into(),
        Error::Closed => "closed".into(),
        Error::Config { .. } => "config".into(),
        _ => match error.code().map(|c| c.as_str()) {
            Some("unauthorized" | "forbidden") => "auth".into(),
            Some(code) => code.into(),
            None => format!("other ({error})"),
        },
    }
}

/// The client settings a scenario's `config` names.
fn config(
    nodes: Vec<String>,
    token: Option<&str>,
    ca: Option<&str>,
    settings: &Value,
) -> ClientConfig {
    let mut config = ClientConfig::new(nodes);
    if let Some(token) = token {
        config = config.with_token(token);
    }
    if let Some(pem) = ca {
        config = config.with_ca_pem(pem.as_bytes());
    }
    let int = |key: &str| settings.get(key).and_then(Value::as_u64);
    let ms = |key: &str| int(key).map(Duration::from_millis);
    if let Some(v) = int("min_step") {
        config.min_step = v;
    }
    if let Some(v) = int("max_step") {
        config.max_step = v;
    }
    if let Some(v) = ms("target_lifetime_ms") {
        config.target_lifetime = v;
    }
    if let Some(v) = settings.get("prefetch_at").and_then(Value::as_f64) {
        config.prefetch_at = v;
    }
    if let Some(v) = ms("max_wait_ms") {
        config.max_wait = v;
    }
    if let Some(v) = ms("call_timeout_ms") {
        config.call_timeout = v;
    }
    if let Some(v) = ms("backoff_ms") {
        config.backoff = v;
    }
    if let Some(v) = ms("max_backoff_ms") {
        config.max_backoff = v;
    }
    if let Some(v) = int("snowflake_batch") {
        config.snowflake_batch = v;
    }
    if let Some(v) = ms("snowflake_max_age_ms") {
        config.snowflake_max_age = v;
    }
    config
}

/// One scenario's state: its clients and the lists of IDs they took.
struct Play<'a> {
    setup: &'a Value,
    clients: HashMap<String, Client>,
    lists: HashMap<String, Vec<u64>>,
}

impl Play<'_> {
    fn client(&self, step: &Value) -> Result<&Client, String> {
        let name = step["client"].as_str().unwrap_or_default();
        self.clients
            .get(name)
            .ok_or_else(|| format!("no client named {name:?}"))
    }

    fn list(&self, name: &Value) -> Result<&[u64], String> {
        let name = name.as_str().unwrap_or_default();
        self.lists
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| format!("no list named {name:?}"))
    }

    fn lists(&self, names: &Value) -> Result<Vec<u64>, String> {
        let mut all = Vec::new();
        for name in names.as_array().into_iter().flatten() {
            all.extend_from_slice(self.list(name)?);
        }
        Ok(all)
    }

    /// One call of the step's kind: the IDs it handed out.
    async fn call(&self, step: &Value) -> Result<Vec<u64>, Error> {
        let client = self.client(step).map_err(|_| Error::Closed)?;
        match step["kind"].as_str() {
            Some("segment") => Ok(vec![client.next(step["tag"].as_str().unwrap_or("")).await?]),
            Some("snowflakes") => {
                let batch = step["batch"].as_u64().unwrap_or(1) as usize;
                client.snowflakes(batch).await
            }
            _ => Ok(vec![client.snowflake().await?]),
        }
    }

    async fn step(&mut self, step: &Value) -> Outcome {
        match step["op"].as_str().unwrap_or_default() {
            "client" => {
                let nodes = step["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| self.setup["nodes"][i.as_u64().unwrap_or(0) as usize].clone())
                    .map(|url| url.as_str().unwrap_or_default().to_owned())
                    .collect();
                let token = step["token"]
                    .as_str()
                    .and_then(|which| self.setup["tokens"][which].as_str());
                // `ca`: trust the CA the conductor made for its TLS nodes.
                let ca = match step["ca"].as_bool() {
                    Some(true) => self.setup["ca_pem"].as_str(),
                    _ => None,
                };
                let client = Client::new(config(nodes, token, ca, &step["config"]))
                    .map_err(|e| format!("client: {e}"))?;
                let name = step["name"].as_str().unwrap_or_default().to_owned();
                self.clients.insert(name, client);
            }
            "take" => {
                let count = step["count"].as_u64().unwrap_or(0);
                let sleep = Duration::from_millis(step["sleep_ms"].as_u64().unwrap_or(0));
                let into = step["into"].as_str().unwrap_or_default().to_owned();
                let mut taken = Vec::with_capacity(count as usize);
                while (taken.len() as u64) < count {
                    let ids = self.call(step).await.map_err(|e| {
                        format!("the call after {} IDs failed: {}", taken.len(), chain(&e))
                    })?;
                    taken.extend(ids);
                    if !sleep.is_zero() {
                        tokio::time::sleep(sleep).await;
                    }
                }
                self.lists.entry(into).or_default().extend(taken);
            }
            "fail" => {
                let started = Instant::now();
                let expected = step["error"].as_str().unwrap_or_default();
                match self.call(step).await {
                    Ok(ids) => return Err(format!("expected {expected}, got IDs {ids:?}")),
                    Err(e) if category(&e) == expected => {}
                    Err(e) => {
                        return Err(format!(
                            "expected {expected}, got {}: {}",
                            category(&e),
                            chain(&e)
                        ))
                    }
                }
                if let Some(within) = step["within_ms"].as_u64() {
                    let took = started.elapsed();
                    if took > Duration::from_millis(within) {
                        return Err(format!(
                            "{expected} came after {took:?}, not within {within} ms"
                        ));
                    }
                }
            }
            "close" => {
                self.client(step)?.close().await;
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(step["ms"].as_u64().unwrap_or(0))).await;
            }
            "check" => self.check(step)?,
            _ => unreachable!("the conductor's steps are sent before this"),
        }
        Ok(())
    }

    fn check(&self, step: &Value) -> Outcome {
        if let Some(names) = step.get("unique") {
            let all = self.lists(names)?;
            let mut seen = std::collections::HashSet::with_capacity(all.len());
            if let Some(twice) = all.iter().find(|id| !seen.insert(**id)) {
                return Err(format!("{twice} handed out twice in {names}"));
            }
        }
        if let Some(names) = step.get("increasing") {
            let all = self.lists(names)?;
            if let Some(pair) = all.windows(2).find(|p| p[0] >= p[1]) {
                return Err(format!(
                    "{names} not increasing: {} then {}",
                    pair[0], pair[1]
                ));
            }
        }
        if let Some(count) = step.get("count") {
            let list = self.list(&count["list"])?;
            let is = count["is"].as_u64().unwrap_or(0);
            if list.len() as u64 != is {
                return Err(format!(
                    "{} holds {} IDs, not {is}",
                    count["list"],
                    list.len()
                ));
            }
        }
        if let Some(follows) = step.get("follows") {
            let (list, after) = (self.list(&follows["list"])?, self.list(&follows["after"])?);
            match (list.first(), after.last()) {
                (Some(&first), Some(&last)) if first == last + 1 => {}
                (first, last) => {
                    return Err(format!(
                        "{} starts at {first:?}, not right after {}'s last {last:?}",
                        follows["list"], follows["after"]
                    ))
                }
            }
        }
        if let Some(dated) = step.get("dated") {
            check_dated(
                self.list(&dated["list"])?,
                dated["digits"].as_u64().unwrap_or(0) as u32,
                dated["days"].as_u64().unwrap_or(0) as usize,
            )?;
        }
        Ok(())
    }
}

/// Every ID is `yyyymmdd * 10^digits + counter`: dates never going back, counters increasing
/// within a date and starting at 1 or more, and `days` dates in all.
fn check_dated(ids: &[u64], digits: u32, days: usize) -> Outcome {
    let scale = 10u64.pow(digits);
    let mut dates = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for &id in ids {
        let (date, counter) = (id / scale, id % scale);
        let (year, month, day) = (date / 10_000, date / 100 % 100, date % 100);
        if !(1970..=9999).contains(&year) || !(1..=12).contains(&month) || !(1..=31).contains(&day)
        {
            return Err(format!("{id}: {date} is not a date yyyymmdd"));
        }
        if counter == 0 {
            return Err(format!("{id}: counter 0"));
        }
        match last {
            Some((d, _)) if date < d => return Err(format!("{id}: date went back from {d}")),
            Some((d, c)) if date == d && counter <= c => {
                return Err(format!("{id}: counter did not increase after {c}"))
            }
            _ => {}
        }
        if last.map(|(d, _)| d) != Some(date) {
            dates.push(date);
        }
        last = Some((date, counter));
    }
    if dates.len() != days {
        return Err(format!("{} dates ({dates:?}), not {days}", dates.len()));
    }
    Ok(())
}

/// An error with its sources, one after the other.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

const CONDUCTOR_STEPS: &[&str] = &["kill", "stop", "start", "restart", "create_tag"];

async fn play(conductor: &Conductor, scenario: &Value) -> Outcome {
    let name = &scenario["name"];
    let setup = conductor
        .post("/start", &json!({ "scenario": name }))
        .await?;
    let mut play = Play {
        setup: &setup,
        clients: HashMap::new(),
        lists: HashMap::new(),
    };
    let mut outcome = Ok(());
    for (i, step) in scenario["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let op = step["op"].as_str().unwrap_or_default();
        let done = if CONDUCTOR_STEPS.contains(&op) {
            conductor.post("/act", step).await.map(drop)
        } else {
            play.step(step).await
        };
        if let Err(why) = done {
            outcome = Err(format!("step {} ({step}): {why}", i + 1));
            break;
        }
    }
    for client in play.clients.values() {
        client.close().await;
    }
    conductor
        .post("/stop", &json!({ "scenario": name }))
        .await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario() {
    let url = std::env::var("IDMINT_CONFORMANCE_URL")
        .expect("IDMINT_CONFORMANCE_URL: run this through clients/conformance/run rust");
    let conductor = Conductor {
        url,
        http: reqwest::Client::new(),
    };
    let scenarios = conductor
        .call(reqwest::Method::GET, "/scenarios", None)
        .await
        .unwrap();
    let mut failed = Vec::new();
    for scenario in scenarios.as_array().into_iter().flatten() {
        let name = scenario["name"].as_str().unwrap_or_default();
        let started = Instant::now();
        match play(&conductor, scenario).await {
            Ok(()) => eprintln!("conformance {name} ... ok ({:.1?})", started.elapsed()),
            Err(why) => {
                eprintln!("conformance {name} ... FAILED: {why}");
                failed.push(name.to_owned());
            }
        }
    }
    assert!(failed.is_empty(), "scenarios failed: {failed:?}");
}
