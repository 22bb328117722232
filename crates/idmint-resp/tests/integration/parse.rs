//! Request parsing through the public API: every frame shape, every error, pipelines split at
//! every byte, limits.

use bytes::BytesMut;
use idmint_resp::{
    encode, parse_all, parse_command, Command, CrlfAfter, LengthKind, Limits, ProtocolError,
    RequestDecoder,
};

fn limits() -> Limits {
    Limits::default()
}

/// Arguments of every command in `input`, and the error that stopped parsing.
fn all(input: &[u8]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
    let parsed = parse_all(input, &limits());
    (parsed.commands.iter().map(args).collect(), parsed.error)
}

fn args(cmd: &Command) -> Vec<Vec<u8>> {
    cmd.args().iter().map(|a| a.to_vec()).collect()
}

fn one(input: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let (cmd, used) = parse_command(input, &limits())
        .unwrap_or_else(|e| panic!("{input:?}: {e}"))
        .unwrap_or_else(|| panic!("{input:?}: incomplete"));
    (args(&cmd), used)
}

fn err(input: &[u8]) -> ProtocolError {
    err_with(input, &limits())
}

fn err_with(input: &[u8], limits: &Limits) -> ProtocolError {
    let stateless = match parse_command(input, limits) {
        Err(e) => e,
        Ok(r) => panic!(
            "{:?}: expected an error, got {r:?}",
            input.escape_ascii().to_string()
        ),
    };
    // The decoder must agree, fed at once.
    let mut buf = BytesMut::from(input);
    let decoded = RequestDecoder::new(*limits).decode(&mut buf);
    assert_eq!(decoded, Err(stateless.clone()), "decoder disagrees");
    stateless
}

