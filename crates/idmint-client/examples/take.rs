//! The example program every idmint client library ships (`clients/<lang>/take`): takes N IDs
//! through the library and prints them one per line, in the order it handed them out.
//!
//! `take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N`
//!
//! Exits 0 after printing N IDs, or 1 with one line on stderr saying why (2 for a bad flag).

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use idmint_client::{BlockingClient, ClientConfig};

/// What the command line asks for.
struct Request {
    nodes: Vec<String>,
    token: Option<String>,
    segment: Option<String>,
    count: u64,
}

const USAGE: &str = "usage: take --nodes HOST:PORT[,HOST:PORT...] [--token T] \
                     --kind segment|snowflake [--tag TAG] --count N";

fn parse(mut args: impl Iterator<Item = String>) -> Result<Request, String> {
    let (mut nodes, mut token, mut kind, mut tag, mut count) = (None, None, None, None, None);
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--nodes" => &mut nodes,
            "--token" => &mut token,
            "--kind" => &mut kind,
            "--tag" => &mut tag,
            "--count" => &mut count,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown flag {other:?}; {USAGE}")),
        };
        *slot = Some(args.next().ok_or_else(|| format!("{flag} needs a value"))?);
    }
    let nodes: Vec<String> = nodes
        .ok_or("--nodes is required")?
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| format!("redis://{n}"))
        .collect();
    if nodes.is_empty() {
        return Err("--nodes: no HOST:PORT given".into());
    }
    let count = count
        .ok_or("--count is required")?
        .parse()
        .map_err(|_| "--count must be a whole number".to_owned())?;
    let segment = match kind.as_deref() {
        Some("segment") => Some(tag.ok_or("--tag is required with --kind segment")?),
        Some("snowflake") => None,
        Some(other) => {
            return Err(format!(
                "--kind must be segment or snowflake, not {other:?}"
            ))
        }
        None => return Err("--kind is required".into()),
    };
    Ok(Request {
        nodes,
        token,
        segment,
        count,
    })
}

fn take(request: Request) -> Result<(), String> {
    let mut config = ClientConfig::new(request.nodes);
    if let Some(token) = request.token {
        config = config.with_token(token);
    }
    let client = BlockingClient::new(config).map_err(|e| why(&e))?;
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut left = request.count;
    let result = (|| {
        while left > 0 {
            match &request.segment {
                Some(tag) => {
                    let id = client.next(tag).map_err(|e| why(&e))?;
                    writeln!(out, "{id}").map_err(|e| e.to_string())?;
                    left -= 1;
                }
                None => {
                    let n = left.min(1_000) as usize;
                    for id in client.snowflakes(n).map_err(|e| why(&e))? {
                        writeln!(out, "{id}").map_err(|e| e.to_string())?;
                    }
                    left -= n as u64;
                }
            }
        }
        Ok(())
    })();
    let flushed = out.flush().map_err(|e| e.to_string());
    client.close();
    result.and(flushed)
}

/// The error and its causes, on one line.
fn why(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text.replace('\n', " ")
}

fn main() -> ExitCode {
    let request = match parse(std::env::args().skip(1)) {
        Ok(request) => request,
        Err(why) => {
            eprintln!("take: {why}");
            return ExitCode::from(2);
        }
    };
    match take(request) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("take: {why}");
            ExitCode::FAILURE
        }
    }
}
