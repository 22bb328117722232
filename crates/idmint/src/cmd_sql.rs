//! `idmint sql install|uninstall`: snowflake IDs made inside PostgreSQL by a function a column
//! default calls, in the namespace's ID space, on worker IDs leased for it (see
//! `idmint_store::in_database` for why they stay unique); with `--uuid`, UUIDv7s by a function
//! of their own, which needs no worker IDs.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use idmint_core::{IdSpace, Layout};
use idmint_server::id_space;
use idmint_store::in_database::{self, InstallRequest};
use idmint_store::{Backend, Location};

use crate::error::InputError;
use crate::layout_opts::LayoutOpts;
use crate::store_opts::{open_existing, StoreOpts};

/// Arguments of `idmint sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// What to do.
    #[command(subcommand)]
    action: Action,
}

/// The subcommands of `idmint sql`.
#[derive(Debug, Subcommand)]
enum Action {
    /// Create `<namespace>_next_id(shard)` and `<namespace>_next_id()` in the store's database,
    /// for column defaults: snowflake IDs of the namespace's ID space, on worker IDs leased for
    /// the function. With --uuid, `<namespace>_uuidv7()` instead.
    Install(InstallArgs),
    /// Remove the function once its last callers are done, and free its worker IDs (fenced at
    /// the last tick it issued). With --uuid, remove `<namespace>_uuidv7()` instead.
    Uninstall(UninstallArgs),
}

/// Arguments of `idmint sql install`.
#[derive(Debug, Args)]
struct InstallArgs {
    #[command(flatten)]
    store: StoreOpts,

    /// Create `<namespace>_uuidv7()` (alone: run install again without it for the snowflake
    /// function): UUIDv7s, strictly increasing per database session, for `uuid` columns. It
    /// needs no worker IDs, no ID space and none of the store's tables, so the snowflake
    /// function's options do not apply.
    #[arg(
        long,
        conflicts_with_all = ["layout", "epoch", "workers", "max_lead", "max_wait", "grant"]
    )]
    uuid: bool,

    /// The layout: it must be the namespace's (it is recorded as its ID space when none is
    /// yet). [default: the ID space in force]
    #[arg(long, value_name = "SPEC")]
    layout: Option<String>,

    /// The epoch, with --layout. [default: the layout's own]
    #[arg(long, value_name = "EPOCH", requires = "layout")]
    epoch: Option<String>,

    /// The datacenter, with --layout.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "layout")]
    datacenter: u64,

    /// Worker IDs to lease for the function: that many database sessions can draw IDs at the
    /// same moment (one more gets an error until one ends).
    #[arg(long, value_name = "N", default_value_t = 16)]
    workers: u64,

    /// How far ahead of the database server's clock the function may run (after the clock
    /// stepped back, or with more IDs per tick than the sequence field holds) before a call
    /// waits.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    max_lead: Duration,

    /// How long a call waits for the clock before it fails.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    max_wait: Duration,

    /// A role allowed to call the function (besides the installing role); repeat for more.
    #[arg(long, value_name = "ROLE")]
    grant: Vec<String>,
}

/// Arguments of `idmint sql uninstall`.
#[derive(Debug, Args)]
struct UninstallArgs {
    #[command(flatten)]
    store: StoreOpts,

    /// Remove `<namespace>_uuidv7()` (alone: the snowflake function stays).
    #[arg(long)]
    uuid: bool,
}

