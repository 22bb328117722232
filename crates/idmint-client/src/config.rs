//! What a client is told: the nodes, the credentials, and how much it keeps in memory.

use std::time::Duration;

use crate::error::{ConfigError, ConfigField, Result};

/// How a [`Client`](crate::Client) reaches idmint and how it buffers.
///
/// Built with [`ClientConfig::new`] and the `with_` methods; every field has a default that
/// suits a service drawing up to some thousands of IDs a second per tag. The fields can be
/// read, and set on a config made by `new`; fields may be added in later versions, hence
/// `#[non_exhaustive]` (no struct literal outside this crate).
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The nodes' Redis-protocol addresses, `redis://host:port` or `rediss://host:port` (TLS).
    /// Tried in this order; a client stays on the first that works.
    pub nodes: Vec<String>,
    /// A token of the nodes (`AUTH token`): a mint token suffices.
    pub token: Option<String>,
    /// A PEM certificate authority to trust for `rediss://` nodes instead of the system's (for
    /// a node whose certificate an operator made).
    pub ca_pem: Option<Vec<u8>>,
    /// The smallest range asked for. Default 100.
    pub min_step: u64,
    /// The largest range asked for at once; at most the nodes' `--max-count` (default
    /// 10,000, the nodes' default). A crashed client loses at most two ranges.
    pub max_step: u64,
    /// How long one range should last at the observed rate (the range size adapts to it).
    /// Default 10 s: short, so a crash loses little, long enough that a node is asked rarely.
    pub target_lifetime: Duration,
    /// The share of a range used when the next one is asked for. Default 0.2.
    pub prefetch_at: f64,
    /// The longest a call waits for IDs when none are in memory, across every node tried,
    /// before it fails with [`Error::Unavailable`](crate::Error::Unavailable). Default 3 s.
    pub max_wait: Duration,
    /// The longest one request to one node may take (connecting included) before the node
    /// counts as failed and the next is tried. Default 1 s.
    pub call_timeout: Duration,
    /// How long a node that failed is avoided at first; doubled at each further failure up to
    /// [`ClientConfig::max_backoff`], reset when it answers. Default 1 s.
    pub backoff: Duration,
    /// The longest a failing node is avoided. Default 30 s.
    pub max_backoff: Duration,
    /// Snowflakes asked for at once. Default 64.
    pub snowflake_batch: u64,
    /// The age past which a snowflake batch is thrown away unused, so that the snowflakes a
    /// client hands out stay close to the time they are handed out. Default 100 ms.
    pub snowflake_max_age: Duration,
    /// A node field in the UUIDv7s and ULIDs this client makes (`(bits, node)`, 1 to 24 bits):
    /// clients given different nodes never make the same 128-bit ID, whatever their random
    /// bits. Default none: 50 (UUIDv7) or 56 (ULID) random bits per ID.
    pub id128_node: Option<(u32, u32)>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("nodes", &self.nodes)
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<set>"))
            .field("min_step", &self.min_step)
            .field("max_step", &self.max_step)
            .field("target_lifetime", &self.target_lifetime)
            .field("prefetch_at", &self.prefetch_at)
            .field("max_wait", &self.max_wait)
            .field("call_timeout", &self.call_timeout)
            .field("backoff", &self.backoff)
            .field("max_backoff", &self.max_backoff)
            .field("snowflake_batch", &self.snowflake_batch)
            .field("snowflake_max_age", &self.snowflake_max_age)
            .field("id128_node", &self.id128_node)
            .finish()
    }
}

impl ClientConfig {
    /// The defaults, for these nodes.
    pub fn new<S: Into<String>>(nodes: impl IntoIterator<Item = S>) -> Self {
        Self {
            nodes: nodes.into_iter().map(Into::into).collect(),
            token: None,
            ca_pem: None,
            min_step: 100,
            max_step: 10_000,
            target_lifetime: Duration::from_secs(10),
            prefetch_at: 0.2,
            max_wait: Duration::from_secs(3),
            call_timeout: Duration::from_secs(1),
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            snowflake_batch: 64,
            snowflake_max_age: Duration::from_millis(100),
            id128_node: None,
        }
    }

    /// Sends `token` with `AUTH`.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Trusts this PEM certificate authority for `rediss://` nodes.
    pub fn with_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Range sizes: at least `min`, at most `max` IDs a request.
    pub fn with_steps(mut self, min: u64, max: u64) -> Self {
        self.min_step = min;
        self.max_step = max;
        self
    }

