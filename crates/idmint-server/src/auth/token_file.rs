//! The tokens file (`--tokens-file`): a TOML list of scoped tokens, each given in the clear or
//! as its SHA-256 digest, read into grants. Its format and parsing apart from combining the
//! sources (`tokens.rs`) and from matching a presented token (`Tokens::check`):
//!
//! ```toml
#![doc = include_str!("token_file_example.toml")]
//! ```

use std::path::Path;

use serde::Deserialize;

use super::secret::{check_secret, refused, Unusable, UNSENDABLE};
use super::{digest, Grant, Scope};
use crate::error::ServerError;

/// An example tokens file, for the docs and `idmint token new`.
pub const TOKEN_FILE_EXAMPLE: &str = include_str!("token_file_example.toml");

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

/// The grants and digests of a tokens file.
pub(super) fn read_tokens_file(path: &Path) -> Result<Vec<(Grant, [u8; 32])>, ServerError> {
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
        let message = crate::error::without_quoted_values(e.message(), |quoted| {
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
pub(super) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::PathBuf;

    use super::*;
    use crate::auth::{Need, TokenSources};

    pub(in crate::auth) fn file(text: &str) -> (tempdir::Dir, PathBuf) {
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
