//! IDs as text: decimal, base62, base36 and Crockford's base32 (the ULID alphabet), with an
//! optional prefix and a fixed width, and back.
//!
//! Each alphabet lists its digits in ASCII order, so IDs written at one fixed width sort as
//! text exactly as they sort as numbers. That is the default: every form pads to the width
//! that holds any 63-bit ID ([`Radix::full_width`]). `width 0` writes the shortest text
//! instead (shorter is smaller, but `"z" > "10"` as text), and a larger width pads more.
//!
//! Reading is as forgiving as the alphabet allows and no more: base36 and base32 ignore case,
//! base32 also reads `I` and `L` as `1`, `O` as `0` and skips hyphens (Crockford's rules);
//! base62 is case-sensitive, since case is half its digits. Anything else (an empty text, a
//! wrong prefix, a character outside the alphabet, a value above the largest ID) is refused
//! with a message that says which.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// The largest ID: IDs are positive in a signed 64-bit column.
const MAX_ID: u64 = i64::MAX as u64;

/// Longest prefix accepted, in bytes.
pub const MAX_PREFIX: usize = 16;

/// The widest fixed width accepted (a text of that many digits and the prefix).
pub const MAX_WIDTH: usize = 32;

/// The digits of a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Radix {
    /// `0-9`.
    Decimal,
    /// `0-9A-Za-z` (case-sensitive).
    Base62,
    /// `0-9a-z` (written lowercase, read in either case).
    Base36,
    /// Crockford's `0-9A-HJKMNP-TV-Z` (no I, L, O, U), the ULID alphabet.
    Base32,
}

impl Radix {
    /// Every radix, for listings and tests.
    pub const ALL: [Radix; 4] = [Radix::Decimal, Radix::Base62, Radix::Base36, Radix::Base32];

    /// The name used in settings and requests.
    pub fn name(self) -> &'static str {
        match self {
            Radix::Decimal => "decimal",
            Radix::Base62 => "base62",
            Radix::Base36 => "base36",
            Radix::Base32 => "base32",
        }
    }

    fn digits(self) -> &'static [u8] {
        match self {
            Radix::Decimal => b"0123456789",
            Radix::Base62 => b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            Radix::Base36 => b"0123456789abcdefghijklmnopqrstuvwxyz",
            Radix::Base32 => b"0123456789ABCDEFGHJKMNPQRSTVWXYZ",
        }
    }

    fn base(self) -> u64 {
        self.digits().len() as u64
    }

    /// Digits that hold every 63-bit ID: 19, 11, 13 and 13.
    pub fn full_width(self) -> usize {
        let mut width = 1;
        let mut max = MAX_ID;
        while max >= self.base() {
            max /= self.base();
            width += 1;
        }
        width
    }

    /// The value of one character, by the radix's reading rules; `None` outside the alphabet.
    fn value_of(self, c: u8) -> Option<u64> {
        let v = match (self, c) {
            (_, b'0'..=b'9') => c - b'0',
            (Radix::Decimal, _) => return None,
            (Radix::Base62, b'A'..=b'Z') => c - b'A' + 10,
            (Radix::Base62, b'a'..=b'z') => c - b'a' + 36,
            (Radix::Base36, b'a'..=b'z') => c - b'a' + 10,
            (Radix::Base36, b'A'..=b'Z') => c - b'A' + 10,
            (Radix::Base32, _) => return crockford_value(c.to_ascii_uppercase()),
            _ => return None,
        };
        Some(u64::from(v))
    }
}

/// Crockford's reading of an uppercase character: I and L are 1, O is 0, U is refused.
fn crockford_value(c: u8) -> Option<u64> {
    match c {
        b'I' | b'L' => Some(1),
        b'O' => Some(0),
        _ => Radix::Base32
            .digits()
            .iter()
            .position(|d| *d == c)
            .map(|p| p as u64),
    }
}

