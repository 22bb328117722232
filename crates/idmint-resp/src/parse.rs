//! Request parsing: RESP2 arrays of bulk strings and inline commands, one complete command at
//! a time from the front of a buffer, so pipelined requests are taken in order.
//!
//! A request starting with `*` is an array (`*2\r\n$4\r\nINCR\r\n$3\r\ntag\r\n`); anything else
//! is an inline command line, as in Redis. Parsing never blocks and never performs I/O: given
//! the bytes received so far it answers "a command, and how many bytes it used", "not enough
//! bytes yet", or a [`ProtocolError`], after which the connection must be closed.
//!
//! Nothing is allocated from a declared length: a header `$1000000000` is checked against
//! [`Limits`] as soon as its line is complete and refused there, and argument storage is only
//! created for bytes that have arrived. Nested arrays are refused at their first byte, so
//! there is no recursion at all.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{CrlfAfter, LengthKind};
use crate::{inline, Command, Limits, ProtocolError};

/// Where a partly received request stopped, so that a later call resumes there instead of
/// parsing the same bytes again (the stateless functions start from a fresh one each time).
#[derive(Debug, Default, Clone)]
struct Progress {
    /// Declared element count of the array being read; 0 while its header is incomplete.
    argc: usize,
    /// Offset of the first byte not yet parsed: after the header and the complete elements.
    pos: usize,
    /// Data ranges of the complete elements so far.
    ranges: Vec<(usize, usize)>,
    /// For an inline line: how many bytes have been searched for a newline without finding it.
    searched: usize,
}

impl Progress {
    /// Forgets the partial request, keeping the range buffer's capacity for the next one.
    fn reset(&mut self) {
        self.argc = 0;
        self.pos = 0;
        self.ranges.clear();
        self.searched = 0;
    }
}

/// What one scan found at the front of the input.
enum Scan {
    /// The request is not complete yet.
    Incomplete,
    /// A blank inline line of this many bytes (ending included): skipped, as Redis does.
    Blank(usize),
    /// A complete array request ending at this offset; its arguments are `Progress::ranges`.
    Array { end: usize },
    /// A complete inline command ending at this offset (newline included).
    Inline { end: usize, args: Vec<Bytes> },
}

/// Reads a length header's value starting at `start` (just after `*` or `$`).
///
/// Returns the value and the offset after its CRLF, or `None` while the line is incomplete.
/// Strict like Redis' `string2ll`: an optional `-`, then `0` alone or digits not starting with
/// `0`, at most what fits an `i64`. A bad byte or an overflow is reported at once, without
/// waiting for the line ending, so a header line can never grow beyond about 21 bytes.
fn length(
    input: &[u8],
    start: usize,
    kind: LengthKind,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let invalid = ProtocolError::InvalidLength(kind);
    let negative = input.get(start) == Some(&b'-');
    let digits = if negative { start + 1 } else { start };
    let mut value: i64 = 0;
    let mut i = digits;
    loop {
        match input.get(i) {
            None => return Ok(None),
            Some(b'\r') => break,
            Some(&d @ b'0'..=b'9') => {
                if i > digits && input.get(digits) == Some(&b'0') {
                    return Err(invalid);
                }
                value = value
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(i64::from(d - b'0')))
                    .ok_or(invalid.clone())?;
            }
            Some(_) => return Err(invalid),
        }
        i += 1;
    }
    if i == digits || (negative && value == 0) {
        return Err(invalid);
    }
    match input.get(i + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some((if negative { -value } else { value }, i + 2))),
        Some(_) => Err(ProtocolError::MissingCrlf {
            after: CrlfAfter::LengthHeader,
        }),
    }
}

/// Checks a declared length: -1 (null) and other negatives are refused in requests, as is
/// anything above `limit`.
fn checked_len(value: i64, kind: LengthKind, limit: usize) -> Result<usize, ProtocolError> {
    match value {
        -1 => Err(ProtocolError::NullInRequest { kind }),
        v if v < 0 => Err(ProtocolError::NegativeLength { kind, len: v }),
        v => {
            let len = v.unsigned_abs();
            match usize::try_from(len) {
                Ok(n) if n <= limit => Ok(n),
                _ => Err(ProtocolError::LengthOverLimit { kind, len, limit }),
            }
        }
    }
}

