//! `promptlab completions SHELL` and `promptlab man`: shell completion
//! scripts (clap_complete), roff manual pages (clap_mangen) and the Markdown
//! command reference (`docs/cli.md`), all made from the same clap definition
//! the binary parses with, so they cannot drift.

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
  promptlab man --out-dir ~/.local/share/man/man1   # one page per subcommand
  promptlab man --markdown > docs/cli.md             # every command's --help, as Markdown";

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
    #[arg(long, value_name = "DIR", conflicts_with = "markdown")]
    pub out_dir: Option<PathBuf>,
    /// Print every command's full --help as one Markdown page (docs/cli.md)
    /// instead of roff, wrapped at 100 columns whatever the terminal.
    #[arg(long)]
    pub markdown: bool,
}

/// The width `man --markdown` wraps help at, so the page is the same on
/// every machine.
const MARKDOWN_WIDTH: usize = 100;

/// Prints the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> Result<Exit, CliError> {
    let mut buffer = Vec::new();
    let name = command.get_name().to_string();
    clap_complete::generate(Shell::from(args.shell), &mut command, name, &mut buffer);
    write_stdout(&buffer)
}

/// Prints the top-level page, or writes every page into `--out-dir`.
pub fn man(args: ManArgs, command: clap::Command) -> Result<Exit, CliError> {
    if args.markdown {
        return write_stdout(markdown_reference(command).as_bytes());
    }
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

/// Every command's long help, depth first in definition order, one section
/// each: `## promptlab chat`, `## promptlab runs list` (GitHub anchors
/// `#promptlab-chat`, `#promptlab-runs-list`, which the README links to).
fn markdown_reference(command: clap::Command) -> String {
    let mut command = without_env_values(command)
        .term_width(MARKDOWN_WIDTH)
        .max_term_width(MARKDOWN_WIDTH);
    command.build();
    let mut page = String::from(
        "# The promptlab command line\n\n\
         Generated from the clap definition by `promptlab man --markdown`; \
         `tests/it/cli_docs.rs` keeps it current (`PROMPTLAB_UPDATE_DOCS=1 cargo test --test it cli_docs`).\n",
    );
    push_sections(&mut command, "", &mut page);
    page
}

/// The reference names each variable, never the value this shell happens
/// to have set (a runs folder, a model).
pub fn without_env_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| arg.hide_env_values(true))
        .mut_subcommands(without_env_values)
}

fn push_sections(command: &mut clap::Command, parent: &str, page: &mut String) {
    let path = if parent.is_empty() {
        command.get_name().to_string()
    } else {
        format!("{parent} {}", command.get_name())
    };
    let help = command.render_long_help().to_string();
    let help: String = help
        .lines()
        .map(|line| line.trim_end().to_string() + "\n")
        .collect();
    page.push_str(&format!("\n## {path}\n\n```text\n{help}```\n"));
    for sub in command.get_subcommands_mut() {
        if sub.get_name() != "help" && !sub.is_hide_set() {
            push_sections(sub, &path, page);
        }
    }
}

fn write_stdout(bytes: &[u8]) -> Result<Exit, CliError> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(Exit::Success)
}