impl fmt::Display for Radix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Radix {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "decimal" | "dec" | "10" => Ok(Radix::Decimal),
            "base62" | "62" => Ok(Radix::Base62),
            "base36" | "36" => Ok(Radix::Base36),
            "base32" | "32" | "crockford" | "ulid" => Ok(Radix::Base32),
            _ => Err(invalid(
                "format",
                format!("`{name}` is not a form: decimal, base62, base36 or base32"),
            )),
        }
    }
}

/// How IDs are written as text: a radix, a prefix and a width.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdForm {
    radix: Radix,
    prefix: String,
    /// Digits written at least (zeros in front); 0 for the shortest text.
    width: usize,
}

impl Default for IdForm {
    /// Plain decimal, as IDs are written everywhere else.
    fn default() -> Self {
        Self {
            radix: Radix::Decimal,
            prefix: String::new(),
            width: 0,
        }
    }
}

impl IdForm {
    /// `radix` at its full width (sortable), no prefix.
    pub fn new(radix: Radix) -> Self {
        Self {
            radix,
            prefix: String::new(),
            width: radix.full_width(),
        }
    }

    /// The same form with a prefix: up to [`MAX_PREFIX`] bytes of `A-Z a-z 0-9 _ -`, written
    /// before the digits and required when reading.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self> {
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if prefix.len() > MAX_PREFIX || !prefix.chars().all(valid) {
            return Err(invalid(
                "prefix",
                format!("a prefix is up to {MAX_PREFIX} characters of A-Z a-z 0-9 _ -"),
            ));
        }
        self.prefix = prefix.to_owned();
        Ok(self)
    }

    /// The same form at another width: 0 writes the shortest text (not sortable as text); a
    /// width below the radix's full width sorts only the IDs that fit it.
    pub fn with_width(mut self, width: usize) -> Result<Self> {
        if width > MAX_WIDTH {
            return Err(invalid(
                "width",
                format!("{width} is above the widest, {MAX_WIDTH}"),
            ));
        }
        self.width = width;
        Ok(self)
    }

    /// A form from the names requests use: `format` (a radix name), `prefix` and `width`
    /// (digits; default the radix's full width).
    pub fn from_parts(format: &str, prefix: Option<&str>, width: Option<usize>) -> Result<Self> {
        let radix: Radix = format.parse()?;
        let form = IdForm::new(radix).with_prefix(prefix.unwrap_or(""))?;
        match width {
            Some(width) => form.with_width(width),
            None => Ok(form),
        }
    }

    /// The radix.
    pub fn radix(&self) -> Radix {
        self.radix
    }

    /// The prefix (may be empty).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The width in digits (0 for the shortest).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Whether this is plain decimal with nothing added, as IDs are written by default.
    pub fn is_plain(&self) -> bool {
        self.radix == Radix::Decimal && self.prefix.is_empty() && self.width <= 1
    }

    /// `id` as text in this form.
    pub fn encode(&self, id: u64) -> String {
        let mut out = String::with_capacity(self.prefix.len() + self.width.max(20));
        self.encode_into(id, &mut out);
        out
    }

    /// Appends `id` in this form to `out` (no allocation beyond `out`'s).
    pub fn encode_into(&self, id: u64, out: &mut String) {
        let digits = self.radix.digits();
        let base = self.radix.base();
        let mut buffer = [b'0'; 64];
        let mut at = buffer.len();
        let mut rest = id;
        loop {
            at -= 1;
            buffer[at] = digits[(rest % base) as usize];
            rest /= base;
            if rest == 0 {
                break;
            }
        }
        let written = buffer.len() - at;
        out.push_str(&self.prefix);
        for _ in written..self.width {
            out.push('0');
        }
        // The buffer holds ASCII digits only.
        out.extend(buffer[at..].iter().map(|b| char::from(*b)));
    }

    /// The ID `text` holds in this form.
    pub fn decode(&self, text: &str) -> Result<u64> {
        let shown = || shorten(text);
        if text.len() > self.prefix.len() + MAX_WIDTH + 16 {
            return Err(invalid(
                "id",
                format!("`{}` is too long to be an ID", shown()),
            ));
        }
        let Some(body) = text.strip_prefix(self.prefix.as_str()) else {
            return Err(invalid(
                "id",
                format!(
                    "`{}` does not start with the prefix `{}`",
                    shown(),
                    self.prefix
                ),
            ));
        };
        let base = self.radix.base();
        let mut value: u64 = 0;
        let mut digits = 0;
        for (i, c) in body.bytes().enumerate() {
            if self.radix == Radix::Base32 && c == b'-' {
                continue;
            }
            let Some(v) = self.radix.value_of(c) else {
                return Err(invalid(
                    "id",
                    format!(
                        "`{}`: character {} ({:?}) is not a {} digit",
                        shown(),
                        self.prefix.len() + i + 1,
                        char::from(c),
                        self.radix
                    ),
                ));
            };
            value = value
                .checked_mul(base)
                .and_then(|x| x.checked_add(v))
                .filter(|x| *x <= MAX_ID)
                .ok_or_else(|| {
                    invalid(
                        "id",
                        format!("`{}` is above the largest ID, {MAX_ID}", shown()),
                    )
                })?;
            digits += 1;
        }
        if digits == 0 {
            return Err(invalid(
                "id",
                format!("`{}` has no {} digits", shown(), self.radix),
            ));
        }
        Ok(value)
    }
}

