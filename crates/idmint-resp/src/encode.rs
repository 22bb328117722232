//! Reply encoding, appending to any [`BufMut`]: `Vec<u8>`, `BytesMut`, ...
//!
//! RESP2 is every connection's protocol until it sends `HELLO 3`. The types both protocols
//! share (simple strings, errors, integers, bulk strings, arrays) have one function each; the
//! types RESP3 adds (maps, sets, the null, verbatim strings) take the connection's
//! [`Protocol`] and fall back to what Redis sends a RESP2 client in their place: a flat array
//! of keys and values, an array, a null bulk string or null array, a bulk string.
//!
//! The free functions are the hot path (`redis-benchmark -P 16 INCR` answers sixteen integers
//! per read): each appends one reply to the caller's output buffer with no allocation of its
//! own, integers are formatted on the stack with `itoa`, and text that a peer could influence
//! has CR and LF replaced by spaces so it cannot end the line early and forge a reply. For
//! replies built as values (nested arrays for `COMMAND`, `HELLO`), see [`Reply`].

use std::borrow::Cow;
use std::fmt;

use bytes::{BufMut, Bytes};

const CRLF: &[u8] = b"\r\n";

/// Appends `s` with every CR and LF replaced by a space: the body of a one-line reply.
fn put_line_text<B: BufMut + ?Sized>(out: &mut B, s: &[u8]) {
    let mut rest = s;
    while let Some(i) = rest.iter().position(|&b| b == b'\r' || b == b'\n') {
        out.put_slice(&rest[..i]);
        out.put_u8(b' ');
        rest = &rest[i + 1..];
    }
    out.put_slice(rest);
}

/// Appends a decimal integer without allocating.
fn put_int<B: BufMut + ?Sized, I: itoa::Integer>(out: &mut B, n: I) {
    let mut buf = itoa::Buffer::new();
    out.put_slice(buf.format(n).as_bytes());
}

/// Appends a type byte, a decimal integer and CRLF: `:12\r\n`, `$5\r\n`, `*3\r\n`.
fn put_header<B: BufMut + ?Sized, I: itoa::Integer>(out: &mut B, kind: u8, n: I) {
    out.put_u8(kind);
    put_int(out, n);
    out.put_slice(CRLF);
}

/// `+OK\r\n`, the reply of most commands that succeed without a value.
pub fn ok<B: BufMut + ?Sized>(out: &mut B) {
    out.put_slice(b"+OK\r\n");
}

/// A simple string, `+<s>\r\n`, such as `+PONG`. CR and LF in `s` become spaces: a simple
/// string cannot hold them, and letting them through would let `s` forge further replies.
pub fn simple<B: BufMut + ?Sized>(out: &mut B, s: &str) {
    out.put_u8(b'+');
    put_line_text(out, s.as_bytes());
    out.put_slice(CRLF);
}

/// An error reply, `-<msg>\r\n`. By convention `msg` starts with an upper-case code and a
/// space (`ERR unknown command 'x'`, `WRONGTYPE ...`), which clients show or match on.
/// CR and LF in `msg` become spaces, so a message quoting client input stays one line.
pub fn error<B: BufMut + ?Sized>(out: &mut B, msg: &str) {
    out.put_u8(b'-');
    put_line_text(out, msg.as_bytes());
    out.put_slice(CRLF);
}

/// An error reply formatted in place, without building a `String` first:
/// `error_fmt(out, format_args!("ERR unknown command '{}'", name))`. CR and LF become spaces
/// as in [`error`]. Should a `Display` implementation fail part-way, the reply is still
/// terminated, so the stream stays well formed.
pub fn error_fmt<B: BufMut + ?Sized>(out: &mut B, msg: fmt::Arguments<'_>) {
    /// Feeds formatted text through the CR/LF scrubber straight into the output.
    struct LineWriter<'a, B: BufMut + ?Sized>(&'a mut B);
    impl<B: BufMut + ?Sized> fmt::Write for LineWriter<'_, B> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            put_line_text(self.0, s.as_bytes());
            Ok(())
        }
    }
    out.put_u8(b'-');
    // A failing Display impl only shortens the message; the line is closed below regardless.
    let _ = fmt::write(&mut LineWriter(out), msg);
    out.put_slice(CRLF);
}

