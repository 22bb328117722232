//! A parsed request: the command name and its arguments, as binary-safe byte strings.

use std::fmt;
use std::ops::Deref;

use bytes::{BufMut, Bytes};

/// One request: a non-empty list of arguments, the first being the command name.
///
/// Arguments are [`Bytes`], so they are binary safe and, from [`crate::RequestDecoder`],
/// slices of the connection's read buffer rather than copies. Redis command names are
/// case-insensitive; compare them with [`Command::is`] or match on [`Command::upper_name`],
/// both free of allocation. The original spelling stays available through [`Command::name`]
/// for error messages (`unknown command 'incrx'`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Command {
    /// Never empty: the parser refuses empty arrays and skips blank inline lines.
    args: Vec<Bytes>,
}

impl Command {
    /// A command from its arguments, name first; `None` when `args` is empty, since a request
    /// with no name is not a command. For tests and for building requests to send.
    pub fn new(args: Vec<Bytes>) -> Option<Command> {
        if args.is_empty() {
            None
        } else {
            Some(Command { args })
        }
    }

    /// Used by the parser, which only produces non-empty lists.
    pub(crate) fn from_parsed(args: Vec<Bytes>) -> Command {
        debug_assert!(!args.is_empty());
        Command { args }
    }

    /// The command name as the client spelled it.
    pub fn name(&self) -> &[u8] {
        self.args.first().map_or(&[][..], |name| &name[..])
    }

    /// The command name in ASCII upper case, on the stack; `None` when it is longer than
    /// [`UpperName::CAPACITY`] bytes, which no known command is.
    ///
    /// ```
    /// # use idmint_resp::{parse_command, Limits};
    /// let (cmd, _) = parse_command(b"incr tag\r\n", &Limits::default()).unwrap().unwrap();
    /// match cmd.upper_name().as_deref() {
    ///     Some(b"INCR") => { /* ... */ }
    ///     _ => unreachable!(),
    /// }
    /// ```
    pub fn upper_name(&self) -> Option<UpperName> {
        UpperName::new(self.name())
    }

    /// Whether the command name equals `name`, ignoring ASCII case: `cmd.is("PING")`.
    pub fn is(&self, name: &str) -> bool {
        self.name().eq_ignore_ascii_case(name.as_bytes())
    }

    /// All arguments, the name first.
    pub fn args(&self) -> &[Bytes] {
        &self.args
    }

    /// The arguments after the name.
    pub fn params(&self) -> &[Bytes] {
        self.args.get(1..).unwrap_or(&[])
    }

    /// Argument `i` (0 is the name), if present.
    pub fn arg(&self, i: usize) -> Option<&[u8]> {
        self.args.get(i).map(|a| &a[..])
    }

    /// Argument `i` in ASCII upper case, for subcommands and options (`CONFIG GET`,
    /// `COUNT n`); `None` when absent or longer than [`UpperName::CAPACITY`].
    pub fn upper_arg(&self, i: usize) -> Option<UpperName> {
        self.arg(i).and_then(UpperName::new)
    }

    /// Number of arguments, the name included (Redis' `argc`); at least 1.
    pub fn len(&self) -> usize {
        self.args.len()
    }

    /// Always `false`: a command has at least its name. Present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// The arguments, the name first, by value.
    pub fn into_args(self) -> Vec<Bytes> {
        self.args
    }

    /// Appends the command as a client would send it, an array of bulk strings.
    pub fn encode<B: BufMut + ?Sized>(&self, out: &mut B) {
        crate::encode::command(out, &self.args);
    }
}

impl fmt::Debug for Command {
    /// Arguments shown as escaped byte strings: `Command["INCR", "tag"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Command")?;
        f.debug_list()
            .entries(self.args.iter().map(|a| AsciiEscaped(a)))
            .finish()
    }
}

/// Shows bytes as a quoted string with non-printable bytes escaped.
struct AsciiEscaped<'a>(&'a [u8]);

