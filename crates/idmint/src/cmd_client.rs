//! `idmint next` and `idmint tags`: clients of a running `idmint serve`, over its HTTP API.
//!
//! Errors the server answers with (`{"error": {"code", "message"}}`) are shown as they are, and a
//! server that cannot be reached is named by its URL.

use std::io::Write;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::error::InputError;
use crate::form_opts::FormOpts;

/// Where the server is and how to authenticate.
#[derive(Debug, Clone, Args)]
pub struct ServerOpts {
    /// The server's HTTP address.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "IDMINT_SERVER",
        default_value = "http://127.0.0.1:8080"
    )]
    pub server: String,

    /// Token sent to the server (Authorization: Bearer), if it has tokens: of the mint scope
    /// for `next`, of the admin scope for `tags`.
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        env = "IDMINT_TOKEN",
        alias = "admin-token",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

/// `idmint next`: IDs from a running server, one per line.
#[derive(Debug, Clone, Args)]
pub struct NextArgs {
    /// Segment IDs of this tag; snowflakes when absent.
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,

    /// How many IDs (1 to 10000).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u64,

    /// Shard placed in snowflakes (layouts with a shard field).
    #[arg(long, value_name = "K")]
    pub shard: Option<u64>,

    /// How the IDs are printed.
    #[command(flatten)]
    pub form: FormOpts,

    /// The server.
    #[command(flatten)]
    pub server: ServerOpts,
}

/// `idmint tags ...`: segment tags of a running server.
#[derive(Debug, Clone, Args)]
pub struct TagsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: TagsAction,

    /// The server.
    #[command(flatten)]
    pub server: ServerOpts,
}