/// An integer reply, `:<n>\r\n`: what `INCR` answers. Built on the stack and appended with
/// one copy, since it is the reply `redis-benchmark -P 16 INCR` asks for sixteen times a read.
pub fn integer<B: BufMut + ?Sized>(out: &mut B, n: i64) {
    let mut line = IntegerLine::default();
    line.set(n);
    out.put_slice(&line.buf[..line.len]);
}

/// Room for the longest integer reply (`:`, `-9223372036854775808`, CRLF: 23 bytes), rounded
/// up so that a line is always copied as one fixed-size block.
const INTEGER_LINE: usize = 24;

/// How many bytes of encoded integers [`integer_array`] gathers on the stack before appending
/// them.
const INTEGER_CHUNK: usize = 4096;

/// An array of integer replies, `*<len>\r\n:<n>\r\n...`: a batch of IDs.
///
/// A batch of 1,000 IDs is 1,000 small replies, so this is written for speed: each line is
/// copied as a fixed-size block into a stack chunk that is appended a few KiB at a time, and a
/// value one above the last (consecutive IDs, the common case for segment runs and for the
/// sequence of a snowflake tick) is formatted by bumping the last one's digits instead of
/// converting it afresh.
pub fn integer_array<B, I>(out: &mut B, values: I)
where
    B: BufMut + ?Sized,
    I: ExactSizeIterator<Item = i64>,
{
    array_header(out, values.len());
    let mut chunk = [0u8; INTEGER_CHUNK + INTEGER_LINE];
    let mut used = 0;
    let mut line = IntegerLine::default();
    for n in values {
        line.set(n);
        if used > INTEGER_CHUNK {
            out.put_slice(&chunk[..used]);
            used = 0;
        }
        chunk[used..used + INTEGER_LINE].copy_from_slice(&line.buf);
        used += line.len;
    }
    out.put_slice(&chunk[..used]);
}

/// One integer reply line, `:<digits>\r\n` at the start of a fixed buffer, remembering its
/// value so that the next value, if it is one more, is written by incrementing the decimal
/// digits in place.
struct IntegerLine {
    buf: [u8; INTEGER_LINE],
    /// Length of the line, CRLF included.
    len: usize,
    /// The value on the line; `None` before the first.
    value: Option<i64>,
}

impl Default for IntegerLine {
    fn default() -> Self {
        Self {
            buf: [0; INTEGER_LINE],
            len: 0,
            value: None,
        }
    }
}

impl IntegerLine {
    #[inline]
    fn set(&mut self, n: i64) {
        let consecutive =
            matches!(self.value, Some(last) if last >= 0 && last.checked_add(1) == Some(n));
        self.value = Some(n);
        if consecutive {
            self.increment();
        } else {
            let mut digits = itoa::Buffer::new();
            let text = digits.format(n).as_bytes();
            self.buf[0] = b':';
            self.buf[1..=text.len()].copy_from_slice(text);
            self.buf[text.len() + 1..text.len() + 3].copy_from_slice(CRLF);
            self.len = text.len() + 3;
        }
    }

    /// Adds one to the non-negative number on the line (the caller checked that the result
    /// is an `i64`, so it has at most 19 digits and fits).
    #[inline]
    fn increment(&mut self) {
        let mut i = self.len - 3;
        while self.buf[i] == b'9' {
            self.buf[i] = b'0';
            if i == 1 {
                // All nines: `1` and as many zeros, one digit longer.
                self.buf[1] = b'1';
                self.buf[self.len - 2] = b'0';
                self.buf[self.len - 1..self.len + 1].copy_from_slice(CRLF);
                self.len += 1;
                return;
            }
            i -= 1;
        }
        self.buf[i] += 1;
    }
}

