//! Who may do what, the same on both front ends: a client presents a token (HTTP's
//! `Authorization: Bearer`, the Redis protocol's `AUTH` or `HELLO ... AUTH`), and the token's
//! [`Grant`] says which scope and which tags it may use.
//!
//! - `admin`: everything, on every tag;
//! - `mint`: the ID routes and commands (snowflakes, segment IDs, leases, decoding), on the
//!   tags its patterns match (every tag when it has none);
//! - `metrics`: `/metrics` and `INFO`, which name every tag and its rate.
//!
//! With no token configured everything is open, as before. With any, nothing but the health
//! checks (`/healthz`, `/readyz`, whose details then need the metrics scope; `PING`, `HELLO`,
//! `AUTH`, `QUIT`, `RESET`) is served without one. Tokens are kept only as SHA-256 digests and a presented token is hashed and compared
//! with every digest in constant time: neither the time of a refusal nor the memory of the
//! process gives a token away. The set is replaced whole on reload ([`Auth::replace`]).

mod secret;
mod token_file;
mod tokens;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::glob::{glob_match, Case};

pub use self::token_file::{sha256_hex, TOKEN_FILE_EXAMPLE};
pub use self::tokens::TokenSources;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Everything: IDs, tags and workers, metrics, settings.
    Admin,
    /// IDs: snowflakes, segment IDs and leases of the tags it may use, decoding.
    Mint,
    /// Reading `/metrics` and `INFO`.
    Metrics,
}

/// What a route or command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Any valid token (connection commands such as `CLIENT SETNAME` or `SELECT`).
    Token,
    /// The mint scope (or admin).
    Mint,
    /// The metrics scope (or admin).
    Metrics,
    /// The admin scope.
    Admin,
}

impl Need {
    /// The scope named in refusals.
    pub(crate) fn scope_name(self) -> &'static str {
        match self {
            Need::Token => "any",
            Need::Mint => "mint",
            Need::Metrics => "metrics",
            Need::Admin => "admin",
        }
    }
}

/// What one token allows.
#[derive(Debug, PartialEq, Eq)]
pub struct Grant {
    /// The token's name: in logs, and the user name of `AUTH user password`.
    name: Box<str>,
    scope: Scope,
    /// Glob patterns of the tags it may use (case kept); empty: every tag.
    tags: Box<[Box<str>]>,
    /// Most tags it may have (`max_tags` in the tokens file): in the store, matching its
    /// patterns, and loaded on one node. `None`: the node's default share. Unused by the admin
    /// scope, which has no quota.
    max_tags: Option<usize>,
}

impl Grant {
    /// A grant of `scope` on the tags `tags` matches (every tag when empty).
    pub fn new(name: &str, scope: Scope, tags: Vec<String>) -> Self {
        Self {
            name: name.into(),
            scope,
            tags: tags.into_iter().map(String::into_boxed_str).collect(),
            max_tags: None,
        }
    }

    /// The grant with a quota of `max_tags` tags (see [`Grant::max_tags`]).
    pub fn with_max_tags(mut self, max_tags: Option<usize>) -> Self {
        self.max_tags = max_tags;
        self
    }

    /// Its own quota of tags, if the tokens file gives one.
    pub fn max_tags(&self) -> Option<usize> {
        self.max_tags
    }

    /// What a client gets when no token is configured: everything.
    pub(crate) fn open() -> Arc<Self> {
        Arc::new(Self::new("default", Scope::Admin, Vec::new()))
    }

    /// The token's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The token's scope.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Whether the grant covers `need`.
    pub(crate) fn allows(&self, need: Need) -> bool {
        match (self.scope, need) {
            (Scope::Admin, _) | (_, Need::Token) => true,
            (Scope::Mint, Need::Mint) | (Scope::Metrics, Need::Metrics) => true,
            (Scope::Mint | Scope::Metrics, _) => false,
        }
    }

    /// Whether the grant may use the tag spelled `tag`.
    pub(crate) fn allows_tag(&self, tag: &[u8]) -> bool {
        self.tags.is_empty()
            || self
                .tags
                .iter()
                .any(|pattern| glob_match(pattern.as_bytes(), tag, Case::Keep))
    }
}

/// A token as kept: its SHA-256 digest and what it allows.
struct Entry {
    digest: [u8; 32],
    grant: Arc<Grant>,
}

/// The configured tokens. Empty: everything is open.
#[derive(Default)]
pub struct Tokens {
    entries: Vec<Entry>,
}

impl fmt::Debug for Tokens {
    /// Names and scopes, never digests.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| (&e.grant.name, e.grant.scope)))
            .finish()
    }
}

impl Tokens {
    /// Whether no token is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds a token given by its SHA-256 `digest`.
    pub(crate) fn push_digest(&mut self, digest: [u8; 32], grant: Grant) {
        self.entries.push(Entry {
            digest,
            grant: Arc::new(grant),
        });
    }

    /// Adds a token given in the clear.
    pub fn push_secret(&mut self, secret: &[u8], grant: Grant) {
        self.push_digest(digest(secret), grant);
    }

    /// The grant of the token `presented`, if it is one of them. Every digest is compared, in
    /// constant time, whichever matches.
    pub(crate) fn check(&self, presented: &[u8]) -> Option<Arc<Grant>> {
        self.check_digest(&digest(presented))
    }

