//! The one error type of `idmint-server`: what can stop `idmint serve` from starting or running.

use std::net::SocketAddr;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A setting is wrong; `setting` is its flag name without dashes.
    #[error("--{setting}: {reason}")]
    Config {
        /// The setting.
        setting: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The ID service or the store refused (store unreachable, no worker free, bad layout...).
    #[error(transparent)]
    Ids(#[from] idmint_core::Error),
    /// A listen address could not be bound (in use, not an address of this host, a privileged
    /// port). Shown as one line naming the setting, the address and the cause: the cause is
    /// the error's source, which `{:#}` appends, so it is not repeated in the message.
    #[error("--{setting}: cannot listen for {what} on {address}")]
    Bind {
        /// The setting that gave the address, without dashes: `http` or `resp`.
        setting: &'static str,
        /// `HTTP` or `Redis protocol`.
        what: &'static str,
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The connection threads could not be started (`--io-threads`).
    #[error("--io-threads: cannot start the connection threads: {0}")]
    IoThreads(std::io::Error),
    /// A listener failed while serving. The cause is the error's source (not repeated in the
    /// message, as for [`Bind`](Self::Bind)).
    #[error("{what} listener failed")]
    Serve {
        /// `HTTP` or `Redis protocol`.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}