    /// How long a range should last.
    pub fn with_target_lifetime(mut self, lifetime: Duration) -> Self {
        self.target_lifetime = lifetime;
        self
    }

    /// The share of a range used when the next one is asked for, in `0.0..=1.0`.
    pub fn with_prefetch_at(mut self, share: f64) -> Self {
        self.prefetch_at = share;
        self
    }

    /// How long a call may wait for IDs.
    pub fn with_max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// How long one request to one node may take.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How long a failed node is avoided, at first and at most.
    pub fn with_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff = first;
        self.max_backoff = max;
        self
    }

    /// Snowflake batches: how many at once, and how old they may get.
    pub fn with_snowflakes(mut self, batch: u64, max_age: Duration) -> Self {
        self.snowflake_batch = batch;
        self.snowflake_max_age = max_age;
        self
    }

    /// A node field of `bits` bits holding `node` in the client's UUIDv7s and ULIDs.
    pub fn with_id128_node(mut self, bits: u32, node: u32) -> Self {
        self.id128_node = Some((bits, node));
        self
    }

    /// Refuses what cannot work, naming the field.
    pub(crate) fn validate(&self) -> Result<()> {
        let refuse = |field, why: &str| Err(ConfigError::new(field, why).into());
        if self.nodes.is_empty() {
            return refuse(ConfigField::Nodes, "give at least one node");
        }
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return refuse(
                ConfigField::Token,
                "is empty; leave it out for nodes without tokens",
            );
        }
        if self.min_step == 0 {
            return refuse(ConfigField::MinStep, "must be at least 1");
        }
        if self.max_step < self.min_step {
            return refuse(ConfigField::MaxStep, "must be at least min_step");
        }
        if !(0.0..=1.0).contains(&self.prefetch_at) {
            return refuse(ConfigField::PrefetchAt, "must be between 0 and 1");
        }
        let zero = Duration::ZERO;
        for (field, value) in [
            (ConfigField::TargetLifetime, self.target_lifetime),
            (ConfigField::MaxWait, self.max_wait),
            (ConfigField::CallTimeout, self.call_timeout),
            (ConfigField::Backoff, self.backoff),
            (ConfigField::SnowflakeMaxAge, self.snowflake_max_age),
        ] {
            if value == zero {
                return refuse(field, "must be above zero");
            }
        }
        if self.max_backoff < self.backoff {
            return refuse(ConfigField::MaxBackoff, "must be at least backoff");
        }
        if self.snowflake_batch == 0 {
            return refuse(ConfigField::SnowflakeBatch, "must be at least 1");
        }
        if let Some((bits, node)) = self.id128_node {
            if !(1..=idmint_core::id128::MAX_NODE_BITS).contains(&bits) {
                return refuse(ConfigField::Id128Node, "takes 1 to 24 bits");
            }
            if u64::from(node) >> bits != 0 {
                return refuse(ConfigField::Id128Node, "the node does not fit its bits");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_each_bad_field_is_named() {
        assert!(ClientConfig::new(["redis://127.0.0.1:6379"])
            .validate()
            .is_ok());
        let base = || ClientConfig::new(["redis://127.0.0.1:6379"]);
        for (config, field) in [
            (ClientConfig::new(Vec::<String>::new()), ConfigField::Nodes),
            (base().with_token(" "), ConfigField::Token),
            (base().with_steps(0, 10), ConfigField::MinStep),
            (base().with_steps(20, 10), ConfigField::MaxStep),
            (base().with_max_wait(Duration::ZERO), ConfigField::MaxWait),
            (
                base().with_backoff(Duration::from_secs(2), Duration::from_secs(1)),
                ConfigField::MaxBackoff,
            ),
            (
                base().with_snowflakes(0, Duration::from_millis(5)),
                ConfigField::SnowflakeBatch,
            ),
            (base().with_id128_node(25, 1), ConfigField::Id128Node),
            (base().with_id128_node(4, 16), ConfigField::Id128Node),
        ] {
            match config.validate() {
                Err(crate::Error::Config { source }) => {
                    assert_eq!(source.field, field, "{source}");
                    assert!(source.to_string().contains(field.name()), "{source}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        let shown = format!("{:?}", base().with_token("s3cret"));
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