/// A bulk string, `$<len>\r\n<data>\r\n`. Binary safe: `data` is sent as is.
pub fn bulk<B: BufMut + ?Sized>(out: &mut B, data: &[u8]) {
    put_header(out, b'$', data.len());
    out.put_slice(data);
    out.put_slice(CRLF);
}

/// An integer sent as a bulk string (`$3\r\n123\r\n`), for replies that Redis gives as text,
/// such as the fields of `INFO`-like arrays; formatted without allocation.
pub fn bulk_integer<B: BufMut + ?Sized>(out: &mut B, n: i64) {
    let mut buf = itoa::Buffer::new();
    bulk(out, buf.format(n).as_bytes());
}

/// The null bulk string, `$-1\r\n`: "no value" (RESP2 has no separate null type).
pub fn null_bulk<B: BufMut + ?Sized>(out: &mut B) {
    out.put_slice(b"$-1\r\n");
}

/// The header of an array of `len` elements, `*<len>\r\n`; the caller then appends exactly
/// `len` replies. This lets a server stream an array (say, a batch of IDs) with no
/// intermediate `Vec`.
pub fn array_header<B: BufMut + ?Sized>(out: &mut B, len: usize) {
    put_header(out, b'*', len);
}

/// The null array, `*-1\r\n`.
pub fn null_array<B: BufMut + ?Sized>(out: &mut B) {
    out.put_slice(b"*-1\r\n");
}

/// The protocol a connection speaks: RESP2 until `HELLO 3` switches it to RESP3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Redis' protocol since 1.2: what every client speaks, and the default.
    #[default]
    Resp2,
    /// Redis 6's protocol, with maps, sets and one null type.
    Resp3,
}

