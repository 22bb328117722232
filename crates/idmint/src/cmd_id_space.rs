//! `idmint id-space show|change`: the ID space pinned in a store, and the one safe way to move
//! it (see `idmint_core::id_space`).
//!
//! Both open the store directly, as a node does, with the same settings (`--store`,
//! `--data-dir`, `--namespace`, `--config` and their `IDMINT_*` variables), so pointing them at
//! a node's config file finds that node's namespace.

use std::io::Write;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use idmint_core::layout::{format_ms_rfc3339, parse_epoch};
use idmint_core::store::LeaseInfo;
use idmint_core::{Error, IdSpace, IdSpaceRecord, Layout};
use idmint_server::id_space::{self, ChangeReport};

use crate::error::InputError;
use crate::layout_opts::LayoutOpts;
use crate::store_opts::StoreOpts;

/// Arguments of `idmint id-space`.
#[derive(Debug, Args)]
pub struct IdSpaceArgs {
    /// What to do.
    #[command(subcommand)]
    action: Action,
}

/// The subcommands of `idmint id-space`.
#[derive(Debug, Subcommand)]
enum Action {
    /// Print every ID space recorded in the namespace (the newest is in force) and its worker
    /// leases.
    Show(ShowArgs),
    /// Move the namespace to another layout, epoch or datacenter: accepted only when every ID
    /// the new space can issue from now on is above every ID issued so far, and no node runs.
    Change(ChangeArgs),
    /// Record, once, the settings that nodes of an idmint from before ID spaces were recorded
    /// ran with, so new nodes can check theirs against them.
    Adopt(AdoptArgs),
}

/// Arguments of `idmint id-space adopt`.
#[derive(Debug, Args)]
struct AdoptArgs {
    #[command(flatten)]
    store: StoreOpts,

    /// The layout and epoch the earlier nodes ran with.
    #[command(flatten)]
    layout: LayoutOpts,

    /// The datacenter the earlier nodes ran with.
    #[arg(long, value_name = "N", default_value_t = 0)]
    datacenter: u64,
}

/// Arguments of `idmint id-space show`.
#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    store: StoreOpts,

    /// Print JSON: the namespace, its spaces (oldest first) and its worker leases.
    #[arg(long)]
    json: bool,
}

/// Arguments of `idmint id-space change`.
#[derive(Debug, Args)]
struct ChangeArgs {
    #[command(flatten)]
    store: StoreOpts,

    /// The new layout (a preset or fields); with it, the epoch is the layout's own unless
    /// --epoch is given. [default: the layout in force]
    #[arg(long, value_name = "SPEC")]
    layout: Option<String>,

    /// The new epoch: ms since 1970, RFC 3339 or YYYY-MM-DD. [default: the one in force, or
    /// the new layout's own]
    #[arg(long, value_name = "EPOCH")]
    epoch: Option<String>,

    /// The new datacenter. [default: the one in force]
    #[arg(long, value_name = "N")]
    datacenter: Option<u64>,

