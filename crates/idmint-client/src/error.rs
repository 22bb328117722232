//! The client's one error type, and the refusal of a configuration.

use std::fmt;
use std::time::Duration;

use idmint_core::ErrorCode;

/// What a client call can fail with. A call never makes an ID up: it answers one the nodes
/// handed out, or one of these.
///
/// A variant with a source either names only what the client knows (`Unavailable`: how long it
/// waited) or is the source itself (`Refused`, `Config`), so an error printed with its chain
/// says each thing once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot work: [`ConfigError`] names the field and why.
    #[error(transparent)]
    Config {
        /// Which field, and why.
        #[from]
        source: ConfigError,
    },

    /// [`Client::new`](crate::Client::new) was called outside a tokio runtime; use
    /// [`BlockingClient`](crate::BlockingClient) there.
    #[error("Client::new needs a tokio runtime; use BlockingClient without one")]
    NoRuntime,

    /// [`BlockingClient`](crate::BlockingClient) could not start the thread of its runtime.
    #[error("cannot start the idmint client's runtime thread")]
    Runtime {
        /// The operating system's refusal.
        #[source]
        source: std::io::Error,
    },

    /// No node could serve within the bounded wait (every node down, unreachable, or its
    /// store unavailable). Retryable: the same call may succeed later.
    #[error("no idmint node could serve within {waited:?}")]
    Unavailable {
        /// How long the call waited.
        waited: Duration,
        /// The last failure seen.
        #[source]
        source: idmint_core::Error,
    },

    /// The tag's IDs are used up: start a new tag. Not retryable.
    #[error("tag `{tag}` is exhausted")]
    TagExhausted {
        /// The tag.
        tag: String,
    },

    /// A node refused the request: a bad tag name, a token that does not allow it, a node's
    /// tag cap. Not retryable without a change. Shows as its source, which it is.
    #[error(transparent)]
    Refused {
        /// The node's answer.
        source: idmint_core::Error,
    },

    /// The client was closed.
    #[error("the idmint client is closed")]
    Closed,
}

impl Error {
    /// True when the same call may succeed later without any change.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// The code of the nodes' answer behind the error, when there is one: what a program
    /// branches on rather than the message (`tag_quota`, `too_many_tags`, `store_unavailable`).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Unavailable { source, .. } => Some(source.code()),
            // The node's own code where it gave one (`permuted`, `unauthorized`), not the kind
            // the client's machinery passed the refusal on as.
            Error::Refused { source } => {
                Some(crate::nodes::node_code(source).unwrap_or(source.code()))
            }
            Error::TagExhausted { .. } => Some(ErrorCode::TagExhausted),
            _ => None,
        }
    }

    /// A failure of the shared machinery (the segment buffer), as the caller should see it.
    pub(crate) fn from_core(error: idmint_core::Error, waited: Duration) -> Self {
        use idmint_core::Error as Core;
        match &error {
            Core::TagExhausted { tag } => Error::TagExhausted { tag: tag.clone() },
            Core::SegmentUnavailable { waited, .. } => Error::Unavailable {
                waited: *waited,
                source: error,
            },
            _ if error.is_retryable() => Error::Unavailable {
                waited,
                source: error,
            },
            _ => Error::Refused { source: error },
        }
    }
}

/// The client's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A [`ClientConfig`](crate::ClientConfig) that cannot work: which field, and why. Returned
/// (inside [`Error::Config`]) by [`Client::new`](crate::Client::new) and
/// [`BlockingClient::new`](crate::BlockingClient::new) before any connection is opened.
#[derive(Debug, thiserror::Error)]
#[error("idmint client configuration: {field}: {reason}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The field refused (the first, when two fields disagree).
    pub field: ConfigField,
    /// Why, in words: what the field must be, or what is wrong with the node's address.
    pub reason: String,
    /// The error behind it, for a node address the Redis client cannot use.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ConfigError {
    /// `field` refused for `reason`.
    pub(crate) fn new(field: ConfigField, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
            source: None,
        }
    }

    /// The same refusal with the error behind it.
    pub(crate) fn caused_by(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }
}

/// A field of [`ClientConfig`](crate::ClientConfig), as [`ConfigError`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigField {
    /// `nodes`: none given, or an address that is not a usable `redis://` or `rediss://` URL.
    Nodes,
    /// `token`: empty.
    Token,
    /// `min_step`.
    MinStep,
    /// `max_step`.
    MaxStep,
    /// `target_lifetime`.
    TargetLifetime,
    /// `prefetch_at`.
    PrefetchAt,
    /// `max_wait`.
    MaxWait,
    /// `call_timeout`.
    CallTimeout,
    /// `backoff`.
    Backoff,
    /// `max_backoff`.
    MaxBackoff,
    /// `snowflake_batch`.
    SnowflakeBatch,
    /// `snowflake_max_age`.
    SnowflakeMaxAge,
    /// `id128_node`.
    Id128Node,
}

impl ConfigField {
    /// The field's name in [`ClientConfig`](crate::ClientConfig) (`max_wait`).
    pub fn name(self) -> &'static str {
        match self {
            ConfigField::Nodes => "nodes",
            ConfigField::Token => "token",
            ConfigField::MinStep => "min_step",
            ConfigField::MaxStep => "max_step",
            ConfigField::TargetLifetime => "target_lifetime",
            ConfigField::PrefetchAt => "prefetch_at",
            ConfigField::MaxWait => "max_wait",
            ConfigField::CallTimeout => "call_timeout",
            ConfigField::Backoff => "backoff",
            ConfigField::MaxBackoff => "max_backoff",
            ConfigField::SnowflakeBatch => "snowflake_batch",
            ConfigField::SnowflakeMaxAge => "snowflake_max_age",
            ConfigField::Id128Node => "id128_node",
        }
    }
}

impl fmt::Display for ConfigField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error and every source after it, as a log line with the chain shows it.
    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut next = error.source();
        while let Some(cause) = next {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            next = cause.source();
        }
        text
    }

    #[test]
    fn a_refusal_says_the_nodes_answer_once() {
        let refused = Error::Refused {
            source: idmint_core::Error::UnknownTag { tag: "t".into() },
        };
        assert_eq!(chain(&refused), "unknown tag `t`");
        assert_eq!(refused.code(), Some(ErrorCode::UnknownTag));
        let unavailable = Error::Unavailable {
            waited: Duration::from_secs(3),
            source: idmint_core::Error::store_unavailable("down"),
        };
        assert_eq!(
            chain(&unavailable),
            "no idmint node could serve within 3s: store unavailable: down"
        );
        assert_eq!(unavailable.code(), Some(ErrorCode::StoreUnavailable));
    }

    #[test]
    fn a_config_error_names_its_field_and_says_its_source_once() {
        let error = Error::from(
            ConfigError::new(ConfigField::Nodes, "`x`: not a Redis URL")
                .caused_by(std::io::Error::other("bad scheme")),
        );
        assert_eq!(
            chain(&error),
            "idmint client configuration: nodes: `x`: not a Redis URL: bad scheme"
        );
        assert!(matches!(&error, Error::Config { source } if source.field == ConfigField::Nodes));
    }
}
