//! JUnit XML for CI, valid against `junit-10.xsd` (the schema Jenkins'
//! xUnit plugin validates with; GitLab and GitHub read the same shape): one
//! testsuite per variant, one testcase per claim × case with its repeats
//! folded into a pass rate. A testcase that did not pass is a `<failure>`
//! when a sample failed its expectations, an `<error>` when samples only
//! errored (nothing could be judged), and `<skipped>` when none of its
//! samples ran; its `message` (what CI widgets headline) is the first unmet
//! expectation, the rest is in its body.
//!
//! Written by the small typed writer in `junit/xml.rs`: `quick-junit` always
//! writes `skipped` and `timestamp` on `<testsuites>`, which that schema
//! does not allow.

mod xml;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use self::xml::{Report, Status, Suite, TestCase};
use super::expect::Outcome;
use super::fold::{Threshold, threshold_of};
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
use super::runner::TurnResult;

/// How much of an answer a testcase's `<system-out>` carries.
pub const ANSWER_CHARS: usize = 2_000;

/// What the report needs beyond the results.
pub struct JunitContext<'a> {
    /// The share of a case's repeats that must pass, for a case that sets
    /// no `passThreshold` or `minPasses` of its own.
    pub threshold: f64,
    pub started_at: DateTime<Utc>,
    /// Selected turns that never ran (a cancelled run, a reached budget).
    pub not_run: &'a [TurnSpec],
    /// Why they did not run: `cancelled`, `budget reached`.
    pub not_run_reason: &'a str,
    /// `I/N` when this run is one shard.
    pub shard: Option<String>,
}

/// One claim × case: its samples that ran and those that did not.
#[derive(Default)]
struct CaseSamples<'a> {
    case: usize,
    ran: Vec<&'a TurnResult>,
    not_run: usize,
}

pub fn junit_xml(
    plan: &EvalPlan,
    results: &[TurnResult],
    context: &JunitContext,
) -> Result<String, std::io::Error> {
    let suites = (0..plan.matrix.variants.len())
        .map(|index| test_suite(plan, results, context, index))
        .collect();
    Report {
        name: plan.suite.name.clone(),
        suites,
    }
    .to_xml()
}

/// The testsuite of variant `index`: its properties and one testcase per
/// claim × case.
fn test_suite(
    plan: &EvalPlan,
    results: &[TurnResult],
    context: &JunitContext,
    index: usize,
) -> Suite {
    let variant = &plan.matrix.variants[index];
    let mut cases: BTreeMap<(usize, String), CaseSamples> = BTreeMap::new();
    for spec in context.not_run.iter().filter(|s| s.variant == index) {
        let samples = cases.entry(place(plan, spec)).or_default();
        samples.case = spec.case;
        samples.not_run += 1;
    }
    for result in results.iter().filter(|r| r.spec.variant == index) {
        let samples = cases.entry(place(plan, &result.spec)).or_default();
        samples.case = result.spec.case;
        samples.ran.push(result);
    }
    let mut properties = vec![
        ("eval-run", plan.eval_run.clone()),
        ("fingerprint", variant.fingerprint.to_string()),
        ("model", variant.model.model.to_string()),
        (
            "thinking-level",
            variant.model.thinking_level.as_str().to_string(),
        ),
    ];
    if variant.model.forced {
        properties.push(("force-thinking-level", "true".to_string()));
    }
    // A variant's own provider (docs/providers.md); else the run's.
    if let Some(provider) = variant.model.provider {
        properties.push(("provider", provider.name().to_string()));
    }
    if let Some(shard) = &context.shard {
        properties.push(("shard", shard.clone()));
    }
    for ignored in &variant.ignored {
        properties.push(("ignored-override", ignored.to_string()));
    }
    let classname = format!("{}.{}", plan.suite.name, variant.name);
    let cases = cases
        .iter()
        .map(|((_, name), samples)| {
            let threshold = threshold_of(plan, samples.case, context.threshold);
            let total = (samples.ran.len() + samples.not_run) as u32;
            let required = threshold.required(total, plan.suite.repeats());
            test_case(
                name,
                &classname,
                samples,
                (threshold, required),
                context.not_run_reason,
            )
        })
        .collect();
    Suite {
        name: format!("{} / {}", plan.suite.name, variant.name),
        timestamp: context.started_at,
        properties: properties
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
        cases,
    }
}

