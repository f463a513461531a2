//! `promptlab compare A B`: two prompt versions, on what was recorded.

use std::io::Write;
use std::path::Path;

use clap::Args;

use promptlab::compare::render::{json, markdown, text};
use promptlab::compare::{Conclusion, compare, load_set};
use promptlab::prompts::PromptRegistry;
use promptlab::sink::Style;

use super::error::{CliError, Exit};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a prompt fingerprint, an override file or folder (compared by its
    /// fingerprint, looked up in --runs-dir), or a folder of run logs.
    pub a: String,
    /// The candidate, of the same kinds.
    pub b: String,
    /// Only runs of this eval suite.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// table (for a terminal), markdown (for a pull request) or json (for tools).
    #[arg(long, value_name = "FORMAT", default_value = "table", value_parser = ["table", "markdown", "json"])]
    pub format: String,
    /// List every paired turn, not only those that changed (table format).
    #[arg(long)]
    pub all: bool,
    /// Exit 1 when B is significantly worse than A (for CI).
    #[arg(long)]
    pub fail_if_worse: bool,
}

pub fn run(args: CompareArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    let registry = PromptRegistry::embedded();
    let a =
        load_set(&args.a, runs_dir, args.suite.as_deref(), registry).map_err(CliError::invalid)?;
    let b =
        load_set(&args.b, runs_dir, args.suite.as_deref(), registry).map_err(CliError::invalid)?;
    let comparison = compare(a, b);
    let report = match args.format.as_str() {
        "markdown" => markdown(&comparison),
        "json" => json(&comparison) + "\n",
        _ => text(&comparison, Style::for_stdout(), args.all),
    };
    std::io::stdout().lock().write_all(report.as_bytes())?;
    Ok(
        if args.fail_if_worse && comparison.conclusion == Conclusion::Worse {
            Exit::Failure
        } else {
            Exit::Success
        },
    )
}
