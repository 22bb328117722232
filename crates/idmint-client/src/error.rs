//! The client's one error type.

use std::time::Duration;

/// What a client call can fail with. A call never makes an ID up: it answers one the nodes
/// handed out, or one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot work; the field is named.
    #[error("idmint client configuration: {0}")]
    Config(String),

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
    /// tag cap. Not retryable without a change.
    #[error("{source}")]
    Refused {
        /// The node's answer.
        #[source]
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
