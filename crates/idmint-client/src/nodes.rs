//! The nodes a client knows, and failing over between them.
//!
//! A request goes to the node that answered last (so a client stays where it is), then to the
//! others in order. A node that fails (no connection, a timeout, a dropped connection, or
//! `-TRYAGAIN`: its store is unavailable) is avoided for a back-off period that doubles at
//! each further failure (failures of requests that were in flight together count once) and
//! resets when it answers. When every node is avoided, only the one whose back-off ends first
//! is tried, after a short pause: a client never sits idle while a node might answer, and
//! never hammers a cluster that is down.
//!
//! A node's refusal is not a failure of the node: another node is tried, but when every node
//! refused in the same round the refusal is the answer at once, without waiting out
//! `max_wait` for a configuration error. Refusals are the answers no retry changes: a wrong
//! token (`-WRONGPASS`, `-NOAUTH`, `-NOPERM`), a bad tag or count, a used-up tag, a node's tag
//! cap, a command the node does not know. Any other error (`-ERR max number of clients
//! reached`, a dropped connection) is the node's failure. The token is sent with `AUTH` as a
//! connection's first command rather than in the handshake, so its answer keeps its code.
//!
//! A request whose node died while it was in flight may or may not have been served there. It
//! is sent again to the next node: a range the dead node handed out is lost (a gap, never
//! reissued, since the node took it from its store), never given to anyone else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use idmint_core::{Error as CoreError, ErrorCode};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client as RedisClient, FromRedisValue, RedisError};
use tokio::time::Instant;

use crate::config::ClientConfig;
use crate::error::{ConfigError, ConfigField, Result};
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
    /// Sent with `AUTH` as each connection's first command.
    token: Option<String>,
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
        self.try_node(i, cmd)
            .await
            .map_err(|failure| match failure {
                Failure::Node(error) | Failure::Refused(error) => error,
            })
    }

    /// The nodes to try, in order: the preferred one, then the others, those not avoided
    /// first; when every node is avoided, only the one whose back-off ends first.
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let n = self.nodes.len();
        let first = self.preferred.load(Ordering::Relaxed) % n.max(1);
        let mut ready = Vec::with_capacity(n);
        let mut soonest: Option<(Instant, usize)> = None;
        for (i, node) in (0..n)
            .map(|k| (first + k) % n)
            .filter_map(|i| Some((i, self.nodes.get(i)?)))
        {
            match node.down_until() {
                Some(until) if until > now => {
                    if soonest.is_none_or(|(t, _)| until < t) {
                        soonest = Some((until, i));
                    }
                }
                _ => ready.push(i),
            }
        }
        if ready.is_empty() {
            ready.extend(soonest.map(|(_, i)| i));
        }
        ready
    }

    /// One attempt on node `i`, bounded by `call_timeout` (connecting included).
    async fn try_node<T: FromRedisValue>(&self, i: usize, cmd: &redis::Cmd) -> Result<T, Failure> {
        let Some(node) = self.nodes.get(i) else {
            return Err(Failure::Refused(CoreError::store_invalid("no such node")));
        };
        let attempt = async {
            let mut connection = node.connection(self.call_timeout).await?;
            cmd.query_async::<T>(&mut connection).await
        };
        let error = match tokio::time::timeout(self.call_timeout, attempt).await {
            Ok(Ok(value)) => {
                node.answered();
                self.stats.node_up(&node.address);
                return Ok(value);
            }
            Ok(Err(error)) => error,
            Err(_) => {
                let message = format!(
                    "{} did not answer within {:?}",
                    node.address, self.call_timeout
                );
                return Err(self.node_failed(i, CoreError::store_unavailable(message), true));
            }
        };
        let code = error.code().map(str::to_owned);
        let detail = error.detail().unwrap_or_default().to_owned();
        match code.as_deref() {
            Some(code) if is_refusal(code, &detail) => {
                node.answered();
                Err(Failure::Refused(refusal(
                    &node.address,
                    code,
                    &detail,
                    error,
                )))
            }
            Some("TRYAGAIN") => {
                // The node answers; its store does not. Keep the connection (and what it may
                // give back), avoid the node for a while.
                let message = format!("{} is unavailable", node.address);
                let error = CoreError::store_unavailable(message).caused_by(error);
                Err(self.node_failed(i, error, false))
            }
            _ => {
                let message = format!("{} failed", node.address);
                Err(self.node_failed(
                    i,
                    CoreError::store_unavailable(message).caused_by(error),
                    true,
                ))
            }
        }
    }

    /// Marks node `i` failed: it is avoided for a while, and its connection dropped when
    /// `reconnect` (the connection itself failed).
    fn node_failed(&self, i: usize, error: CoreError, reconnect: bool) -> Failure {
        if let Some(node) = self.nodes.get(i) {
            node.failed(self.backoff, self.max_backoff, reconnect);
            self.stats.node_failed(&node.address);
            tracing::debug!(node = %node.address, error = %error.with_causes(), "idmint node failed");
        }
        Failure::Node(error)
    }
}

