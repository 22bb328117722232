//! `resp-load`: a Redis-protocol load generator light enough to measure batches of IDs.
//!
//! `redis-benchmark` builds a reply object for every element it reads, so a reply of 1,000 IDs
//! costs it more than it costs the server: it cannot tell whether a server delivers 20M IDs/s.
//! This client reads replies with a scanner that parses each integer and checks it, and
//! allocates nothing per reply, so the server is what is measured.
//!
//! ```text
//! resp-load --port 6390 --clients 4 --pipeline 4 --seconds 10 [--increasing] -- IDMINT.NEXT tag COUNT 1000
//! ```
//!
//! Prints one line: `calls/s=... ids/s=... errors=... clients=... pipeline=...`. Each client
//! is a thread with a blocking socket that keeps `--pipeline` calls in flight. With
//! `--increasing`, every integer a client reads must be above the one before (what idmint
//! promises per tag and per node), or the run fails.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// What one client counted.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    calls: u64,
    integers: u64,
    errors: u64,
}

/// The settings of a run.
#[derive(Debug, Clone)]
struct Settings {
    host: String,
    port: u16,
    clients: usize,
    pipeline: usize,
    seconds: f64,
    increasing: bool,
    command: Vec<String>,
}

fn usage() -> String {
    "usage: resp-load [--host H] --port P [--clients N] [--pipeline N] [--seconds S] [--increasing] -- COMMAND ARG..."
        .to_owned()
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut settings = Settings {
        host: "127.0.0.1".into(),
        port: 0,
        clients: 4,
        pipeline: 4,
        seconds: 5.0,
        increasing: false,
        command: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--host" => settings.host = value("--host")?,
            "--port" => settings.port = number(&value("--port")?, "--port")?,
            "--clients" => settings.clients = number(&value("--clients")?, "--clients")?,
            "--pipeline" => settings.pipeline = number(&value("--pipeline")?, "--pipeline")?,
            "--seconds" => settings.seconds = number(&value("--seconds")?, "--seconds")?,
            "--increasing" => settings.increasing = true,
            "--" => {
                settings.command = args.by_ref().collect();
            }
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    if settings.port == 0 || settings.command.is_empty() {
        return Err(usage());
    }
    if settings.clients == 0 || settings.pipeline == 0 || settings.seconds <= 0.0 {
        return Err("--clients, --pipeline and --seconds must be above 0".into());
    }
    Ok(settings)
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{name}: `{text}` is not a valid number"))
}

/// The command as a RESP array of bulk strings, `pipeline` times.
fn encoded(command: &[String], pipeline: usize) -> Vec<u8> {
    let mut one = format!("*{}\r\n", command.len()).into_bytes();
    for arg in command {
        one.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        one.extend_from_slice(arg.as_bytes());
        one.extend_from_slice(b"\r\n");
    }
    one.repeat(pipeline)
}

/// Reads replies from a buffered socket: integers are parsed, arrays are walked, errors and
/// strings are counted and skipped.
struct Replies<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    last: Option<i64>,
    increasing: bool,
}

impl<R: Read> Replies<R> {
    /// Reads one whole reply, adding what it held to `tally`.
    fn read(&mut self, tally: &mut Tally) -> io::Result<()> {
        let mut pending = 1u64;
        while pending > 0 {
            pending -= 1;
            self.line.clear();
            self.input.read_until(b'\n', &mut self.line)?;
            let Some((&kind, rest)) = self.line.split_first() else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed",
                ));
            };
            let body = rest
                .strip_suffix(b"\r\n")
                .ok_or_else(|| bad("line without CRLF"))?;
            match kind {
                b':' => {
                    let n = parse_i64(body).ok_or_else(|| bad("bad integer"))?;
                    if self.increasing && self.last.is_some_and(|last| n <= last) {
                        return Err(bad(&format!(
                            "{n} is not above the previous {}",
                            self.last.unwrap_or_default()
                        )));
                    }
                    self.last = Some(n);
                    tally.integers += 1;
                }
                b'*' => {
                    let n = parse_i64(body).ok_or_else(|| bad("bad array length"))?;
                    pending += u64::try_from(n).unwrap_or(0);
                }
                b'-' => tally.errors += 1,
                b'+' => {}
                b'$' => {
                    let n = parse_i64(body).ok_or_else(|| bad("bad bulk length"))?;
                    if let Ok(n) = usize::try_from(n) {
                        let mut skip = vec![0u8; n + 2];
                        self.input.read_exact(&mut skip)?;
                    }
                }
                _ => return Err(bad("unknown reply type")),
            }
        }
        Ok(())
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// One client: keeps `pipeline` calls in flight until `stop`.
fn client(settings: &Settings, stop: &AtomicBool) -> io::Result<Tally> {
    let stream = TcpStream::connect((settings.host.as_str(), settings.port))?;
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut replies = Replies {
        input: BufReader::with_capacity(256 * 1024, stream),
        line: Vec::with_capacity(64),
        last: None,
        increasing: settings.increasing,
    };
    let batch = encoded(&settings.command, settings.pipeline);
    let mut tally = Tally::default();
    while !stop.load(Ordering::Relaxed) {
        writer.write_all(&batch)?;
        for _ in 0..settings.pipeline {
            replies.read(&mut tally)?;
            tally.calls += 1;
        }
    }
    Ok(tally)
}

fn main() -> ExitCode {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(settings) => Arc::new(settings),
        Err(message) => {
            eprintln!("resp-load: {message}");
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let clients: Vec<_> = (0..settings.clients)
        .map(|_| {
            let settings = Arc::clone(&settings);
            let stop = Arc::clone(&stop);
            thread::spawn(move || client(&settings, &stop))
        })
        .collect();
    thread::sleep(Duration::from_secs_f64(settings.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut total = Tally::default();
    let mut failed = false;
    for handle in clients {
        match handle.join() {
            Ok(Ok(tally)) => {
                total.calls += tally.calls;
                total.integers += tally.integers;
                total.errors += tally.errors;
            }
            Ok(Err(error)) => {
                eprintln!("resp-load: a client failed: {error}");
                failed = true;
            }
            Err(_) => failed = true,
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "calls/s={:.0} ids/s={:.0} errors={} clients={} pipeline={} seconds={:.2}",
        total.calls as f64 / elapsed,
        total.integers as f64 / elapsed,
        total.errors,
        settings.clients,
        settings.pipeline,
        elapsed
    );
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