/// Runs `idmint sql ...`.
pub fn run(args: &SqlArgs, now_ms: u64, out: &mut dyn Write) -> Result<()> {
    let runtime = crate::store_opts::runtime()?;
    match &args.action {
        Action::Install(install) if install.uuid => {
            let (urls, options, _) = install.store.settings()?;
            let location = postgres_store(&urls)?;
            let installed = runtime
                .block_on(in_database::install_uuidv7(&location, &options))
                .map_err(|e| flag_of(e, "--uuid"))?;
            let namespace = &options.namespace;
            writeln!(
                out,
                "installed {} in {} (namespace {namespace}); no worker IDs needed",
                installed.function, location.display
            )?;
            writeln!(
                out,
                "use it as a column default: CREATE TABLE t (id uuid PRIMARY KEY DEFAULT {namespace}_uuidv7(), ...);"
            )?;
            if installed.server_version >= in_database::BUILT_IN_SERVER_VERSION {
                writeln!(
                    out,
                    "this server has PostgreSQL's own uuidv7() too; docs/in-database.md says how they differ"
                )?;
            }
            Ok(())
        }
        Action::Uninstall(uninstall) if uninstall.uuid => {
            let (urls, options, _) = uninstall.store.settings()?;
            let location = postgres_store(&urls)?;
            let removed = runtime
                .block_on(in_database::uninstall_uuidv7(&location, &options))
                .map_err(|e| flag_of(e, "--uuid"))?;
            writeln!(out, "removed {removed} from {}", location.display)?;
            Ok(())
        }
        Action::Install(install) => {
            let (urls, options, set) = install.store.settings()?;
            let location = postgres_store(&urls)?;
            let store = open_existing(&runtime, &urls, &options, &set)?;
            let namespace = options.namespace.clone();
            let given = match &install.layout {
                Some(spec) => {
                    let layout = LayoutOpts {
                        layout: spec.clone(),
                        epoch: install.epoch.clone(),
                    }
                    .resolve(now_ms)?;
                    layout
                        .check_fits(idmint_core::FieldKind::Dc, install.datacenter)
                        .map_err(|e| InputError::new("--datacenter", e))?;
                    Some(IdSpace::of(&layout, install.datacenter))
                }
                None => None,
            };
            let installed = runtime.block_on(async {
                let history = store.leases.id_spaces().await?;
                if let Some(fingerprint) = history.last().and_then(|r| r.space.permutation.clone())
                {
                    return Err(InputError::new(
                        "--store",
                        format!(
                            "this namespace hands out its IDs permuted (key {fingerprint}), and \
                             the function would make plain IDs among them: an in-database \
                             function needs a namespace without a permutation key"
                        ),
                    )
                    .into());
                }
                let history = match &given {
                    Some(space) => id_space::pin(store.leases.as_ref(), space).await?,
                    None => history,
                };
                let Some(space) = history.last().cloned() else {
                    return Err(InputError::new(
                        "--layout",
                        "no ID space is recorded in this namespace yet: give the layout",
                    )
                    .into());
                };
                let request = InstallRequest {
                    space,
                    workers: install.workers,
                    max_lead: install.max_lead,
                    max_wait: install.max_wait,
                    grant_to: install.grant.clone(),
                };
                let installed = in_database::install(&location, &options, &request)
                    .await
                    .map_err(|e| flag_of(e, "--workers"))?;
                Ok::<_, anyhow::Error>((installed, request.space))
            })?;
            let (installed, space) = installed;
            let layout = Layout::parse(&space.space.layout)?.with_epoch(space.space.epoch_ms)?;
            writeln!(
                out,
                "installed {} in {} (namespace {namespace})",
                installed.function, location.display
            )?;
            writeln!(
                out,
                "ID space {}: {}; worker IDs {} of {} leased for it",
                installed.space_version,
                space.space,
                ranges(&installed.workers),
                layout.worker_count()
            )?;
            writeln!(
                out,
                "use it as a column default: ALTER TABLE t ALTER COLUMN id SET DEFAULT {namespace}_next_id();"
            )?;
            Ok(())
        }
        Action::Uninstall(uninstall) => {
            let (urls, options, set) = uninstall.store.settings()?;
            let location = postgres_store(&urls)?;
            let store = open_existing(&runtime, &urls, &options, &set)?;
            let freed = runtime
                .block_on(async {
                    // The function's workers are live leases, so the space cannot change
                    // while it is installed: the newest one is the function's.
                    let spaces = store.leases.id_spaces().await?;
                    let Some(space) = spaces.last() else {
                        return Err(idmint_core::Error::IdSpaceRefused {
                            reason: "no ID space is recorded in this namespace".into(),
                        });
                    };
                    in_database::uninstall(&location, &options, &space.space.to_layout()?).await
                })
                .map_err(|e| flag_of(e, "--workers"))?;
            writeln!(
                out,
                "removed {}_next_id from {}; worker IDs freed:",
                options.namespace, location.display
            )?;
            for worker in freed {
                let hwm = match worker.hwm_ms {
                    0 => "none (never used)".to_owned(),
                    ms => idmint_core::layout::format_ms_rfc3339(ms),
                };
                writeln!(out, "  worker {}: high-water mark {hwm}", worker.worker_id)?;
            }
            Ok(())
        }
    }
}

/// The one PostgreSQL store `urls` name; a set, or another backend, is refused.
fn postgres_store(urls: &[String]) -> Result<Location> {
    let [url] = urls else {
        return Err(InputError::new(
            "--store",
            "the in-database function lives in one PostgreSQL database; a store set is not supported",
        )
        .into());
    };
    let location = Location::parse(url).map_err(|e| InputError::new("--store", e))?;
    if location.backend != Backend::Postgres {
        return Err(InputError::new(
            "--store",
            format!(
                "`{}`: the in-database function needs PostgreSQL (postgres://...)",
                location.display
            ),
        )
        .into());
    }
    Ok(location)
}

/// A store error about the function's settings as a usage error naming `flag`.
fn flag_of(error: idmint_core::Error, flag: &'static str) -> anyhow::Error {
    match error {
        idmint_core::Error::InvalidArgument {
            name: "workers",
            reason,
        } => InputError::new(flag, reason).into(),
        idmint_core::Error::InvalidArgument {
            name: "namespace",
            reason,
        } => InputError::new("--namespace", reason).into(),
        // The function's own state (installed already, still used by a default): said plainly.
        idmint_core::Error::InvalidArgument {
            name: "sql",
            reason,
        } => anyhow::anyhow!(reason),
        other => other.into(),
    }
}

/// `0-3,7` for worker IDs 0, 1, 2, 3 and 7.
fn ranges(ids: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = ids.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn worker_ranges_read_shortly() {
        assert_eq!(ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(ranges(&[]), "");
    }
}
