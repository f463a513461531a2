//! `promptlab init [DIR]`: a working offline setup in a folder — a claim, an
//! override file, a scripted model and a suite that uses them — and the three
//! commands to try, run from that folder. It never overwrites a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::error::{CliError, Exit};

const AFTER_HELP: &str = "\
Examples:
  promptlab init                 # in the current folder
  promptlab init my-prompts      # creates the folder";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct InitArgs {
    /// The folder to set up; created if absent. No file in it is overwritten.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

const SUITE: &str = "\
# A first eval suite: one question over one claim, for the code-default
# prompts and the plain-spoken override set. Offline, each case's `script`
# stands in for the model (it ignores the prompt: see docs/scripts.md):
#   promptlab eval suites/first.yaml --provider script
# Against the real model (export GEMINI_API_KEY=... first):
#   promptlab eval suites/first.yaml
name: first
claims:
  ids: [CLM-HH-0001]
defaults:
  today: 2026-11-30
variants:
  - name: default
  - name: plain-spoken
    overrides: [../overrides/plain-spoken.yaml]
cases:
  - name: excess
    message: What is the excess on this policy?
    script: scripts/excess.yaml
    expect:
      toolCalled: [{name: get_claim_section, args: {section: policy}}]
      answerMatches: (?i)excess|deductible
";

/// What `init` writes: a path under DIR and its contents.
const FILES: [(&str, &str); 4] = [
    (
        "claims/CLM-HH-0001.json",
        include_str!("../../claims/CLM-HH-0001.json"),
    ),
    (
        "overrides/plain-spoken.yaml",
        include_str!("../../overrides/plain-spoken.yaml"),
    ),
    (
        "suites/scripts/excess.yaml",
        include_str!("../../suites/scripts/excess.yaml"),
    ),
    ("suites/first.yaml", SUITE),
];

/// The commands to try, run from DIR.
pub const COMMANDS: [&str; 3] = [
    "promptlab chat --claim-id CLM-HH-0001 --provider script --script suites/scripts/excess.yaml \"What is the excess?\"",
    "promptlab prompts diff default overrides/plain-spoken.yaml --claim-id CLM-HH-0001",
    "promptlab eval suites/first.yaml --provider script",
];

pub fn run(args: InitArgs) -> Result<Exit, CliError> {
    let existing: Vec<String> = FILES
        .iter()
        .map(|(path, _)| args.dir.join(path))
        .filter(|path| path.exists())
        .map(|path| path.display().to_string())
        .collect();
    if !existing.is_empty() {
        return Err(CliError::usage(format!(
            "init would overwrite {}; choose an empty folder (promptlab init DIR)",
            existing.join(", ")
        )));
    }
    for (path, contents) in FILES {
        write_new(&args.dir.join(path), contents)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "Set up in {}:", args.dir.display())?;
    for (path, _) in FILES {
        writeln!(out, "  {path}")?;
    }
    let cd = if args.dir == Path::new(".") {
        String::new()
    } else {
        format!(" (after cd {})", args.dir.display())
    };
    writeln!(
        out,
        "\nTry these{cd}; they run offline with a scripted model:"
    )?;
    for command in COMMANDS {
        writeln!(out, "  {command}")?;
    }
    writeln!(
        out,
        "\nThen export GEMINI_API_KEY=... and drop --provider/--script to ask the real model."
    )?;
    Ok(Exit::Success)
}

/// Creates `path` (and its folders) with `contents`; fails if it exists.
fn write_new(path: &Path, contents: &str) -> Result<(), CliError> {
    let failed = |error: std::io::Error| {
        CliError::usage(format!("init cannot write {}: {error}", path.display()))
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(failed)?;
    file.write_all(contents.as_bytes()).map_err(failed)?;
    Ok(())
}
