//! `promptlab runs list|show|reindex`: the recorded run logs (`show` itself
//! is `runs_show.rs`). `list` asks the run index which logs match and reads
//! only the page it shows.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, NaiveDate, Utc};
use clap::{Args, Subcommand};

use promptlab::index::query::TurnFilter;
use promptlab::runs::row::{RunRow, TABLE_HEADER};
use promptlab::runs::store::summarize;
use promptlab::sink::{Style, printable};

use super::error::{CliError, Exit};
use promptlab::prompts::PromptRegistry;

use super::output::{plural, write_hidden, write_json};
use promptlab::table::{Fit, fit_table, terminal_width};

/// when, turn, claim, suite · case, message, capability, fingerprint,
/// model, provider, status, tokens, cost, latency: the model goes first on
/// a narrow terminal, then tokens, capability, latency, provider, the eval
/// case, the cost; the message preview is cut short, and goes last.
const TABLE_FITS: [Fit; 14] = [
    Fit::Keep,
    Fit::Keep,
    Fit::Keep,
    Fit::Drop(6),
    Fit::Free,
    Fit::Drop(3),
    Fit::Keep,
    Fit::Drop(1),
    Fit::Drop(5),
    Fit::Keep,
    // Empty for chat turns, so left out of a list of them.
    Fit::Drop(8),
    Fit::Drop(2),
    Fit::Drop(7),
    Fit::Drop(4),
];

/// `runs list --status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFilter {
    Done,
    Error,
    Cancelled,
    /// Still being written, or abandoned.
    Partial,
}

impl StatusFilter {
    fn as_str(self) -> &'static str {
        match self {
            StatusFilter::Done => "done",
            StatusFilter::Error => "error",
            StatusFilter::Cancelled => "cancelled",
            StatusFilter::Partial => "partial",
        }
    }
}

/// `runs list --verdict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerdictFilter {
    Pass,
    Fail,
    Error,
}

impl VerdictFilter {
    fn as_str(self) -> &'static str {
        match self {
            VerdictFilter::Pass => "pass",
            VerdictFilter::Fail => "fail",
            VerdictFilter::Error => "error",
        }
    }
}

/// `runs show --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    /// As `chat` showed it.
    Pretty,
    /// The recorded events, one JSON object per line.
    Ndjson,
}

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab runs list --since 1d\n  promptlab runs show 64011163\n  promptlab runs reindex"
)]
pub enum RunsCommand {
    /// List recorded turns, newest first.
    List(ListArgs),
    /// Show one recorded turn as `chat` showed it (or as NDJSON).
    Show(ShowArgs),
    /// Rebuild the run index (<runs dir>/index.sqlite) from the run logs, from scratch.
    #[command(
        after_help = "Examples:\n  promptlab runs reindex\n  promptlab --runs-dir runs/ci runs reindex"
    )]
    Reindex,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab runs list --since 2h --status error\n  promptlab runs list --claim CLM-HH-0001 --limit 5\n  promptlab runs list --fingerprint default --json | jq ."
)]
pub struct ListArgs {
    /// Only turns with this prompt fingerprint: an override file (or folder)
    /// whose fingerprint is meant, `default`, 12 hex characters, or a unique
    /// prefix (6 or more) of a recorded one.
    #[arg(long, value_name = "FP|FILE")]
    pub fingerprint: Option<String>,
    /// Only turns made by this provider: gemini, openai, script, replay or worker.
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(
        promptlab::provider::ProviderKind::ALL.map(promptlab::provider::ProviderKind::name)))]
    pub provider: Option<String>,
    /// Only turns on this claim id.
    #[arg(long, value_name = "ID")]
    pub claim: Option<String>,
    /// Only turns started since: a date (2026-11-30), a time (2026-11-30T09:00:00Z), or an age (30m, 2h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<DateTime<Utc>>,
    /// Only turns that ended so: done, error, cancelled, or partial (never finished).
    #[arg(long, value_enum)]
    pub status: Option<StatusFilter>,
    /// Only eval turns with this verdict: pass, fail or error.
    #[arg(long, value_enum)]
    pub verdict: Option<VerdictFilter>,
    /// Only turns of this eval suite.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Only turns of this eval case.
    #[arg(long, value_name = "NAME")]
    pub case: Option<String>,
    /// Only turns recorded by this eval run (`ev-…`, as the eval summary names it, or a unique prefix).
    #[arg(long = "eval", value_name = "ID")]
    pub eval_run: Option<String>,
    /// Show at most this many (0 = all).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab runs show 64011163                # a prefix of a turn id\n  promptlab runs show runs/examples/default/<file>.ndjson --format ndjson"
)]
pub struct ShowArgs {
    /// A run-log path, or a prefix of a turn id.
    pub run: String,
    /// pretty (the turn as `chat` showed it) or ndjson (its events).
    #[arg(long, value_enum, default_value = "pretty")]
    pub format: ShowFormat,
}