fn v(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

// --- arrays of bulk strings ---------------------------------------------------------------

#[test]
fn array_command() {
    let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
    assert_eq!(one(input), (v(&["SET", "key", "value"]), input.len()));
    assert_eq!(one(b"*1\r\n$4\r\nPING\r\n"), (v(&["PING"]), 14));
}

#[test]
fn bulk_strings_are_binary_safe() {
    let input = b"*3\r\n$4\r\nECHO\r\n$6\r\na\r\nb\0\xff\r\n$0\r\n\r\n";
    let (a, used) = one(input);
    assert_eq!(a, vec![b"ECHO".to_vec(), b"a\r\nb\0\xff".to_vec(), vec![]]);
    assert_eq!(used, input.len());
}

#[test]
fn trailing_bytes_are_left_for_the_next_call() {
    let input = b"*1\r\n$4\r\nPING\r\n*1\r\n$4";
    assert_eq!(one(input), (v(&["PING"]), 14));
    assert_eq!(parse_command(&input[14..], &limits()), Ok(None));
}

#[test]
fn command_names_compare_without_case() {
    let (cmd, _) = parse_command(b"*2\r\n$11\r\nidMint.next\r\n$3\r\ntag\r\n", &limits())
        .unwrap()
        .unwrap();
    assert!(cmd.is("IDMINT.NEXT"));
    assert_eq!(cmd.upper_name().as_deref(), Some(&b"IDMINT.NEXT"[..]));
    assert_eq!(cmd.name(), b"idMint.next");
    assert_eq!(cmd.params().len(), 1);
}

// --- inline commands ----------------------------------------------------------------------

#[test]
fn inline_commands() {
    assert_eq!(one(b"PING\r\n"), (v(&["PING"]), 6));
    assert_eq!(one(b"PING\n"), (v(&["PING"]), 5));
    assert_eq!(one(b"INCR tag\r\n"), (v(&["INCR", "tag"]), 10));
    assert_eq!(
        one(b"  INCRBY \t tag  10 \r\n"),
        (v(&["INCRBY", "tag", "10"]), 21)
    );
    assert_eq!(one(b"SET \"a b\" 'c d'\n"), (v(&["SET", "a b", "c d"]), 16));
    assert_eq!(
        one(b"ECHO \"\\x00\\xff\"\n").0,
        vec![b"ECHO".to_vec(), b"\x00\xff".to_vec()]
    );
    // A lone CR is whitespace, not a line end.
    assert_eq!(one(b"A\rB\n"), (v(&["A", "B"]), 4));
    assert_eq!(parse_command(b"PING\r", &limits()), Ok(None));
    assert_eq!(parse_command(b"PING", &limits()), Ok(None));
    // Any first byte but '*' starts an inline command, as in Redis.
    assert_eq!(one(b"$4\r\n"), (v(&["$4"]), 4));
    assert_eq!(one(b"+PING\r\n"), (v(&["+PING"]), 7));
}

#[test]
fn blank_lines_are_skipped() {
    assert_eq!(one(b"\r\n\n  \t\r\nPING\r\n"), (v(&["PING"]), 14));
    assert_eq!(one(b"\r\n*1\r\n$4\r\nPING\r\n"), (v(&["PING"]), 16));
    assert_eq!(parse_command(b"\r\n\r\n", &limits()), Ok(None));
    assert_eq!(parse_command(b"", &limits()), Ok(None));
    // The decoder removes blank lines from the buffer as it goes.
    let mut buf = BytesMut::from(&b"\r\n \n"[..]);
    assert_eq!(RequestDecoder::default().decode(&mut buf), Ok(None));
    assert!(buf.is_empty());
}

#[test]
fn inline_errors() {
    assert_eq!(err(b"GET \"abc\r\n"), ProtocolError::UnbalancedQuotes);
    assert_eq!(err(b"GET 'a'b\n"), ProtocolError::UnbalancedQuotes);
    let small = Limits {
        max_bulk_len: 4,
        max_array_len: 3,
        ..limits()
    };
    assert_eq!(
        err_with(b"a b c d\n", &small),
        ProtocolError::TooManyArguments { limit: 3 }
    );
    assert_eq!(
        err_with(b"abcde\n", &small),
        ProtocolError::ArgumentTooLong { len: 5, limit: 4 }
    );
}

#[test]
fn inline_line_limit() {
    let max = limits().max_inline_len;
    let mut line = vec![b'A'; max];
    // Exactly the limit, no newline yet: could still end, so incomplete.
    assert_eq!(parse_command(&line, &limits()), Ok(None));
    line.push(b'\n');
    assert_eq!(one(&line).1, max + 1);
    // One byte more and no newline among the first max + 1: refused.
    let mut long = vec![b'A'; max + 1];
    assert_eq!(err(&long), ProtocolError::InlineTooLong { limit: max });
    long.push(b'\n');
    assert_eq!(err(&long), ProtocolError::InlineTooLong { limit: max });
    // A run of blank lines is bounded the same way.
    let blanks = vec![b'\n'; max + 1];
    assert_eq!(err(&blanks), ProtocolError::InlineTooLong { limit: max });
    let blanks = vec![b'\n'; max];
    assert_eq!(parse_command(&blanks, &limits()), Ok(None));
}

/// Regression (fuzz target `resp_parse`): the limit does not count the line ending, so a line of
/// exactly `max_inline_len` bytes is accepted with a CRLF ending as with a bare LF. It used to be
/// refused as too long when it ended in CRLF, i.e. from every real client.
#[test]
fn inline_limit_does_not_count_the_line_ending() {
    let small = Limits {
        max_inline_len: 30,
        ..limits()
    };
    // The minimised fuzz input: "NOW0000" re-sent as an inline line of exactly 30 bytes.
    let line = b"\"\\x4e\\x4f\\x57\\x30\\x30\\x30\\x30\"\r\n";
    assert_eq!(line.len(), 30 + 2);
    let parsed = parse_command(line, &small);
    assert_eq!(
        parsed.map(|r| r.map(|(cmd, used)| (args(&cmd), used))),
        Ok(Some((v(&["NOW0000"]), 32)))
    );

    let max = limits().max_inline_len;
    for ending in [&b"\n"[..], b"\r\n"] {
        let mut line = vec![b'A'; max];
        line.extend_from_slice(ending);
        assert_eq!(one(&line), (vec![vec![b'A'; max]], line.len()));
        // Fed a byte at a time, the decoder reaches the same command, never an error.
        let mut decoder = RequestDecoder::new(limits());
        let mut buf = BytesMut::new();
        let mut got = None;
        for &b in &line {
            buf.extend_from_slice(&[b]);
            if let Some(cmd) = decoder.decode(&mut buf).unwrap() {
                got = Some(args(&cmd));
            }
        }
        assert_eq!(got, Some(vec![vec![b'A'; max]]));
    }
    // The CR of the ending may wait for its LF; anything else past the limit is refused.
    let mut pending = vec![b'A'; max];
    pending.push(b'\r');
    assert_eq!(parse_command(&pending, &limits()), Ok(None));
    pending.push(b'x');
    assert_eq!(err(&pending), ProtocolError::InlineTooLong { limit: max });
    let mut long = vec![b'A'; max + 1];
    long.extend_from_slice(b"\r\n");
    assert_eq!(err(&long), ProtocolError::InlineTooLong { limit: max });
}

#[test]
fn decoder_bounds_blank_lines_across_reads() {
    let limits = Limits {
        max_inline_len: 10,
        ..limits()
    };
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::new();
    for _ in 0..5 {
        buf.extend_from_slice(b"\r\n");
        assert_eq!(decoder.decode(&mut buf), Ok(None));
    }
    buf.extend_from_slice(b"\r\n");
    assert_eq!(
        decoder.decode(&mut buf),
        Err(ProtocolError::InlineTooLong { limit: 10 })
    );
    // A command in between resets the count.
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::from(&b"\r\n\r\n\r\n\r\nPING\r\n\r\n\r\n\r\n\r\n\r\n"[..]);
    assert!(decoder.decode(&mut buf).unwrap().is_some());
    assert_eq!(decoder.decode(&mut buf), Ok(None));
}

// --- protocol errors ------------------------------------------------------------------------

#[test]
fn invalid_lengths() {
    use LengthKind::{Array, Bulk};
    for bad in [
        &b"*abc\r\n"[..],
        b"*\r\n",
        b"*-\r\n",
        b"*01\r\n",
        b"*-0\r\n",
        b"*+1\r\n",
        b"* 1\r\n",
        b"*1 \r\n",
        b"*1.0\r\n",
        b"*99999999999999999999\r\n",
    ] {
        assert_eq!(
            err(bad),
            ProtocolError::InvalidLength(Array),
            "{:?}",
            bad.escape_ascii().to_string()
        );
    }
    for bad in [
        &b"*1\r\n$x\r\n"[..],
        b"*1\r\n$\r\n",
        b"*1\r\n$00\r\n",
        b"*1\r\n$-01\r\n",
        b"*1\r\n$9223372036854775808\r\n",
    ] {
        assert_eq!(
            err(bad),
            ProtocolError::InvalidLength(Bulk),
            "{:?}",
            bad.escape_ascii().to_string()
        );
    }
}

#[test]
fn errors_are_found_before_the_line_ends() {
    // A bad byte or an overflowing number is refused without waiting for more input.
    assert_eq!(err(b"*1x"), ProtocolError::InvalidLength(LengthKind::Array));
    assert_eq!(
        err(b"*1\r\n$1y"),
        ProtocolError::InvalidLength(LengthKind::Bulk)
    );
    assert_eq!(
        err(b"*11111111111111111111111"),
        ProtocolError::InvalidLength(LengthKind::Array)
    );
    assert_eq!(err(b"*1\r\n:"), ProtocolError::ExpectedBulk { got: b':' });
}

#[test]
fn null_and_negative_lengths() {
    assert_eq!(
        err(b"*-1\r\n"),
        ProtocolError::NullInRequest {
            kind: LengthKind::Array
        }
    );
    assert_eq!(
        err(b"*1\r\n$-1\r\n"),
        ProtocolError::NullInRequest {
            kind: LengthKind::Bulk
        }
    );
    assert_eq!(
        err(b"*-2\r\n"),
        ProtocolError::NegativeLength {
            kind: LengthKind::Array,
            len: -2
        }
    );
    assert_eq!(
        err(b"*1\r\n$-100\r\n"),
        ProtocolError::NegativeLength {
            kind: LengthKind::Bulk,
            len: -100
        }
    );
}

#[test]
fn empty_array() {
    assert_eq!(err(b"*0\r\n"), ProtocolError::EmptyArray);
}

#[test]
fn non_bulk_elements() {
    assert_eq!(
        err(b"*2\r\n:1\r\n"),
        ProtocolError::ExpectedBulk { got: b':' }
    );
    assert_eq!(
        err(b"*1\r\n+OK\r\n"),
        ProtocolError::ExpectedBulk { got: b'+' }
    );
    assert_eq!(
        err(b"*1\r\n-ERR\r\n"),
        ProtocolError::ExpectedBulk { got: b'-' }
    );
    assert_eq!(
        err(b"*1\r\nPING\r\n"),
        ProtocolError::ExpectedBulk { got: b'P' }
    );
    assert_eq!(
        err(b"*2\r\n$4\r\nINCR\r\n\r\n"),
        ProtocolError::ExpectedBulk { got: b'\r' }
    );
}

#[test]
fn nested_arrays() {
    assert_eq!(err(b"*1\r\n*1\r\n$1\r\na\r\n"), ProtocolError::NestedArray);
    assert_eq!(err(b"*2\r\n$1\r\na\r\n*0\r\n"), ProtocolError::NestedArray);
    // A million levels of nesting: refused at the second, no recursion.
    let deep = b"*1\r\n".repeat(1_000_000);
    assert_eq!(err(&deep), ProtocolError::NestedArray);
}

#[test]
fn missing_crlf() {
    let header = ProtocolError::MissingCrlf {
        after: CrlfAfter::LengthHeader,
    };
    let data = ProtocolError::MissingCrlf {
        after: CrlfAfter::BulkData,
    };
    assert_eq!(err(b"*1\rx"), header);
    assert_eq!(err(b"*1\r\r\n"), header);
    assert_eq!(err(b"*1\r\n$4\rPING"), header);
    assert_eq!(err(b"*1\r\n$4\r\nPINGx\r\n"), data);
    assert_eq!(err(b"*1\r\n$4\r\nPING\n\r"), data);
    assert_eq!(err(b"*1\r\n$4\r\nPIN\r\nX"), data);
    assert_eq!(err(b"*1\r\n$4\r\nPING\rx"), data);
    // Not enough bytes to tell yet.
    assert_eq!(parse_command(b"*1\r\n$4\r\nPING\r", &limits()), Ok(None));
    assert_eq!(parse_command(b"*1\r", &limits()), Ok(None));
}

// --- limits -------------------------------------------------------------------------------

#[test]
fn declared_lengths_over_the_limits() {
    let defaults = limits();
    assert_eq!(
        err(b"*1\r\n$1000000000\r\n"),
        ProtocolError::LengthOverLimit {
            kind: LengthKind::Bulk,
            len: 1_000_000_000,
            limit: defaults.max_bulk_len
        }
    );
    assert_eq!(
        err(b"*1\r\n$65537\r\n"),
        ProtocolError::LengthOverLimit {
            kind: LengthKind::Bulk,
            len: 65537,
            limit: 65536
        }
    );
    assert_eq!(
        err(b"*1025\r\n"),
        ProtocolError::LengthOverLimit {
            kind: LengthKind::Array,
            len: 1025,
            limit: 1024
        }
    );
    assert_eq!(
        err(b"*9223372036854775807\r\n"),
        ProtocolError::LengthOverLimit {
            kind: LengthKind::Array,
            len: i64::MAX as u64,
            limit: 1024
        }
    );
    // At the limits: accepted, waiting for the data.
    assert_eq!(parse_command(b"*1024\r\n", &defaults), Ok(None));
    assert_eq!(parse_command(b"*1\r\n$65536\r\n", &defaults), Ok(None));
}

#[test]
fn request_size_limit() {
    let small = Limits {
        max_request_len: 40,
        ..limits()
    };
    // 4 + 3 * (4 + 6 + 2) = 40 bytes: fits exactly.
    let mut fits = Vec::new();
    encode::command(&mut fits, &["aaaaaa", "bbbbbb", "cccccc"]);
    assert_eq!(fits.len(), 40);
    assert!(parse_command(&fits, &small).unwrap().is_some());
    let mut over = Vec::new();
    encode::command(&mut over, &["aaaaaa", "bbbbbb", "ccccccc"]);
    assert_eq!(
        err_with(&over, &small),
        ProtocolError::RequestTooLarge { limit: 40 }
    );
    // Refused from the header alone, before the data arrives.
    assert_eq!(
        err_with(&over[..over.len() - 9], &small),
        ProtocolError::RequestTooLarge { limit: 40 }
    );
}

#[test]
fn huge_declared_lengths_allocate_nothing_and_wait() {
    // With limits that allow a gigabyte, a header declaring one just waits for the data;
    // whether it allocated is checked in tests/no_alloc.rs.
    let huge = Limits {
        max_bulk_len: 2 << 30,
        max_request_len: 2 << 30,
        max_array_len: 1 << 30,
        ..limits()
    };
    assert_eq!(parse_command(b"*1\r\n$1000000000\r\nabc", &huge), Ok(None));
    assert_eq!(
        parse_command(b"*1000000000\r\n$1\r\na\r\n", &huge),
        Ok(None)
    );
}

// --- pipelines ------------------------------------------------------------------------------

/// A pipeline mixing every request shape, and the commands it holds.
fn pipeline() -> (Vec<u8>, Vec<Vec<Vec<u8>>>) {
    let mut buf = Vec::new();
    let mut expected = Vec::new();
    for (i, tag) in ["a", "tag:with:colons", "", "x\r\ny"].iter().enumerate() {
        let n = i.to_string();
        encode::command(&mut buf, &["INCRBY", tag, n.as_str()]);
        expected.push(v(&["INCRBY", tag, &n]));
    }
    buf.extend_from_slice(b"PING\r\n\r\nINCR  tag\n*1\r\n$4\r\nPING\r\n");
    expected.push(v(&["PING"]));
    expected.push(v(&["INCR", "tag"]));
    expected.push(v(&["PING"]));
    buf.extend_from_slice(b"ECHO \"hi there\" 'x'\r\n");
    expected.push(v(&["ECHO", "hi there", "x"]));
    encode::command(&mut buf, &[&b"ECHO"[..], b"\0\xff\r\n"]);
    expected.push(vec![b"ECHO".to_vec(), b"\0\xff\r\n".to_vec()]);
    (buf, expected)
}

#[test]
fn pipeline_in_one_buffer() {
    let (buf, expected) = pipeline();
    let parsed = parse_all(&buf, &limits());
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.consumed, buf.len());
    assert_eq!(
        parsed.commands.iter().map(args).collect::<Vec<_>>(),
        expected
    );
}