    /// The grant of the token whose SHA-256 is `wanted`.
    pub(crate) fn check_digest(&self, wanted: &[u8; 32]) -> Option<Arc<Grant>> {
        let mut found = None;
        for entry in &self.entries {
            if secret_eq(wanted, &entry.digest) && found.is_none() {
                found = Some(Arc::clone(&entry.grant));
            }
        }
        found
    }
}

/// The tokens one server checks, replaceable while it runs (on SIGHUP).
pub struct Auth {
    current: ArcSwap<Tokens>,
    /// Bumped by every [`Auth::replace`]: a connection that authenticated under an older set
    /// looks its token up again before its next command, so a revoked token stops at once.
    generation: AtomicU64,
    /// Whether tokens are required: fixed at start, so a reload cannot turn authentication
    /// off (or on behind connections that never authenticated).
    required: bool,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("tokens", &**self.current.load())
            .finish()
    }
}

impl Default for Auth {
    /// No token: everything open.
    fn default() -> Self {
        Self::new(Tokens::default())
    }
}

impl Auth {
    /// Checks `tokens`; an empty set leaves everything open for the server's life.
    pub fn new(tokens: Tokens) -> Self {
        Self {
            required: !tokens.is_empty(),
            current: ArcSwap::from_pointee(tokens),
            generation: AtomicU64::new(0),
        }
    }

    /// One token, of the admin scope, named `default` (what `--admin-token` configures).
    pub fn admin(token: &str) -> Self {
        let mut tokens = Tokens::default();
        tokens.push_secret(
            token.as_bytes(),
            Grant::new("default", Scope::Admin, Vec::new()),
        );
        Self::new(tokens)
    }

    /// Whether clients must present a token.
    pub fn required(&self) -> bool {
        self.required
    }

    /// The grant of `presented`, if it is a valid token now.
    pub(crate) fn check(&self, presented: &[u8]) -> Option<Arc<Grant>> {
        self.current.load().check(presented)
    }

    /// The grant of the token with SHA-256 `digest`, if it is a valid token now.
    pub(crate) fn check_digest(&self, digest: &[u8; 32]) -> Option<Arc<Grant>> {
        self.current.load().check_digest(digest)
    }

    /// How many times the tokens were replaced.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Replaces the tokens (a reload). Refused when it would turn authentication on or off:
    /// that takes a restart.
    pub fn replace(&self, tokens: Tokens) -> Result<(), &'static str> {
        if tokens.is_empty() == self.required {
            return Err(if self.required {
                "the reloaded settings have no token: turning authentication off takes a restart"
            } else {
                "the reloaded settings add tokens: turning authentication on takes a restart"
            });
        }
        self.current.store(Arc::new(tokens));
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// SHA-256 of `secret`.
pub(crate) fn digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Whether `given` is the `expected` secret, in time that depends only on the two lengths,
/// never on where they first differ: a client cannot find a secret byte by byte by timing its
/// guesses.
pub(crate) fn secret_eq(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_exactly() {
        assert!(secret_eq(b"s3cret", b"s3cret"));
        assert!(!secret_eq(b"s3cret", b"s3creT"));
        assert!(!secret_eq(b"s3cret", b"s3cre"));
        assert!(!secret_eq(b"", b"s3cret"));
        assert!(secret_eq(b"", b""));
    }

    #[test]
    fn each_token_gets_its_own_grant() {
        let mut tokens = Tokens::default();
        tokens.push_secret(b"adm", Grant::new("ops", Scope::Admin, vec![]));
        tokens.push_secret(
            b"ord",
            Grant::new(
                "orders",
                Scope::Mint,
                vec!["orders".into(), "orders-*".into()],
            ),
        );
        tokens.push_digest(
            digest(b"prom"),
            Grant::new("prometheus", Scope::Metrics, vec![]),
        );
        assert!(tokens.check(b"nope").is_none());
        assert!(tokens.check(b"").is_none());
        let Some(admin) = tokens.check(b"adm") else {
            panic!("the admin token is refused");
        };
        assert!([Need::Token, Need::Mint, Need::Metrics, Need::Admin]
            .iter()
            .all(|&need| admin.allows(need)));
        assert!(admin.allows_tag(b"anything"));
        let Some(orders) = tokens.check(b"ord") else {
            panic!("the mint token is refused");
        };
        assert_eq!(orders.name(), "orders");
        assert!(orders.allows(Need::Mint) && orders.allows(Need::Token));
        assert!(!orders.allows(Need::Admin) && !orders.allows(Need::Metrics));
        assert!(orders.allows_tag(b"orders") && orders.allows_tag(b"orders-eu"));
        assert!(!orders.allows_tag(b"ordersx") && !orders.allows_tag(b"Orders"));
        let Some(metrics) = tokens.check(b"prom") else {
            panic!("the metrics token is refused");
        };
        assert!(metrics.allows(Need::Metrics) && !metrics.allows(Need::Mint));
    }

    #[test]
    fn a_reload_cannot_turn_authentication_on_or_off() {
        let mut tokens = Tokens::default();
        tokens.push_secret(b"a", Grant::new("a", Scope::Admin, vec![]));
        let auth = Auth::new(tokens);
        assert!(auth.replace(Tokens::default()).is_err());
        let mut other = Tokens::default();
        other.push_secret(b"b", Grant::new("b", Scope::Admin, vec![]));
        assert!(auth.replace(other).is_ok());
        assert!(auth.check(b"a").is_none() && auth.check(b"b").is_some());
        let open = Auth::default();
        let mut some = Tokens::default();
        some.push_secret(b"c", Grant::new("c", Scope::Admin, vec![]));
        assert!(open.replace(some).is_err());
    }
}