/// Continues reading an array request from `p`.
fn scan_array(input: &[u8], limits: &Limits, p: &mut Progress) -> Result<Scan, ProtocolError> {
    if p.argc == 0 {
        let Some((count, end)) = length(input, 1, LengthKind::Array)? else {
            return Ok(Scan::Incomplete);
        };
        let argc = checked_len(count, LengthKind::Array, limits.max_array_len)?;
        if argc == 0 {
            return Err(ProtocolError::EmptyArray);
        }
        p.argc = argc;
        p.pos = end;
        p.ranges.clear();
    }
    while p.ranges.len() < p.argc {
        match input.get(p.pos) {
            None => return Ok(Scan::Incomplete),
            Some(b'$') => {}
            Some(b'*') => return Err(ProtocolError::NestedArray),
            Some(&got) => return Err(ProtocolError::ExpectedBulk { got }),
        }
        let Some((declared, data)) = length(input, p.pos + 1, LengthKind::Bulk)? else {
            return Ok(Scan::Incomplete);
        };
        let len = checked_len(declared, LengthKind::Bulk, limits.max_bulk_len)?;
        let data_end = data.saturating_add(len);
        let next = data_end.saturating_add(2);
        if next > limits.max_request_len {
            return Err(ProtocolError::RequestTooLarge {
                limit: limits.max_request_len,
            });
        }
        match input.get(data_end..next) {
            None => return Ok(Scan::Incomplete),
            Some(b"\r\n") => {}
            Some(_) => {
                return Err(ProtocolError::MissingCrlf {
                    after: CrlfAfter::BulkData,
                })
            }
        }
        p.ranges.push((data, data_end));
        p.pos = next;
    }
    Ok(Scan::Array { end: p.pos })
}

/// Continues looking for the end of an inline line, and splits it once found.
fn scan_inline(input: &[u8], limits: &Limits, p: &mut Progress) -> Result<Scan, ProtocolError> {
    // A line may hold max_inline_len bytes before its line ending, "\n" or "\r\n" (the limit
    // does not count the ending, so both forms of one line are accepted alike): the '\n' is
    // at most one byte further when the byte just past the limit is the ending's '\r'. Look
    // no further than that. (Counting the '\r' in the line instead, as this once did, refused
    // a line of exactly max_inline_len bytes from every CRLF client; the `resp_parse` fuzz
    // target found it.)
    let limit = limits.max_inline_len;
    let before_newline = match input.get(limit) {
        Some(b'\r') => limit.saturating_add(1),
        _ => limit,
    };
    let window = input.len().min(before_newline.saturating_add(1));
    let from = p.searched.min(window);
    let found = input
        .get(from..window)
        .and_then(|w| w.iter().position(|&b| b == b'\n'));
    let Some(newline) = found.map(|off| from + off) else {
        if input.len() > before_newline {
            return Err(ProtocolError::InlineTooLong {
                limit: limits.max_inline_len,
            });
        }
        p.searched = window;
        return Ok(Scan::Incomplete);
    };
    let mut line = input.get(..newline).unwrap_or_default();
    if let Some(without_cr) = line.strip_suffix(b"\r") {
        line = without_cr;
    }
    let args = inline::split(line, limits)?;
    p.searched = 0;
    let end = newline + 1;
    if args.is_empty() {
        Ok(Scan::Blank(end))
    } else {
        Ok(Scan::Inline { end, args })
    }
}

/// Looks at the request at the front of `input`, resuming from `p`.
fn scan(input: &[u8], limits: &Limits, p: &mut Progress) -> Result<Scan, ProtocolError> {
    match input.first() {
        None => Ok(Scan::Incomplete),
        Some(b'*') => scan_array(input, limits, p),
        Some(_) => scan_inline(input, limits, p),
    }
}

/// Refuses a run of blank lines longer than an inline line may be, so that a peer sending only
/// newlines cannot grow a buffer that [`parse_command`]'s caller never gets to consume.
fn check_blank_run(run: usize, limits: &Limits) -> Result<(), ProtocolError> {
    if run > limits.max_inline_len {
        Err(ProtocolError::InlineTooLong {
            limit: limits.max_inline_len,
        })
    } else {
        Ok(())
    }
}

/// Parses the first complete command in `input`.
///
/// - `Ok(Some((command, consumed)))`: a command, and how many bytes of `input` it used
///   (blank inline lines before it included); drop those bytes and call again for the next
///   pipelined command.
/// - `Ok(None)`: `input` holds only part of a command (or nothing, or only blank lines): read
///   more bytes, append them, and call again with the whole buffer.
/// - `Err(e)`: `input` is not valid RESP or breaks `limits`; reply with
///   [`ProtocolError::write_reply`] and close the connection.
///
/// Arguments are copied out of `input`. A server reading into a `BytesMut` can avoid the
/// copies, and the re-parsing of a partly received request, with [`RequestDecoder`].
pub fn parse_command(
    input: &[u8],
    limits: &Limits,
) -> Result<Option<(Command, usize)>, ProtocolError> {
    let mut offset = 0;
    let mut p = Progress::default();
    loop {
        let rest = input.get(offset..).unwrap_or_default();
        match scan(rest, limits, &mut p)? {
            Scan::Incomplete => return Ok(None),
            Scan::Blank(n) => {
                offset += n;
                check_blank_run(offset, limits)?;
                p.reset();
            }
            Scan::Array { end } => {
                let args = p
                    .ranges
                    .iter()
                    .map(|&(s, e)| Bytes::copy_from_slice(rest.get(s..e).unwrap_or_default()))
                    .collect();
                return Ok(Some((Command::from_parsed(args), offset + end)));
            }
            Scan::Inline { end, args } => {
                return Ok(Some((Command::from_parsed(args), offset + end)));
            }
        }
    }
}

