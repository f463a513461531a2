//! The end of an eval: the exit code, the JUnit and Markdown reports, and
//! the summary (a table and the failures, or an NDJSON record) — every one
//! from the run's spill, read in matrix order (`eval::totals`), never from
//! results held in memory.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};

use promptlab::cost::format_usd;
use promptlab::eval::Outcome;
use promptlab::eval::budget::Budget;
use promptlab::eval::fold::{Folded, folds};
use promptlab::eval::junit::{JunitContext, JunitError, write_junit};
use promptlab::eval::outcome::{EvalOutcome, ExitRule};
use promptlab::eval::report::{CaseRecord, EvalRecord, TurnRecord, shard_line, turn_label};
use promptlab::eval::session::Ended;
use promptlab::eval::spill::{ResultStore, SpillError};
use promptlab::eval::totals::{RunTotals, checked};
use promptlab::sink::{Style, printable};
use promptlab::table::terminal_width;
use std::sync::Arc;

use super::EvalFormat;
use super::progress::write_record;
use super::settings::EvalSettings;
use super::summary_table::{LevelSent, judging_lines, summary_table};
use crate::cli::error::{CliError, Exit};
use crate::cli::model::ProviderKind;
use crate::cli::output::write_hidden;
use crate::cli::report_file::{write_whole, write_whole_with};
use promptlab::eval::outcome::EvalMode;

/// What the summary says: the eval's outcome, and the report files that
/// could not be written (each fails the run).
pub struct EvalEnd<'a> {
    pub outcome: EvalOutcome<'a>,
    write_errors: Vec<String>,
}

/// A spill that cannot be read back: the run has no verdict (exit 1).
pub fn unreadable(error: SpillError) -> CliError {
    CliError::Failed(format!(
        "{error}; the run's results cannot be read back, so it has no verdict"
    ))
}

/// Summary, failures, reports and the exit code, from the ended run's
/// spill (every turn of the run); `(started_at, runs_dir)`: when the run
/// started and the runs folder its summary is kept in.
pub fn finish(
    settings: &EvalSettings,
    mode: &EvalMode,
    ended: &mut Ended,
    (started_at, runs_dir): (DateTime<Utc>, &std::path::Path),
) -> Result<Exit, CliError> {
    let rule = ExitRule {
        pass_threshold: settings.pass_threshold,
        min_pass_rate: settings.min_pass_rate,
    };
    let shown = settings.output.show_failures;
    let plan = Arc::clone(&ended.plan);
    let (limits, store) = (&ended.limits, &mut ended.spill);
    let mut outcome =
        EvalOutcome::of(&plan, store, (rule, shown), ended.stop, limits).map_err(unreadable)?;
    outcome.judge_calibration = ended.judge.clone();
    let mut end = EvalEnd {
        outcome,
        write_errors: Vec::new(),
    };
    end.write_reports(settings, started_at, store)?;
    let printed = match settings.output.format {
        EvalFormat::Ndjson => {
            let printed = print_ndjson((mode, settings.pass_threshold), &end.outcome, store);
            if every_turn_scripted(settings, &end.outcome.totals) && !settings.output.quiet {
                promptlab::text::eprintln_or_drop!("warning: {SCRIPTED_WARNING}");
            }
            printed
        }
        EvalFormat::Pretty => print_pretty(settings, mode, &end),
    };
    // A reader gone before the summary (`| head`) does not end the run: its
    // verdict and its record in the index still stand.
    crate::cli::error::unless_stdout_closed(printed)?;
    for error in &end.write_errors {
        promptlab::text::eprintln_or_drop!("error: {}", printable(error));
    }
    if let Err(error) = end.outcome.record(mode, (started_at, runs_dir), store) {
        promptlab::text::eprintln_or_drop!(
            "warning: eval run {} not kept in {}'s history: {error}",
            plan.eval_run,
            runs_dir.display()
        );
    }
    Ok(end.outcome.exit)
}

/// Said when no turn of the eval reached a model.
pub const SCRIPTED_WARNING: &str = "every turn was scripted (--provider script): the answers come \
from the script, which ignores the prompt, so this eval cannot detect a prompt regression; it \
checks the tools, the loop and the expectations";

/// Whether every turn ran on the script provider (results merged from
/// `--report` logs are not known to be scripted).
fn every_turn_scripted(settings: &EvalSettings, totals: &RunTotals) -> bool {
    settings.model.provider == ProviderKind::Script && totals.turns > 0 && totals.from_logs == 0
}

