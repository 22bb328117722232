//! The forms a 128-bit ID is written in, and reading them back.
//!
//! Every form keeps the order of the IDs: the canonical and hex texts are fixed-width lowercase
//! hex, the ULID text fixed-width base32 in an alphabet in ASCII order, the bytes big-endian.
//! Reading is strict about shape (one text per ID and form, up to letter case) so that what a
//! user pastes is either exactly an ID or refused with the forms named.

use std::fmt;

use super::value::Id128;
use crate::error::{Error, Result};

/// Crockford's base32 alphabet, as ULIDs use it: no I, L, O or U, in ASCII order.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The longest form, the canonical text.
pub const MAX_FORM_LEN: usize = 36;

/// How a 128-bit ID is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id128Form {
    /// `0192f3a1-7c2e-7a3b-8d4e-5f60718293a4`: RFC 9562's 8-4-4-4-12, lowercase.
    Uuid,
    /// `01JDQ7Z0V4F6X8ZP7M2K3N4Q5R`: 26 characters of Crockford base32, uppercase.
    Ulid,
    /// 32 lowercase hex digits, no dashes.
    Hex,
    /// The 16 bytes, most significant first.
    Bytes,
}

impl Id128Form {
    /// Reads a form's name, in any case: `uuid` (or `canonical`), `ulid` (or `base32`), `hex`,
    /// `bytes` (or `binary`).
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "uuid" | "canonical" => Ok(Id128Form::Uuid),
            "ulid" | "base32" => Ok(Id128Form::Ulid),
            "hex" => Ok(Id128Form::Hex),
            "bytes" | "binary" => Ok(Id128Form::Bytes),
            _ => Err(Error::argument(
                "format",
                format!(
                    "`{}` is not a form of 128-bit IDs: use uuid, ulid, hex or bytes",
                    name.chars().take(32).collect::<String>()
                ),
            )),
        }
    }

    /// The name [`Id128Form::parse`] reads.
    pub const fn as_str(self) -> &'static str {
        match self {
            Id128Form::Uuid => "uuid",
            Id128Form::Ulid => "ulid",
            Id128Form::Hex => "hex",
            Id128Form::Bytes => "bytes",
        }
    }

    /// Whether the form is text (all but [`Id128Form::Bytes`]).
    pub const fn is_text(self) -> bool {
        !matches!(self, Id128Form::Bytes)
    }

    /// Writes `id` into `buf` and returns the part written: no allocation, for the servers'
    /// hot paths.
    pub fn encode(self, id: Id128, buf: &mut [u8; MAX_FORM_LEN]) -> &[u8] {
        let v = id.as_u128();
        match self {
            Id128Form::Uuid => {
                let mut at = 0;
                for (i, slot) in buf.iter_mut().enumerate() {
                    if matches!(i, 8 | 13 | 18 | 23) {
                        *slot = b'-';
                    } else {
                        *slot = HEX[((v >> (124 - 4 * at)) & 0xF) as usize];
                        at += 1;
                    }
                }
                &buf[..36]
            }
            Id128Form::Hex => {
                for (i, slot) in buf[..32].iter_mut().enumerate() {
                    *slot = HEX[((v >> (124 - 4 * i)) & 0xF) as usize];
                }
                &buf[..32]
            }
            Id128Form::Ulid => {
                for (i, slot) in buf[..26].iter_mut().enumerate() {
                    *slot = CROCKFORD[((v >> (125 - 5 * i)) & 31) as usize];
                }
                &buf[..26]
            }
            Id128Form::Bytes => {
                buf[..16].copy_from_slice(&id.to_bytes());
                &buf[..16]
            }
        }
    }

    /// `id` as text in this form; [`Id128Form::Bytes`] gives the bytes' 32 hex digits (text
    /// cannot hold them raw: use [`Id128Form::encode`]).
    pub fn render(self, id: Id128) -> String {
        let form = if self.is_text() { self } else { Id128Form::Hex };
        let mut buf = [0u8; MAX_FORM_LEN];
        form.encode(id, &mut buf)
            .iter()
            .map(|&b| char::from(b))
            .collect()
    }
}

