//! An eval turn's verdict as its trace carries it (`docs/telemetry.md`):
//! the root span gets the eval run, suite, variant, case, sample and tags,
//! `promptlab.verdict` and the failures, and one `gen_ai.evaluation.result`
//! event per rubric criterion (its pass, score and reason) plus one for the
//! deterministic expectations together (pass, or the lines they failed with).

use crate::runs::record::RunLabels;
use crate::telemetry::Verdict as TraceVerdict;

use super::expect::Verdict;

/// The name of the event for the expectations other than rubric criteria.
pub const EXPECTATIONS: &str = "expectations";

pub fn trace_verdict(labels: &RunLabels, tags: &[String], verdict: &Verdict) -> TraceVerdict {
    let mut attributes = vec![
        ("promptlab.suite".to_string(), labels.suite.clone()),
        ("promptlab.variant".to_string(), labels.variant.clone()),
        ("promptlab.case".to_string(), labels.case.clone()),
        ("promptlab.sample".to_string(), labels.sample.to_string()),
    ];
    if let Some(run) = &labels.eval_run {
        attributes.push(("promptlab.eval_run".to_string(), run.clone()));
    }
    if !tags.is_empty() {
        attributes.push(("promptlab.tags".to_string(), tags.join(",")));
    }
    // Rubric criteria fail with lines of their own (`rubric "…": …`, expect.rs).
    let others: Vec<&String> = verdict
        .failures
        .iter()
        .filter(|line| !super::expect::is_rubric_line(line))
        .collect();
    let mut results: Vec<(String, bool, Option<f64>, Option<String>)> = verdict
        .rubric
        .iter()
        .map(|criterion| {
            let reason = criterion
                .error
                .clone()
                .or_else(|| Some(criterion.reason.clone()).filter(|r| !r.is_empty()));
            (
                criterion.criterion.clone(),
                criterion.pass == Some(true),
                criterion.score,
                reason,
            )
        })
        .collect();
    let lines = others
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    results.push((
        EXPECTATIONS.to_string(),
        others.is_empty(),
        None,
        Some(lines).filter(|l| !l.is_empty()),
    ));
    TraceVerdict {
        attributes,
        outcome: verdict.outcome.as_str().to_string(),
        failures: verdict.failures.clone(),
        results,
    }
}
