//! `eval`'s flags, validated once into the settings every part of `eval`
//! reads: the mode (one of list, run, merge, rescore, watch) instead of five
//! booleans, the shard and eval run id parsed, the rates checked, the
//! folders and report files found usable. Nothing below `run` reads
//! `EvalArgs`; a flag's mistake is found before the suite is read.

use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use promptlab::eval::Shard;
use promptlab::eval::run_id::parse_eval_run_id;

use super::by_tag::ByGroup;
use super::preflight::writable;
use super::{EvalArgs, EvalFormat};
use crate::cli::Tables;
use crate::cli::error::CliError;
use crate::cli::judge::JudgeArgs;
use crate::cli::model::{ModelArgs, ProviderKind};
use crate::cli::report_file::same_file;
use promptlab::eval::outcome::EvalMode;

/// One `eval` invocation, as its flags asked for it.
#[derive(Debug)]
pub struct EvalSettings {
    /// The suite file.
    pub suite: PathBuf,
    pub mode: EvalMode,
    pub model: ModelArgs,
    pub judge: JudgeArgs,
    /// Turns run at once (`-j`).
    pub jobs: u16,
    /// Requests in flight to a deployment (`--provider worker` only).
    pub max_concurrent: Option<u16>,
    pub shard: Option<Shard>,
    /// `--eval-run`, checked: `ev-` and 10 hex digits.
    pub eval_run: Option<String>,
    /// `--variant`, `--case` and `--claim`: names or globs, empty for all.
    pub variants: Vec<String>,
    pub cases: Vec<String>,
    pub claims: Vec<String>,
    /// `--overrides`: one more variant per file.
    pub overrides: Vec<PathBuf>,
    pub output: Output,
    /// The share of a case's repeats that must pass (0 to 1).
    pub pass_threshold: f64,
    /// `--min-pass-rate` (0 to 1).
    pub min_pass_rate: Option<f64>,
    pub cache: CacheChoice,
    /// `--max-cost` in US dollars, more than 0.
    pub max_cost: Option<f64>,
    /// Unusable overrides exit 2 instead of warning.
    pub strict: bool,
    /// `--require-calibrated-judge`.
    pub require_calibrated_judge: bool,
    pub today: Option<NaiveDate>,
    /// What prices the run's calls and fits its levels (`--prices`, `--models`).
    pub tables: Tables,
}

/// What `eval` prints and writes besides its run logs.
#[derive(Debug)]
pub struct Output {
    pub format: EvalFormat,
    pub quiet: bool,
    pub show_failures: usize,
    pub by: Option<ByGroup>,
    pub junit: Option<PathBuf>,
    pub markdown_summary: Option<PathBuf>,
}

/// Whether model calls go through the model-call cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheChoice {
    /// As the suite's `cache:` says (off when it says nothing).
    Suite,
    /// `--cache`.
    Always,
    /// `--no-cache`.
    Never,
}

impl CacheChoice {
    pub fn uses_cache(self, suite_says: bool) -> bool {
        match self {
            CacheChoice::Suite => suite_says,
            CacheChoice::Always => true,
            CacheChoice::Never => false,
        }
    }
}

impl EvalSettings {
    /// Validates `args` (clap has already refused the combinations that
    /// conflict); `runs_dir` is where `--rescore` reads when no `--report`
    /// folder is given.
    pub fn from_args(args: EvalArgs, runs_dir: &Path, tables: Tables) -> Result<Self, CliError> {
        let mode = mode(&args, runs_dir);
        check_rates(&args)?;
        check_folders(&args)?;
        if args.max_concurrent.is_some() && args.model.provider != ProviderKind::Worker {
            return Err(CliError::usage(
                "--max-concurrent caps requests to a deployment: it is for --provider worker (-j sets how many turns run at once)",
            ));
        }
        if mode != EvalMode::List {
            for (flag, path) in [
                ("--junit", &args.junit),
                ("--markdown-summary", &args.markdown_summary),
            ] {
                if let Some(path) = path {
                    writable(flag, path)?;
                }
            }
            outputs_apart(&args)?;
        }
        let eval_run = args
            .eval_run
            .as_deref()
            .map(|id| {
                parse_eval_run_id(id).map_err(|e| CliError::usage(format!("--eval-run: {e}")))
            })
            .transpose()?;
        Ok(EvalSettings {
            shard: resolve_shard(args.shard.as_deref())?,
            eval_run,
            mode,
            cache: match (args.cache, args.no_cache) {
                (true, _) => CacheChoice::Always,
                (_, true) => CacheChoice::Never,
                _ => CacheChoice::Suite,
            },
            output: Output {
                format: args.format,
                quiet: args.quiet,
                show_failures: args.show_failures,
                by: args.by,
                junit: args.junit,
                markdown_summary: args.markdown_summary,
            },
            suite: args.suite,
            // `-j` is each model's ceiling of calls at once (SPEC §14).
            model: ModelArgs {
                max_concurrency: Some(usize::from(args.jobs)),
                ..args.model
            },
            judge: args.judge,
            jobs: args.jobs,
            max_concurrent: args.max_concurrent,
            variants: args.variant,
            cases: args.case,
            claims: args.claim,
            overrides: args.overrides,
            pass_threshold: args.pass_threshold,
            min_pass_rate: args.min_pass_rate,
            max_cost: args.max_cost,
            strict: args.strict,
            require_calibrated_judge: args.require_calibrated_judge,
            today: args.today,
            tables,
        })
    }
}

