//! Fuzz target `resp_parse`: the RESP request decoder of `idmint-resp`, which reads whatever a
//! TCP peer sends to `idmint serve`.
//!
//! "Does not panic" is the least of it. A server acts on what the parser says, so every run also
//! checks the properties the server relies on:
//!
//! 1. **Accounting**: `parse_all` never claims more bytes than it was given, and what it leaves
//!    over is exactly one incomplete request (or the malformed one it reported), no larger than
//!    the bound `Limits` documents for what a connection may buffer.
//! 2. **Limits hold**: no command it returns has more arguments, or a longer argument, than the
//!    limits allow.
//! 3. **Chunking does not matter**: TCP delivers a pipeline in pieces of any size. Feeding the
//!    input to a [`RequestDecoder`] in pseudo-random chunks, and to the stateless
//!    [`parse_command`] drain loop of a server (cut once at an arbitrary point), must give the
//!    same commands and the same error as parsing it whole.
//! 4. **Round trips**: every command, re-encoded as a client sends it (an array of bulk
//!    strings, and an inline line with every byte `\xHH`-escaped), parses back to itself, or is
//!    refused with exactly the limit error its size calls for. The two array encoders
//!    (`Command::encode` and `Reply`) agree byte for byte.
//! 5. **Replies stay one line**: error and simple-string replies quoting client bytes, and the
//!    protocol-error reply, never contain a CR or LF before their final CRLF, so input cannot
//!    forge extra replies.
//!
//! Input layout: an 8-byte header chooses the limits (the defaults, or small ones so that short
//! inputs reach every limit), the cut point and the chunking seed; the rest is the bytes "read
//! from the socket". Missing header bytes count as zero.
#![no_main]

use bytes::BytesMut;
use idmint_resp::{
    encode, parse_all, parse_command, Command, Limits, ProtocolError, Reply, RequestDecoder,
};
use libfuzzer_sys::fuzz_target;

/// Bytes at the front of the input that configure the run rather than feed the parser.
const HEADER_LEN: usize = 8;

/// The longest length header line that can be pending without being an error yet: the type
/// byte, a minus sign, 19 digits (an `i64` has at most 19) and a CR still awaiting its LF.
const MAX_PARTIAL_HEADER: usize = 22;

/// How one run is configured, from the header.
struct Setup {
    limits: Limits,
    /// Where the stateless drain loop cuts the payload (taken modulo its length + 1).
    cut: usize,
    /// Seed of the chunk sizes fed to the decoder.
    chunk_seed: u32,
}

impl Setup {
    fn from_header(data: &[u8]) -> Setup {
        let h = |i: usize| data.get(i).copied().unwrap_or(0);
        // Small limits let a short input cross each of them; the defaults are what the server
        // runs with, so half of the runs use those.
        let limits = if h(0) & 1 == 1 {
            Limits {
                max_bulk_len: usize::from(h(1) % 48),
                max_array_len: usize::from(h(2) % 12),
                max_inline_len: usize::from(h(3) % 96),
                max_request_len: usize::from(h(4)) * 2,
            }
        } else {
            Limits::default()
        };
        Setup {
            limits,
            cut: usize::from(u16::from_le_bytes([h(5), h(6)])),
            chunk_seed: u32::from(h(7)),
        }
    }
}

/// Pseudo-random chunk sizes (xorshift), mostly small so that many cuts fall inside headers
/// and line endings, sometimes large.
struct Chunks(u32);

impl Chunks {
    fn new(seed: u32) -> Chunks {
        // xorshift never leaves 0, so mix the seed into a non-zero state.
        Chunks(seed.wrapping_mul(0x9E37_79B9) | 1)
    }

    fn next_len(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        match self.0 % 8 {
            0 => 1 + (self.0 >> 8) as usize % 512,
            _ => 1 + (self.0 >> 8) as usize % 12,
        }
    }
}

/// What a whole parse yields, in a comparable form.
type Outcome = (Vec<Command>, Option<ProtocolError>);