/// The `N` of a node's "count must be between 1 and N" refusal (its `--max-count`), whatever
/// the case of "count".
pub(crate) fn count_limit(error: &CoreError) -> Option<u64> {
    let CoreError::StoreInvalid { message, .. } = error else {
        return None;
    };
    const LIMIT: &str = "count must be between 1 and ";
    let lower = message.to_ascii_lowercase();
    let after = &message[lower.find(LIMIT)? + LIMIT.len()..];
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&n| n > 0)
}

/// The code of the node's answer behind `error`, read from the Redis error it carries: the
/// code after `-ERR` (`permuted`, `tag_quota`...), and `unauthorized` or `forbidden` for Redis'
/// own `WRONGPASS`/`NOAUTH` and `NOPERM`. The segment buffer and the retry loop pass a node's
/// refusal on as a core error of their own kind; this is what the caller branches on.
pub(crate) fn node_code(error: &CoreError) -> Option<ErrorCode> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        // A core error keeps its driver's error in a shared `Cause`.
        let driver = match cause.downcast_ref::<idmint_core::error::Cause>() {
            Some(shared) => shared.get(),
            None => cause,
        };
        if let Some(redis) = driver.downcast_ref::<RedisError>() {
            return match redis.code()? {
                "WRONGPASS" | "NOAUTH" => Some(ErrorCode::Unauthorized),
                "NOPERM" => Some(ErrorCode::Forbidden),
                "ERR" => redis.detail()?.split(' ').next()?.parse().ok(),
                _ => None,
            };
        }
        source = cause.source();
    }
    None
}

/// Whether an error reply is one no retry changes (see the module documentation): one whose
/// code after `-ERR` is a refusal ([`refused_code`]), or one of Redis' own wordings.
fn is_refusal(code: &str, detail: &str) -> bool {
    /// The starts of the refusals that carry no code: the words of Redis and of idmint's
    /// commands for a bad command or argument.
    const REFUSALS: [&str; 10] = [
        "invalid tag",
        "invalid argument",
        "unknown tag",
        "count must be",
        "unknown command",
        "wrong number of arguments",
        "syntax error",
        "value is not an integer",
        "first must not be",
        // A token sent to a node that has none.
        "AUTH <password> called without",
    ];
    match code {
        "WRONGPASS" | "NOAUTH" | "NOPERM" => true,
        // Case aside: nodes word a count limit "count must be" (IDMINT.RANGE) or "COUNT must
        // be" (IDMINT.SNOWFLAKE, IDMINT.NEXT).
        "ERR" => {
            refused_code(detail).is_some()
                || REFUSALS.iter().any(|r| {
                    detail
                        .get(..r.len())
                        .is_some_and(|start| start.eq_ignore_ascii_case(r))
                })
        }
        _ => false,
    }
}

/// The code a node put right after `-ERR` (`-ERR tag_exhausted tag ...`), when it is one that
/// every node would answer the same: the tag's IDs used up, the nodes' tag cap or the token's
/// quota (every node counts the same store), runs asked of permuted IDs, a range of a dated tag
/// (the client then takes its IDs one at a time), a dated tag's period used up. Any other code
/// there (`store_corrupt`: that node's store) is the node's failure.
fn refused_code(detail: &str) -> Option<ErrorCode> {
    let word = detail.split(' ').next()?;
    let code = word.parse::<ErrorCode>().ok()?;
    matches!(
        code,
        ErrorCode::TagExhausted
            | ErrorCode::TooManyTags
            | ErrorCode::TagQuota
            | ErrorCode::Permuted
            | ErrorCode::Dated
            | ErrorCode::PeriodUnavailable
    )
    .then_some(code)
}

/// A node's refusal as a core error: `tag_exhausted`, `period_unavailable` and `dated` keep
/// their meaning; the others are refusals, never retried.
fn refusal(address: &str, code: &str, detail: &str, error: RedisError) -> CoreError {
    let tag = || detail.split('`').nth(1).unwrap_or("?").to_owned();
    let named = refused_code(detail);
    if named == Some(ErrorCode::TagExhausted) {
        return CoreError::TagExhausted { tag: tag() };
    }
    if named == Some(ErrorCode::PeriodUnavailable) {
        let reason = detail.split_once(' ').map_or("", |(_, rest)| rest);
        return CoreError::PeriodUnavailable {
            tag: tag(),
            reason: reason.to_owned(),
        };
    }
    if named == Some(ErrorCode::Dated) {
        return CoreError::DatedRangeRefused { tag: tag() };
    }
    if named == Some(ErrorCode::Permuted) {
        return CoreError::store_invalid(format!(
            "{address} hands out its IDs permuted (serve --permutation-key-file): this client \
             keeps segment IDs as runs of consecutive IDs, which permuted IDs are not; take \
             segment IDs from the nodes themselves (IDMINT.NEXT tag COUNT n)"
        ))
        .caused_by(error);
    }
    CoreError::store_invalid(format!("{address} refused: {code} {detail}")).caused_by(error)
}

