//! The nodes a client knows, and failing over between them.
//!
//! A request goes to the node that answered last (so a client stays where it is), then to the
//! others in order. A node that fails (no connection, a timeout, a dropped connection, or
//! `-TRYAGAIN`: its store is unavailable) is avoided for a back-off period that doubles at
//! each further failure and resets when it answers. When every node is avoided, the one whose
//! back-off ends first is tried anyway, after a short pause: a client never sits idle while
//! a node might answer.
//!
//! A node's refusal (`-ERR`, `-NOAUTH`, `-WRONGPASS`) is not a failure of the node: another
//! node is tried, but when every node refused in the same round the refusal is the answer at
//! once, without waiting out `max_wait` for a configuration error.
//!
//! A request whose node died while it was in flight may or may not have been served there. It
//! is sent again to the next node: a range the dead node handed out is lost (a gap, never
//! reissued, since the node took it from its store), never given to anyone else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use idmint_core::Error as CoreError;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client as RedisClient, FromRedisValue, RedisError};
use tokio::time::Instant;

use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::stats::Stats;

/// The nodes and their health.
pub(crate) struct Nodes {
    nodes: Vec<Node>,
    /// The node that answered last.
    preferred: AtomicUsize,
    call_timeout: Duration,
    backoff: Duration,
    max_backoff: Duration,
    pub(crate) stats: Stats,
}

/// One node: how to reach it, its open connection, its health.
struct Node {
    /// Its address without credentials, for logs and metric labels.
    address: String,
    client: RedisClient,
    /// One multiplexed connection, opened on first use and after a failure. Every request to
    /// the node goes over it, so `IDMINT.GIVEBACK` reaches the connection that took the range.
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    health: Mutex<Health>,
}

#[derive(Debug, Default)]
struct Health {
    /// Avoided until then.
    down_until: Option<Instant>,
    /// The next back-off.
    backoff: Option<Duration>,
}

/// How one attempt on one node ended, when it did not succeed.
enum Failure {
    /// The node is down or its store is: try the next, and again later.
    Node(CoreError),
    /// The node refused the request.
    Refused(CoreError),
}

impl Nodes {
    /// The nodes of `config` (no connection is opened yet).
    pub(crate) fn new(config: &ClientConfig) -> Result<Self> {
        let nodes = config
            .nodes
            .iter()
            .map(|url| Node::new(url, config))
            .collect::<Result<Vec<_>>>()?;
        let stats = Stats::new(nodes.iter().map(|n| n.address.clone()).collect());
        Ok(Self {
            nodes,
            preferred: AtomicUsize::new(0),
            call_timeout: config.call_timeout,
            backoff: config.backoff,
            max_backoff: config.max_backoff,
            stats,
        })
    }

    /// The address of node `i`.
    pub(crate) fn address(&self, i: usize) -> &str {
        self.nodes.get(i).map_or("?", |n| n.address.as_str())
    }

