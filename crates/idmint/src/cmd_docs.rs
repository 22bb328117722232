//! `idmint completions SHELL` and `idmint man`: the shell completions and the manual pages,
//! both made from the clap definitions every `--help` comes from, so none of them can drift
//! from the commands and settings the program has.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;

use crate::error::InputError;

/// Arguments of `idmint completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

/// Arguments of `idmint man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`serve`, `next`, ...); the page of `idmint` itself
    /// when absent.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,

    /// Write every page (idmint.1, idmint-serve.1, ...) into this folder instead of printing
    /// one, e.g. /usr/local/share/man/man1.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// Writes the completion script of `args.shell` for `command` (the whole command tree).
pub fn completions(
    args: &CompletionsArgs,
    command: clap::Command,
    out: &mut impl Write,
) -> Result<()> {
    let mut command = command;
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "idmint", &mut script);
    out.write_all(&script)
        .context("writing the completion script")
}

/// Prints one manual page, or writes them all into `--dir`.
pub fn man(args: &ManArgs, command: clap::Command, out: &mut impl Write) -> Result<()> {
    let command = command.name("idmint");
    if let Some(dir) = &args.dir {
        for (file, page) in pages(&command) {
            let path = dir.join(file);
            std::fs::write(&path, render(&page)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        return Ok(());
    }
    let page = match &args.command {
        None => command,
        Some(name) => pages(&command)
            .into_iter()
            .map(|(_, page)| page)
            .find(|page| page.get_name() == format!("idmint-{name}"))
            .ok_or_else(|| {
                InputError::new(
                    "COMMAND",
                    format!(
                        "`{name}` is not a command of idmint; one of: {}",
                        command
                            .get_subcommands()
                            .map(clap::Command::get_name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
    };
    out.write_all(&render(&page)?)
        .context("writing the manual page")
}

/// The page of `command` and one per subcommand, each with the file name it goes in: the
/// subcommands' pages are named `idmint-serve`, as git's are, and list their own subcommands.
fn pages(command: &clap::Command) -> Vec<(String, clap::Command)> {
    let mut pages = vec![("idmint.1".to_owned(), command.clone())];
    let version = command.get_version().unwrap_or_default().to_owned();
    for sub in command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
    {
        let name = format!("idmint-{}", sub.get_name());
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("idmint {}", sub.get_name()))
            .version(version.clone());
        pages.push((format!("{name}.1"), page));
    }
    pages
}

/// `command`'s page in roff.
fn render(command: &clap::Command) -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .section("1")
        .source(format!("idmint {}", env!("CARGO_PKG_VERSION")))
        .manual("idmint manual")
        .render(&mut page)
        .context("making the manual page")?;
    Ok(page)
}
