//! Property tests: what a client encodes parses back to the same arguments, however the bytes
//! are split, and no input at all makes the parser panic or disagree with itself.

use bytes::BytesMut;
use idmint_resp::{
    encode, parse_all, parse_command, Command, Limits, ProtocolError, RequestDecoder,
};
use proptest::prelude::*;

fn args(cmd: &Command) -> Vec<Vec<u8>> {
    cmd.args().iter().map(|a| a.to_vec()).collect()
}

/// Feeds `input` to a decoder in chunks of the given sizes (the remainder last), collecting
/// commands until the first error.
fn decode_chunked(
    input: &[u8],
    chunks: &[usize],
    limits: &Limits,
) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
    let mut decoder = RequestDecoder::new(*limits);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut rest = input;
    let mut sizes = chunks.iter().copied().chain(std::iter::once(usize::MAX));
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(usize::MAX).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(cmd)) => got.push(args(&cmd)),
                Ok(None) => break,
                Err(e) => return (got, Some(e)),
            }
        }
    }
    (got, None)
}

fn command_strategy() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..8)
}

/// Bytes drawn mostly from RESP's own alphabet, so random input reaches deep into the parser.
fn resp_ish() -> impl Strategy<Value = Vec<u8>> {
    let alphabet: &[u8] = b"*$:+-0123456789\r\n\r\n \t\"'\\xaAfF";
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(alphabet.to_vec()),
            1 => any::<u8>(),
        ],
        0..200,
    )
}

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 16,
        max_array_len: 5,
        max_inline_len: 24,
        max_request_len: 64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encoded_commands_parse_back(
        commands in prop::collection::vec(command_strategy(), 1..6),
        chunks in prop::collection::vec(1usize..64, 0..20),
    ) {
        let mut buf = Vec::new();
        for c in &commands {
            encode::command(&mut buf, c);
        }
        let parsed = parse_all(&buf, &Limits::default());
        prop_assert_eq!(parsed.error, None);
        prop_assert_eq!(parsed.consumed, buf.len());
        prop_assert_eq!(parsed.commands.iter().map(args).collect::<Vec<_>>(), commands.clone());
        let (decoded, error) = decode_chunked(&buf, &chunks, &Limits::default());
        prop_assert_eq!(error, None);
        prop_assert_eq!(decoded, commands);
    }

    #[test]
    fn quoted_inline_commands_parse_back(
        words in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..6),
        crlf in any::<bool>(),
    ) {
        // Every byte as a \xHH escape inside double quotes: any bytes survive.
        let mut line = Vec::new();
        for w in &words {
            line.extend_from_slice(b" \"");
            for b in w {
                line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            line.push(b'"');
        }
        line.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        let (cmd, used) = parse_command(&line, &Limits::default()).unwrap().unwrap();
        prop_assert_eq!(used, line.len());
        prop_assert_eq!(args(&cmd), words);
    }

    #[test]
    fn plain_inline_commands_parse_back(
        words in prop::collection::vec("[A-Za-z0-9:._-]{1,12}", 1..6),
        sep in "[ \t]{1,3}",
    ) {
        let line = format!("{}\r\n", words.join(&sep));
        let (cmd, used) = parse_command(line.as_bytes(), &Limits::default()).unwrap().unwrap();
        prop_assert_eq!(used, line.len());
        let expected: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        prop_assert_eq!(args(&cmd), expected);
    }

    #[test]
    fn garbage_never_panics(input in prop::collection::vec(any::<u8>(), 0..300)) {
        for limits in [Limits::default(), small_limits()] {
            let parsed = parse_all(&input, &limits);
            prop_assert!(parsed.consumed <= input.len());
        }
    }

    #[test]
    fn decoder_agrees_with_parse_all(
        input in resp_ish(),
        chunks in prop::collection::vec(1usize..16, 0..30),
        small in any::<bool>(),
    ) {
        let limits = if small { small_limits() } else { Limits::default() };
        let parsed = parse_all(&input, &limits);
        prop_assert!(parsed.consumed <= input.len());
        let (decoded, error) = decode_chunked(&input, &chunks, &limits);
        prop_assert_eq!(decoded, parsed.commands.iter().map(args).collect::<Vec<_>>());
        prop_assert_eq!(error, parsed.error);
    }

    #[test]
    fn an_incomplete_prefix_never_errs_where_the_whole_succeeds(
        commands in prop::collection::vec(command_strategy(), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut buf = Vec::new();
        for c in &commands {
            encode::command(&mut buf, c);
        }
        let cut = cut.index(buf.len() + 1);
        let prefix = parse_all(&buf[..cut], &Limits::default());
        prop_assert_eq!(prefix.error, None);
        let n = prefix.commands.len();
        prop_assert_eq!(prefix.commands.iter().map(args).collect::<Vec<_>>(), commands[..n].to_vec());
    }
}
