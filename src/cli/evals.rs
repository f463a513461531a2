//! `promptlab evals list|show|trend`: the eval runs recorded in the runs
//! folder, answered by the run index (`docs/run-logs.md`) without running
//! anything — which ran, what failed, and how the pass rate moved.

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Local, Utc};
use clap::{Args, Subcommand};

use promptlab::event::unreported_note;
use promptlab::index::RunIndex;
use promptlab::index::history::VariantNumbers;
use promptlab::sink::{Style, printable};
use promptlab::table::{Fit, fit_table, terminal_width};

use super::error::{CliError, Exit};
use super::output::{write_hidden, write_json};

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab evals list --suite smoke --since 7d\n  promptlab evals show ev-3f9a\n  promptlab evals trend --suite smoke --last 10"
)]
pub enum EvalsCommand {
    /// List recorded eval runs, newest first: kind, suite, when, turns, pass rate per variant, cost, status, shard.
    List(ListArgs),
    /// Show one recorded eval run: its summary and failures, without running anything.
    Show(ShowArgs),
    /// The pass rate per variant across a suite's eval runs, oldest to newest, as a sparkline.
    Trend(TrendArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab evals list\n  promptlab evals list --suite smoke --since 7d\n  promptlab evals list --json | jq '.[0].variants'"
)]
pub struct ListArgs {
    /// Only eval runs of this suite.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Only eval runs started since: a date (2026-11-30), a time, or an age (30m, 2h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = super::runs::parse_since)]
    pub since: Option<DateTime<Utc>>,
    /// Show at most this many (0 = all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab evals show ev-3f9a0c12b4\n  promptlab evals show last~1\n  promptlab evals show ev-3f9a --json | jq '.failures'"
)]
pub struct ShowArgs {
    /// The eval run: `ev-` and its id, or a unique prefix of it; or `last`
    /// or `last~N` (the newest eval run of --suite, or N before it).
    pub id: String,
    /// The suite `last`/`last~N` count in [default: the newest eval run's].
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Print as JSON: the run, its summary records and its failures.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab evals trend\n  promptlab evals trend --suite regression --last 50 --json"
)]
pub struct TrendArgs {
    /// The suite [default: the newest eval run's].
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// The newest N eval runs of it.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub last: u32,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: EvalsCommand, runs_dir: &Path) -> Result<Exit, CliError> {
    // History needs the runs folder's own index: a link at its name is
    // refused rather than read around (`runs list` scans instead).
    if let Some(link) = promptlab::index::file::linked(runs_dir) {
        return Err(CliError::usage(link));
    }
    let index = open_index(runs_dir)?;
    match command {
        EvalsCommand::List(args) => list(&index, &args),
        EvalsCommand::Show(args) => show(&index, &args),
        EvalsCommand::Trend(args) => super::evals_trend::trend(&index, &args),
    }
}

/// The runs folder's index, up to date, its notes and skipped logs said on
/// stderr (once: "no index: scanning 12,400 logs").
pub fn open_index(runs_dir: &Path) -> Result<RunIndex, CliError> {
    // A folder not made yet holds no runs; a file there is a mistake.
    if runs_dir.exists() && !runs_dir.is_dir() {
        return Err(CliError::usage(format!(
            "the runs folder `{}` (--runs-dir, PROMPTLAB_RUNS_DIR) is not a folder",
            runs_dir.display()
        )));
    }
    let opened = RunIndex::open(runs_dir).map_err(CliError::failed)?;
    for note in &opened.notes {
        promptlab::text::eprintln_or_drop!("{}", printable(note));
    }
    for problem in &opened.problems {
        promptlab::text::eprintln_or_drop!("warning: skipped {}", printable(problem));
    }
    Ok(opened.index)
}

/// The one eval run `spec` (`ev-…`, whole or a unique prefix) names.
pub fn resolve_eval_run(index: &RunIndex, spec: &str) -> Result<String, CliError> {
    let mut ids = index.eval_run_ids(spec).map_err(CliError::failed)?;
    match ids.len() {
        1 => Ok(ids.remove(0)),
        0 => Err(CliError::usage(format!(
            "no eval run recorded in `{}` starts with `{}` (see `promptlab evals list`)",
            index.root().display(),
            promptlab::text::quote(spec)
        ))),
        n => Err(CliError::usage(format!(
            "`{}` matches {n} eval runs: {}; give more of it",
            promptlab::text::quote(spec),
            ids.join(", ")
        ))),
    }
}

