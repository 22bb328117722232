//! The runnable blocks of a Markdown file, the one bash script they make, and the check of
//! what their commands printed against what the doc shows.
//!
//! Kept apart from the process handling (`docs.rs`) so the rules can be tested on samples.

/// What a fenced block asks of the harness, from its info string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// ```` ```sh run ````: shell commands, run in the file's one bash.
    Shell,
    /// ```` ```sh serve ````: one `idmint serve ...` command; the file's node is restarted so.
    Serve,
    /// ```` ```python run ````: run by the Python that has idmint-client installed.
    Python,
}

/// A runnable block: its kind, the line of its first code line (1-based) and its code lines.
#[derive(Debug)]
pub struct Block {
    pub kind: Kind,
    pub line: usize,
    pub lines: Vec<String>,
}

/// The runnable blocks of `markdown`, in order. Blocks without a marker are prose.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<(usize, Option<Kind>, Block)> = None;
    for (index, raw) in markdown.lines().enumerate() {
        let line = raw.trim_start();
        let ticks = line.bytes().take_while(|&b| b == b'`').count();
        match &mut open {
            None if ticks >= 3 => {
                let kind = kind_of(&line[ticks..]);
                let block = Block {
                    kind: kind.unwrap_or(Kind::Shell),
                    line: index + 2,
                    lines: Vec::new(),
                };
                open = Some((ticks, kind, block));
            }
            None => {}
            Some((fence, kind, block)) => {
                if ticks >= *fence && line[ticks..].trim().is_empty() {
                    if kind.is_some() {
                        let (_, _, block) = open.take().expect("a block is open");
                        found.push(block);
                    } else {
                        open = None;
                    }
                } else {
                    block.lines.push(raw.to_owned());
                }
            }
        }
    }
    found
}

/// The marker in a fence's info string: `sh run`, `sh serve`, `python run` (`bash` and
/// `console` read as `sh`).
pub fn kind_of(info: &str) -> Option<Kind> {
    let mut words = info.split_whitespace();
    let language = words.next()?;
    let marker = words.next()?;
    match (language, marker) {
        ("sh" | "bash" | "console", "run") => Some(Kind::Shell),
        ("sh" | "bash" | "console", "serve") => Some(Kind::Serve),
        ("python", "run") => Some(Kind::Python),
        _ => None,
    }
}