/// Sorts testcases in matrix order; names them `claim · case`.
fn place(plan: &EvalPlan, spec: &TurnSpec) -> (usize, String) {
    let first_index = spec.index - (spec.sample as usize - 1);
    let name = format!(
        "{} · {}",
        spec.claim_id, plan.suite.suite.cases[spec.case].name
    );
    (first_index, name)
}

/// A testcase passes when its passes reach the case's own threshold.
fn test_case(
    name: &str,
    classname: &str,
    samples: &CaseSamples,
    (threshold, required): (Threshold, u32),
    not_run_reason: &str,
) -> TestCase {
    let ran = &samples.ran;
    let passed = ran
        .iter()
        .filter(|r| r.verdict.outcome == Outcome::Pass)
        .count();
    let status = if ran.is_empty() {
        Status::Skipped {
            message: format!("not run: {not_run_reason}"),
        }
    } else if passed as u32 >= required {
        Status::Passed
    } else {
        let counts = format!(
            "{passed} of {} samples passed (pass rate {:.0}%); {required} needed (threshold: {})",
            ran.len(),
            passed as f64 * 100.0 / ran.len() as f64,
            threshold.describe()
        );
        let failed = ran.iter().any(|r| r.verdict.outcome == Outcome::Fail);
        let first = first_problem(ran, failed).unwrap_or_else(|| counts.clone());
        let body = format!("{counts}\n{}", problems(ran));
        if failed {
            Status::Failed {
                message: first,
                body,
            }
        } else {
            Status::Errored {
                message: first,
                body,
            }
        }
    };
    let millis = ran
        .iter()
        .map(|r| r.observation.latency_ms)
        .fold(0u64, u64::saturating_add);
    TestCase {
        name: name.to_string(),
        classname: classname.to_string(),
        time: Duration::from_millis(millis),
        status,
        system_out: system_out(ran, samples.not_run, not_run_reason),
    }
}

/// The first unmet expectation of the first failed sample (of the first
/// errored one when none failed): what a CI widget headlines.
fn first_problem(ran: &[&TurnResult], failed: bool) -> Option<String> {
    let wanted = if failed {
        Outcome::Fail
    } else {
        Outcome::Error
    };
    ran.iter()
        .filter(|r| r.verdict.outcome == wanted)
        .find_map(|r| r.verdict.failures.first())
        .map(|failure| crate::text::one_line(failure, crate::text::QUOTE_CHARS))
}

/// Each sample that did not pass, and why.
fn problems(ran: &[&TurnResult]) -> String {
    let mut text = String::new();
    for sample in ran.iter().filter(|r| r.verdict.outcome != Outcome::Pass) {
        text.push_str(&format!(
            "sample {} ({}):\n",
            sample.spec.sample,
            sample.verdict.outcome.as_str()
        ));
        for failure in &sample.verdict.failures {
            text.push_str(&format!("  - {}\n", failure));
        }
    }
    text
}

/// Each sample's verdict, run log and answer.
fn system_out(ran: &[&TurnResult], not_run: usize, not_run_reason: &str) -> String {
    let mut text = String::new();
    for sample in ran {
        let log = sample
            .run_log
            .as_ref()
            .map_or("not written".to_string(), |p| p.display().to_string());
        let answer: String = sample
            .observation
            .answer
            .chars()
            .take(ANSWER_CHARS)
            .collect();
        let cut = if sample.observation.answer.chars().count() > ANSWER_CHARS {
            "…"
        } else {
            ""
        };
        text.push_str(&format!(
            "sample {}: {}\nrun log: {log}\nanswer: {}{cut}\n\n",
            sample.spec.sample,
            sample.verdict.outcome.as_str(),
            answer
        ));
    }
    if not_run > 0 {
        text.push_str(&format!("{not_run} samples not run: {not_run_reason}\n"));
    }
    text
}