impl Node {
    fn new(url: &str, config: &ClientConfig) -> Result<Self> {
        use redis::IntoConnectionInfo;
        let bad = |why: &str| ConfigError::new(ConfigField::Nodes, format!("`{url}`: {why}"));
        let info = url
            .into_connection_info()
            .map_err(|e| bad("not a usable redis:// or rediss:// URL").caused_by(e))?;
        if info.redis_settings().password().is_some() {
            return Err(bad("give the token in `token`, not in the URL").into());
        }
        let address = info.addr().to_string();
        let client = open_client(info, config)
            .map_err(|e| bad("the Redis client cannot connect to it").caused_by(e))?;
        Ok(Self {
            address,
            client,
            token: config.token.clone(),
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
        let mut connection = self
            .client
            .get_multiplexed_async_connection_with_config(&settings)
            .await?;
        if let Some(token) = &self.token {
            redis::cmd("AUTH")
                .arg(token)
                .query_async::<()>(&mut connection)
                .await?;
        }
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

    fn failed(&self, first: Duration, max: Duration, reconnect: bool) {
        {
            let mut health = self.health();
            let now = Instant::now();
            // Requests that were in flight together fail together: one failure, one step.
            if health.down_until.is_none_or(|until| until <= now) {
                let backoff = health.backoff.unwrap_or(first).min(max);
                health.down_until = Some(now + backoff);
                health.backoff = Some((backoff * 2).min(max));
            }
        }
        // Drop the connection unless someone is opening one: the next attempt opens a new one.
        if reconnect {
            if let Ok(mut slot) = self.connection.try_lock() {
                *slot = None;
            }
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A `redis` client for one node, with the configured CA for `rediss://`.
fn open_client(
    info: redis::ConnectionInfo,
    config: &ClientConfig,
) -> Result<RedisClient, RedisError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_read_by_their_code_or_redis_wording() {
        for detail in [
            "tag_exhausted tag `t` is exhausted: ...",
            "period_unavailable tag `t`: the period 20261127 is used up",
            "dated tag `t` is dated: ...",
            "permuted this node hands out its IDs permuted",
            "too_many_tags too many tags: ...",
            "tag_quota tag quota: ...",
            "unknown tag `t`",
            "syntax error",
        ] {
            assert!(is_refusal("ERR", detail), "{detail}");
        }
        assert!(is_refusal("WRONGPASS", "invalid username-password pair"));
        // A damaged store is that node's trouble, and a retryable error any node's.
        for (code, detail) in [
            ("ERR", "store_corrupt store corrupt: malformed"),
            ("ERR", "max number of clients reached"),
            ("ERR", "tag_exhaustedness is not a code"),
            ("TRYAGAIN", "idmint is temporarily unavailable: ..."),
        ] {
            assert!(!is_refusal(code, detail), "{code} {detail}");
        }
        assert_eq!(
            refused_code("period_unavailable tag `t`: ..."),
            Some(ErrorCode::PeriodUnavailable)
        );
        assert_eq!(refused_code("store_corrupt store corrupt"), None);
        // Nodes word a count limit in either case, by command.
        assert!(is_refusal("ERR", "COUNT must be between 1 and 50, got 64"));
        assert!(is_refusal("ERR", "count must be between 1 and 50"));
    }

    #[test]
    fn a_count_limit_is_read_in_either_case() {
        for message in [
            "n1 refused: ERR COUNT must be between 1 and 50, got 64",
            "n1 refused: ERR count must be between 1 and 50",
        ] {
            assert_eq!(count_limit(&CoreError::store_invalid(message)), Some(50));
        }
        assert_eq!(
            count_limit(&CoreError::store_invalid("count must be between 1 and 0")),
            None
        );
        assert_eq!(
            count_limit(&CoreError::store_unavailable(
                "count must be between 1 and 5"
            )),
            None
        );
    }

    #[test]
    fn the_node_s_code_is_read_through_the_core_error() {
        // An error reply as the Redis client reads it off the wire.
        let reply = |code: &str, detail: &str| {
            let wire = format!("-{code} {detail}\r\n");
            match redis::parse_redis_value(wire.as_bytes()) {
                Ok(redis::Value::ServerError(error)) => RedisError::from(error),
                other => panic!("{wire:?} read as {other:?}"),
            }
        };
        for (code, detail, expected) in [
            (
                "WRONGPASS",
                "invalid username-password pair",
                Some(ErrorCode::Unauthorized),
            ),
            (
                "NOAUTH",
                "Authentication required.",
                Some(ErrorCode::Unauthorized),
            ),
            (
                "NOPERM",
                "this token may not use tag `x`",
                Some(ErrorCode::Forbidden),
            ),
            (
                "ERR",
                "permuted this namespace hands out its IDs permuted",
                Some(ErrorCode::Permuted),
            ),
            ("ERR", "syntax error", None),
        ] {
            let error = refusal("n1", code, detail, reply(code, detail));
            assert_eq!(node_code(&error), expected, "{code} {detail}");
        }
        assert_eq!(node_code(&CoreError::store_invalid("no cause")), None);
    }
}
