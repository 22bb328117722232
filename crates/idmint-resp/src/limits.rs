//! Size bounds on requests.
//!
//! A peer must not be able to make the server allocate or buffer more than a known amount per
//! connection. Every declared length is checked against these bounds as soon as its header is
//! complete, before any of its bytes are awaited, and nothing is ever allocated from a declared
//! length: argument storage grows only with bytes that have actually arrived.

/// Bounds on what one request may declare or contain.
///
/// The defaults are far below Redis' (512 MB bulk strings, 1 GB query buffer): idmint's
/// commands carry a tag name and a few small integers, so 64 KiB per argument and 1 MiB per
/// request leave ample room for any real client while keeping a hostile or broken one cheap.
///
/// While the parser answers "incomplete", the bytes buffered for the pending request are at
/// most `max(max_request_len, max_inline_len)` plus one partial length header (about 22
/// bytes), plus, for [`crate::parse_command`] only, up to `max_inline_len` bytes of blank
/// lines before it ([`crate::RequestDecoder`] removes those as it goes). A server that drains
/// every complete command after each read therefore buffers at most that much plus one read's
/// worth per connection; beyond it the parser has already returned an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest bulk string (one argument) a request array may declare, in bytes. Also bounds
    /// each argument of an inline command. Default 64 KiB.
    pub max_bulk_len: usize,
    /// Most elements a request array may declare, and most arguments an inline command may
    /// have (the command name counts). Default 1024.
    pub max_array_len: usize,
    /// Longest inline command line, in bytes, not counting its line ending; also bounds a run
    /// of blank lines before a command. Default 64 KiB (Redis' `PROTO_INLINE_MAX_SIZE`).
    pub max_inline_len: usize,
    /// Largest request array frame, headers and data included, in bytes. Default 1 MiB.
    pub max_request_len: usize,
}

impl Limits {
    /// The defaults, usable in `const` contexts.
    pub const DEFAULT: Limits = Limits {
        max_bulk_len: 64 * 1024,
        max_array_len: 1024,
        max_inline_len: 64 * 1024,
        max_request_len: 1024 * 1024,
    };
}

impl Default for Limits {
    /// [`Limits::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}
