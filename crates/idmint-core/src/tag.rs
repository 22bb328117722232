//! Tag names: the key of a segment sequence (Leaf's `biz_tag`).
//!
//! A tag is any UTF-8 text of 1 to [`MAX_TAG_LEN`] bytes, as Leaf's keys are (`订单`,
//! `orders eu`, `tag/with/slash`, an emoji), but for what would be unsafe somewhere it travels:
//! control characters and the Unicode line and paragraph separators (they would split a log
//! line, a metrics line or a RESP reply), and a space at either end (MySQL compares `a` and
//! `a ` as one key). Every place that writes a tag escapes it for its own syntax: HTTP paths
//! percent-encode it, RESP sends it as a bulk string, the stores bind it as a parameter or a
//! Redis key, Prometheus labels escape `"` and `\`, the operator's page sets it as text.
//! Validation happens once, when a [`Tag`] is made; everything downstream can trust it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Longest tag name accepted, in bytes (a column of 128 characters holds any such tag).
pub const MAX_TAG_LEN: usize = 128;

/// A validated tag name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Tag(String);

impl Tag {
    /// Validates `name` and wraps it.
    pub fn new(name: &str) -> Result<Self> {
        if name.is_empty() || name.len() > MAX_TAG_LEN {
            return Err(Self::refused(name));
        }
        let unsafe_char = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
        if name.chars().any(unsafe_char) || name.starts_with(' ') || name.ends_with(' ') {
            return Err(Self::refused(name));
        }
        Ok(Self(name.to_owned()))
    }

    /// Validates a tag given as bytes (a RESP bulk string): it must be UTF-8, then as
    /// [`Tag::new`].
    pub fn from_bytes(name: &[u8]) -> Result<Self> {
        match std::str::from_utf8(name) {
            Ok(name) => Self::new(name),
            Err(_) => Err(Error::InvalidTag {
                tag: String::from_utf8_lossy(&name[..name.len().min(MAX_TAG_LEN)])
                    .escape_debug()
                    .to_string(),
            }),
        }
    }

    /// The refusal of `name`, shown escaped (a control character is shown as `\n`, `\u{0}`)
    /// and cut to [`MAX_TAG_LEN`] characters.
    fn refused(name: &str) -> Error {
        let shown: String = name.chars().take(MAX_TAG_LEN).collect();
        Error::InvalidTag {
            tag: shown.escape_debug().to_string(),
        }
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
    fn accepts_any_utf8_text_up_to_128_bytes() {
        let at_limit = format!("{}{}", "订".repeat(42), "ab"); // 42 * 3 + 2 = 128 bytes
        for name in [
            "a",
            "order",
            "user.id",
            "shop:orders-2024_v1",
            "订单",
            "a b",
            "tag/with/slash",
            "🦀 crabs",
            "a'\"<b>&",
            "é",
            &"x".repeat(128),
            &at_limit,
        ] {
            assert_eq!(
                Tag::new(name).map(|t| t.as_str().to_owned()),
                Ok(name.to_owned())
            );
            assert_eq!(Tag::from_bytes(name.as_bytes()), Tag::new(name));
        }
    }

    #[test]
    fn refuses_control_characters_spaces_at_the_ends_and_length() {
        let over = format!("{}{}", "订".repeat(42), "abc"); // 129 bytes
        for name in [
            "",
            "a\0",
            "tag\n",
            "a\rb",
            "\t",
            "a\u{7f}",
            "a\u{85}b",
            "a\u{2028}b",
            " a",
            "a ",
            &"x".repeat(129),
            &over,
        ] {
            assert!(
                matches!(Tag::new(name), Err(Error::InvalidTag { .. })),
                "{name:?}"
            );
        }
        let Err(Error::InvalidTag { tag }) = Tag::new("a\nb") else {
            panic!("accepted");
        };
        assert_eq!(tag, "a\\nb", "shown escaped");
        assert!(matches!(
            Tag::from_bytes(b"a\xffb"),
            Err(Error::InvalidTag { .. })
        ));
    }
}
