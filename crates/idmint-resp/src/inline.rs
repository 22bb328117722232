//! Inline commands: one line of text, `INCR tag\r\n`, as typed into `telnet` or sent by
//! `redis-benchmark`'s `PING_INLINE` test.
//!
//! The line is split like Redis' `sdssplitargs`:
//! - arguments are separated by runs of whitespace (space, tab, CR, LF, vertical tab, form
//!   feed); inside an unquoted argument only space, tab, CR and LF end it;
//! - `"double quoted"` arguments may contain whitespace and the escapes `\n`, `\r`, `\t`, `\b`,
//!   `\a`, `\xHH` (two hex digits) and `\<any other byte>` for that byte (`\"`, `\\`);
//! - `'single quoted'` arguments are taken literally except `\'` for a quote;
//! - a quote may open in the middle of an argument (`ab"c d"` is `abc d`), and a closing
//!   quote must be followed by whitespace or the end of the line, else the line is refused
//!   with [`ProtocolError::UnbalancedQuotes`], as is a quote left open;
//! - a line with no arguments at all is skipped, as Redis does.
//!
//! One difference from Redis: a NUL byte is an ordinary byte here, where Redis' C-string
//! splitting would stop at it.

use bytes::Bytes;

use crate::{Limits, ProtocolError};

/// C `isspace`: what separates arguments.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The value of an ASCII hex digit.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Checks one finished argument against the limits and adds it.
fn push_arg(args: &mut Vec<Bytes>, arg: Vec<u8>, limits: &Limits) -> Result<(), ProtocolError> {
    if arg.len() > limits.max_bulk_len {
        return Err(ProtocolError::ArgumentTooLong {
            len: arg.len(),
            limit: limits.max_bulk_len,
        });
    }
    if args.len() >= limits.max_array_len {
        return Err(ProtocolError::TooManyArguments {
            limit: limits.max_array_len,
        });
    }
    args.push(Bytes::from(arg));
    Ok(())
}

/// Splits one line (line ending already removed) into arguments; empty when the line is blank.
pub(crate) fn split(line: &[u8], limits: &Limits) -> Result<Vec<Bytes>, ProtocolError> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).is_some_and(|&b| is_space(b)) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        // Quote state of the argument being read.
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let Some(&b) = line.get(i) else {
                if in_double || in_single {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                break;
            };
            if in_double {
                match b {
                    b'\\' => {
                        let hex = line
                            .get(i + 1)
                            .filter(|&&x| x == b'x')
                            .and(line.get(i + 2).copied().and_then(hex_value))
                            .zip(line.get(i + 3).copied().and_then(hex_value));
                        if let Some((hi, lo)) = hex {
                            arg.push(hi << 4 | lo);
                            i += 4;
                            continue;
                        }
                        // A backslash ending the line leaves the quote open.
                        let Some(&esc) = line.get(i + 1) else {
                            return Err(ProtocolError::UnbalancedQuotes);
                        };
                        arg.push(match esc {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                        i += 2;
                        continue;
                    }
                    b'"' => {
                        if line.get(i + 1).is_some_and(|&next| !is_space(next)) {
                            return Err(ProtocolError::UnbalancedQuotes);
                        }
                        i += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else if in_single {
                match b {
                    b'\\' if line.get(i + 1) == Some(&b'\'') => {
                        arg.push(b'\'');
                        i += 2;
                        continue;
                    }
                    b'\'' => {
                        if line.get(i + 1).is_some_and(|&next| !is_space(next)) {
                            return Err(ProtocolError::UnbalancedQuotes);
                        }
                        i += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else {
                match b {
                    b' ' | b'\t' | b'\n' | b'\r' => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    other => arg.push(other),
                }
            }
            i += 1;
        }
        push_arg(&mut args, arg, limits)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Result<Vec<String>, ProtocolError> {
        split(line.as_bytes(), &Limits::default()).map(|args| {
            args.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
    }

    fn ok(line: &str) -> Vec<String> {
        match words(line) {
            Ok(w) => w,
            Err(e) => panic!("{line:?}: {e}"),
        }
    }

    #[test]
    fn splits_on_whitespace() {
        assert_eq!(ok("PING"), ["PING"]);
        assert_eq!(ok("INCR tag"), ["INCR", "tag"]);
        assert_eq!(ok("  INCRBY\t\ttag   5  "), ["INCRBY", "tag", "5"]);
        assert_eq!(
            ok("a\x0bb"),
            ["a\x0bb"],
            "VT only separates between arguments"
        );
        assert_eq!(ok("\x0b\x0ca\x0c \x0c"), ["a\x0c"]);
        assert!(ok("").is_empty());
        assert!(ok(" \t \x0b").is_empty());
    }

    #[test]
    fn double_quotes_and_escapes() {
        assert_eq!(ok(r#"SET "a b" c"#), ["SET", "a b", "c"]);
        assert_eq!(ok(r#""""#), [""]);
        assert_eq!(ok(r#""\n\r\t\b\a\\\"\q""#), ["\n\r\t\x08\x07\\\"q"]);
        assert_eq!(ok(r#""\x41\x4a\x4B""#), ["AJK"]);
        assert_eq!(
            ok(r#""\x4""#),
            ["x4"],
            "short hex escape is a plain escape of 'x'"
        );
        assert_eq!(ok(r#""\xZZ""#), ["xZZ"]);
        assert_eq!(ok(r#"ab"c d" e"#), ["abc d", "e"]);
        let args = split(br#""\xff\x00""#, &Limits::default()).unwrap_or_default();
        assert_eq!(args, [Bytes::from_static(b"\xff\x00")]);
    }

    #[test]
    fn single_quotes() {
        assert_eq!(ok(r"'a b' 'it\'s' '\n'"), ["a b", "it's", "\\n"]);
    }

    #[test]
    fn unbalanced_quotes() {
        for bad in [
            r#"GET "abc"#,
            r#"GET "abc"x"#,
            r"GET 'abc'x",
            r"GET 'abc",
            r#"GET "abc\"#,
            r#"""""#,
        ] {
            assert_eq!(words(bad), Err(ProtocolError::UnbalancedQuotes), "{bad}");
        }
    }

    #[test]
    fn limits() {
        let limits = Limits {
            max_bulk_len: 3,
            max_array_len: 2,
            ..Limits::default()
        };
        assert!(split(b"abc def", &limits).is_ok());
        assert_eq!(
            split(b"abcd", &limits),
            Err(ProtocolError::ArgumentTooLong { len: 4, limit: 3 })
        );
        assert_eq!(
            split(b"a b c", &limits),
            Err(ProtocolError::TooManyArguments { limit: 2 })
        );
    }
}
