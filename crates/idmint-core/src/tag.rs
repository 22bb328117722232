//! Tag names: the key of a segment sequence (Leaf's `biz_tag`).
//!
//! Tags travel in URLs, Redis keys and SQL rows, so the alphabet is kept to characters that need
//! no escaping anywhere: `[A-Za-z0-9_.:-]{1,128}`. Validation happens once, when a [`Tag`] is
//! made; everything downstream can trust it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Longest tag name accepted.
pub const MAX_TAG_LEN: usize = 128;

/// A validated tag name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Tag(String);

impl Tag {
    /// Validates `name` and wraps it.
    pub fn new(name: &str) -> Result<Self> {
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
        if name.is_empty() || name.len() > MAX_TAG_LEN || !name.chars().all(valid_char) {
            let shown: String = name.chars().take(MAX_TAG_LEN).collect();
            return Err(Error::InvalidTag { tag: shown });
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Tag {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        Self::new(name)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Tag {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for name in [
            "a",
            "order",
            "user.id",
            "shop:orders-2024_v1",
            &"x".repeat(128),
        ] {
            assert_eq!(
                Tag::new(name).map(|t| t.as_str().to_owned()),
                Ok(name.to_owned())
            );
        }
    }

    #[test]
    fn refuses_everything_else() {
        for name in ["", "a b", "a/b", "é", "a\0", "tag\n", &"x".repeat(129)] {
            assert!(
                matches!(Tag::new(name), Err(Error::InvalidTag { .. })),
                "{name:?}"
            );
        }
    }
}