    /// Judge the change and print the figures, but record nothing: judged even while nodes
    /// hold leases (named in the output: the change itself waits until they stop).
    #[arg(long)]
    dry_run: bool,

    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `idmint id-space ...`; `now_ms` is the moment a change takes effect from.
pub fn run(args: &IdSpaceArgs, now_ms: u64, out: &mut dyn Write) -> Result<()> {
    let runtime = crate::store_opts::runtime()?;
    match &args.action {
        Action::Show(show) => {
            let (store, namespace) = show.store.open(&runtime)?;
            let (spaces, workers) = runtime.block_on(async {
                let spaces = store.leases.id_spaces().await?;
                let workers = store.leases.list_leases().await?;
                Ok::<_, Error>((spaces, workers))
            })?;
            if show.json {
                let value = serde_json::json!({
                    "namespace": namespace,
                    "store": store.display_url,
                    "spaces": spaces,
                    "workers": workers,
                });
                serde_json::to_writer_pretty(&mut *out, &value).context("writing JSON")?;
                writeln!(out).context("writing JSON")?;
                return Ok(());
            }
            write_show(out, &store.display_url, &namespace, &spaces, &workers)
        }
        Action::Adopt(adopt) => {
            let layout = adopt.layout.resolve(now_ms)?;
            layout
                .check_fits(idmint_core::FieldKind::Dc, adopt.datacenter)
                .map_err(|e| InputError::new("--datacenter", e))?;
            let (store, _) = adopt.store.open(&runtime)?;
            let space = IdSpace::of(&layout, adopt.datacenter);
            let record = runtime.block_on(id_space::adopt(store.leases.as_ref(), &space))?;
            writeln!(out, "ID space recorded: version {}", record.version)?;
            write_record(out, &record)
        }
        Action::Change(change) => {
            if change.layout.is_none() && change.epoch.is_none() && change.datacenter.is_none() {
                return Err(InputError::new(
                    "--layout",
                    "give at least one of --layout, --epoch and --datacenter",
                )
                .into());
            }
            let (store, _) = change.store.open(&runtime)?;
            let report = runtime.block_on(async {
                let history = store.leases.id_spaces().await?;
                let new = match history.last() {
                    Some(current) => new_space(change, &current.space, now_ms)?,
                    None => return Err(id_space::nothing_recorded().into()),
                };
                let report = id_space::change(store.leases.as_ref(), &new, change.dry_run).await?;
                Ok::<_, anyhow::Error>(report)
            })?;
            if change.json {
                serde_json::to_writer_pretty(&mut *out, &report).context("writing JSON")?;
                writeln!(out).context("writing JSON")?;
                return Ok(());
            }
            write_change(out, &report)
        }
    }
}

/// The space the flags ask for, from the one in force: each flag replaces its part. A new
/// layout brings its own epoch unless `--epoch` is given too.
fn new_space(args: &ChangeArgs, current: &IdSpace, now_ms: u64) -> Result<IdSpace> {
    let layout = match &args.layout {
        Some(spec) => Layout::parse(spec).map_err(|e| InputError::new("--layout", e))?,
        None => current.to_layout()?,
    };
    let epoch_ms = match &args.epoch {
        Some(epoch) => parse_epoch(epoch).map_err(|e| InputError::new("--epoch", e))?,
        None if args.layout.is_some() => layout.epoch_ms(),
        None => current.epoch_ms,
    };
    let layout = layout
        .with_epoch(epoch_ms)
        .map_err(|e| InputError::new("--epoch", e))?;
    layout
        .check_epoch_not_future(now_ms)
        .map_err(|e| InputError::new("--epoch", e))?;
    // A layout without a datacenter field holds 0 there.
    let has_dc = layout.field(idmint_core::FieldKind::Dc).is_some();
    let datacenter = args
        .datacenter
        .unwrap_or(if has_dc { current.datacenter } else { 0 });
    layout
        .check_fits(idmint_core::FieldKind::Dc, datacenter)
        .map_err(|e| InputError::new("--datacenter", e))?;
    // The permutation key stays: a namespace never changes it (`plan_change` refuses).
    Ok(IdSpace {
        permutation: current.permutation.clone(),
        ..IdSpace::of(&layout, datacenter)
    })
}

/// `idmint id-space show` for people.
fn write_show(
    out: &mut dyn Write,
    store: &str,
    namespace: &str,
    spaces: &[IdSpaceRecord],
    workers: &[LeaseInfo],
) -> Result<()> {
    writeln!(out, "store:     {store}")?;
    writeln!(out, "namespace: {namespace}")?;
    if spaces.is_empty() {
        writeln!(
            out,
            "no ID space recorded yet: the first node that serves snowflakes records its own"
        )?;
    }
    for (index, record) in spaces.iter().enumerate() {
        let in_force = if index + 1 == spaces.len() {
            " (in force)"
        } else {
            ""
        };
        writeln!(out)?;
        writeln!(out, "version {}{in_force}", record.version)?;
        write_record(out, record)?;
    }
    let live = workers.iter().filter(|w| w.live).count();
    let max_hwm = workers.iter().map(|w| w.hwm_ms).max().unwrap_or(0);
    writeln!(out)?;
    writeln!(
        out,
        "workers:   {} leased before, {live} live now; highest high-water mark {}",
        workers.len(),
        if max_hwm == 0 {
            "none".to_owned()
        } else {
            format!("{} ({max_hwm} ms)", format_ms_rfc3339(max_hwm))
        }
    )?;
    for worker in workers.iter().filter(|w| w.live) {
        writeln!(
            out,
            "  worker {} held by `{}` until {}",
            worker.worker_id,
            worker.node_name,
            format_ms_rfc3339(worker.expires_at_ms)
        )?;
    }
    Ok(())
}

/// The lines of one record.
fn write_record(out: &mut dyn Write, record: &IdSpaceRecord) -> Result<()> {
    let space = &record.space;
    let when = |ms: u64| {
        if ms == 0 {
            "the start".to_owned()
        } else {
            format!("{} ({ms} ms)", format_ms_rfc3339(ms))
        }
    };
    writeln!(out, "  layout:      {}", space.layout)?;
    writeln!(
        out,
        "  epoch:       {} ({} ms)",
        format_ms_rfc3339(space.epoch_ms),
        space.epoch_ms
    )?;
    writeln!(out, "  datacenter:  {}", space.datacenter)?;
    if let Some(fingerprint) = &space.permutation {
        writeln!(out, "  permutation: key {fingerprint}")?;
    }
    writeln!(out, "  first ID:    {}", record.first_id)?;
    writeln!(out, "  issues from: {}", when(record.issues_from_ms))?;
    if record.recorded_at_ms > 0 {
        writeln!(out, "  recorded:    {}", when(record.recorded_at_ms))?;
    }
    Ok(())
}

/// `idmint id-space change` for people.
fn write_change(out: &mut dyn Write, report: &ChangeReport) -> Result<()> {
    let record = &report.change.record;
    let verb = if report.recorded {
        "changed"
    } else {
        "would change (dry run: nothing recorded)"
    };
    writeln!(
        out,
        "ID space {verb}: version {} -> {}",
        report.from.version, record.version
    )?;
    write_record(out, record)?;
    match report.change.issued_up_to {
        Some(max) => writeln!(
            out,
            "every ID issued so far is at most {max}; the new space starts above it at {}",
            record.first_id
        )?,
        None => writeln!(out, "no ID was issued under the space in force")?,
    }
    if let Some(last) = report.live_leases.iter().map(|w| w.expires_at_ms).max() {
        writeln!(
            out,
            "not yet: {}, judged on their high-water marks as they are now (they still rise); \
             it passes once every node of this namespace is stopped (a killed node's lease \
             expires by {})",
            id_space::leases_held(&report.live_leases),
            format_ms_rfc3339(last)
        )?;
    } else if !report.recorded {
        writeln!(out, "it would pass now: no node holds a worker lease")?;
    }
    if report.recorded {
        let key = match record.space.permutation {
            Some(_) => " --permutation-key-file <the namespace's key file>",
            None => "",
        };
        writeln!(
            out,
            "start the nodes with: --layout {} --epoch {} --datacenter {}{key}",
            record.space.layout, record.space.epoch_ms, record.space.datacenter
        )?;
    }
    Ok(())
}