/// Drains every complete command from `inbuf` with the stateless parser, as a server would.
fn drain(inbuf: &mut Vec<u8>, out: &mut Vec<Vec<Vec<u8>>>) {
    loop {
        match parse_command(inbuf, &limits()) {
            Ok(Some((cmd, n))) => {
                out.push(args(&cmd));
                inbuf.drain(..n);
            }
            Ok(None) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn pipeline_split_at_every_byte() {
    let (buf, expected) = pipeline();
    for cut in 0..=buf.len() {
        // Stateless parser over a Vec, draining as it goes.
        let mut got = Vec::new();
        let mut inbuf = buf[..cut].to_vec();
        drain(&mut inbuf, &mut got);
        inbuf.extend_from_slice(&buf[cut..]);
        drain(&mut inbuf, &mut got);
        assert_eq!(got, expected, "split at {cut}");
        assert!(inbuf.is_empty(), "split at {cut}");

        // The resuming decoder over a BytesMut.
        let mut got = Vec::new();
        let mut decoder = RequestDecoder::new(limits());
        let mut inbuf = BytesMut::from(&buf[..cut]);
        while let Some(cmd) = decoder.decode(&mut inbuf).unwrap() {
            got.push(args(&cmd));
        }
        inbuf.extend_from_slice(&buf[cut..]);
        while let Some(cmd) = decoder.decode(&mut inbuf).unwrap() {
            got.push(args(&cmd));
        }
        assert_eq!(got, expected, "decoder, split at {cut}");
        assert!(inbuf.is_empty(), "decoder, split at {cut}");
    }
}

#[test]
fn pipeline_one_byte_at_a_time() {
    let (buf, expected) = pipeline();
    let mut decoder = RequestDecoder::new(limits());
    let mut inbuf = BytesMut::new();
    let mut got = Vec::new();
    let mut stateless_buf = Vec::new();
    let mut stateless = Vec::new();
    for &b in &buf {
        inbuf.extend_from_slice(&[b]);
        while let Some(cmd) = decoder.decode(&mut inbuf).unwrap() {
            got.push(args(&cmd));
        }
        stateless_buf.push(b);
        drain(&mut stateless_buf, &mut stateless);
    }
    assert_eq!(got, expected);
    assert_eq!(stateless, expected);
}

#[test]
fn every_prefix_parses_a_prefix_of_the_commands() {
    let (buf, expected) = pipeline();
    for cut in 0..=buf.len() {
        let (got, error) = all(&buf[..cut]);
        assert_eq!(error, None, "prefix of {cut}");
        assert_eq!(got[..], expected[..got.len()], "prefix of {cut}");
    }
}

#[test]
fn commands_before_an_error_are_kept() {
    let mut buf = Vec::new();
    encode::command(&mut buf, &["PING"]);
    buf.extend_from_slice(b"INCR t\r\n*1\r\n:5\r\n*1\r\n$4\r\nPING\r\n");
    let parsed = parse_all(&buf, &limits());
    assert_eq!(
        parsed.commands.iter().map(args).collect::<Vec<_>>(),
        vec![v(&["PING"]), v(&["INCR", "t"])]
    );
    assert_eq!(parsed.consumed, 22);
    assert_eq!(
        parsed.error,
        Some(ProtocolError::ExpectedBulk { got: b':' })
    );

    // What the server sends before closing.
    let mut reply = Vec::new();
    if let Some(e) = parsed.error {
        e.write_reply(&mut reply);
    }
    assert_eq!(reply, b"-ERR Protocol error: expected '$', got ':'\r\n");
}

#[test]
fn decoder_shares_the_read_buffer() {
    let mut buf = BytesMut::from(&b"*2\r\n$4\r\nINCR\r\n$3\r\ntag\r\n"[..]);
    let base = buf.as_ptr() as usize;
    let cmd = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
    // The arguments point into the original allocation: no copy was made.
    assert_eq!(cmd.args()[0].as_ptr() as usize, base + 8);
    assert_eq!(cmd.args()[1].as_ptr() as usize, base + 18);
    assert_eq!(args(&cmd), v(&["INCR", "tag"]));
}

#[test]
fn decoder_survives_a_shrunk_buffer() {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(&b"*2\r\n$4\r\nINCR\r\n$3\r\nta"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    // Replaced behind the decoder's back: it must not trust its old offsets.
    let mut buf = BytesMut::from(&b"PING\r\n"[..]);
    assert_eq!(
        decoder.decode(&mut buf).unwrap().map(|c| args(&c)),
        Some(v(&["PING"]))
    );
    decoder.reset();
    let mut buf = BytesMut::from(&b"*1\r\n$4\r\nPING\r\n"[..]);
    assert_eq!(
        decoder.decode(&mut buf).unwrap().map(|c| args(&c)),
        Some(v(&["PING"]))
    );
    assert_eq!(decoder.limits(), &Limits::default());
}
