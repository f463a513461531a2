//! `promptlab compare A B`: two prompt versions, on what was recorded, and
//! the CI gates on the result.

use std::io::Write;
use std::path::PathBuf;

use chrono::Utc;
use clap::{Args, ValueEnum};

use promptlab::compare::gate::{GateResult, apply};
use promptlab::compare::render::{json, markdown, text};
use promptlab::compare::stream::compare_if_eval_runs;
use promptlab::compare::{Comparison, Gates, RunFilter, compare, load_set};
use promptlab::prompts::PromptRegistry;
use promptlab::report::compare_page;
use promptlab::sink::Style;

use super::error::{CliError, Exit};
use super::eval::writable;
use super::judge::{JudgeArgs, SuiteJudge};
use super::report::write_page;

const AFTER_HELP: &str = "\
Runs pair by prompt version (the eval variant, or the fingerprint of a chat turn), suite, claim,
case and sample. With one version on each side, those two are compared whatever their names; with
several, each variant is compared with the same-named variant of the other side.

Gates (exit 1): --fail-on-regression (any pass→fail), --max-regressions N, --fail-if-worse
(McNemar p < 0.05). A gate also fails when it cannot judge: turns that errored, runs of A missing
from B (unless --allow-unpaired), no verdicts at all, nothing paired.

With --judge CRITERION a judge model says, for each pair, which answer better meets it, asked in
both orders (A first, then B first); a side wins only when both orders agree. Wins and losses are
tested with a two-sided sign test (docs/judging.md).

Examples:
  promptlab compare runs/base runs/candidate
  promptlab compare ev-3f9a0c ev-81d2 --fail-on-regression   # two eval runs, their turns exactly
  promptlab compare last~1 last --suite smoke                 # the newest run of smoke against the one before
  promptlab compare runs/base runs/candidate --judge \"explains the excess in plain words\" --fail-if-worse
  promptlab compare runs/base runs/candidate --variant plain-spoken --fail-on-regression
  promptlab compare runs/models@lite-low runs/models@pro-high   # two variants of one eval run
  promptlab compare default overrides/plain-spoken.yaml --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  promptlab compare runs/base runs/candidate --format html -o compare.html";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// For a terminal.
    Table,
    /// To paste into a pull request or a CI step summary.
    Markdown,
    /// For tools.
    Json,
    /// One self-contained page to open in a browser (needs -o FILE).
    Html,
}

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct CompareArgs {
    /// The baseline, by one precedence rule: an existing path (a folder of run logs, or an
    /// override file or folder, compared by its fingerprint in --runs-dir); an eval run
    /// (`ev-…`, a unique prefix is enough); `last` or `last~N` (the newest eval run of
    /// --suite, by default the newest run's suite, or N before it); a prompt fingerprint — whole, or a unique prefix of 6 hex
    /// characters or more of one recorded in --runs-dir. An argument that could be two of
    /// these is an error (`./NAME` is the path). `@VARIANT` after it takes one variant
    /// (`runs/models@lite-low`).
    pub a: String,
    /// The candidate, of the same kinds.
    pub b: String,
    /// Only runs of this eval suite.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Only runs of this variant, on both sides (repeat for several).
    #[arg(long, value_name = "NAME")]
    pub variant: Vec<String>,
    /// Only runs that asked for this model, on both sides (turns recorded
    /// under several models are otherwise one version per model).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Only runs of this provider (gemini, openai, script, replay, worker), on both sides.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Write the report to FILE instead of stdout (required for html); its folder must exist.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// List every paired turn, not only those that changed (table format).
    #[arg(long)]
    pub all: bool,
    /// Two eval runs: list the N worst pairs (pass→fail first, then errors, then the largest
    /// latency or token increases) and the first N runs only in one side; every pair is
    /// counted.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub worst: usize,
    /// Exit 1 when B is significantly worse than A (McNemar's exact test, p < 0.05).
    #[arg(long)]
    pub fail_if_worse: bool,
    /// Exit 1 when any paired turn went from pass to fail.
    #[arg(long, conflicts_with = "max_regressions")]
    pub fail_on_regression: bool,
    /// Exit 1 when more than N paired turns went from pass to fail.
    #[arg(long, value_name = "N")]
    pub max_regressions: Option<usize>,
    /// Runs of A with no partner in B do not fail a gate.
    #[arg(long)]
    pub allow_unpaired: bool,
    /// Ask a judge model, for each paired turn, which answer better meets CRITERION (in both
    /// orders, to cancel position bias); --fail-if-worse then also gates on its sign test.
    #[arg(long, value_name = "CRITERION", conflicts_with = "judge_file")]
    pub judge: Option<String>,
    /// The --judge criterion, read from FILE.
    #[arg(long, value_name = "FILE")]
    pub judge_file: Option<PathBuf>,
    /// Pairs put to the judge at once (with --judge).
    #[arg(short = 'j', long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    #[command(flatten)]
    pub judge_args: JudgeArgs,
}

