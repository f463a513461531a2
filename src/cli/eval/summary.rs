//! The end of an eval: the exit code, the JUnit and Markdown reports, and
//! the summary (a table and the failures, or an NDJSON record).

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};

use promptlab::cost::format_usd;
use promptlab::eval::budget::Budget;
use promptlab::eval::fold::{CaseFold, CaseOutcome, fold_cases};
use promptlab::eval::junit::{JunitContext, junit_xml};
use promptlab::eval::report::{
    BudgetRecord, CaseRecord, EvalRecord, SummaryRecord, TurnRecord, VariantSummary,
    in_matrix_order, not_run, shard_line, summarize, turn_label, turns_from_runs,
};
use promptlab::eval::{EvalPlan, Outcome, TurnResult};
use promptlab::markdown::{CELL_CHARS, code, code_in_table, inline};
use promptlab::sink::{Style, printable};
use promptlab::table::terminal_width;

use super::EvalFormat;
use super::mode::EvalMode;
use super::progress::write_record;
use super::settings::EvalSettings;
use super::summary_table::{judging_lines, model_text, seconds, summary_table};
use crate::cli::error::{CliError, Exit};
use crate::cli::model::ProviderKind;
use crate::cli::output::write_hidden;

/// Everything the summary says, computed once.
struct EvalEnd<'a> {
    plan: &'a EvalPlan,
    results: Vec<TurnResult>,
    /// Each case's repeats on each claim, folded by its threshold.
    folds: Vec<CaseFold>,
    summaries: Vec<VariantSummary>,
    not_run: usize,
    logs_lost: Vec<String>,
    stop: Option<Exit>,
    /// `--max-cost`, when it held turns back.
    budget: Option<&'a Budget>,
    exit: Exit,
    /// A report file that could not be written.
    write_errors: Vec<String>,
}

/// Summary, failures, reports and the exit code; `(started_at, runs_dir)`:
/// when the run started and the runs folder its summary is kept in.
pub fn finish(
    settings: &EvalSettings,
    mode: &EvalMode,
    plan: &EvalPlan,
    mut results: Vec<TurnResult>,
    stop: Option<Exit>,
    (started_at, runs_dir): (DateTime<Utc>, &std::path::Path),
    budget: Option<&Budget>,
) -> Result<Exit, CliError> {
    in_matrix_order(&mut results);
    let summaries = summarize(plan, &results, settings.pass_threshold);
    let missing = not_run(plan, &results);
    let logs_lost: Vec<String> = results
        .iter()
        .filter_map(|r| {
            r.log_error
                .as_ref()
                .map(|e| format!("{}: {e}", turn_label(plan, r)))
        })
        .collect();
    let folds = fold_cases(plan, &results, settings.pass_threshold);
    let mut exit = exit_code(settings, &summaries, &folds, &logs_lost, stop);
    if budget.is_some() && exit == Exit::Success {
        // Turns that did not run were not judged: the run cannot pass.
        exit = Exit::Failure;
    }
    let mut outcome = EvalEnd {
        plan,
        budget,
        exit,
        folds,
        results,
        summaries,
        not_run: missing.len(),
        logs_lost,
        stop,
        write_errors: Vec::new(),
    };
    outcome.write_reports(settings, started_at, &missing);
    match settings.output.format {
        EvalFormat::Ndjson => {
            print_ndjson(mode, &outcome)?;
            if every_turn_scripted(settings, &outcome.results) && !settings.output.quiet {
                eprintln!("warning: {SCRIPTED_WARNING}");
            }
        }
        EvalFormat::Pretty => print_pretty(settings, mode, &outcome)?,
    }
    for error in &outcome.write_errors {
        eprintln!("error: {}", printable(error));
    }
    // The eval run's summary file and index rows (#30, `evals list`).
    crate::cli::evals::record_eval_run(
        runs_dir,
        &summary_record(mode, &outcome),
        started_at,
        &outcome.results,
    );
    Ok(outcome.exit)
}