/// `--suite`, else the newest eval run's suite, said on stderr (`None`: no
/// eval run is recorded).
pub fn suite_or_latest(index: &RunIndex, suite: Option<&str>) -> Result<Option<String>, CliError> {
    if let Some(suite) = suite {
        return Ok(Some(suite.to_string()));
    }
    let latest = index.latest_suite().map_err(CliError::failed)?;
    if let Some(suite) = &latest {
        let note = promptlab::compare::sides::latest_suite_note(suite);
        promptlab::text::eprintln_or_drop!("{}", printable(&note));
    }
    Ok(latest)
}

/// The eval run `evals show` names: `last`/`last~N` of `--suite` (else of
/// the newest run's suite), or an id or a unique prefix of one.
fn shown_eval_run(index: &RunIndex, args: &ShowArgs) -> Result<String, CliError> {
    use promptlab::runs::version::{Side, side_kinds};
    let back = side_kinds(&args.id)
        .into_iter()
        .find_map(|kind| match kind {
            Side::Last(back) => Some(back),
            _ => None,
        });
    let Some(back) = back else {
        return resolve_eval_run(index, &args.id);
    };
    let no_run = || {
        CliError::usage(format!(
            "no eval run is recorded in `{}` (see `promptlab evals list`)",
            index.root().display()
        ))
    };
    let suite = suite_or_latest(index, args.suite.as_deref())?.ok_or_else(no_run)?;
    let runs = index.eval_runs_of(&suite).map_err(CliError::failed)?;
    runs.get(back as usize).cloned().ok_or_else(|| {
        CliError::usage(format!(
            "`{}`: suite {} has {} eval runs recorded in `{}`",
            args.id,
            printable(&suite),
            runs.len(),
            index.root().display()
        ))
    })
}

const LIST_HEADER: [&str; 9] = [
    "eval run",
    "kind",
    "suite",
    "when",
    "turns",
    "pass rate",
    "cost",
    "status",
    "shard",
];
const LIST_FITS: [Fit; 9] = [
    Fit::Keep,
    Fit::Drop(3),
    Fit::Keep,
    Fit::Keep,
    Fit::Drop(4),
    Fit::Free,
    Fit::Drop(2),
    Fit::Keep,
    Fit::Drop(1),
];

fn list(index: &RunIndex, args: &ListArgs) -> Result<Exit, CliError> {
    let limit = if args.limit == 0 {
        usize::MAX
    } else {
        args.limit
    };
    let runs = index
        .eval_runs(args.suite.as_deref(), args.since, limit)
        .map_err(CliError::failed)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &runs)?;
        return Ok(Exit::Success);
    }
    if runs.is_empty() {
        writeln!(out, "no eval runs recorded in {}", index.root().display())?;
        return Ok(Exit::Success);
    }
    let cells: Vec<[String; 9]> = runs
        .iter()
        .map(|run| {
            [
                run.id.clone(),
                run.kind.clone(),
                run.suite.clone(),
                local_time(run.started_at),
                run.turns.to_string(),
                pass_rates(&run.variants),
                cost(run.cost_usd),
                run.status.clone(),
                run.shard.clone().unwrap_or_default(),
            ]
            .map(|cell| printable(&cell))
        })
        .collect();
    let fitted = fit_table(LIST_HEADER, LIST_FITS, &cells, terminal_width());
    writeln!(out, "{fitted}")?;
    write_hidden(&mut out, &fitted.hidden, "--json")?;
    // Why a run's cost is `?`: said beside the table, not guessed in it.
    for run in &runs {
        if let Some(note) = unreported_note(run.usage_unreported) {
            writeln!(out, "{}: {note}", run.id)?;
        }
    }
    Ok(Exit::Success)
}

/// `default 92.0% · plain 88.5%`
fn pass_rates(variants: &[VariantNumbers]) -> String {
    variants
        .iter()
        .map(|v| format!("{} {}", v.variant, rate(v.pass_rate)))
        .collect::<Vec<_>>()
        .join(" · ")
}

pub fn rate(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".to_string(), |r| format!("{:.1}%", r * 100.0))
}

fn cost(cost: Option<f64>) -> String {
    cost.map_or_else(|| "?".to_string(), |usd| format!("${usd:.4}"))
}

