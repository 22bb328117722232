//! The one error type of `idmint-server`: what can stop `idmint serve` from starting or running;
//! and what an error about a file that may hold secrets may quote of it.

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

/// `message` (a TOML or serde error) with each value it quotes between backticks or double
/// quotes replaced by `…`, unless `known` says it is a name of the file's format (a setting,
/// a field, a variant): "unknown variant `s3cret`" could otherwise print a secret written
/// under the wrong key or in the wrong form.
pub(crate) fn without_quoted_values(message: &str, known: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find(['`', '"']) {
        let quote = rest[open..].chars().next().unwrap_or('`');
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(quote) else {
            out.push('…');
            return out;
        };
        let quoted = &after[..close];
        out.push_str(if known(quoted) { quoted } else { "…" });
        out.push(quote);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}
