//! `idmint`: the command line of the idmint ID service.
//!
//! A thin layer over `idmint-core`: this file holds the clap definitions and the dispatch, one
//! module per subcommand does the work, and [`layout_opts`] holds the `--layout`/`--epoch`
//! pair every subcommand that touches IDs shares (`serve`, `next` and `tags` will reuse it).
//!
//! Exit status: 0 on success; 2 for anything the user typed wrong (clap's own usage errors,
//! and a bad value of any flag, variable or file setting, `--layout`, `--epoch` or ID, which
//! print one `error: FLAG: problem` line on stderr, naming the variable or file when the value
//! came from one); 1 for any other failure (the store cannot be reached, a listen port is in use, no
//! worker ID came free within `--worker-wait`). A reader that closes the pipe early
//! (`idmint layout --json | head`) ends the program quietly with 0, as ripgrep does.

mod allocator;
mod cmd_client;
mod cmd_decode;
mod cmd_docs;
mod cmd_health;
mod cmd_id128;
mod cmd_id_space;
mod cmd_layout;
mod cmd_permutation_key;
mod cmd_serve;
mod cmd_sql;
mod error;
mod form_opts;
mod layout_opts;
mod logging;
mod store_opts;
mod text;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use idmint_core::clock::wall_clock_ms;
use idmint_core::Id128Kind;

use crate::cmd_client::{NextArgs, TagsArgs};
use crate::cmd_decode::DecodeArgs;
use crate::cmd_docs::{CompletionsArgs, ManArgs};
use crate::cmd_health::HealthArgs;
use crate::cmd_id128::Id128Args;
use crate::cmd_id_space::IdSpaceArgs;
use crate::cmd_layout::LayoutArgs;
use crate::cmd_permutation_key::PermutationKeyArgs;
use crate::cmd_serve::ServeArgs;
use crate::cmd_sql::SqlArgs;

/// Help text shown after every `--help`: what the exit statuses mean.
const EXIT_STATUS_HELP: &str = "\
Exit status: 0 on success, 2 when an argument is wrong (bad flag, layout, epoch or ID), \
1 on any other failure.";

/// Mints unique 64-bit IDs: snowflake IDs with a layout of your choice, and segment sequences.
#[derive(Debug, Parser)]
#[command(name = "idmint", version, about, after_help = EXIT_STATUS_HELP)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve IDs over HTTP (JSON and Leaf's API) and the Redis protocol, until SIGINT/SIGTERM.
    #[command(after_help = EXIT_STATUS_HELP)]
    Serve(Box<ServeArgs>),
    /// Take IDs from a running server: snowflakes, or segment IDs of --tag; one per line.
    #[command(after_help = EXIT_STATUS_HELP)]
    Next(NextArgs),
    /// List, create and change the segment tags of a running server.
    #[command(after_help = EXIT_STATUS_HELP)]
    Tags(TagsArgs),
    /// Show a snowflake layout: its fields, capacity and when it runs out.
    #[command(after_help = EXIT_STATUS_HELP)]
    Layout(LayoutArgs),
    /// Print UUIDv7s (RFC 9562), made here: strictly increasing, sortable, no server needed.
    #[command(after_help = EXIT_STATUS_HELP)]
    Uuid(Id128Args),
    /// Print ULIDs, made here: strictly increasing, 26 characters that sort as they were made.
    #[command(after_help = EXIT_STATUS_HELP)]
    Ulid(Id128Args),
    /// Take an ID apart: when it was minted and each of its fields (a snowflake, or a UUIDv7
    /// or ULID given in one of their text forms).
    #[command(after_help = EXIT_STATUS_HELP)]
    Decode(DecodeArgs),
    /// Show the ID space (layout, epoch, datacenter, permutation key) a store pins, or change it
    /// safely.
    #[command(after_help = EXIT_STATUS_HELP)]
    IdSpace(IdSpaceArgs),
    /// Make snowflake IDs inside PostgreSQL: install or remove the function a column default
    /// calls.
    #[command(after_help = EXIT_STATUS_HELP)]
    Sql(SqlArgs),
    /// Print a new secret key for `serve --permutation-key-file` (IDs handed out permuted):
    /// `idmint permutation-key > idmint.key && chmod 600 idmint.key`.
    #[command(after_help = EXIT_STATUS_HELP)]
    PermutationKey(PermutationKeyArgs),
    /// Ask a running server whether it lives (/healthz) or can serve (/readyz): exit 0 when it
    /// answers 200, 1 otherwise. For health checks where there is no curl.
    #[command(after_help = EXIT_STATUS_HELP)]
    Health(HealthArgs),
    /// Print the completion script of a shell: `idmint completions bash >
    /// /etc/bash_completion.d/idmint`.
    #[command(after_help = EXIT_STATUS_HELP)]
    Completions(CompletionsArgs),
    /// Print the manual page of idmint or of one command (roff): `idmint man serve | man -l -`.
    #[command(after_help = EXIT_STATUS_HELP)]
    Man(ManArgs),
}

fn main() -> ExitCode {
    // `serve --help` shows each setting's default from the one place defaults are written.
    let command =
        Cli::command().mut_subcommand("serve", idmint_server::config::with_defaults_shown);
    let argv_os: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv: Vec<String> = argv_os
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let matches = match command.clone().try_get_matches_from(&argv_os) {
        Ok(matches) => matches,
        // A refused value is one `error: --FLAG: ...` line, as every other bad setting.
        Err(e) => match error::value_error_line(&e, &command, &argv) {
            Some(line) => {
                eprintln!("error: {line}");
                return ExitCode::from(error::EXIT_USAGE);
            }
            None => e.exit(),
        },
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Read "now" once, through the clock module, and hand it down.
    let now_ms = wall_clock_ms();
    let mut out = io::stdout().lock();
    let mut warn = io::stderr();
    let result = match &cli.command {
        Command::Serve(args) => cmd_serve::run(
            args,
            &cmd_serve::from_variables(matches.subcommand_matches("serve"), &command),
            now_ms,
            &mut out,
        ),
        Command::Next(args) => cmd_client::next(args, &mut out),
        Command::Tags(args) => cmd_client::tags(args, &mut out),
        Command::Layout(args) => cmd_layout::run(args, now_ms, &mut out, &mut warn),
        Command::Uuid(args) => cmd_id128::run(Id128Kind::Uuid7, args, &mut out),
        Command::Ulid(args) => cmd_id128::run(Id128Kind::Ulid, args, &mut out),
        Command::Decode(args) => cmd_decode::run(args, now_ms, &mut out, &mut warn),
        Command::IdSpace(args) => cmd_id_space::run(args, now_ms, &mut out),
        Command::Sql(args) => cmd_sql::run(args, now_ms, &mut out),
        Command::PermutationKey(args) => cmd_permutation_key::run(args, &mut out),
        Command::Health(args) => cmd_health::run(args, &mut out),
        Command::Completions(args) => cmd_docs::completions(args, command.clone(), &mut out),
        Command::Man(args) => cmd_docs::man(args, command.clone(), &mut out),
    }
    .and_then(|()| {
        out.flush()
            .map_err(|e| anyhow::Error::new(e).context("writing output"))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`idmint layout --json | head`): nothing left to say.
        Err(err) if error::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` joins the context chain on one line: `--layout: invalid layout ...`.
            eprintln!("error: {err:#}");
            ExitCode::from(error::exit_status(&err))
        }
    }
}