/// The tag actions.
#[derive(Debug, Clone, Subcommand)]
pub enum TagsAction {
    /// Every tag: name, next ID, step, description.
    List {
        /// Print the server's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a tag (or update its step and description if it exists).
    Create {
        /// The tag: 1 to 128 bytes of UTF-8 text, no control characters, no space at either end
        tag: String,
        /// Its step: the smallest range a node takes at once.
        #[arg(long, value_name = "N")]
        step: Option<u64>,
        /// Free text for operators.
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        /// How the new tag's IDs are dated, if they are.
        #[command(flatten)]
        dated: DatedOpts,
    },
    /// Change a tag's step.
    SetStep {
        /// The tag.
        tag: String,
        /// The new step.
        step: u64,
    },
}

/// The settings of a dated tag (`idmint tags create --period day ...`), fixed when it is made.
#[derive(Debug, Clone, Args)]
pub struct DatedOpts {
    /// Make the tag a dated sequence whose IDs start again every `day`, `month` or `year`,
    /// with the date in front (`20261123-000042`).
    #[arg(long, value_name = "PERIOD")]
    pub period: Option<String>,
    /// The IANA time zone the periods turn over in (default UTC).
    #[arg(long, value_name = "ZONE", requires = "period")]
    pub time_zone: Option<String>,
    /// Digits of the counter (default 6; up to 10 a day, 12 a month, 14 a year).
    #[arg(long, value_name = "N", requires = "period")]
    pub digits: Option<u32>,
    /// Show the IDs as one number (`20261123000042`) instead of with a dash.
    #[arg(long, requires = "period")]
    pub numeric: bool,
}

impl DatedOpts {
    /// The fields of `PUT /v1/tags` these options give, checked here so a mistake names its
    /// flag.
    fn fields(&self) -> Result<Value> {
        let Some(period) = &self.period else {
            return Ok(json!({}));
        };
        let flag =
            |name: &'static str| move |e: idmint_core::Error| InputError::new(name, e.to_string());
        let period: idmint_core::Period = period.parse().map_err(flag("--period"))?;
        let zone = idmint_core::Dating::zone(self.time_zone.as_deref().unwrap_or("UTC"))
            .map_err(flag("--time-zone"))?;
        let form = if self.numeric {
            idmint_core::DatedForm::Numeric
        } else {
            idmint_core::DatedForm::Text
        };
        let digits = self.digits.unwrap_or(6);
        let dating =
            idmint_core::Dating::new(period, zone, digits, form).map_err(flag("--digits"))?;
        Ok(json!({
            "period": dating.period().as_str(),
            "time_zone": dating.time_zone().name(),
            "digits": dating.digits(),
            "form": dating.form().as_str(),
        }))
    }
}

/// Runs `idmint next`.
pub fn next(args: &NextArgs, out: &mut impl Write) -> Result<()> {
    if args.count == 0 || args.count > 10_000 {
        return Err(
            InputError::new("--count", format!("must be 1 to 10000, got {}", args.count)).into(),
        );
    }
    let form = args.form.resolve()?;
    let base = base_url(&args.server)?;
    let url = match &args.tag {
        Some(tag) => format!("{base}/v1/segment/{}?count={}", check_tag(tag)?, args.count),
        None => {
            let shard = args
                .shard
                .map(|k| format!("&shard={k}"))
                .unwrap_or_default();
            format!("{base}/v1/snowflake?count={}{shard}", args.count)
        }
    };
    let body = call(reqwest::Method::GET, &url, None, &args.server)?;
    for id in body["ids"]
        .as_array()
        .ok_or_else(|| anyhow!("unexpected answer from {base}: {body}"))?
    {
        let text = id.as_str().unwrap_or_default();
        match (&form, text.parse::<u64>()) {
            (Some(form), Ok(id)) => writeln!(out, "{}", form.encode(id))?,
            _ => writeln!(out, "{text}")?,
        }
    }
    Ok(())
}

/// Runs `idmint tags ...`.
pub fn tags(args: &TagsArgs, out: &mut impl Write) -> Result<()> {
    let base = base_url(&args.server)?;
    match &args.action {
        TagsAction::List { json } => {
            let body = call(
                reqwest::Method::GET,
                &format!("{base}/v1/tags"),
                None,
                &args.server,
            )?;
            if *json {
                writeln!(out, "{body}")?;
                return Ok(());
            }
            writeln!(
                out,
                "{:<32} {:>20} {:>10}  description",
                "tag", "next id", "step"
            )?;
            for tag in body["tags"].as_array().into_iter().flatten() {
                writeln!(
                    out,
                    "{:<32} {:>20} {:>10}  {}",
                    text(&tag["tag"]),
                    text(&tag["max_id"]),
                    text(&tag["step"]),
                    text(&tag["description"])
                )?;
            }
        }
        TagsAction::Create {
            tag,
            step,
            description,
            dated,
        } => {
            if *step == Some(0) {
                return Err(InputError::new("--step", "must be at least 1").into());
            }
            let mut body = json!({ "step": step, "description": description });
            if let (Some(body), Value::Object(fields)) = (body.as_object_mut(), dated.fields()?) {
                body.extend(fields);
            }
            let answer = put_tag(&base, tag, body, &args.server)?;
            writeln!(out, "{answer}")?;
        }
        TagsAction::SetStep { tag, step } => {
            if *step == 0 {
                return Err(InputError::new("STEP", "must be at least 1").into());
            }
            let answer = put_tag(&base, tag, json!({ "step": step }), &args.server)?;
            writeln!(out, "{answer}")?;
        }
    }
    Ok(())
}

fn put_tag(base: &str, tag: &str, body: Value, server: &ServerOpts) -> Result<Value> {
    let body = strip_nulls(body);
    call(
        reqwest::Method::PUT,
        &format!("{base}/v1/tags/{}", check_tag(tag)?),
        Some(body),
        server,
    )
}

/// One request; the server's JSON error becomes this command's error.
fn call(
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
    server: &ServerOpts,
) -> Result<Value> {
    let runtime = crate::store_opts::runtime()?;
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let mut request = client.request(method, url);
        if let Some(token) = &server.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach the server at {}", server.server))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .with_context(|| format!("unexpected answer from {}", server.server))?;
        if !status.is_success() {
            let error = &body["error"];
            bail!(
                "server answered {status}: {}: {}",
                text(&error["code"]),
                text(&error["message"])
            );
        }
        Ok(body)
    })
}

/// The server URL without a trailing slash, checked to be http(s).
fn base_url(server: &ServerOpts) -> Result<String> {
    server_url(&server.server)
}

/// `--server`'s URL without a trailing slash, checked to be http(s): a mistake is a usage
/// error naming the flag.
pub fn server_url(server: &str) -> Result<String> {
    let url = server.trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(InputError::new(
            "--server",
            format!("`{url}` must start with http:// or https://"),
        )
        .into());
    }
    Ok(url.to_owned())
}

/// Checks a tag locally, so a bad one is a usage error naming the argument.
fn check_tag(tag: &str) -> Result<&str> {
    idmint_core::Tag::new(tag).map_err(|e| InputError::new("TAG", e))?;
    Ok(tag)
}

/// A JSON value as plain text (strings without quotes).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Drops `null` fields, so optional settings are left as they are.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}