impl EvalEnd<'_> {
    /// `--junit` and `--markdown-summary`, each written whole or not at
    /// all; the JUnit streamed from the spill into its file.
    fn write_reports(
        &mut self,
        settings: &EvalSettings,
        started_at: DateTime<Utc>,
        store: &mut ResultStore,
    ) -> Result<(), CliError> {
        if let Some(path) = &settings.output.junit {
            let context = JunitContext {
                started_at,
                not_run_reason: self.outcome.not_run_reason(),
                shard: self
                    .outcome
                    .plan
                    .selection
                    .shard
                    .map(|s| format!("{}/{}", s.index, s.count)),
                judge_calibration: (self.outcome.judge_calibration.as_ref()).map(|c| c.line()),
            };
            let (plan, counts) = (self.outcome.plan, &self.outcome.totals.junit);
            let folds = folds(plan, settings.pass_threshold, store).map_err(unreadable)?;
            let mut spilled = None;
            let written = write_whole_with(path, |out| {
                match write_junit(plan, counts, folds, &context, out) {
                    Ok(()) => Ok(()),
                    Err(JunitError::Write(error)) => Err(error.to_string()),
                    Err(JunitError::Spill(error)) => {
                        let problem = error.to_string();
                        spilled = Some(error);
                        Err(problem)
                    }
                }
            });
            if let Some(error) = spilled {
                return Err(unreadable(error));
            }
            self.report_written("JUnit", path, written);
        }
        if let Some(path) = &settings.output.markdown_summary {
            let sent = level_sent(settings);
            let markdown =
                super::markdown::markdown(&self.outcome, &sent, settings.output.show_failures);
            self.report_written("Markdown summary", path, write_whole(path, &markdown));
        }
        Ok(())
    }

    fn report_written(&mut self, what: &str, path: &Path, written: Result<(), String>) {
        if let Err(error) = written {
            self.write_errors.push(format!(
                "failed to write the {what} `{}`: {error}",
                path.display()
            ));
            self.outcome.failed();
        }
    }

    /// `12 turns: 10 passed, 1 failed, 1 errored`, and what else must be said.
    fn tail(&self, settings: &EvalSettings) -> String {
        let (outcome, totals) = (&self.outcome, &self.outcome.totals);
        let mut tail = format!(
            "{} turns: {} passed, {} failed, {} errored",
            totals.turns, totals.passed, totals.failed, totals.errored
        );
        if let Some(shard) = outcome.plan.selection.shard {
            let whole = outcome.plan.unsharded_count();
            let selected = outcome.plan.selected().count();
            tail = format!("{} · {tail}", shard_line(shard, selected, whole));
        }
        if !totals.logs_lost.is_empty() {
            let _ = write!(
                tail,
                " · {} run logs lost (counted as errors)",
                totals.logs_lost.len()
            );
        }
        if let Some(stop) = outcome.stop {
            let what = if stop == Exit::Terminated {
                "terminated"
            } else {
                "cancelled"
            };
            let _ = write!(
                tail,
                " · {what} with {} of {} turns not run",
                totals.not_run,
                totals.turns + totals.not_run
            );
        }
        if let Some(calls) = outcome
            .budget
            .map(Budget::unenforced_calls)
            .filter(|n| *n > 0)
        {
            let noun = if calls == 1 { "call" } else { "calls" };
            let _ = write!(
                tail,
                " · the budget cannot be enforced for {calls} {noun} (usage not reported by the server)"
            );
        }
        if let Some(budget) = outcome.budget_reached() {
            let _ = write!(
                tail,
                " · budget of {} reached ({} spent): {} of {} turns not run",
                format_usd(budget.limit_usd()),
                format_usd(budget.spent_usd()),
                totals.not_run,
                totals.turns + totals.not_run
            );
        }
        if let Some(quota) = &outcome.quota_spent {
            let _ = write!(
                tail,
                " · a quota is spent ({}): {} of {} turns not run; run the same command with --resume once it resets",
                promptlab::text::one_line(quota, 300),
                totals.not_run,
                totals.turns + totals.not_run
            );
        }
        for limits in &outcome.rate_limits {
            let _ = write!(tail, " · {}", rate_limit_line(limits));
        }
        tail.push_str(&advisory_rubric(totals));
        if let Some(rate) = settings.min_pass_rate {
            let _ = write!(tail, " · minimum pass rate {:.1}%", rate * 100.0);
        }
        if let Some(path) = &settings.output.junit
            && !self.write_errors.iter().any(|e| e.contains("JUnit"))
        {
            let _ = write!(tail, " · JUnit written to {}", path.display());
        }
        tail
    }
}

