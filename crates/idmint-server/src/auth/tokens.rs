//! Loading the tokens from the settings: `--admin-token` (or `IDMINT_ADMIN_TOKEN`),
//! `--admin-token-file` (a file holding one token, as systemd credentials and Kubernetes
//! secrets provide it: a flag would show in `/proc/PID/cmdline`) and `--tokens-file`, a TOML
//! list of scoped tokens, each given in the clear or as its SHA-256 digest:
//!
//! ```toml
#![doc = include_str!("token_file_example.toml")]
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{digest, Grant, Scope, Tokens};
use crate::error::ServerError;

/// An example tokens file, for the docs and `idmint token new`.
pub const TOKEN_FILE_EXAMPLE: &str = include_str!("token_file_example.toml");

/// Shortest secret accepted without a warning: 16 bytes. `idmint token new` makes 32.
const SHORT_SECRET: usize = 16;

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

/// One `[[token]]` of a tokens file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    scope: Scope,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    max_tags: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
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

fn refused(setting: &str, reason: String) -> ServerError {
    ServerError::Config {
        setting: setting.into(),
        reason,
    }
}

/// What makes a token given in the clear unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unusable {
    /// Empty or blank: it would turn authentication off.
    Empty,
    /// Spaces at an end or a control character: HTTP drops the spaces around a Bearer token
    /// and no header holds a line break, so no request would ever match it, with nothing said.
    Unsendable,
}

impl Unusable {
    fn of(secret: &str) -> Option<Self> {
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
const UNSENDABLE: &str = "begins or ends with a space or holds a control character (a line \
                          break, a tab), which no HTTP client can send: it would match no request";

/// A token in the clear: not empty, nothing a client cannot send, and a warning when short.
fn check_secret(setting: &str, what: &str, secret: &str) -> Result<(), ServerError> {
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

/// The grants and digests of a tokens file.
fn read_tokens_file(path: &Path) -> Result<Vec<(Grant, [u8; 32])>, ServerError> {
    let error = |reason: String| refused("tokens-file", format!("{}: {reason}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
    let file: TokenFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| {
            text.get(..span.start)
                .unwrap_or(text.as_str())
                .matches('\n')
                .count()
                + 1
        });
        let message = crate::config::without_quoted_values(e.message(), |quoted| {
            matches!(
                quoted,
                "token"
                    | "name"
                    | "scope"
                    | "tags"
                    | "secret"
                    | "sha256"
                    | "max_tags"
                    | "admin"
                    | "mint"
                    | "metrics"
            )
        });
        match line {
            Some(line) => error(format!("line {line}: {message}")),
            None => error(message),
        }
    })?;
    if file.token.is_empty() {
        return Err(error(
            "holds no [[token]]: a tokens file with none would turn authentication off".into(),
        ));
    }
    file.token
        .into_iter()
        .map(|entry| {
            let name = entry.name.clone();
            entry
                .into_grant()
                .map_err(|reason| error(format!("token `{name}` {reason}")))
        })
        .collect()
}

impl TokenEntry {
    fn into_grant(self) -> Result<(Grant, [u8; 32]), String> {
        let name_ok =
            (1..=64).contains(&self.name.len()) && self.name.bytes().all(|b| b.is_ascii_graphic());
        if !name_ok {
            return Err("has a bad name: 1 to 64 printable ASCII characters, no spaces".into());
        }
        let digest = match (&self.secret, &self.sha256) {
            (Some(secret), None) => {
                match Unusable::of(secret) {
                    Some(Unusable::Empty) => return Err("has an empty secret".into()),
                    Some(Unusable::Unsendable) => {
                        return Err(format!("has a secret that {UNSENDABLE}"))
                    }
                    None => {}
                }
                check_secret("tokens-file", &format!("token `{}`", self.name), secret)
                    .map_err(|error| error.to_string())?;
                digest(secret.as_bytes())
            }
            (None, Some(hex)) => parse_sha256(hex)
                .ok_or_else(|| String::from("has a bad sha256: 64 hexadecimal digits"))?,
            _ => return Err("needs one of `secret` and `sha256`".into()),
        };
        let tags = match (self.scope, self.tags) {
            (_, None) => Vec::new(),
            (Scope::Mint, Some(tags)) => {
                if tags.is_empty() || tags.iter().any(String::is_empty) {
                    return Err(
                        "has an empty tag list or pattern: leave `tags` out for every tag".into(),
                    );
                }
                tags
            }
            (_, Some(_)) => {
                return Err("has `tags`, which only a token of the mint scope can have".into())
            }
        };
        if self.max_tags.is_some() && self.scope != Scope::Mint {
            return Err(
                "has `max_tags`, which only a token of the mint scope can have (the admin scope \
                 has no quota)"
                    .into(),
            );
        }
        let grant = Grant::new(&self.name, self.scope, tags).with_max_tags(self.max_tags);
        Ok((grant, digest))
    }
}

/// A SHA-256 digest written as 64 hexadecimal digits.
fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    Some(digest)
}

/// The SHA-256 of `secret` as a tokens file writes it (`sha256 = "..."`).
pub fn sha256_hex(secret: &[u8]) -> String {
    to_hex(&digest(secret))
}

/// `bytes` as lower-case hexadecimal.
fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::auth::Need;