impl Protocol {
    /// The number `HELLO` takes and answers: 2 or 3.
    pub const fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// The header of a map of `pairs` key/value pairs; the caller then appends `2 * pairs`
/// replies, key then value. RESP3 `%<pairs>`; RESP2 a flat array `*<2 * pairs>`, as Redis
/// answers `HGETALL` or `CONFIG GET` to a RESP2 client.
pub fn map_header<B: BufMut + ?Sized>(out: &mut B, protocol: Protocol, pairs: usize) {
    match protocol {
        Protocol::Resp3 => put_header(out, b'%', pairs),
        Protocol::Resp2 => array_header(out, pairs.saturating_mul(2)),
    }
}

/// The header of a set of `len` elements: RESP3 `~<len>`, RESP2 an array.
pub fn set_header<B: BufMut + ?Sized>(out: &mut B, protocol: Protocol, len: usize) {
    match protocol {
        Protocol::Resp3 => put_header(out, b'~', len),
        Protocol::Resp2 => array_header(out, len),
    }
}

/// "No value" where a string was expected: RESP3's null `_`, RESP2's null bulk string.
pub fn null<B: BufMut + ?Sized>(out: &mut B, protocol: Protocol) {
    match protocol {
        Protocol::Resp3 => out.put_slice(b"_\r\n"),
        Protocol::Resp2 => null_bulk(out),
    }
}

/// "No value" where an array was expected: RESP3's null `_`, RESP2's null array.
pub fn null_for_array<B: BufMut + ?Sized>(out: &mut B, protocol: Protocol) {
    match protocol {
        Protocol::Resp3 => out.put_slice(b"_\r\n"),
        Protocol::Resp2 => null_array(out),
    }
}

/// Text meant to be shown as is (`INFO`, `CLIENT INFO`): RESP3's verbatim string
/// `=<len>\r\ntxt:<text>\r\n`, a bulk string in RESP2.
pub fn verbatim<B: BufMut + ?Sized>(out: &mut B, protocol: Protocol, text: &[u8]) {
    match protocol {
        Protocol::Resp3 => {
            put_header(out, b'=', text.len() + 4);
            out.put_slice(b"txt:");
            out.put_slice(text);
            out.put_slice(CRLF);
        }
        Protocol::Resp2 => bulk(out, text),
    }
}

/// A request as a client sends it: an array of bulk strings. For tests, benchmarks and any
/// idmint component that talks to a Redis-protocol server.
pub fn command<B, A>(out: &mut B, args: &[A])
where
    B: BufMut + ?Sized,
    A: AsRef<[u8]>,
{
    array_header(out, args.len());
    for arg in args {
        bulk(out, arg.as_ref());
    }
}

/// A reply as a value, for replies assembled before sending: nested arrays for `COMMAND` or
/// `HELLO`, or replies a handler returns to a generic writer.
///
/// Encoding appends to the output with [`Reply::encode`] (RESP2) or [`Reply::encode_as`];
/// nested arrays are walked with an explicit stack, so no depth of nesting can overflow the
/// thread's stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+text`; CR and LF become spaces when encoded.
    Simple(Cow<'static, str>),
    /// `-CODE message`; CR and LF become spaces when encoded.
    Error(Cow<'static, str>),
    /// `:n`.
    Integer(i64),
    /// `$len` and the bytes.
    Bulk(Bytes),
    /// `$-1`.
    NullBulk,
    /// `*len` and the elements.
    Array(Vec<Reply>),
    /// `*-1`.
    NullArray,
    /// Keys and values, alternating (so an even number of elements): RESP3 `%<pairs>`, a flat
    /// array in RESP2. Build it with [`Reply::map`].
    Map(Vec<Reply>),
    /// RESP3 `~<len>`, an array in RESP2.
    Set(Vec<Reply>),
}

impl Reply {
    /// `+OK`.
    pub const fn ok() -> Reply {
        Reply::Simple(Cow::Borrowed("OK"))
    }

    /// A simple string reply from a static or owned string.
    pub fn simple(s: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Simple(s.into())
    }

    /// An error reply; `msg` should start with a code such as `ERR`.
    pub fn error(msg: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Error(msg.into())
    }

    /// A bulk string reply from anything convertible to [`Bytes`] (`&'static [u8]`,
    /// `Vec<u8>`, `String`, ...).
    pub fn bulk(data: impl Into<Bytes>) -> Reply {
        Reply::Bulk(data.into())
    }

    /// A map from its key/value pairs.
    pub fn map(pairs: impl IntoIterator<Item = (Reply, Reply)>) -> Reply {
        Reply::Map(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())
    }

    /// Appends the encoded reply to `out`, in RESP2.
    pub fn encode<B: BufMut + ?Sized>(&self, out: &mut B) {
        self.encode_as(out, Protocol::Resp2);
    }

    /// Appends the encoded reply to `out` in `protocol`: RESP3's types become their RESP2
    /// stand-ins on a RESP2 connection, and both nulls become `_` on a RESP3 one.
    pub fn encode_as<B: BufMut + ?Sized>(&self, out: &mut B, protocol: Protocol) {
        // Iterators over the arrays being written, innermost last: iteration, not recursion.
        let mut stack: Vec<std::slice::Iter<'_, Reply>> = Vec::new();
        let mut next = Some(self);
        loop {
            let Some(reply) = next.take() else {
                match stack.last_mut() {
                    None => return,
                    Some(items) => match items.next() {
                        Some(item) => next = Some(item),
                        None => {
                            stack.pop();
                        }
                    },
                }
                continue;
            };
            match reply {
                Reply::Simple(s) => simple(out, s),
                Reply::Error(msg) => error(out, msg),
                Reply::Integer(n) => integer(out, *n),
                Reply::Bulk(data) => bulk(out, data),
                Reply::NullBulk => null(out, protocol),
                Reply::NullArray => null_for_array(out, protocol),
                Reply::Array(items) => {
                    array_header(out, items.len());
                    stack.push(items.iter());
                }
                Reply::Map(items) => {
                    map_header(out, protocol, items.len() / 2);
                    stack.push(items.iter());
                }
                Reply::Set(items) => {
                    set_header(out, protocol, items.len());
                    stack.push(items.iter());
                }
            }
        }
    }

    /// The encoded reply in a new `Vec`; convenient in tests, [`Reply::encode`] on the hot path.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

impl From<i64> for Reply {
    /// An integer reply.
    fn from(n: i64) -> Reply {
        Reply::Integer(n)
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;

    fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn simple_strings() {
        assert_eq!(enc(ok), b"+OK\r\n");
        assert_eq!(enc(|o| simple(o, "PONG")), b"+PONG\r\n");
        assert_eq!(enc(|o| simple(o, "")), b"+\r\n");
        assert_eq!(
            enc(|o| simple(o, "a\r\n+OK\r\nb")),
            b"+a  +OK  b\r\n",
            "CR/LF cannot start a second reply"
        );
    }

    #[test]
    fn errors_cannot_be_split() {
        assert_eq!(
            enc(|o| error(o, "ERR unknown command")),
            b"-ERR unknown command\r\n"
        );
        assert_eq!(
            enc(|o| error(o, "ERR bad\r\n:1\r\n")),
            b"-ERR bad  :1  \r\n"
        );
        assert_eq!(enc(|o| error(o, "\n")), b"- \r\n");
        let name = "x\r\n+OK";
        assert_eq!(
            enc(|o| error_fmt(o, format_args!("ERR unknown command '{name}', with args"))),
            b"-ERR unknown command 'x  +OK', with args\r\n"
        );
    }

    #[test]
    fn error_fmt_survives_a_failing_display() {
        struct Fails;
        impl fmt::Display for Fails {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("half")?;
                Err(fmt::Error)
            }
        }
        assert_eq!(
            enc(|o| error_fmt(o, format_args!("ERR {Fails} never"))),
            b"-ERR half\r\n"
        );
    }

    #[test]
    fn integers() {
        assert_eq!(enc(|o| integer(o, 0)), b":0\r\n");
        assert_eq!(enc(|o| integer(o, 123)), b":123\r\n");
        assert_eq!(enc(|o| integer(o, -7)), b":-7\r\n");
        assert_eq!(enc(|o| integer(o, i64::MAX)), b":9223372036854775807\r\n");
        assert_eq!(enc(|o| integer(o, i64::MIN)), b":-9223372036854775808\r\n");
        assert_eq!(
            enc(|o| bulk_integer(o, 175928847299117063)),
            b"$18\r\n175928847299117063\r\n"
        );
    }

    #[test]
    fn integer_arrays_match_one_reply_per_value() {
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![0, 1, 2, 9, 10, 11],
            (95..=1_005).collect(),
            (9_999_990..=10_000_010).collect(),
            vec![5, 4, 3, -1, 0, 1, -10, -9, 99, 100],
            vec![i64::MAX - 2, i64::MAX - 1, i64::MAX, i64::MIN, i64::MIN + 1],
            (1..=2_000).map(|n| n * 1_000_003).collect(),
        ];
        for values in cases {
            let mut expected = Vec::new();
            array_header(&mut expected, values.len());
            for &n in &values {
                put_header(&mut expected, b':', n);
            }
            assert_eq!(
                enc(|o| integer_array(o, values.iter().copied())),
                expected,
                "{values:?}"
            );
        }
    }

    #[test]
    fn bulk_strings_are_binary_safe() {
        assert_eq!(enc(|o| bulk(o, b"hello")), b"$5\r\nhello\r\n");
        assert_eq!(enc(|o| bulk(o, b"")), b"$0\r\n\r\n");
        assert_eq!(enc(|o| bulk(o, b"a\r\nb\0")), b"$5\r\na\r\nb\0\r\n");
        assert_eq!(enc(null_bulk), b"$-1\r\n");
    }

    #[test]
    fn arrays() {
        assert_eq!(enc(|o| array_header(o, 0)), b"*0\r\n");
        assert_eq!(enc(null_array), b"*-1\r\n");
        assert_eq!(
            enc(|o| {
                array_header(o, 2);
                integer(o, 1);
                bulk(o, b"x");
            }),
            b"*2\r\n:1\r\n$1\r\nx\r\n"
        );
        assert_eq!(
            enc(|o| command(o, &["SET", "k", "v"])),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        );
    }

    #[test]
    fn reply_values_nest() {
        let reply = Reply::Array(vec![
            Reply::bulk("server"),
            Reply::simple("idmint"),
            Reply::Array(vec![
                Reply::Integer(2),
                Reply::Array(vec![]),
                Reply::NullArray,
            ]),
            Reply::NullBulk,
            Reply::error("ERR x\ny"),
            Reply::from(-1),
            Reply::ok(),
        ]);
        assert_eq!(
            reply.to_vec(),
            b"*7\r\n$6\r\nserver\r\n+idmint\r\n*3\r\n:2\r\n*0\r\n*-1\r\n$-1\r\n-ERR x y\r\n:-1\r\n+OK\r\n"
        );
    }

    #[test]
    fn deep_reply_nesting_does_not_recurse() {
        let mut reply = Reply::Integer(1);
        for _ in 0..100_000 {
            reply = Reply::Array(vec![reply]);
        }
        let out = reply.to_vec();
        assert_eq!(out.len(), 100_000 * 4 + 4);
        assert!(out.ends_with(b"*1\r\n:1\r\n"));
        // Dropping a deep `Reply` is recursive (derived Drop); unwind it by hand here.
        let mut cur = reply;
        while let Reply::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Reply::NullBulk);
        }
    }

