//! 128-bit IDs: UUIDv7 (RFC 9562) and ULID, strictly increasing per generator.
//!
//! Both layouts put 48-bit Unix milliseconds first, then a 24-bit counter (RFC 9562 §6.2,
//! method 1: a dedicated counter, seeded at random below 2^23 in each new millisecond), then an
//! optional node field, then bits from a CSPRNG. The order of the bytes, of the canonical and
//! hex texts and of the ULID text is the order of generation. docs/ARCHITECTURE.md,
//! "128-bit IDs", says why this layout and not a 12-bit counter or sub-millisecond time.
//!
//! ```
//! use idmint_core::{Id128, Id128Form, Id128Generator};
//!
//! let ids = Id128Generator::ulid()?;
//! let id = ids.next_id()?;
//! let text = Id128Form::Ulid.render(id); // 01M8FPK54W8MM77Q9C9JGQFMNA
//! assert_eq!(Id128::parse(&text)?, id);
//! assert_eq!(Id128::parse(&Id128Form::Uuid.render(id))?, id);
//! # Ok::<(), idmint_core::Error>(())
//! ```

mod entropy;
mod generator;
mod text;
mod value;

pub use self::entropy::forks_counted;
pub use self::generator::{Id128Batch, Id128Builder, Id128Generator, MAX_ID128_BATCH};
pub use self::text::{Id128Form, MAX_FORM_LEN};
pub use self::value::{
    Decoded128, Id128, Id128Fields, Id128Kind, COUNTER_BITS, MAX_MS, MAX_NODE_BITS,
};

use std::fmt;

impl fmt::Display for Id128 {
    /// The canonical UUID text, 8-4-4-4-12 lowercase hex (for a ULID's own text, use
    /// [`Id128Form::Ulid`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; MAX_FORM_LEN];
        let text = Id128Form::Uuid.encode(*self, &mut buf);
        f.write_str(std::str::from_utf8(text).map_err(|_| fmt::Error)?)
    }
}
