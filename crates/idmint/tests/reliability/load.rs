//! Clients that keep asking one node for IDs, over HTTP (reqwest) or the Redis protocol (the
//! `redis` crate), and write every reply into the [`Ledger`]. They reconnect by themselves
//! when their node dies and comes back on the same ports.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use tokio::task::JoinHandle;

use crate::ledger::{Batch, Kind, Ledger, UNKNOWN};
use crate::node::Node;

/// A client gives up on one request after this long (it is then a failure named `timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The node a client talks to.
#[derive(Debug, Clone)]
struct Target {
    /// Its index in the scenario.
    pub node: usize,
    /// `http://...`
    pub http: String,
    /// `redis://...`
    pub resp: String,
    /// Its process-lifetime counter.
    pub incarnation: Arc<AtomicU64>,
}

/// Which front end a client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `GET /v1/snowflake`, `GET /v1/segment/{tag}`.
    Http,
    /// `IDMINT.SNOWFLAKE COUNT n`, `IDMINT.NEXT tag COUNT n`.
    Resp,
}

/// What the clients ask for.
#[derive(Debug, Clone)]
pub struct Load {
    /// Ask for snowflakes.
    pub snowflakes: bool,
    /// Tags to ask segment IDs of (none: no segment requests).
    pub tags: Vec<String>,
    /// Counts run from 1 to this.
    pub max_count: u64,
    /// Pause between two requests of one client.
    pub pause: Duration,
}

impl Load {
    /// Snowflakes and two tags, `orders` and `users`, counts up to 20, a 2 ms pause: the
    /// steady load the store-set and store-fault scenarios keep up through their faults.
    pub fn steady() -> Self {
        Self {
            snowflakes: true,
            tags: vec!["orders".into(), "users".into()],
            max_count: 20,
            pause: Duration::from_millis(2),
        }
    }

    /// The `i`-th request of a client: what, and how many.
    fn request(&self, i: u64) -> (Kind, u64) {
        let kinds = u64::from(self.snowflakes) + self.tags.len() as u64;
        let pick = i % kinds.max(1);
        let kind = if self.snowflakes && pick == 0 {
            Kind::Snowflake
        } else {
            let index = pick - u64::from(self.snowflakes);
            Kind::Segment(self.tags[index as usize].clone())
        };
        (kind, 1 + (i.wrapping_mul(7_919) % self.max_count))
    }
}

/// A scenario's clients: started per node, stopped and joined together.
pub struct Clients {
    load: Arc<Load>,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Clients {
    /// No clients yet; those started will ask for `load` and record into `ledger`.
    pub fn new(load: Load, ledger: &Arc<Ledger>) -> Self {
        Self {
            load: Arc::new(load),
            ledger: Arc::clone(ledger),
            stop: Arc::new(AtomicBool::new(false)),
            tasks: Vec::new(),
        }
    }

    /// Starts one client per entry of `protocols` against `node`, known as node `index`.
    pub fn spawn(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        index: usize,
        node: &Node,
        protocols: &[Protocol],
    ) {
        let target = Target {
            node: index,
            http: node.http(),
            resp: node.resp(),
            incarnation: node.incarnation(),
        };
        let _guard = runtime.enter();
        for &protocol in protocols {
            let client = self.tasks.len();
            self.tasks.push(spawn_client(
                client,
                protocol,
                target.clone(),
                Arc::clone(&self.load),
                Arc::clone(&self.ledger),
                Arc::clone(&self.stop),
            ));
        }
    }

    /// Stops every client after its request in flight and waits for them.
    pub fn stop(self, runtime: &tokio::runtime::Runtime) {
        self.stop.store(true, Ordering::SeqCst);
        runtime.block_on(async {
            for task in self.tasks {
                task.await.unwrap();
            }
        });
    }
}

/// Two clients of each protocol.
pub const MIXED: [Protocol; 4] = [
    Protocol::Http,
    Protocol::Resp,
    Protocol::Http,
    Protocol::Resp,
];

/// Starts client `client` against `target` until `stop` is set.
fn spawn_client(
    client: usize,
    protocol: Protocol,
    target: Target,
    load: Arc<Load>,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .unwrap();
        let mut resp: Option<MultiplexedConnection> = None;
        let mut i = client as u64;
        while !stop.load(Ordering::SeqCst) {
            let (kind, count) = load.request(i);
            i += 1;
            let before = target.incarnation.load(Ordering::SeqCst);
            let started = Instant::now();
            let outcome = match protocol {
                Protocol::Http => ask_http(&http, &target.http, &kind, count).await,
                Protocol::Resp => ask_resp(&mut resp, &target.resp, &kind, count).await,
            };
            let took = started.elapsed();
            let after = target.incarnation.load(Ordering::SeqCst);
            match outcome {
                Ok(ids) => {
                    assert_eq!(
                        ids.len() as u64,
                        count,
                        "{kind:?}: asked {count}, got {ids:?}"
                    );
                    let incarnation = if before == after { before } else { UNKNOWN };
                    let batch = Batch {
                        node: target.node,
                        incarnation,
                        client,
                        kind,
                        ids,
                    };
                    ledger.ok(batch, took);
                }
                Err(code) => {
                    ledger.failed(code, took);
                    // A node that is down: do not spin.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            if !load.pause.is_zero() {
                tokio::time::sleep(load.pause).await;
            }
        }
    })
}