pub fn run(command: RunsCommand, runs_dir: &PathBuf) -> Result<Exit, CliError> {
    match command {
        RunsCommand::List(args) => list(args, runs_dir),
        RunsCommand::Show(args) => super::runs_show::show(args, runs_dir),
        RunsCommand::Reindex => reindex(runs_dir),
    }
}

/// `runs reindex`: the index dropped and every log read again.
fn reindex(runs_dir: &Path) -> Result<Exit, CliError> {
    if promptlab::index::index_off() {
        return Err(CliError::usage(
            "PROMPTLAB_INDEX=off: there is no index to rebuild (unset it to keep one)",
        ));
    }
    if !runs_dir.is_dir() {
        return Err(CliError::usage(format!(
            "no runs folder `{}` to index",
            runs_dir.display()
        )));
    }
    let started = std::time::Instant::now();
    let (_, report) =
        promptlab::index::RunIndex::rebuild(runs_dir).map_err(|error| match error {
            promptlab::index::IndexError::Linked { .. } => CliError::usage(error),
            error => CliError::failed(error),
        })?;
    for note in &report.notes {
        promptlab::text::eprintln_or_drop!("{}", printable(note));
    }
    for problem in &report.problems {
        promptlab::text::eprintln_or_drop!("warning: skipped {}", printable(problem));
    }
    writeln!(
        std::io::stdout(),
        "indexed {} {} in {} ({} unreadable) in {:.1} s",
        promptlab::index::thousands(report.read as u64),
        plural(report.read, "run log", "run logs"),
        runs_dir.join(promptlab::index::INDEX_FILE).display(),
        report.problems.len(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(Exit::Success)
}

/// The index's filters for `args`.
fn turn_filter(
    args: &ListArgs,
    index: &promptlab::index::RunIndex,
    runs_dir: &Path,
) -> Result<TurnFilter, CliError> {
    let eval_run = match &args.eval_run {
        // Not a filter that matches nothing: a typo must not read as "0 runs".
        Some(spec) if !spec.starts_with("ev-") => {
            return Err(CliError::usage(format!(
                "--eval `{}`: an eval run id starts with `ev-` (as the eval summary names it; \
                 see `promptlab evals list`)",
                promptlab::text::quote(spec)
            )));
        }
        Some(spec) if !promptlab::runs::version::is_eval_run_id(spec) => {
            Some(super::evals::resolve_eval_run(index, spec)?)
        }
        other => other.clone(),
    };
    Ok(TurnFilter {
        fingerprint: args
            .fingerprint
            .as_deref()
            .map(|spec| fingerprint_of(spec, runs_dir))
            .transpose()?,
        provider: args.provider.clone(),
        claim: args.claim.clone(),
        since: args.since,
        status: args.status.map(|s| s.as_str().to_string()),
        verdict: args.verdict.map(|v| v.as_str().to_string()),
        suite: args.suite.clone(),
        case: args.case.clone(),
        eval_run,
    })
}

/// `--fingerprint`: an existing override file or folder stands for its
/// fingerprint, as in `compare`; anything else is taken as a fingerprint.
/// `--fingerprint`: an override file or folder, a fingerprint, or a unique
/// prefix of a recorded one — the rule a `compare` side follows.
fn fingerprint_of(spec: &str, runs_dir: &Path) -> Result<String, CliError> {
    promptlab::runs::version::fingerprint_for(spec, runs_dir, PromptRegistry::embedded())
        .map_err(CliError::usage)?
        .ok_or_else(|| {
            CliError::usage(format!(
                "--fingerprint `{spec}` is neither an override file, a fingerprint (`default` or 12 hex \
                 characters) nor a prefix of a recorded one (6 hex characters or more)"
            ))
        })
}

fn list(args: ListArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    let index = super::evals::open_index(runs_dir)?;
    let filter = turn_filter(&args, &index, runs_dir)?;
    let limit = (args.limit > 0).then_some(args.limit);
    let page = index.turns(&filter, limit).map_err(CliError::failed)?;
    let total = page.total;
    let mut runs = Vec::with_capacity(page.paths.len());
    for path in &page.paths {
        match summarize(path) {
            Ok(run) => runs.push(run),
            // Gone or changed since it was indexed: said, not guessed at.
            Err(problem) => {
                promptlab::text::eprintln_or_drop!(
                    "warning: skipped {}",
                    printable(&problem.to_string())
                )
            }
        }
    }
    let rows: Vec<RunRow> = runs.iter().map(RunRow::of).collect();
    let (runs, rows) = (&runs[..], &rows[..]);
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &rows)?;
        return Ok(Exit::Success);
    }
    let cells: Vec<[String; 14]> = rows
        .iter()
        .zip(runs)
        .map(|(row, run)| {
            let label = row
                .claim
                .as_deref()
                .unwrap_or(run.header.request.claim_label());
            row.cells(label).map(|cell| printable(&cell))
        })
        .collect();
    if !cells.is_empty() {
        let fitted = fit_table(TABLE_HEADER, TABLE_FITS, &cells, terminal_width());
        writeln!(out, "{fitted}")?;
        write_hidden(&mut out, &fitted.hidden, "--json")?;
    }
    let shown = if runs.len() < total {
        format!("{} of {total}", runs.len())
    } else {
        total.to_string()
    };
    writeln!(
        out,
        "{}",
        Style::for_stdout().dim(&format!(
            "{shown} {} in {}",
            plural(total, "run", "runs"),
            runs_dir.display()
        ))
    )?;
    Ok(Exit::Success)
}