pub fn run(args: CompareArgs, stores: &super::StoreArgs) -> Result<Exit, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    match (&args.output, args.format) {
        (None, CompareFormat::Html) => {
            return Err(CliError::usage(
                "--format html writes a file: give -o FILE (e.g. -o compare.html)",
            ));
        }
        (Some(path), _) => writable("--output", path)?,
        (None, _) => {}
    }
    let registry = PromptRegistry::embedded();
    let filter = RunFilter {
        suite: args.suite.clone(),
        variants: args.variant.clone(),
        model: args.model.clone(),
        provider: args.provider.clone(),
    };
    let criterion = criterion(&args)?;
    // Built before any judge call, so a missing key fails first (exit 2).
    let judge = criterion
        .as_ref()
        .map(|_| {
            args.judge_args
                .build(
                    &SuiteJudge::default(),
                    &stores.cache_dir,
                    super::model::limits_from_env()?,
                    &stores.tables,
                )
                .map(|judge| judge.with_notices(super::judge::notices_on_stderr()))
        })
        .transpose()?;
    let mut comparison = compared(&args, runs_dir, &filter, registry, criterion.is_none())?;
    if let (Some(criterion), Some(judge)) = (&criterion, &judge) {
        judge_pairs_now(&mut comparison, judge, criterion, usize::from(args.jobs))?;
    }
    let gates = Gates {
        fail_if_worse: args.fail_if_worse,
        max_regressions: args
            .max_regressions
            .or(args.fail_on_regression.then_some(0)),
        allow_unpaired: args.allow_unpaired,
    };
    let gate = apply(&comparison, gates);
    let report = render(&args, &comparison, &gate);
    let shown = show_report(&args, &report, comparison.paired)?;
    let table_on_stdout = args.format == CompareFormat::Table && args.output.is_none();
    if !gate.passed() && (!table_on_stdout || !shown) {
        for failure in &gate.failures {
            promptlab::text::eprintln_or_drop!("gate failed: {failure}");
        }
    }
    Ok(if gate.passed() {
        Exit::Success
    } else {
        Exit::Failure
    })
}

/// The comparison: two eval runs streamed from the index when `stream`
/// (no pairwise judge, which reads every pair's logs), else both sides
/// read into memory; the notes said once.
fn compared(
    args: &CompareArgs,
    runs_dir: &std::path::Path,
    filter: &RunFilter,
    registry: &PromptRegistry,
    stream: bool,
) -> Result<Comparison, CliError> {
    let streamed = if stream {
        compare_if_eval_runs([&args.a, &args.b], runs_dir, filter, args.worst)?
    } else {
        None
    };
    let (comparison, notes) = match streamed {
        Some(found) => found,
        None => {
            let a = load_set(&args.a, runs_dir, filter, registry)?;
            let b = load_set(&args.b, runs_dir, filter, registry)?;
            let notes: Vec<String> = a.notes.iter().chain(&b.notes).cloned().collect();
            (compare(a, b)?, notes)
        }
    };
    // Both sides may say the same (the index scanned, the suite chosen): once.
    let mut said = std::collections::BTreeSet::new();
    for note in notes.iter().filter(|n| said.insert(*n)) {
        promptlab::text::eprintln_or_drop!("{}", promptlab::sink::printable(note));
    }
    Ok(comparison)
}

/// The report to `-o` or stdout; `false` when stdout was closed before it
/// (`| true`): the gate still decides, and says why on stderr, as it does
/// for the other formats.
fn show_report(args: &CompareArgs, report: &str, pairs: usize) -> Result<bool, CliError> {
    match &args.output {
        Some(path) => {
            write_page(path, report)?;
            promptlab::text::eprintln_or_drop!("wrote {}: {pairs} pairs", path.display());
            Ok(true)
        }
        None => {
            let printed = std::io::stdout().lock().write_all(report.as_bytes());
            let printed = printed.map_err(CliError::from);
            let shown = printed.is_ok();
            crate::cli::error::unless_stdout_closed(printed)?;
            Ok(shown)
        }
    }
}

/// The comparison in the `--format` asked for.
fn render(args: &CompareArgs, comparison: &Comparison, gate: &GateResult) -> String {
    // Colours only when the table goes to a terminal.
    let style = match args.output {
        Some(_) => Style::plain(),
        None => Style::for_stdout(),
    };
    match args.format {
        CompareFormat::Markdown => markdown(comparison, gate),
        CompareFormat::Json => json(comparison, gate) + "\n",
        CompareFormat::Table => text(
            comparison,
            gate,
            style,
            args.all,
            promptlab::table::terminal_width(),
        ),
        CompareFormat::Html => {
            let title = format!("promptlab compare: {} ↔ {}", args.a, args.b);
            compare_page(comparison, gate, &title, Utc::now())
        }
    }
}

/// `--judge CRITERION` or `--judge-file FILE`.
fn criterion(args: &CompareArgs) -> Result<Option<String>, CliError> {
    let text = match (&args.judge, &args.judge_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => promptlab::input::read_input_text(path)
            .map_err(|e| CliError::usage(format!("--judge-file `{}`: {e}", path.display())))?,
        (None, None) => return Ok(None),
    };
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(CliError::usage("--judge: the criterion is blank"));
    }
    let max = promptlab::eval::judging::MAX_CRITERION_CHARS;
    if text.chars().count() > max {
        return Err(CliError::usage(format!(
            "--judge: the criterion is longer than {max} characters"
        )));
    }
    Ok(Some(text))
}

/// Puts every pair to the judge, with a line on stderr about the work;
/// Ctrl-C cancels the calls (their pairs are then judge errors).
fn judge_pairs_now(
    comparison: &mut promptlab::compare::Comparison,
    judge: &promptlab::judge::Judge,
    criterion: &str,
    jobs: usize,
) -> Result<(), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    let cancel = tokio_util::sync::CancellationToken::new();
    promptlab::text::eprintln_or_drop!(
        "judging {} pairs in both orders with {} ({})…",
        comparison.pairs.len(),
        judge.settings().model,
        judge.provider_name()
    );
    runtime.block_on(async {
        let _stop = super::signals::cancel_on_signals(cancel.clone());
        promptlab::compare::judge_pairs(comparison, judge, criterion, jobs, &cancel).await;
    });
    Ok(())
}