    /// Sends `cmd` to the nodes in turn until one answers, for at most `max_wait`. Returns the
    /// answer and which node gave it. Errors are the core's, as a store's would be: retryable
    /// ones (every node down) are [`CoreError::StoreUnavailable`].
    pub(crate) async fn call<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        max_wait: Duration,
    ) -> Result<(usize, T), CoreError> {
        let deadline = Instant::now() + max_wait;
        let mut pause = Duration::from_millis(10);
        loop {
            let mut last = None;
            let mut all_refused = true;
            for i in self.order() {
                match self.try_node(i, cmd).await {
                    Ok(value) => {
                        if self.preferred.swap(i, Ordering::Relaxed) != i {
                            self.stats.failover(self.address(i));
                        }
                        return Ok((i, value));
                    }
                    Err(Failure::Refused(error)) => last = Some(error),
                    Err(Failure::Node(error)) => {
                        all_refused = false;
                        last = Some(error);
                    }
                }
                if Instant::now() >= deadline {
                    break;
                }
            }
            let last = last.unwrap_or_else(|| CoreError::store_unavailable("no node configured"));
            if all_refused || Instant::now() >= deadline {
                return Err(last);
            }
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Sends `cmd` to node `i` only (`IDMINT.GIVEBACK` goes where the range came from).
    pub(crate) async fn call_on<T: FromRedisValue>(
        &self,
        i: usize,
        cmd: &redis::Cmd,
    ) -> Result<T, CoreError> {
        self.try_node(i, cmd).await.map_err(|failure| match failure {
            Failure::Node(error) | Failure::Refused(error) => error,
        })
    }

    /// The nodes to try, in order: the preferred one, then the others, those not avoided
    /// first; of the avoided ones, the one whose back-off ends first.
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let n = self.nodes.len();
        let first = self.preferred.load(Ordering::Relaxed) % n.max(1);
        let mut ready = Vec::with_capacity(n);
        let mut avoided = Vec::new();
        for i in (0..n).map(|k| (first + k) % n) {
            match self.nodes[i].down_until() {
                Some(until) if until > now => avoided.push((until, i)),
                _ => ready.push(i),
            }
        }
        avoided.sort();
        ready.extend(avoided.into_iter().map(|(_, i)| i));
        ready
    }

    /// One attempt on node `i`, bounded by `call_timeout` (connecting included).
    async fn try_node<T: FromRedisValue>(&self, i: usize, cmd: &redis::Cmd) -> Result<T, Failure> {
        let node = &self.nodes[i];
        let attempt = async {
            let mut connection = node.connection(self.call_timeout).await?;
            let answer = cmd.query_async::<T>(&mut connection).await;
            Ok::<_, RedisError>((connection, answer))
        };
        let outcome = tokio::time::timeout(self.call_timeout, attempt).await;
        let error = match outcome {
            Ok(Ok((_, Ok(value)))) => {
                node.answered();
                self.stats.node_up(&node.address, true);
                return Ok(value);
            }
            Ok(Ok((_, Err(error)))) | Ok(Err(error)) => error,
            Err(_) => {
                let message = format!("{} did not answer within {:?}", node.address, self.call_timeout);
                return Err(self.node_failed(i, CoreError::store_unavailable(message)));
            }
        };
        if error.kind() == redis::ErrorKind::AuthenticationFailed {
            let message = format!("{} refused the token: {error}", node.address);
            return Err(Failure::Refused(CoreError::store_invalid(message).caused_by(error)));
        }
        match error.code().map(str::to_owned).as_deref() {
            Some("TRYAGAIN") => {
                let message = format!("{} is unavailable", node.address);
                Err(self.node_failed(i, CoreError::store_unavailable(message).caused_by(error)))
            }
            Some(code) => Err(Failure::Refused(refusal(&node.address, code, error))),
            None => {
                let message = format!("{} failed", node.address);
                Err(self.node_failed(i, CoreError::store_unavailable(message).caused_by(error)))
            }
        }
    }

    /// Marks node `i` failed: its connection is dropped and it is avoided for a while.
    fn node_failed(&self, i: usize, error: CoreError) -> Failure {
        let node = &self.nodes[i];
        node.failed(self.backoff, self.max_backoff);
        self.stats.node_failed(&node.address);
        tracing::debug!(node = %node.address, error = %error.with_causes(), "idmint node failed");
        Failure::Node(error)
    }
}

/// A node's refusal as a core error: `tag_exhausted` keeps its meaning; the others are
/// refusals, never retried.
fn refusal(address: &str, code: &str, error: RedisError) -> CoreError {
    let text = error.detail().unwrap_or_default().to_owned();
    if code == "ERR" && text.starts_with("tag_exhausted") {
        let tag = text.split('`').nth(1).unwrap_or("?").to_owned();
        return CoreError::TagExhausted { tag };
    }
    CoreError::store_invalid(format!("{address} answered {code} {text}")).caused_by(error)
}

impl Node {
    fn new(url: &str, config: &ClientConfig) -> Result<Self> {
        use redis::IntoConnectionInfo;
        let bad = |why: String| Error::Config(format!("nodes: `{url}`: {why}"));
        let mut info = url.into_connection_info().map_err(|e| bad(e.to_string()))?;
        if let Some(token) = &config.token {
            let settings = info.redis_settings().clone().set_password(token);
            info = info.set_redis_settings(settings);
        }
        let address = info.addr().to_string();
        let client = open_client(info, config).map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            address,
            client,
            connection: tokio::sync::Mutex::new(None),
            health: Mutex::new(Health::default()),
        })
    }

    /// The open connection, or a new one.
    async fn connection(&self, timeout: Duration) -> Result<MultiplexedConnection, RedisError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let settings = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let connection = self
            .client
            .get_multiplexed_async_connection_with_config(&settings)
            .await?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    fn down_until(&self) -> Option<Instant> {
        self.health().down_until
    }

    fn answered(&self) {
        let mut health = self.health();
        if health.down_until.is_some() || health.backoff.is_some() {
            *health = Health::default();
        }
    }

    fn failed(&self, first: Duration, max: Duration) {
        {
            let mut health = self.health();
            let backoff = health.backoff.unwrap_or(first).min(max);
            health.down_until = Some(Instant::now() + backoff);
            health.backoff = Some((backoff * 2).min(max));
        }
        // Drop the connection unless someone is using it: the next attempt opens a new one.
        if let Ok(mut slot) = self.connection.try_lock() {
            *slot = None;
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A `redis` client for one node, with the configured CA for `rediss://`.
fn open_client(info: redis::ConnectionInfo, config: &ClientConfig) -> Result<RedisClient, RedisError> {
    #[cfg(feature = "tls")]
    if let Some(pem) = &config.ca_pem {
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.clone()),
        };
        return RedisClient::build_with_tls(info, certificates);
    }
    let _ = config;
    RedisClient::open(info)
}