    fn file(text: &str) -> (tempdir::Dir, PathBuf) {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// A folder removed when dropped (the crate has no tempfile dependency).
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU32, Ordering};

        pub struct Dir(PathBuf);

        impl Dir {
            pub fn new() -> Self {
                static NEXT: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "idmint-tokens-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                let _ = std::fs::create_dir_all(&path);
                Self(path)
            }

            pub fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn only_mint_tokens_have_a_tag_quota() {
        let quota = |scope: &str| {
            let (_dir, path) = file(&format!(
                "[[token]]\nname = \"t\"\nscope = \"{scope}\"\nmax_tags = 5\nsecret = \"0123456789abcdef0\"\n"
            ));
            TokenSources {
                tokens_file: Some(path),
                ..TokenSources::default()
            }
            .load()
        };
        let tokens = quota("mint").unwrap();
        assert_eq!(
            tokens.check(b"0123456789abcdef0").unwrap().max_tags(),
            Some(5)
        );
        for scope in ["admin", "metrics"] {
            let Err(ServerError::Config { setting, reason }) = quota(scope) else {
                panic!("max_tags accepted on {scope}");
            };
            assert_eq!(setting, "tokens-file");
            assert!(reason.contains("max_tags"), "{reason}");
        }
    }

    #[test]
    fn the_example_file_loads() {
        let (_dir, path) = file(TOKEN_FILE_EXAMPLE);
        let sources = TokenSources {
            tokens_file: Some(path),
            ..TokenSources::default()
        };
        let tokens = sources.load().unwrap();
        assert_eq!(tokens.len(), 3);
        let orders = tokens.check(b"change-me-orders-0123456789").unwrap();
        assert!(orders.allows(Need::Mint) && !orders.allows(Need::Admin));
        assert!(orders.allows_tag(b"orders-eu") && !orders.allows_tag(b"payments"));
        assert_eq!(orders.max_tags(), Some(500));
        // The metrics token is given by its digest: sha256("change-me-prometheus-0123456789").
        let prometheus = tokens.check(b"change-me-prometheus-0123456789").unwrap();
        assert!(prometheus.allows(Need::Metrics) && !prometheus.allows(Need::Mint));
    }

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

    #[test]
    fn bad_token_files_are_refused_without_quoting_secrets() {
        for (text, expected) in [
            ("", "holds no [[token]]"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\n", "needs one of"),
            (
                "[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\"\nsha256 = \"00\"\n",
                "needs one of",
            ),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsha256 = \"s3cret\"\n", "bad sha256"),
            ("[[token]]\nname = \"a b\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\"\n", "bad name"),
            ("[[token]]\nname = \"a\"\nscope = \"admin\"\ntags = [\"x\"]\nsecret = \"s3cret-0123456789\"\n", "only a token of the mint scope"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\ntags = []\nsecret = \"s3cret-0123456789\"\n", "empty tag list"),
            ("[[token]]\nname = \"a\"\nscope = \"s3cret\"\nsecret = \"s3cret-0123456789\"\n", "line 3"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"\"\n", "empty secret"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789 \"\n", "no HTTP client can send"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-01234\\n56789\"\n", "no HTTP client can send"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\"\n[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-9876543210\"\n", "named twice"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\"\n[[token]]\nname = \"b\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\"\n", "secret of another"),
            ("[[token]]\nname = \"a\"\nscope = \"mint\"\nsecret = \"s3cret-0123456789\" oops\n", "line 4"),
        ] {
            let (_dir, path) = file(text);
            let sources = TokenSources {
                tokens_file: Some(path),
                ..TokenSources::default()
            };
            let Err(ServerError::Config { setting, reason }) = sources.load() else {
                panic!("{text:?} was accepted");
            };
            assert_eq!(setting, "tokens-file");
            assert!(reason.contains(expected), "{text:?}: {reason}");
            assert!(!reason.contains("s3cret"), "{text:?}: {reason}");
        }
    }

    #[test]
    fn digests_are_written_in_hex() {
        let hex = to_hex(&digest(b"abc"));
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(parse_sha256(&hex), Some(digest(b"abc")));
        assert_eq!(parse_sha256(&hex.to_uppercase()), Some(digest(b"abc")));
        assert_eq!(parse_sha256("zz"), None);
    }
}