/// `text` with the default ports 8080 (HTTP) and 6380 (RESP) replaced by the test node's,
/// where they stand alone (not inside a longer number such as an ID).
pub fn rewrite_ports(text: &str, http: u16, resp: u16) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let digit_before = i > 0 && bytes[i - 1].is_ascii_digit();
        let swap = [("8080", http), ("6380", resp)]
            .into_iter()
            .find(|(port, _)| {
                text[i..].starts_with(port)
                    && !digit_before
                    && !bytes.get(i + 4).is_some_and(u8::is_ascii_digit)
            });
        if let Some((_, port)) = swap {
            out.push_str(&port.to_string());
            i += 4;
        } else {
            let c = text[i..].chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// A command of a transcript whose output the doc shows.
#[derive(Debug)]
pub struct Check {
    /// Line of the `$ ` in the doc.
    pub line: usize,
    pub command: String,
    pub expected: Vec<String>,
}

/// The bash script of a doc file, and where its lines came from.
pub struct Script {
    pub text: String,
    /// For each line of `text`, the doc line it came from (none for the harness's own).
    pub origin: Vec<Option<usize>>,
    /// The transcript commands whose output is checked; the script writes the output of the
    /// `k`th to `$IDMINT_DOCS_STATE/out-k`.
    pub checks: Vec<Check>,
}

impl Script {
    fn push(&mut self, line: &str, origin: Option<usize>) {
        for part in line.split('\n') {
            self.text.push_str(part);
            self.text.push('\n');
            self.origin.push(origin);
        }
    }

    /// The doc line of script line `n` (1-based), or of the nearest doc line before it.
    pub fn doc_line(&self, n: usize) -> Option<usize> {
        self.origin
            .get(..n.min(self.origin.len()))?
            .iter()
            .rev()
            .find_map(|origin| *origin)
    }
}

/// The harness's own part of every script: `set -eE` (a failing command ends the run, also in
/// a function), the line that failed, and `__serve ARGS` / `__stop`, which (re)start and stop
/// the file's node (its addresses come from `IDMINT_HTTP` and `IDMINT_RESP`).
const PRELUDE: &str = r#"set -eE
trap 'echo "$LINENO" >"$IDMINT_DOCS_STATE/failed_at"' ERR
__serves=0
__stop() {
  if [ -n "${__pid:-}" ]; then
    kill -TERM "$__pid" 2>/dev/null || true
    local status=0
    wait "$__pid" || status=$?
    __pid=
    if [ "$status" -ne 0 ]; then
      echo "doc-test: idmint serve exited with status $status after SIGTERM:" >&2
      tail -n 20 "$__log" >&2
      return 1
    fi
  fi
}
__serve() {
  __stop
  __serves=$((__serves + 1))
  __log="$IDMINT_DOCS_STATE/serve-$__serves.log"
  idmint serve "$@" >"$__log" 2>&1 &
  __pid=$!
  for _ in $(seq 600); do
    if grep -q 'idmint serving' "$__log"; then return 0; fi
    if ! kill -0 "$__pid" 2>/dev/null; then
      echo "doc-test: idmint serve $* exited before serving:" >&2
      cat "$__log" >&2
      __pid=
      return 1
    fi
    sleep 0.05
  done
  echo "doc-test: idmint serve $* did not serve within 30 s" >&2
  return 1
}
trap '[ -z "${__pid:-}" ] || kill -TERM "$__pid" 2>/dev/null || true' EXIT"#;

/// The one script that runs `blocks` in order, the node's ports rewritten to `http` and `resp`.
/// The file's node starts first with no arguments unless the first block is a `sh serve`.
pub fn script(blocks: &[Block], http: u16, resp: u16) -> Result<Script, String> {
    let mut script = Script {
        text: String::new(),
        origin: Vec::new(),
        checks: Vec::new(),
    };
    script.push(PRELUDE, None);
    if blocks.first().map(|b| b.kind) != Some(Kind::Serve) {
        script.push("__serve", None);
    }
    for block in blocks {
        let lines: Vec<String> = block
            .lines
            .iter()
            .map(|l| rewrite_ports(l, http, resp))
            .collect();
        match block.kind {
            Kind::Serve => serve(&mut script, block.line, &lines)?,
            Kind::Python => {
                script.push(
                    "\"$IDMINT_DOCS_PYTHON\" - <<'IDMINT_DOCS_PYTHON_END'",
                    Some(block.line),
                );
                for (i, line) in lines.iter().enumerate() {
                    script.push(line, Some(block.line + i));
                }
                script.push("IDMINT_DOCS_PYTHON_END", Some(block.line));
            }
            Kind::Shell if lines.iter().any(|l| is_prompt(l)) => {
                transcript(&mut script, block.line, &lines)?;
            }
            Kind::Shell => {
                for (i, line) in lines.iter().enumerate() {
                    script.push(line, Some(block.line + i));
                }
            }
        }
    }
    script.push("__stop", None);
    Ok(script)
}

fn is_prompt(line: &str) -> bool {
    line.starts_with("$ ") || line == "$"
}

/// A `sh serve` block: `idmint serve ARGS` (a leading `$ `, `\` continuations and a trailing
/// comment allowed), run as `__serve ARGS`.
fn serve(script: &mut Script, first: usize, lines: &[String]) -> Result<(), String> {
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix("$ ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let continued = lines
        .iter()
        .rev()
        .skip(1)
        .all(|l| l.trim_end().ends_with('\\'));
    let args = lines
        .first()
        .and_then(|l| l.trim().strip_prefix("idmint serve"))
        .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\\']))
        .filter(|_| continued)
        .ok_or_else(|| format!("line {first}: a `sh serve` block holds one `idmint serve ...`"))?;
    script.push(&format!("__serve{args}"), Some(first));
    for (i, line) in lines.iter().enumerate().skip(1) {
        script.push(line, Some(first + i));
    }
    Ok(())
}

/// A transcript: `$ command` lines (continued by a trailing `\`), each followed by what it
/// prints. A command with output lines after it has its stdout kept for the check.
fn transcript(script: &mut Script, first: usize, lines: &[String]) -> Result<(), String> {
    let mut i = 0;
    if !is_prompt(&lines[0]) {
        return Err(format!(
            "line {first}: a transcript block starts with a `$ ` line"
        ));
    }
    while i < lines.len() {
        let start = i;
        let mut command = vec![lines[i][1..].trim_start().to_owned()];
        while command.last().is_some_and(|l| l.ends_with('\\')) && i + 1 < lines.len() {
            i += 1;
            command.push(lines[i].clone());
        }
        i += 1;
        let mut expected = Vec::new();
        while i < lines.len() && !is_prompt(&lines[i]) {
            expected.push(lines[i].trim_end().to_owned());
            i += 1;
        }
        while expected.last().is_some_and(String::is_empty) {
            expected.pop();
        }
        if expected.is_empty() {
            for (k, line) in command.iter().enumerate() {
                script.push(line, Some(first + start + k));
            }
            continue;
        }
        script.push("{", Some(first + start));
        for (k, line) in command.iter().enumerate() {
            script.push(line, Some(first + start + k));
        }
        let out = format!("}} >\"$IDMINT_DOCS_STATE/out-{}\"", script.checks.len());
        script.push(&out, Some(first + start));
        script.checks.push(Check {
            line: first + start,
            command: command.join("\n"),
            expected,
        });
    }
    Ok(())
}

/// One piece of an expected line.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    /// A run of digits in the doc: any run of digits (IDs, times, counters differ per run).
    Digits,
    /// `...` in the doc: any text.
    Any,
    /// A UUID in the doc (8-4-4-4-12 lowercase hex): any UUID.
    Uuid,
    /// A ULID in the doc (26 characters of Crockford's base32): any ULID.
    Ulid,
}

/// Whether `text` starts with a UUID in its canonical form.
fn starts_with_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 36
        && bytes[..36].iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
        && !bytes.get(36).is_some_and(u8::is_ascii_alphanumeric)
}