    #[test]
    fn resp3_types_and_their_resp2_stand_ins() {
        use Protocol::{Resp2, Resp3};
        assert_eq!(enc(|o| map_header(o, Resp3, 2)), b"%2\r\n");
        assert_eq!(enc(|o| map_header(o, Resp2, 2)), b"*4\r\n");
        assert_eq!(enc(|o| set_header(o, Resp3, 3)), b"~3\r\n");
        assert_eq!(enc(|o| set_header(o, Resp2, 3)), b"*3\r\n");
        assert_eq!(enc(|o| null(o, Resp3)), b"_\r\n");
        assert_eq!(enc(|o| null(o, Resp2)), b"$-1\r\n");
        assert_eq!(enc(|o| null_for_array(o, Resp3)), b"_\r\n");
        assert_eq!(enc(|o| null_for_array(o, Resp2)), b"*-1\r\n");
        assert_eq!(
            enc(|o| verbatim(o, Resp3, b"a:1\r\n")),
            b"=9\r\ntxt:a:1\r\n\r\n"
        );
        assert_eq!(enc(|o| verbatim(o, Resp2, b"a:1")), b"$3\r\na:1\r\n");
        let reply = Reply::map([
            (
                Reply::bulk("flags"),
                Reply::Set(vec![Reply::simple("fast")]),
            ),
            (Reply::bulk("none"), Reply::NullBulk),
        ]);
        assert_eq!(
            {
                let mut out = Vec::new();
                reply.encode_as(&mut out, Resp3);
                out
            },
            b"%2\r\n$5\r\nflags\r\n~1\r\n+fast\r\n$4\r\nnone\r\n_\r\n"
        );
        assert_eq!(
            reply.to_vec(),
            b"*4\r\n$5\r\nflags\r\n*1\r\n+fast\r\n$4\r\nnone\r\n$-1\r\n"
        );
    }

    #[test]
    fn writes_into_bytes_mut() {
        let mut out = BytesMut::new();
        integer(&mut out, 42);
        ok(&mut out);
        Reply::bulk(&b"id"[..]).encode(&mut out);
        assert_eq!(&out[..], b":42\r\n+OK\r\n$2\r\nid\r\n");
    }
}
