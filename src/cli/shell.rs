//! `promptlab completions SHELL` and `promptlab man`: shell completion
//! scripts (clap_complete) and roff manual pages (clap_mangen), both made from
//! the same clap definition the binary parses with, so they cannot drift.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use clap_complete::Shell;

use super::error::{CliError, Exit};

const COMPLETIONS_HELP: &str = "\
Examples:
  promptlab completions bash > ~/.local/share/bash-completion/completions/promptlab
  promptlab completions zsh > ~/.zfunc/_promptlab     # with fpath+=~/.zfunc
  promptlab completions fish > ~/.config/fish/completions/promptlab.fish
  promptlab completions powershell >> $PROFILE";

const MAN_HELP: &str = "\
Examples:
  promptlab man | man -l -
  promptlab man --out-dir ~/.local/share/man/man1   # one page per subcommand";

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl From<ShellArg> for Shell {
    fn from(shell: ShellArg) -> Shell {
        match shell {
            ShellArg::Bash => Shell::Bash,
            ShellArg::Zsh => Shell::Zsh,
            ShellArg::Fish => Shell::Fish,
            ShellArg::Powershell => Shell::PowerShell,
            ShellArg::Elvish => Shell::Elvish,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = COMPLETIONS_HELP)]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Debug, Args)]
#[command(after_help = MAN_HELP)]
pub struct ManArgs {
    /// Write promptlab.1 and a page per subcommand (promptlab-chat.1, ...)
    /// into DIR, created if absent, instead of printing promptlab.1.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> Result<Exit, CliError> {
    let mut buffer = Vec::new();
    let name = command.get_name().to_string();
    clap_complete::generate(Shell::from(args.shell), &mut command, name, &mut buffer);
    write_stdout(&buffer)
}

/// Prints the top-level page, or writes every page into `--out-dir`.
pub fn man(args: ManArgs, command: clap::Command) -> Result<Exit, CliError> {
    match args.out_dir {
        None => {
            let mut buffer = Vec::new();
            clap_mangen::Man::new(command).render(&mut buffer)?;
            write_stdout(&buffer)
        }
        Some(dir) => {
            let failed = |error: io::Error| {
                CliError::usage(format!(
                    "cannot write man pages into {}: {error}",
                    dir.display()
                ))
            };
            std::fs::create_dir_all(&dir).map_err(failed)?;
            clap_mangen::generate_to(command, &dir).map_err(failed)?;
            let mut pages: Vec<String> = std::fs::read_dir(&dir)
                .map_err(failed)?
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("promptlab") && name.ends_with(".1"))
                .collect();
            pages.sort();
            let listing = format!("wrote {} in {}\n", pages.join(" "), dir.display());
            write_stdout(listing.as_bytes())
        }
    }
}

fn write_stdout(bytes: &[u8]) -> Result<Exit, CliError> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(Exit::Success)
}