/// Said when no turn of the eval reached a model.
pub const SCRIPTED_WARNING: &str = "every turn was scripted (--provider script): the answers come \
from the script, which ignores the prompt, so this eval cannot detect a prompt regression; it \
checks the tools, the loop and the expectations";

/// Whether every turn ran on the script provider (results merged from
/// `--report` logs are not known to be scripted).
fn every_turn_scripted(settings: &EvalSettings, results: &[TurnResult]) -> bool {
    settings.model.provider == ProviderKind::Script
        && !results.is_empty()
        && results.iter().all(|result| !result.from_log)
}

/// Ctrl-C or SIGTERM first; then 1 for a lost log or a report not written;
/// then any case whose repeats did not reach its threshold (by default:
/// any turn that did not pass) — or, with `--min-pass-rate`, a variant below it.
fn exit_code(
    settings: &EvalSettings,
    summaries: &[VariantSummary],
    folds: &[CaseFold],
    logs_lost: &[String],
    stop: Option<Exit>,
) -> Exit {
    if let Some(stop) = stop {
        return stop;
    }
    let below = match settings.min_pass_rate {
        Some(rate) => summaries
            .iter()
            .any(|s| s.turns == 0 || s.pass_rate + 1e-9 < rate),
        None => folds.iter().any(|f| f.outcome != CaseOutcome::Pass),
    };
    if below || !logs_lost.is_empty() {
        Exit::Failure
    } else {
        Exit::Success
    }
}

impl EvalEnd<'_> {
    /// `--junit` and `--markdown-summary`, each written whole or not at all.
    fn write_reports(
        &mut self,
        settings: &EvalSettings,
        started_at: DateTime<Utc>,
        missing: &[promptlab::eval::TurnSpec],
    ) {
        if let Some(path) = &settings.output.junit {
            let context = JunitContext {
                threshold: settings.pass_threshold,
                started_at,
                not_run: missing,
                not_run_reason: if self.budget.is_some() {
                    "budget reached"
                } else {
                    "cancelled"
                },
                shard: self
                    .plan
                    .selection
                    .shard
                    .map(|s| format!("{}/{}", s.index, s.count)),
            };
            let xml = junit_xml(self.plan, &self.results, &context).map_err(|e| e.to_string());
            self.report_write("JUnit", path, xml);
        }
        if let Some(path) = &settings.output.markdown_summary {
            let markdown = Ok(markdown(self, settings.output.show_failures));
            self.report_write("Markdown summary", path, markdown);
        }
    }

    fn report_write(&mut self, what: &str, path: &Path, contents: Result<String, String>) {
        let written = contents.and_then(|text| write_atomically(path, &text));
        if let Err(error) = written {
            self.write_errors.push(format!(
                "failed to write the {what} `{}`: {error}",
                path.display()
            ));
            if self.exit == Exit::Success {
                self.exit = Exit::Failure;
            }
        }
    }

    fn failing(&self) -> Vec<&TurnResult> {
        self.results
            .iter()
            .filter(|r| r.verdict.outcome != Outcome::Pass)
            .collect()
    }

    /// `12 turns: 10 passed, 1 failed, 1 errored`, and what else must be said.
    fn tail(&self, settings: &EvalSettings) -> String {
        let count = |o| {
            self.results
                .iter()
                .filter(|r| r.verdict.outcome == o)
                .count()
        };
        let mut tail = format!(
            "{} turns: {} passed, {} failed, {} errored",
            self.results.len(),
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Error)
        );
        if let Some(shard) = self.plan.selection.shard {
            let whole = self.plan.unsharded_count();
            let selected = self.plan.selected().count();
            tail = format!("{} · {tail}", shard_line(shard, selected, whole));
        }
        if !self.logs_lost.is_empty() {
            let _ = write!(
                tail,
                " · {} run logs lost (counted as errors)",
                self.logs_lost.len()
            );
        }
        if let Some(stop) = self.stop {
            let what = if stop == Exit::Terminated {
                "terminated"
            } else {
                "cancelled"
            };
            let _ = write!(
                tail,
                " · {what} with {} of {} turns not run",
                self.not_run,
                self.results.len() + self.not_run
            );
        }
        if let Some(budget) = self.budget {
            let _ = write!(
                tail,
                " · budget of {} reached ({} spent): {} of {} turns not run",
                format_usd(budget.limit_usd()),
                format_usd(budget.spent_usd()),
                self.not_run,
                self.results.len() + self.not_run
            );
        }
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