/// The most bytes a connection may hold for one pending request after draining every complete
/// command, as documented on `Limits`: blank lines (`parse_command` keeps those in the buffer),
/// then an inline line (its text and the CR of its ending) or part of an array. An array's own
/// header and one partial element header may come on top of `max_request_len` when that limit
/// is tiny.
fn max_pending(limits: &Limits, blank_lines: bool) -> usize {
    let blanks = if blank_lines {
        limits.max_inline_len
    } else {
        0
    };
    let inline = limits.max_inline_len + 1;
    let array = limits.max_request_len.max(MAX_PARTIAL_HEADER) + MAX_PARTIAL_HEADER;
    blanks + inline.max(array)
}

/// Feeds `input` to a [`RequestDecoder`] in the given chunks, as a server's read loop would.
fn decode_in_chunks(input: &[u8], limits: &Limits, chunks: &mut Chunks) -> Outcome {
    let mut decoder = RequestDecoder::new(*limits);
    let mut buf = BytesMut::new();
    let mut commands = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let n = chunks.next_len().min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        buf.extend_from_slice(chunk);
        rest = tail;
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(cmd)) => commands.push(cmd),
                Ok(None) => break,
                Err(e) => return (commands, Some(e)),
            }
        }
        assert!(
            buf.len() <= max_pending(limits, false),
            "decoder holds {} bytes, beyond the documented bound",
            buf.len()
        );
    }
    (commands, None)
}

/// Feeds `input` in two reads, split at `cut`, to the stateless parser, draining every complete
/// command after each read and keeping the rest, as the crate documentation's read loop does.
fn drain_in_two_reads(input: &[u8], limits: &Limits, cut: usize) -> Outcome {
    let (first, second) = input.split_at(cut);
    let mut inbuf: Vec<u8> = Vec::new();
    let mut commands = Vec::new();
    for read in [first, second] {
        inbuf.extend_from_slice(read);
        let mut used = 0;
        loop {
            let pending = inbuf.get(used..).unwrap_or_default();
            match parse_command(pending, limits) {
                Ok(Some((cmd, n))) => {
                    assert!(n > 0 && n <= pending.len(), "parse_command used {n} bytes");
                    used += n;
                    commands.push(cmd);
                }
                Ok(None) => break,
                Err(e) => return (commands, Some(e)),
            }
        }
        inbuf.drain(..used);
    }
    (commands, None)
}

/// A command as a client sends it: an array of bulk strings.
fn encode_array(cmd: &Command) -> Vec<u8> {
    let mut out = Vec::new();
    cmd.encode(&mut out);
    out
}

/// A command as one inline line, every argument double-quoted with each byte `\xHH`-escaped,
/// so that any bytes at all survive the inline syntax. Returns the line without its CRLF too.
fn encode_inline(cmd: &Command) -> (Vec<u8>, usize) {
    let mut line = Vec::new();
    for (i, arg) in cmd.args().iter().enumerate() {
        if i > 0 {
            line.push(b' ');
        }
        line.push(b'"');
        for &b in arg.iter() {
            // By hand rather than with format!: this runs for every byte of every command.
            let hex = |nibble: u8| b"0123456789abcdef"[usize::from(nibble & 0xf)];
            line.extend_from_slice(&[b'\\', b'x', hex(b >> 4), hex(b)]);
        }
        line.push(b'"');
    }
    let text_len = line.len();
    line.extend_from_slice(b"\r\n");
    (line, text_len)
}

/// Checks that `reply` is a single line: CR and LF only in its final CRLF.
fn assert_one_line(reply: &[u8]) {
    let body = reply
        .strip_suffix(b"\r\n")
        .unwrap_or_else(|| panic!("reply {:?} does not end in CRLF", reply.escape_ascii()));
    assert!(
        !body.iter().any(|&b| b == b'\r' || b == b'\n'),
        "reply {:?} spans several lines",
        reply.escape_ascii().to_string()
    );
}