/// The turn records of turns read from logs, each claim × case's record and
/// the summary; `pass_threshold`: `--pass-threshold`, for the folds.
fn print_ndjson(
    (mode, pass_threshold): (&EvalMode, f64),
    outcome: &EvalOutcome,
    store: &mut ResultStore,
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    let plan = outcome.plan;
    // Turns judged from their logs (merged, resumed, re-scored) were not
    // streamed while running: their records come here, before the folds.
    if mode.reads_logs() && outcome.totals.from_logs > 0 {
        for result in checked(plan, store).map_err(unreadable)? {
            let result = result.map_err(unreadable)?;
            if result.from_log {
                write_record(&mut out, &EvalRecord::Turn(TurnRecord::of(plan, &result)))?;
            }
        }
    }
    for read in folds(plan, pass_threshold, store).map_err(unreadable)? {
        if let Folded::Case(fold) = read.map_err(unreadable)? {
            write_record(&mut out, &EvalRecord::Case(CaseRecord::of(plan, &fold)))?;
        }
    }
    write_record(&mut out, &EvalRecord::Summary(outcome.summary_record(mode)))?;
    Ok(())
}

fn print_pretty(settings: &EvalSettings, mode: &EvalMode, end: &EvalEnd) -> Result<(), CliError> {
    let outcome = &end.outcome;
    let style = Style::for_stdout();
    let mut out = std::io::stdout().lock();
    let plan = outcome.plan;
    let totals = &outcome.totals;
    let fitted = summary_table(&totals.summaries, &level_sent(settings), terminal_width());
    let title = format!(
        "Suite {} · {}",
        plan.suite.name,
        super::eval_run::eval_run_line(mode, plan, &totals.from_runs)
    );
    writeln!(out, "{}\n{}", style.bold(&printable(&title)), fitted)?;
    write_hidden(&mut out, &fitted.hidden, "--format ndjson")?;
    for line in judging_lines(&totals.summaries, plan) {
        writeln!(out, "{}", printable(&line))?;
    }
    if let Some(calibration) = &outcome.judge_calibration {
        let line = printable(&calibration.line());
        match calibration.decides {
            true => writeln!(out, "{line}")?,
            false => writeln!(out, "{}", style.yellow(&line))?,
        }
    }
    if settings.output.by == Some(super::by_tag::ByGroup::Tag) {
        super::by_tag::write_by_tag(&mut out, &totals.tags)?;
    }
    if totals.failing_count > 0 {
        writeln!(out, "\n{}", style.bold("Failures:"))?;
        for result in totals.failing.iter().take(settings.output.show_failures) {
            let mark = match result.verdict.outcome {
                Outcome::Error => style.red("error"),
                _ => style.red("fail"),
            };
            writeln!(out, "{mark} {}", printable(&turn_label(plan, result)))?;
            for failure in &result.verdict.failures {
                writeln!(out, "    - {}", printable(failure))?;
            }
            if let Some(path) = &result.run_log {
                let line = format!("run log: {}", path.display());
                writeln!(out, "    {}", style.dim(&line))?;
            }
        }
        if totals.failing_count > settings.output.show_failures {
            let more = totals.failing_count - settings.output.show_failures;
            writeln!(out, "… and {more} more (--show-failures N lists more)")?;
        }
    }
    for lost in &totals.logs_lost {
        writeln!(out, "{}", style.red(&format!("run log lost: {lost}")))?;
    }
    if every_turn_scripted(settings, totals) {
        let warning = format!("\nwarning: {SCRIPTED_WARNING}");
        writeln!(out, "{}", style.yellow(&warning))?;
    }
    let tail = end.tail(settings);
    let tail = if outcome.exit == Exit::Success {
        style.green(&tail)
    } else {
        style.red(&tail)
    };
    writeln!(out, "\n{tail}")?;
    Ok(())
}

/// `gemini-3.1-flash-lite: 80 × 429 in 6 episodes, 95.2 s waited, 12.0 s
/// queued; calls at once 32 → 25 → 20 → 21`.
fn rate_limit_line(limits: &promptlab::provider::transport::RateLimits) -> String {
    let mut steps = vec![limits.ceiling.to_string()];
    steps.extend(limits.history.iter().map(|change| change.limit.to_string()));
    steps.dedup();
    const SHOWN: usize = 12;
    if steps.len() > SHOWN {
        let last = steps.len() - 1;
        steps = [&steps[..SHOWN - 1], &["…".to_string(), steps[last].clone()]].concat();
    }
    format!("{limits}; calls at once {}", steps.join(" → "))
}

/// ` · 3 failed only the rubric of a judge that is not calibrated: …`,
/// when the gate kept rubric failures from the exit code (SPEC §15).
fn advisory_rubric(totals: &RunTotals) -> String {
    match totals.rubric_advisory.iter().sum::<usize>() {
        0 => String::new(),
        advisory => format!(
            " · {advisory} failed only the rubric of a judge that is not calibrated: not counted \
             for the exit code"
        ),
    }
}

/// What tells whether a variant's level reached its model.
fn level_sent(settings: &EvalSettings) -> LevelSent<'_> {
    LevelSent {
        run_provider: settings.model.provider,
        models: &settings.tables.models,
    }
}