fn print_ndjson(mode: &EvalMode, outcome: &EvalEnd) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    // Turns judged from their logs (merged, resumed, re-scored) were not
    // streamed while running: their records come here, before the folds.
    if mode.reads_logs() {
        for result in outcome.results.iter().filter(|r| r.from_log) {
            write_record(
                &mut out,
                &EvalRecord::Turn(TurnRecord::of(outcome.plan, result)),
            )?;
        }
    }
    let plan = outcome.plan;
    for fold in &outcome.folds {
        write_record(&mut out, &EvalRecord::Case(CaseRecord::of(plan, fold)))?;
    }
    write_record(
        &mut out,
        &EvalRecord::Summary(summary_record(mode, outcome)),
    )?;
    Ok(())
}

/// The NDJSON `summary` record (also kept in the runs folder's history).
fn summary_record(mode: &EvalMode, outcome: &EvalEnd) -> SummaryRecord {
    let plan = outcome.plan;
    SummaryRecord {
        suite: plan.suite.name.clone(),
        eval_run: plan.eval_run.clone(),
        run_kind: mode.run_kind(),
        from_runs: turns_from_runs(&outcome.results),
        shard: plan
            .selection
            .shard
            .map(|s| format!("{}/{}", s.index, s.count)),
        turns: outcome.results.len(),
        planned: outcome.results.len() + outcome.not_run,
        not_run: outcome.not_run,
        logs_lost: outcome.logs_lost.len(),
        cancelled: outcome.stop.is_some(),
        budget_reached: outcome.budget.map(|b| BudgetRecord {
            limit_usd: b.limit_usd(),
            spent_usd: b.spent_usd(),
        }),
        variants: outcome.summaries.clone(),
        tags: promptlab::eval::tags::summarize_tags(plan, &outcome.results),
        warnings: super::preflight::override_warnings(plan),
        exit: outcome.exit.number(),
    }
}