/// One HTTP request; the error is `http <status> <code>` or what the connection did.
async fn ask_http(
    http: &reqwest::Client,
    base: &str,
    kind: &Kind,
    count: u64,
) -> Result<Vec<u64>, String> {
    let url = match kind {
        Kind::Snowflake => format!("{base}/v1/snowflake?count={count}"),
        Kind::Segment(tag) => format!("{base}/v1/segment/{tag}?count={count}"),
    };
    let response = http.get(url).send().await.map_err(transport)?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.map_err(transport)?;
    if !status.is_success() {
        let code = body["error"]["code"].as_str().unwrap_or("no error code");
        return Err(format!("http {} {code}", status.as_u16()));
    }
    let ids = body["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("200 without ids: {body}"));
    Ok(ids
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect())
}

/// What a failed HTTP exchange did, in a word.
fn transport(error: reqwest::Error) -> String {
    if error.is_timeout() {
        "http timeout".into()
    } else if error.is_connect() {
        "http connect".into()
    } else {
        "http connection lost".into()
    }
}

/// One Redis-protocol command on the client's connection (made when missing, dropped after
/// an I/O error); the error is `resp <code>` or what the connection did.
async fn ask_resp(
    connection: &mut Option<MultiplexedConnection>,
    url: &str,
    kind: &Kind,
    count: u64,
) -> Result<Vec<u64>, String> {
    if connection.is_none() {
        let client = redis::Client::open(url).unwrap();
        // The crate's own response timeout is shorter than a bounded wait of the server.
        let config =
            redis::AsyncConnectionConfig::new().set_response_timeout(Some(REQUEST_TIMEOUT));
        let connect = client.get_multiplexed_async_connection_with_config(&config);
        match tokio::time::timeout(REQUEST_TIMEOUT, connect).await {
            Ok(Ok(made)) => *connection = Some(made),
            Ok(Err(_)) => return Err("resp connect".into()),
            Err(_) => return Err("resp timeout".into()),
        }
    }
    let Some(open) = connection.as_mut() else {
        return Err("resp connect".into());
    };
    let mut command = match kind {
        Kind::Snowflake => redis::cmd("IDMINT.SNOWFLAKE"),
        Kind::Segment(tag) => {
            let mut command = redis::cmd("IDMINT.NEXT");
            command.arg(tag);
            command
        }
    };
    command.arg("COUNT").arg(count);
    match tokio::time::timeout(REQUEST_TIMEOUT, command.query_async::<Vec<u64>>(open)).await {
        Ok(Ok(ids)) => Ok(ids),
        Ok(Err(error)) => {
            if let Some(code) = error.code() {
                let detail = error.detail().unwrap_or("");
                let word = detail.split_whitespace().next().unwrap_or("");
                Err(format!("resp {code} {word}"))
            } else {
                *connection = None;
                Err(format!("resp connection lost {:?} {error}", error.kind()))
            }
        }
        Err(_) => {
            *connection = None;
            Err("resp timeout".into())
        }
    }
}
