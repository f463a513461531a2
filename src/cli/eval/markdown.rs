//! The end of an eval as Markdown (`--markdown-summary`, e.g.
//! `$GITHUB_STEP_SUMMARY`): the variants' table, tags, judging, the first
//! failures and the lost logs — all from the run's totals.

use std::fmt::Write as _;

use promptlab::eval::report::turn_label;
use promptlab::markdown::{CELL_CHARS, code, code_in_table, inline};

use super::summary_table::{LevelSent, judging_lines, model_text, seconds};
use crate::cli::error::Exit;
use promptlab::eval::outcome::EvalOutcome;

/// The summary as Markdown, for `$GITHUB_STEP_SUMMARY` or a merge request.
pub fn markdown(outcome: &EvalOutcome, sent: &LevelSent, show_failures: usize) -> String {
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
    for s in &outcome.totals.summaries {
        let interval = s.pass_rate_interval.map_or(String::new(), |(low, high)| {
            format!(" ({:.0}–{:.0}%)", low * 100.0, high * 100.0)
        });
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1}%{interval} | {} | {} / {} |",
            md_cell(&s.variant),
            code_in_table(&s.fingerprint, CELL_CHARS),
            md_cell(&model_text(s, sent.of(s))),
            s.turns,
            s.passed,
            s.failed,
            s.errors,
            s.pass_rate * 100.0,
            s.usage.in_out(),
            seconds(s.latency_p50_ms),
            seconds(s.latency_p95_ms)
        );
    }
    md.push_str(&super::by_tag::tag_markdown(&outcome.totals.tags));
    let lines = judging_lines(&outcome.totals.summaries, plan);
    let calibration = outcome.judge_calibration.as_ref().map(|c| c.line());
    if !lines.is_empty() || calibration.is_some() {
        md.push('\n');
    }
    for line in lines {
        let _ = writeln!(md, "- {}", md_cell(&line));
    }
    // Whole: it ends with the command that calibrates the judge.
    if let Some(line) = calibration {
        let _ = writeln!(md, "- {}", inline(&line, line.chars().count()));
    }
    for s in &outcome.totals.summaries {
        for ignored in &s.ignored_overrides {
            let _ = writeln!(
                md,
                "\n> ⚠️ variant {}: {}",
                code(&s.variant, CELL_CHARS),
                md_cell(ignored)
            );
        }
    }
    let totals = &outcome.totals;
    write_failures(&mut md, outcome, show_failures);
    for lost in &totals.logs_lost {
        let _ = writeln!(md, "\n> ❌ run log lost: {}", md_cell(lost));
    }
    md
}

/// The failing turns, at most `show_failures` of them, each with its run
/// log: a CI summary is read far from the runner.
fn write_failures(md: &mut String, outcome: &EvalOutcome, show_failures: usize) {
    let (plan, totals) = (outcome.plan, &outcome.totals);
    if totals.failing_count == 0 {
        return;
    }
    let _ = writeln!(md, "\n### Failures ({})\n", totals.failing_count);
    for result in totals.failing.iter().take(show_failures) {
        let log = result.run_log.as_ref().map_or(String::new(), |path| {
            format!(
                " (run log {})",
                code(&path.display().to_string(), CELL_CHARS)
            )
        });
        let _ = writeln!(
            md,
            "- **{}** {}: {}{log}",
            result.verdict.outcome.as_str(),
            code(&turn_label(plan, result), CELL_CHARS),
            inline(&result.verdict.failures.join("; "), FAILURE_CHARS)
        );
    }
    if totals.failing_count > show_failures {
        let _ = writeln!(md, "- … and {} more", totals.failing_count - show_failures);
    }
}

/// How much of a turn's failures the Markdown summary shows.
const FAILURE_CHARS: usize = 1_000;

fn md_cell(text: &str) -> String {
    inline(text, CELL_CHARS)
}