fn print_pretty(
    settings: &EvalSettings,
    mode: &EvalMode,
    outcome: &EvalEnd,
) -> Result<(), CliError> {
    let style = Style::for_stdout();
    let mut out = std::io::stdout().lock();
    let plan = outcome.plan;
    let fitted = summary_table(&outcome.summaries, terminal_width());
    let title = format!(
        "Suite {} · {}",
        plan.suite.name,
        super::eval_run::eval_run_line(mode, plan, &outcome.results)
    );
    writeln!(out, "{}\n{}", style.bold(&printable(&title)), fitted)?;
    write_hidden(&mut out, &fitted.hidden, "--format ndjson")?;
    for line in judging_lines(&outcome.summaries, plan) {
        writeln!(out, "{}", printable(&line))?;
    }
    if settings.output.by == Some(super::by_tag::ByGroup::Tag) {
        let tags = promptlab::eval::tags::summarize_tags(plan, &outcome.results);
        super::by_tag::write_by_tag(&mut out, &tags)?;
    }
    let failing = outcome.failing();
    if !failing.is_empty() {
        writeln!(out, "\n{}", style.bold("Failures:"))?;
        for result in failing.iter().take(settings.output.show_failures) {
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
        if failing.len() > settings.output.show_failures {
            let more = failing.len() - settings.output.show_failures;
            writeln!(out, "… and {more} more (--show-failures N lists more)")?;
        }
    }
    for lost in &outcome.logs_lost {
        writeln!(out, "{}", style.red(&format!("run log lost: {lost}")))?;
    }
    if every_turn_scripted(settings, &outcome.results) {
        let warning = format!("\nwarning: {SCRIPTED_WARNING}");
        writeln!(out, "{}", style.yellow(&warning))?;
    }
    let tail = outcome.tail(settings);
    let tail = if outcome.exit == Exit::Success {
        style.green(&tail)
    } else {
        style.red(&tail)
    };
    writeln!(out, "\n{tail}")?;
    Ok(())
}

/// The summary as Markdown, for `$GITHUB_STEP_SUMMARY` or a merge request.
fn markdown(outcome: &EvalEnd, show_failures: usize) -> String {
    let plan = outcome.plan;
    let mut md = String::new();
    let mark = if outcome.exit == Exit::Success {
        "✅"
    } else {
        "❌"
    };
    let _ = writeln!(
        md,
        "## {mark} Eval {}\n",
        code(&plan.suite.name, CELL_CHARS)
    );
    let _ = writeln!(
        md,
        "| variant | fingerprint | model | turns | passed | failed | errors | pass rate (95% CI) | tokens in/out | latency p50/p95 |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &outcome.summaries {
        let interval = s.pass_rate_interval.map_or(String::new(), |(low, high)| {
            format!(" ({:.0}–{:.0}%)", low * 100.0, high * 100.0)
        });
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1}%{interval} | {}/{} | {} / {} |",
            md_cell(&s.variant),
            code_in_table(&s.fingerprint, CELL_CHARS),
            md_cell(&model_text(s)),
            s.turns,
            s.passed,
            s.failed,
            s.errors,
            s.pass_rate * 100.0,
            s.input_tokens,
            s.output_tokens,
            seconds(s.latency_p50_ms),
            seconds(s.latency_p95_ms)
        );
    }
    md.push_str(&super::by_tag::tag_markdown(
        &promptlab::eval::tags::summarize_tags(plan, &outcome.results),
    ));
    let lines = judging_lines(&outcome.summaries, plan);
    if !lines.is_empty() {
        md.push('\n');
    }
    for line in lines {
        let _ = writeln!(md, "- {}", md_cell(&line));
    }
    for s in &outcome.summaries {
        for ignored in &s.ignored_overrides {
            let _ = writeln!(
                md,
                "\n> ⚠️ variant {}: {}",
                code(&s.variant, CELL_CHARS),
                md_cell(ignored)
            );
        }
    }
    let failing = outcome.failing();
    if !failing.is_empty() {
        let _ = writeln!(md, "\n### Failures ({})\n", failing.len());
        for result in failing.iter().take(show_failures) {
            let _ = writeln!(
                md,
                "- **{}** {}: {}",
                result.verdict.outcome.as_str(),
                code(&turn_label(plan, result), CELL_CHARS),
                inline(&result.verdict.failures.join("; "), FAILURE_CHARS)
            );
        }
        if failing.len() > show_failures {
            let _ = writeln!(md, "- … and {} more", failing.len() - show_failures);
        }
    }
    for lost in &outcome.logs_lost {
        let _ = writeln!(md, "\n> ❌ run log lost: {}", md_cell(lost));
    }
    md
}

/// How much of a turn's failures the Markdown summary shows.
const FAILURE_CHARS: usize = 1_000;

fn md_cell(text: &str) -> String {
    inline(text, CELL_CHARS)
}

/// Writes a whole file or nothing: a temporary beside it, then a rename;
/// the temporary is removed when anything fails.
pub fn write_atomically(path: &Path, contents: &str) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("report");
    let temporary = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written =
        std::fs::write(&temporary, contents).and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error.to_string());
    }
    Ok(())
}