/// Everything [`parse_all`] found in one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedAll {
    /// The complete commands, in order.
    pub commands: Vec<Command>,
    /// Bytes used by those commands (and blank lines between them); the rest is an incomplete
    /// command or the malformed one.
    pub consumed: usize,
    /// The protocol error that stopped parsing, if any; `commands` are the valid ones before it.
    pub error: Option<ProtocolError>,
}

/// Parses every complete command in `input`: the fuzzing entry point, and a convenience for
/// tests. Never panics, whatever the bytes.
pub fn parse_all(input: &[u8], limits: &Limits) -> ParsedAll {
    let mut all = ParsedAll {
        commands: Vec::new(),
        consumed: 0,
        error: None,
    };
    loop {
        let rest = input.get(all.consumed..).unwrap_or_default();
        match parse_command(rest, limits) {
            Ok(Some((command, used))) => {
                all.commands.push(command);
                all.consumed += used;
            }
            Ok(None) => return all,
            Err(e) => {
                all.error = Some(e);
                return all;
            }
        }
    }
}

/// A per-connection request decoder over a `BytesMut` read buffer: the zero-copy form of
/// [`parse_command`] for the server's read loop.
///
/// Arguments are [`Bytes`] slices of the read buffer (no copy; the buffer's memory is shared
/// until the command is dropped), and a partly received request is not parsed again from its
/// start when more bytes arrive: the decoder remembers how far it got. It therefore assumes
/// the buffer is only appended to between calls, except for what `decode` itself removes;
/// call [`RequestDecoder::reset`] after changing it otherwise.
///
/// ```
/// use bytes::BytesMut;
/// use idmint_resp::{encode, Limits, RequestDecoder};
///
/// let mut decoder = RequestDecoder::new(Limits::default());
/// let mut buf = BytesMut::new();
/// let mut out = Vec::new();
/// // Bytes as they might arrive from the socket, split anywhere.
/// for chunk in [&b"*2\r\n$4\r\nINCR\r\n$3\r\nt"[..], b"ag\r\nPING\r\n"] {
///     buf.extend_from_slice(chunk);
///     loop {
///         match decoder.decode(&mut buf) {
///             Ok(Some(cmd)) if cmd.is("INCR") => encode::integer(&mut out, 1),
///             Ok(Some(cmd)) if cmd.is("PING") => encode::simple(&mut out, "PONG"),
///             Ok(Some(_)) => encode::error(&mut out, "ERR unknown command"),
///             Ok(None) => break, // read more
///             Err(e) => {
///                 e.write_reply(&mut out); // then flush and close the connection
///                 break;
///             }
///         }
///     }
/// }
/// assert_eq!(out, b":1\r\n+PONG\r\n");
/// assert!(buf.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestDecoder {
    limits: Limits,
    progress: Progress,
    /// Bytes of blank lines skipped since the last command, bounded like [`parse_command`]'s.
    blank_run: usize,
}

impl RequestDecoder {
    /// A decoder enforcing `limits`.
    pub fn new(limits: Limits) -> RequestDecoder {
        RequestDecoder {
            limits,
            progress: Progress::default(),
            blank_run: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Takes the first complete command off the front of `buf`.
    ///
    /// `Ok(Some(command))` removed the command's bytes (and any blank lines before it) from
    /// `buf`; call again for the next pipelined one. `Ok(None)`: read more into `buf`
    /// (blank lines may have been removed). `Err(e)`: reply with
    /// [`ProtocolError::write_reply`] and close the connection; the decoder and buffer are
    /// not meant to be used afterwards. Yields exactly the commands and errors
    /// [`parse_command`] would on the same bytes.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Command>, ProtocolError> {
        if self.progress.pos > buf.len() || self.progress.searched > buf.len() {
            // The buffer shrank behind our back: start over rather than trust stale offsets.
            self.progress.reset();
        }
        loop {
            match scan(buf, &self.limits, &mut self.progress)? {
                Scan::Incomplete => return Ok(None),
                Scan::Blank(n) => {
                    buf.advance(n);
                    self.progress.reset();
                    self.blank_run += n;
                    check_blank_run(self.blank_run, &self.limits)?;
                }
                Scan::Array { end } => {
                    let frame = buf.split_to(end).freeze();
                    let args = self
                        .progress
                        .ranges
                        .iter()
                        .map(|&(s, e)| {
                            if s <= e && e <= frame.len() {
                                frame.slice(s..e)
                            } else {
                                Bytes::new()
                            }
                        })
                        .collect();
                    self.progress.reset();
                    self.blank_run = 0;
                    return Ok(Some(Command::from_parsed(args)));
                }
                Scan::Inline { end, args } => {
                    buf.advance(end);
                    self.progress.reset();
                    self.blank_run = 0;
                    return Ok(Some(Command::from_parsed(args)));
                }
            }
        }
    }

    /// Forgets any partly parsed request, for when the buffer was changed other than by
    /// appending.
    pub fn reset(&mut self) {
        self.progress.reset();
        self.blank_run = 0;
    }
}