pub fn local_time(time: DateTime<Utc>) -> String {
    time.with_timezone(&Local)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

fn show(index: &RunIndex, args: &ShowArgs) -> Result<Exit, CliError> {
    let id = shown_eval_run(index, args)?;
    let shown = index
        .detail(&id)
        .map_err(CliError::failed)?
        .ok_or_else(|| CliError::usage(format!("no eval run `{id}`")))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &shown)?;
        return Ok(Exit::Success);
    }
    let style = Style::for_stdout();
    let run = &shown.run;
    let title = format!("Eval run {} ({}) · suite {}", run.id, run.kind, run.suite);
    writeln!(out, "{}", style.bold(&printable(&title)))?;
    let shard = run
        .shard
        .as_ref()
        .map(|s| format!(" · shard {s}"))
        .unwrap_or_default();
    writeln!(
        out,
        "{} → {} · {} turns · {} · {}{}",
        local_time(run.started_at),
        local_time(run.ended_at),
        run.turns,
        cost(run.cost_usd),
        run.status,
        printable(&shard)
    )?;
    if let Some(note) = unreported_note(run.usage_unreported) {
        writeln!(out, "{note}: its cost is unknown")?;
    }
    write_variants(&mut out, &run.variants)?;
    for line in limit_lines(&shown.summaries) {
        writeln!(out, "{}", printable(&line))?;
    }
    if run.numbers_from == "summary" {
        let why = "numbers from its summary file: it counted turns that have no run log \
                   in this folder (lost during the run, removed since, or merged from \
                   others); only turns with a log are listed below";
        writeln!(out, "{}", style.dim(why))?;
    }
    if shown.failures.is_empty() {
        return Ok(Exit::Success);
    }
    writeln!(out, "\n{}", style.bold("Failures:"))?;
    for failure in &shown.failures {
        let label = format!(
            "{} · {} · {} #{}",
            failure.variant.as_deref().unwrap_or("?"),
            failure.claim,
            failure.case,
            failure.sample
        );
        let verdict = failure.verdict.as_deref().unwrap_or("unfinished");
        writeln!(out, "{} {}", style.red(verdict), printable(&label))?;
        for line in &failure.failures {
            writeln!(out, "    - {}", printable(line))?;
        }
        let path = format!("run log: {}", index.root().join(&failure.path).display());
        writeln!(out, "    {}", style.dim(&printable(&path)))?;
    }
    Ok(Exit::Success)
}

/// What the servers' limits did to the run (SPEC §14), from its summary
/// records: the spent quota that stopped it, and each rate-limited model's
/// 429s, waits and live limit over time.
fn limit_lines(summaries: &[serde_json::Value]) -> Vec<String> {
    let mut lines = Vec::new();
    for summary in summaries {
        if let Some(quota) = summary["quotaSpent"].as_str() {
            lines.push(format!(
                "quota spent: {}",
                promptlab::text::one_line(quota, 300)
            ));
        }
        // The rubric judge's calibration as the run's start found it.
        if let Ok(calibration) = serde_json::from_value::<
            promptlab::eval::calibration::JudgeCalibration,
        >(summary["judgeCalibration"].clone())
        {
            lines.push(calibration.line());
        }
        let limits = summary["rateLimits"].as_array().into_iter().flatten();
        for model in limits {
            let Ok(limits) =
                serde_json::from_value::<promptlab::provider::transport::RateLimits>(model.clone())
            else {
                continue;
            };
            const SHOWN: usize = 20;
            let mut changes: Vec<String> = (limits.history.iter().take(SHOWN))
                .map(|c| format!("{} at {:.1} s", c.limit, c.at_ms as f64 / 1000.0))
                .collect();
            if limits.history.len() > SHOWN {
                changes.push(format!("… {} more", limits.history.len() - SHOWN));
            }
            lines.push(format!(
                "rate limits: {limits}; calls at once {} then {}",
                limits.ceiling,
                if changes.is_empty() {
                    "unchanged".to_string()
                } else {
                    changes.join(", ")
                }
            ));
        }
    }
    lines
}

fn write_variants(out: &mut impl Write, variants: &[VariantNumbers]) -> Result<(), CliError> {
    const HEADER: [&str; 8] = [
        "variant",
        "turns",
        "passed",
        "failed",
        "errors",
        "pass rate",
        "p50",
        "p95",
    ];
    let ms = |v: Option<u64>| v.map_or_else(String::new, |ms| format!("{ms} ms"));
    let cells: Vec<[String; 8]> = variants
        .iter()
        .map(|v| {
            [
                v.variant.clone(),
                v.turns.to_string(),
                v.passed.to_string(),
                v.failed.to_string(),
                v.errors.to_string(),
                rate(v.pass_rate),
                ms(v.latency_p50_ms),
                ms(v.latency_p95_ms),
            ]
            .map(|cell| printable(&cell))
        })
        .collect();
    if !cells.is_empty() {
        let fits = [Fit::Keep; 8];
        writeln!(out, "{}", fit_table(HEADER, fits, &cells, terminal_width()))?;
    }
    Ok(())
}
