//! The checks of a token given in the clear, wherever it comes from (`--admin-token`, its file,
//! a `secret` of the tokens file): not empty, nothing a client cannot send, a warning when
//! short. Apart from both sources' files, which use them.

use crate::error::ServerError;

/// Shortest secret accepted without a warning: 16 bytes. `idmint token new` makes 32.
const SHORT_SECRET: usize = 16;

pub(super) fn refused(setting: &str, reason: String) -> ServerError {
    ServerError::Config {
        setting: setting.into(),
        reason,
    }
}

/// What makes a token given in the clear unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unusable {
    /// Empty or blank: it would turn authentication off.
    Empty,
    /// Spaces at an end or a control character: HTTP drops the spaces around a Bearer token
    /// and no header holds a line break, so no request would ever match it, with nothing said.
    Unsendable,
}

impl Unusable {
    pub(super) fn of(secret: &str) -> Option<Self> {
        if secret.trim().is_empty() {
            Some(Self::Empty)
        } else if secret.trim() != secret || secret.chars().any(char::is_control) {
            Some(Self::Unsendable)
        } else {
            None
        }
    }
}

/// Why a secret cannot be used, after the words naming it.
pub(super) const UNSENDABLE: &str =
    "begins or ends with a space or holds a control character (a line \
                          break, a tab), which no HTTP client can send: it would match no request";

/// A token in the clear: not empty, nothing a client cannot send, and a warning when short.
pub(super) fn check_secret(setting: &str, what: &str, secret: &str) -> Result<(), ServerError> {
    match Unusable::of(secret) {
        Some(Unusable::Empty) => {
            return Err(refused(
                setting,
                format!(
                    "{what} is empty, which would turn authentication off; give a token, or \
                     unset it to run without one"
                ),
            ))
        }
        Some(Unusable::Unsendable) => return Err(refused(setting, format!("{what} {UNSENDABLE}"))),
        None => {}
    }
    if secret.len() < SHORT_SECRET {
        tracing::warn!(
            setting,
            bytes = secret.len(),
            "{what} is short: use {SHORT_SECRET} or more random bytes (`idmint token new` makes one)"
        );
    }
    Ok(())
}