/// Whether `text` starts with a ULID (and not a longer word).
fn starts_with_ulid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 26
        && (b'0'..=b'7').contains(&bytes[0])
        && bytes[..26]
            .iter()
            .all(|&b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
        && bytes[..26].iter().any(u8::is_ascii_uppercase)
        && !bytes.get(26).is_some_and(u8::is_ascii_alphanumeric)
}

fn pieces(expected: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = expected;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("...") {
            out.push(Piece::Any);
            rest = after;
        } else if starts_with_uuid(rest) {
            out.push(Piece::Uuid);
            rest = &rest[36..];
        } else if starts_with_ulid(rest) {
            out.push(Piece::Ulid);
            rest = &rest[26..];
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            out.push(Piece::Digits);
            rest = &rest[n..];
        } else {
            let n = rest
                .char_indices()
                .find(|&(i, c)| i > 0 && (c.is_ascii_digit() || rest[i..].starts_with("...")))
                .map_or(rest.len(), |(i, _)| i);
            out.push(Piece::Text(&rest[..n]));
            rest = &rest[n..];
        }
    }
    out
}

fn matches_pieces(pieces: &[Piece<'_>], actual: &str) -> bool {
    match pieces.split_first() {
        None => actual.is_empty(),
        Some((Piece::Text(text), rest)) => actual
            .strip_prefix(text)
            .is_some_and(|after| matches_pieces(rest, after)),
        Some((Piece::Digits, rest)) => {
            let n = actual.bytes().take_while(u8::is_ascii_digit).count();
            n > 0 && matches_pieces(rest, &actual[n..])
        }
        Some((Piece::Uuid, rest)) => {
            starts_with_uuid(actual) && matches_pieces(rest, &actual[36..])
        }
        Some((Piece::Ulid, rest)) => {
            starts_with_ulid(actual) && matches_pieces(rest, &actual[26..])
        }
        Some((Piece::Any, rest)) => (0..=actual.len())
            .filter(|&i| actual.is_char_boundary(i))
            .any(|i| matches_pieces(rest, &actual[i..])),
    }
}

/// Whether one printed line matches one line of the doc: equal, except that a run of digits
/// in the doc matches any run of digits, a UUID any UUID, a ULID any ULID, and `...` any
/// text; trailing spaces are ignored.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    matches_pieces(&pieces(expected.trim_end()), actual.trim_end())
}

/// Whether printed lines match the doc's: line by line as [`line_matches`], and a doc line
/// that is only `...` stands for any number of lines.
pub fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.iter().all(|l| l.trim().is_empty()),
        Some((line, rest)) if line.trim() == "..." => {
            (0..=actual.len()).any(|i| output_matches(rest, &actual[i..]))
        }
        Some((line, rest)) => actual
            .split_first()
            .is_some_and(|(first, after)| line_matches(line, first) && output_matches(rest, after)),
    }
}