/// `--since`: a date, an RFC 3339 time, or an age such as `30m`, `2h`, `7d`
/// or a number of seconds.
pub fn parse_since(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let midnight = date.and_hms_opt(0, 0, 0).ok_or("invalid date")?;
        return midnight
            .and_local_timezone(Local)
            .earliest()
            .map(|time| time.with_timezone(&Utc))
            .ok_or_else(|| format!("`{text}` is not a valid local date"));
    }
    since_age(text, Utc::now())
}

/// An age (`30m`, `2h`, `7d`, `1h 30m`, parsed by `humantime`) before `now`.
/// An age reaching before the representable past is an error, not a panic.
fn since_age(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let expected = || {
        format!(
            "expected a date, a time or an age like 2h, got `{}`",
            promptlab::text::quote(text)
        )
    };
    let age = promptlab::text::parse_duration(text).ok_or_else(expected)?;
    chrono::Duration::from_std(age)
        .ok()
        .and_then(|age| now.checked_sub_signed(age))
        .ok_or_else(|| {
            format!(
                "the age `{}` reaches too far back",
                promptlab::text::quote(text)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ages_parse_and_absurd_ones_are_errors_not_panics() {
        let now = Utc::now();
        assert_eq!(since_age("2h", now), Ok(now - chrono::Duration::hours(2)));
        assert_eq!(
            since_age("1h 30m", now),
            Ok(now - chrono::Duration::minutes(90))
        );
        // Regressions: a byte split inside `é`, and an overflowing age.
        assert!(parse_since("5é").is_err());
        assert!(parse_since("9000000000000000s").is_err());
        assert!(parse_since("").is_err());
    }

    proptest! {
        #[test]
        fn since_never_panics(text in "[0-9a-zé .:TZ+-]{0,40}") {
            let _ = parse_since(&text);
        }
    }
}
