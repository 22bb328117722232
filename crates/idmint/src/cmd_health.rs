//! `idmint health`: asks a running server whether it lives (`/healthz`) or can serve
//! (`/readyz`), and says so by its exit status. A container image holds no curl, so its
//! HEALTHCHECK runs this; a supervisor or a script can too.

use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::error::InputError;

/// Arguments of `idmint health`.
#[derive(Debug, Args)]
pub struct HealthArgs {
    /// Ask `/readyz` (the store answers, a worker ID is held) instead of `/healthz` (the
    /// process serves HTTP).
    #[arg(long)]
    pub ready: bool,

    /// The server's HTTP address.
    #[arg(
        long,
        value_name = "URL",
        env = "IDMINT_SERVER",
        default_value = "http://127.0.0.1:8080"
    )]
    pub server: String,

    /// How long to wait for the answer.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Prints the server's answer and returns, or fails (exit 1) when it does not answer 200 in
/// time.
pub fn run(args: &HealthArgs, out: &mut impl Write) -> Result<()> {
    let base = crate::cmd_client::server_url(&args.server)?;
    if args.timeout.is_zero() {
        return Err(InputError::new("--timeout", "must be above 0").into());
    }
    let url = format!("{base}/{}", if args.ready { "readyz" } else { "healthz" });
    let runtime = crate::store_opts::runtime()?;
    let (status, body) = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(args.timeout)
            .build()
            .context("making the HTTP client")?;
        let response = client
            .get(&url)
            .send()
            .await
            .with_context(|| format!("cannot reach the server at {base}"))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .with_context(|| format!("reading the answer of {url}"))?;
        anyhow::Ok((status, body))
    })?;
    if !status.is_success() {
        bail!("{url} answered {status}: {}", body.trim());
    }
    writeln!(out, "{}", body.trim()).context("writing the answer")
}