impl fmt::Display for IdForm {
    /// `base62`, `base62 prefix=ord_ width=12`: the parts that differ from the radix's default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.radix.name())?;
        if !self.prefix.is_empty() {
            write!(f, " prefix={}", self.prefix)?;
        }
        if self.width != self.radix.full_width() {
            write!(f, " width={}", self.width)?;
        }
        Ok(())
    }
}

/// At most 40 characters of `text`, for messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn full_widths_hold_every_id() {
        let widths: Vec<usize> = Radix::ALL.iter().map(|r| r.full_width()).collect();
        assert_eq!(widths, [19, 11, 13, 13]);
        for radix in Radix::ALL {
            let form = IdForm::new(radix);
            assert_eq!(form.encode(MAX_ID).len(), radix.full_width(), "{radix}");
            assert_eq!(form.decode(&form.encode(MAX_ID)).unwrap(), MAX_ID);
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(IdForm::new(Radix::Base62).encode(61), "0000000000z");
        assert_eq!(
            IdForm::new(Radix::Base36).with_width(0).unwrap().encode(35),
            "z"
        );
        let ulid = IdForm::new(Radix::Base32).with_width(0).unwrap();
        assert_eq!(ulid.encode(32), "10");
        // Crockford's reading rules.
        assert_eq!(ulid.decode("1o").unwrap(), 32);
        assert_eq!(ulid.decode("i-L").unwrap(), 33);
        assert!(ulid.decode("1U").is_err());
        let order = IdForm::new(Radix::Decimal).with_prefix("ord_").unwrap();
        assert_eq!(order.encode(42), "ord_0000000000000000042");
        assert_eq!(order.decode("ord_42").unwrap(), 42);
    }

    #[test]
    fn bad_text_is_refused_with_a_reason() {
        let form = IdForm::new(Radix::Base62).with_prefix("u_").unwrap();
        let message = |text: &str| form.decode(text).unwrap_err().to_string();
        assert!(message("x_1").contains("prefix `u_`"));
        assert!(message("u_").contains("no base62 digits"));
        assert!(message("u_1!").contains("character 4"));
        assert!(message("u_zzzzzzzzzzzz").contains("above the largest ID"));
        assert!(IdForm::new(Radix::Base62).with_prefix("é").is_err());
        assert!("base64".parse::<Radix>().is_err());
    }
}