impl fmt::Debug for AsciiEscaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

/// A command name or keyword in ASCII upper case, held inline (no allocation).
///
/// Dereferences to `[u8]`, so `match cmd.upper_name().as_deref() { Some(b"PING") => ... }`
/// works, as does `name.as_str()` for `&str` matching.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UpperName {
    buf: [u8; UpperName::CAPACITY],
    len: u8,
}

impl UpperName {
    /// Longest name held, in bytes. Redis' longest command name is 20 bytes
    /// (`GEORADIUSBYMEMBER_RO`); idmint's is `IDMINT.SNOWFLAKE`, 16.
    pub const CAPACITY: usize = 32;

    /// `name` in ASCII upper case (other bytes unchanged); `None` if longer than
    /// [`UpperName::CAPACITY`].
    pub fn new(name: &[u8]) -> Option<UpperName> {
        let len = u8::try_from(name.len()).ok()?;
        let mut buf = [0u8; UpperName::CAPACITY];
        let dst = buf.get_mut(..name.len())?;
        dst.copy_from_slice(name);
        dst.make_ascii_uppercase();
        Some(UpperName { buf, len })
    }

    /// The upper-cased bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The upper-cased name as text, `None` if it is not UTF-8 (then it is no known command).
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.as_bytes()).ok()
    }
}

impl Deref for UpperName {
    type Target = [u8];

    /// [`UpperName::as_bytes`].
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq<[u8]> for UpperName {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<str> for UpperName {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for UpperName {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl fmt::Debug for UpperName {
    /// The name as an escaped string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        AsciiEscaped(self.as_bytes()).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&'static str]) -> Option<Command> {
        Command::new(
            args.iter()
                .map(|a| Bytes::from_static(a.as_bytes()))
                .collect(),
        )
    }

    #[test]
    fn names_compare_without_case() {
        let Some(c) = cmd(&["iNcR", "Tag"]) else {
            panic!("non-empty")
        };
        assert!(c.is("INCR"));
        assert!(c.is("incr"));
        assert!(!c.is("INCRBY"));
        assert_eq!(c.name(), b"iNcR");
        assert_eq!(c.upper_name().as_deref(), Some(&b"INCR"[..]));
        assert_eq!(
            c.upper_name()
                .and_then(|n| n.as_str().map(str::to_owned))
                .as_deref(),
            Some("INCR")
        );
        assert_eq!(c.upper_arg(1).as_deref(), Some(&b"TAG"[..]));
        assert_eq!(c.upper_arg(2), None);
        assert_eq!(c.arg(1), Some(&b"Tag"[..]));
        assert_eq!(c.params().len(), 1);
        assert_eq!(c.len(), 2);
        assert!(!c.is_empty());
        assert_eq!(format!("{c:?}"), r#"Command["iNcR", "Tag"]"#);
    }

    #[test]
    fn upper_name_bounds() {
        assert!(cmd(&[]).is_none());
        let long = "x".repeat(UpperName::CAPACITY);
        assert!(UpperName::new(long.as_bytes()).is_some());
        let longer = "x".repeat(UpperName::CAPACITY + 1);
        assert!(UpperName::new(longer.as_bytes()).is_none());
        assert!(UpperName::new(&"y".repeat(300).into_bytes()).is_none());
        let n = UpperName::new(b"idmint.snowflake\xff");
        assert_eq!(
            n.map(|n| n == *b"IDMINT.SNOWFLAKE\xff".as_slice()),
            Some(true)
        );
        assert_eq!(n.and_then(|n| n.as_str().map(str::len)), None);
        assert_eq!(UpperName::new(b"").map(|n| n.is_empty()), Some(true));
        assert_eq!(UpperName::new(b"ping").map(|n| n == "PING"), Some(true));
    }

    #[test]
    fn encodes_as_client_request() {
        let Some(c) = cmd(&["SET", "k", ""]) else {
            panic!("non-empty")
        };
        let mut out = Vec::new();
        c.encode(&mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }
}