/// The one rule from the flags to the mode.
fn mode(args: &EvalArgs, runs_dir: &Path) -> EvalMode {
    if args.watch {
        EvalMode::Watch
    } else if args.list {
        EvalMode::List
    } else if args.rescore {
        EvalMode::Rescore(if args.report.is_empty() {
            vec![runs_dir.to_path_buf()]
        } else {
            args.report.clone()
        })
    } else if !args.report.is_empty() {
        EvalMode::Merge(args.report.clone())
    } else {
        EvalMode::Run {
            resume: args.resume,
        }
    }
}

/// `--junit` and `--markdown-summary` name files of their own: not an
/// input the flags name (the suite, `--overrides`, `--script`), which the
/// report would replace, and not each other, which would leave one report
/// under the other's name. (Files the suite names, a `casesFrom` bank or a
/// case's script, are not known before it is read.)
fn outputs_apart(args: &EvalArgs) -> Result<(), CliError> {
    let inputs: Vec<(&str, &Path)> = std::iter::once(("the suite file", args.suite.as_path()))
        .chain(
            args.overrides
                .iter()
                .map(|p| ("an --overrides file", p.as_path())),
        )
        .chain(
            args.model
                .script
                .iter()
                .map(|p| ("the --script file", p.as_path())),
        )
        .collect();
    let named: Vec<(&str, &Path)> = [
        ("--junit", &args.junit),
        ("--markdown-summary", &args.markdown_summary),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.as_deref().map(|path| (flag, path)))
    .collect();
    for (at, (flag, path)) in named.iter().enumerate() {
        if let Some((input, _)) = inputs.iter().find(|(_, input)| same_file(path, input)) {
            return Err(CliError::usage(format!(
                "{flag} `{}` is {input}: the report would replace it",
                path.display()
            )));
        }
        if let Some((other, _)) = named[..at].iter().find(|(_, other)| same_file(path, other)) {
            return Err(CliError::usage(format!(
                "{other} and {flag} both name `{}`: one report would replace the other",
                path.display()
            )));
        }
    }
    Ok(())
}

fn check_rates(args: &EvalArgs) -> Result<(), CliError> {
    for (flag, rate) in [
        ("--pass-threshold", Some(args.pass_threshold)),
        ("--min-pass-rate", args.min_pass_rate),
    ] {
        if let Some(rate) = rate
            && !(0.0..=1.0).contains(&rate)
        {
            return Err(CliError::usage(format!(
                "{flag} must be between 0 and 1, got {rate}"
            )));
        }
    }
    // As a suite's `passThreshold`: a threshold of 0 passes every case.
    if args.pass_threshold <= 0.0 {
        return Err(CliError::usage(format!(
            "--pass-threshold must be above 0 and at most 1, got {}",
            args.pass_threshold
        )));
    }
    Ok(())
}

/// The folders `--report` and `--replay` name exist.
fn check_folders(args: &EvalArgs) -> Result<(), CliError> {
    for dir in &args.report {
        folder("--report", dir)?;
    }
    if args.model.provider == ProviderKind::Replay
        && args.report.is_empty()
        && let Some(dir) = &args.model.replay
    {
        folder("--replay", dir)?;
    }
    Ok(())
}

fn folder(flag: &str, dir: &Path) -> Result<(), CliError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "{flag} `{}`: no such folder",
            dir.display()
        )))
    }
}

/// `--shard I/N` or `--shard auto`.
fn resolve_shard(text: Option<&str>) -> Result<Option<Shard>, CliError> {
    match text {
        None => Ok(None),
        Some("auto") => Shard::from_ci(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
            .map(Some)
            .map_err(CliError::usage),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|e| CliError::usage(format!("--shard: {e}"))),
    }
}
