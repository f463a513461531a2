//! JUnit XML for CI (via `quick-junit`): one testsuite per variant, one
//! testcase per claim × case with its repeats folded into a pass rate.
//! A testcase that did not pass is a `<failure>` when a sample failed its
//! expectations, an `<error>` when samples only errored (nothing could be
//! judged), and `<skipped>` when none of its samples ran.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::expect::Outcome;
use super::fold::{Threshold, threshold_of};
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
use super::runner::TurnResult;

/// How much of an answer a testcase's `<system-out>` carries.
const ANSWER_CHARS: usize = 2_000;

/// What the report needs beyond the results.
pub struct JunitContext<'a> {
    /// The share of a case's repeats that must pass, for a case that sets
    /// no `passThreshold` or `minPasses` of its own.
    pub threshold: f64,
    pub started_at: DateTime<Utc>,
    /// Selected turns that never ran (a cancelled run).
    pub not_run: &'a [TurnSpec],
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
) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new(plan.suite.name.as_str());
    report.set_timestamp(context.started_at);
    for (index, variant) in plan.matrix.variants.iter().enumerate() {
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
        let mut suite = TestSuite::new(format!("{} / {}", plan.suite.name, variant.name));
        suite.set_timestamp(context.started_at);
        suite.add_property(Property::new("fingerprint", variant.fingerprint.as_str()));
        suite.add_property(Property::new("model", variant.model.model.as_str()));
        let level = variant.model.thinking_level.as_str();
        suite.add_property(Property::new("thinking-level", level));
        if variant.model.forced {
            suite.add_property(Property::new("force-thinking-level", "true"));
        }
        if let Some(shard) = &context.shard {
            suite.add_property(Property::new("shard", shard.as_str()));
        }
        for ignored in &variant.ignored {
            suite.add_property(Property::new("ignored-override", ignored.to_string()));
        }
        let classname = format!("{}.{}", plan.suite.name, variant.name);
        let mut time = Duration::ZERO;
        for ((_, name), samples) in &cases {
            let threshold = threshold_of(plan, samples.case, context.threshold);
            let total = (samples.ran.len() + samples.not_run) as u32;
            let required = threshold.required(total, plan.suite.repeats());
            let case = test_case(name, &classname, samples, (threshold, required));
            time += case.time.unwrap_or_default();
            suite.add_test_case(case);
        }
        suite.set_time(time);
        report.add_test_suite(suite);
    }
    report.to_string()
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
) -> TestCase {
    let ran = &samples.ran;
    let passed = ran
        .iter()
        .filter(|r| r.verdict.outcome == Outcome::Pass)
        .count();
    let status = if ran.is_empty() {
        let mut skipped = TestCaseStatus::skipped();
        skipped.set_message("not run: cancelled");
        skipped
    } else if passed as u32 >= required {
        TestCaseStatus::success()
    } else {
        let failed = ran.iter().any(|r| r.verdict.outcome == Outcome::Fail);
        let kind = if failed {
            NonSuccessKind::Failure
        } else {
            NonSuccessKind::Error
        };
        let mut status = TestCaseStatus::non_success(kind);
        status.set_message(format!(
            "{passed} of {} samples passed (pass rate {:.0}%); {required} needed (threshold: {})",
            ran.len(),
            passed as f64 * 100.0 / ran.len() as f64,
            threshold.describe()
        ));
        status.set_description(problems(ran));
        status
    };
    let mut case = TestCase::new(name, status);
    case.set_classname(classname);
    let seconds = ran
        .iter()
        .map(|r| r.observation.latency_ms)
        .fold(0u64, u64::saturating_add);
    case.set_time(Duration::from_millis(seconds));
    case.set_system_out(system_out(ran, samples.not_run));
    case
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
            text.push_str(&format!("  - {}\n", xml_safe(failure)));
        }
    }
    text
}

/// Each sample's verdict, run log and answer.
fn system_out(ran: &[&TurnResult], not_run: usize) -> String {
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
            xml_safe(&answer)
        ));
    }
    if not_run > 0 {
        text.push_str(&format!("{not_run} samples not run: cancelled\n"));
    }
    text
}

/// Characters XML 1.0 cannot carry are dropped (model text may hold them).
fn xml_safe(text: &str) -> String {
    text.chars()
        .filter(|c| matches!(c, '\n' | '\t' | '\r') || !c.is_control())
        .collect()
}