/// Properties of one parsed command on its own.
fn check_command(cmd: &Command, limits: &Limits) {
    assert!(
        !cmd.is_empty() && cmd.len() == cmd.args().len(),
        "empty command"
    );
    assert!(
        cmd.len() <= limits.max_array_len,
        "{} arguments, limit {}",
        cmd.len(),
        limits.max_array_len
    );
    for arg in cmd.args() {
        assert!(
            arg.len() <= limits.max_bulk_len,
            "argument of {} bytes, limit {}",
            arg.len(),
            limits.max_bulk_len
        );
    }
    assert_eq!(cmd.name(), &cmd.args()[0][..]);
    assert_eq!(cmd.params(), &cmd.args()[1..]);
    // The case-folded name is what the server dispatches on.
    match cmd.upper_name() {
        Some(upper) => {
            assert_eq!(&upper[..], &cmd.name().to_ascii_uppercase()[..]);
            if let Ok(name) = std::str::from_utf8(cmd.name()) {
                assert!(cmd.is(name) && cmd.is(&name.to_ascii_lowercase()));
            }
        }
        None => assert!(cmd.name().len() > idmint_resp::UpperName::CAPACITY),
    }

    // Round trip through the array encoding, under the same limits: only the frame's total
    // size can differ from what was accepted, and it must be refused for exactly that.
    let frame = encode_array(cmd);
    let reply = Reply::Array(cmd.args().iter().cloned().map(Reply::Bulk).collect());
    assert_eq!(reply.to_vec(), frame, "Reply and Command encoders disagree");
    match parse_command(&frame, limits) {
        Ok(Some((back, used))) => {
            assert!(frame.len() <= limits.max_request_len);
            assert_eq!(&back, cmd, "array round trip changed the command");
            assert_eq!(used, frame.len());
        }
        Err(ProtocolError::RequestTooLarge { .. }) => {
            assert!(frame.len() > limits.max_request_len)
        }
        other => panic!(
            "{cmd:?} encoded as {:?} parses as {other:?}",
            frame.escape_ascii().to_string()
        ),
    }

    // Round trip through the inline syntax: refused only when the line is over its limit.
    let (line, text_len) = encode_inline(cmd);
    match parse_command(&line, limits) {
        Ok(Some((back, used))) => {
            assert!(text_len <= limits.max_inline_len);
            assert_eq!(&back, cmd, "inline round trip changed the command");
            assert_eq!(used, line.len());
        }
        Err(ProtocolError::InlineTooLong { .. }) => assert!(
            text_len > limits.max_inline_len,
            "an inline line of {text_len} bytes (limit {}) is refused as too long",
            limits.max_inline_len
        ),
        other => panic!(
            "{cmd:?} as the inline line {:?} parses as {other:?}",
            line.escape_ascii().to_string()
        ),
    }

    // Replies that quote client input (unknown command names, bad tags) stay one line.
    let name = String::from_utf8_lossy(cmd.name());
    let mut out = Vec::new();
    encode::error_fmt(
        &mut out,
        format_args!("ERR unknown command '{}'", cmd.name().escape_ascii()),
    );
    assert_one_line(&out);
    for write in [encode::simple, encode::error] {
        out.clear();
        write(&mut out, &name);
        assert_one_line(&out);
    }
}

fuzz_target!(|data: &[u8]| {
    let setup = Setup::from_header(data);
    let limits = &setup.limits;
    let input = data.get(HEADER_LEN..).unwrap_or_default();

    let whole = parse_all(input, limits);
    assert!(whole.consumed <= input.len(), "consumed beyond the input");
    for cmd in &whole.commands {
        check_command(cmd, limits);
    }

    // What is left over is exactly what stopped parse_all: the malformed request, or one
    // incomplete request that a connection may hold while waiting for more bytes.
    let rest = &input[whole.consumed..];
    let expected_tail = match &whole.error {
        Some(e) => Err(e.clone()),
        None => Ok(None),
    };
    assert_eq!(parse_command(rest, limits), expected_tail);
    match &whole.error {
        Some(e) => {
            let mut out = Vec::new();
            e.write_reply(&mut out);
            assert!(out.starts_with(b"-ERR Protocol error: "));
            assert_one_line(&out);
        }
        None => assert!(
            rest.len() <= max_pending(limits, true),
            "{} bytes pending, beyond the documented bound",
            rest.len()
        ),
    }

    let whole_outcome: Outcome = (whole.commands, whole.error);
    let mut chunks = Chunks::new(setup.chunk_seed);
    assert_eq!(
        decode_in_chunks(input, limits, &mut chunks),
        whole_outcome,
        "RequestDecoder fed in chunks disagrees with parse_all"
    );
    let cut = setup.cut % (input.len() + 1);
    assert_eq!(
        drain_in_two_reads(input, limits, cut),
        whole_outcome,
        "parse_command fed in two reads (cut at {cut}) disagrees with parse_all"
    );
});
