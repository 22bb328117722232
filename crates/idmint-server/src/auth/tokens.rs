//! Loading the tokens from the settings: `--admin-token` (or `IDMINT_ADMIN_TOKEN`),
//! `--admin-token-file` (a file holding one token, as systemd credentials and Kubernetes
//! secrets provide it: a flag would show in `/proc/PID/cmdline`) and `--tokens-file`, a TOML
//! list of scoped tokens, each given in the clear or as its SHA-256 digest, whose format is
//! `token_file.rs`'s. This file combines the sources into one set (no name or secret twice);
//! the checks of a secret given in the clear, which both apply, are `secret.rs`'s.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::secret::{check_secret, refused};
use super::token_file::read_tokens_file;
use super::{digest, Grant, Scope, Tokens};
use crate::error::ServerError;

/// The settings that name tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSources {
    /// `--admin-token`: one token of the admin scope, named `default`.
    pub admin_token: Option<String>,
    /// `--admin-token-file`: the same, read from a file.
    pub admin_token_file: Option<PathBuf>,
    /// `--tokens-file`: scoped tokens.
    pub tokens_file: Option<PathBuf>,
}

impl TokenSources {
    /// Whether any source is set (the set may still turn out empty: a file with no token is
    /// an error).
    pub fn any(&self) -> bool {
        self.admin_token.is_some() || self.admin_token_file.is_some() || self.tokens_file.is_some()
    }

    /// Reads every source into one set. Errors name the setting and, for the files, the line
    /// or the token's name, never a secret.
    pub fn load(&self) -> Result<Tokens, ServerError> {
        let mut tokens = Tokens::default();
        let mut names = HashSet::new();
        let mut digests = HashSet::new();
        let admin = match (&self.admin_token, &self.admin_token_file) {
            (Some(_), Some(_)) => {
                return Err(refused(
                    "admin-token-file",
                    "is set together with --admin-token: give one".into(),
                ))
            }
            (Some(token), None) => Some(token.clone()),
            (None, Some(path)) => Some(read_admin_token(path)?),
            (None, None) => None,
        };
        if let Some(token) = admin {
            let setting = if self.admin_token.is_some() {
                "admin-token"
            } else {
                "admin-token-file"
            };
            check_secret(setting, "the admin token", &token)?;
            names.insert("default".to_owned());
            digests.insert(digest(token.as_bytes()));
            tokens.push_secret(
                token.as_bytes(),
                Grant::new("default", Scope::Admin, Vec::new()),
            );
        }
        if let Some(path) = &self.tokens_file {
            for (grant, digest) in read_tokens_file(path)? {
                let what = |reason: &str| {
                    refused(
                        "tokens-file",
                        format!("{}: token `{}` {reason}", path.display(), grant.name()),
                    )
                };
                if !names.insert(grant.name().to_owned()) {
                    return Err(what("is named twice (the admin token is named `default`)"));
                }
                if !digests.insert(digest) {
                    return Err(what("has the secret of another token"));
                }
                tokens.push_digest(digest, grant);
            }
        }
        Ok(tokens)
    }
}

/// The token in `path`, without the line break (or spaces) around it. A file of several
/// lines is refused: its token would be the lines joined by a line break, which no client can
/// send, so every request would be refused with nothing said.
fn read_admin_token(path: &Path) -> Result<String, ServerError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        refused(
            "admin-token-file",
            format!("{}: cannot read: {error}", path.display()),
        )
    })?;
    let token = text.trim();
    let lines = token.lines().filter(|line| !line.trim().is_empty()).count();
    if lines > 1 {
        return Err(refused(
            "admin-token-file",
            format!(
                "{}: holds {lines} lines; it holds one token, on its only line (for several \
                 tokens, use --tokens-file)",
                path.display()
            ),
        ));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::auth::token_file::tests::file;

    #[test]
    fn admin_tokens_come_from_a_flag_or_a_file_never_both() {
        let (_dir, path) = file("  s3cret-from-a-file-0123\n");
        let from_file = TokenSources {
            admin_token_file: Some(path.clone()),
            ..TokenSources::default()
        };
        assert!(from_file
            .load()
            .unwrap()
            .check(b"s3cret-from-a-file-0123")
            .is_some());
        let both = TokenSources {
            admin_token: Some("x".repeat(20)),
            admin_token_file: Some(path),
            ..TokenSources::default()
        };
        assert!(
            matches!(both.load(), Err(ServerError::Config { setting, .. }) if setting == "admin-token-file")
        );
        let (_dir, blank) = file("\n  \n");
        let blank = TokenSources {
            admin_token_file: Some(blank),
            ..TokenSources::default()
        };
        assert!(
            matches!(blank.load(), Err(ServerError::Config { reason, .. }) if reason.contains("empty"))
        );
        // Two tokens, or a token and a stray line: neither could ever be presented.
        for text in [
            "first-token-0123456789\nsecond-token-0123456789\n",
            "a-token-0123456789\n\n  x\n",
        ] {
            let (_dir, two) = file(text);
            let two = TokenSources {
                admin_token_file: Some(two),
                ..TokenSources::default()
            };
            let Err(ServerError::Config { setting, reason }) = two.load() else {
                panic!("{text:?} was accepted");
            };
            assert_eq!(setting, "admin-token-file");
            assert!(reason.contains("holds 2 lines"), "{reason}");
            assert!(!reason.contains("token-0123456789"), "{reason}");
        }
        let spaced = TokenSources {
            admin_token: Some(" admin-token-0123456789".into()),
            ..TokenSources::default()
        };
        assert!(
            matches!(spaced.load(), Err(ServerError::Config { reason, .. }) if reason.contains("no HTTP client"))
        );
    }
}