impl fmt::Display for Id128Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Id128 {
    /// Reads an ID in any text form, told apart by length: 36 characters the canonical form,
    /// 32 hex digits, 26 characters of ULID base32. Letter case is ignored; anything else is
    /// refused, saying which forms are read.
    pub fn parse(text: &str) -> Result<Self> {
        parse_text(text.as_bytes())
    }

    /// As [`Id128::parse`], and also exactly 16 bytes read as the ID's bytes (binary clients;
    /// no text form is 16 bytes long).
    pub fn parse_bytes(input: &[u8]) -> Result<Self> {
        match <[u8; 16]>::try_from(input) {
            Ok(bytes) => Ok(Id128::from_bytes(bytes)),
            Err(_) => parse_text(input),
        }
    }
}

/// Reads a text form, told apart by its length.
fn parse_text(input: &[u8]) -> Result<Id128> {
    let parsed = match input.len() {
        36 => parse_canonical(input),
        32 => parse_hex(input),
        26 => parse_ulid(input),
        _ => None,
    };
    parsed.ok_or_else(|| refusal(input))
}

impl Id128 {
    /// Whether `text` is shaped as a 128-bit ID's text (36, 32 or 26 characters) rather than a
    /// 64-bit ID's decimal: what a decoder that takes either asks before reading. Digits alone
    /// are decimal (zero-padded 64-bit forms are 26 or 32 digits wide too): name the kind to
    /// read them as 128-bit.
    pub fn is_text_shaped(text: &[u8]) -> bool {
        matches!(text.len(), 26 | 32 | 36) && !text.iter().all(u8::is_ascii_digit)
    }
}

impl std::str::FromStr for Id128 {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        Id128::parse(text)
    }
}

fn refusal(input: &[u8]) -> Error {
    // Shown escaped and cut: the input may be anything a client sent.
    let shown: String = String::from_utf8_lossy(input)
        .chars()
        .take(48)
        .flat_map(char::escape_debug)
        .collect();
    let why = if !input.is_ascii() {
        "every form is ASCII"
    } else {
        match input.len() {
            36 => "not 8-4-4-4-12 hex digits",
            32 => "not 32 hex digits",
            26 => "not a ULID: Crockford base32 (no I, L, O, U), first character 0-7",
            _ => "expected 36 characters (8-4-4-4-12 hex), 32 hex digits or 26 of ULID base32",
        }
    };
    Error::argument("id", format!("`{shown}` is not a 128-bit ID: {why}"))
}

fn hex_value(b: u8) -> Option<u128> {
    match b {
        b'0'..=b'9' => Some(u128::from(b - b'0')),
        b'a'..=b'f' => Some(u128::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u128::from(b - b'A' + 10)),
        _ => None,
    }
}

fn parse_hex(input: &[u8]) -> Option<Id128> {
    input
        .iter()
        .try_fold(0u128, |acc, &b| Some(acc << 4 | hex_value(b)?))
        .map(Id128::from_u128)
}

fn parse_canonical(input: &[u8]) -> Option<Id128> {
    let mut value = 0u128;
    for (i, &b) in input.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if b != b'-' {
                return None;
            }
        } else {
            value = value << 4 | hex_value(b)?;
        }
    }
    Some(Id128::from_u128(value))
}

fn base32_value(b: u8) -> Option<u128> {
    let upper = b.to_ascii_uppercase();
    CROCKFORD
        .iter()
        .position(|&c| c == upper)
        .map(|at| at as u128)
}

fn parse_ulid(input: &[u8]) -> Option<Id128> {
    // 26 characters hold 130 bits: the first one may carry only 3 of them.
    if base32_value(input[0])? > 7 {
        return None;
    }
    input
        .iter()
        .try_fold(0u128, |acc, &b| Some(acc << 5 | base32_value(b)?))
        .map(Id128::from_u128)
}
