//! Summaries of a suite's results: per-variant statistics, the failures with
//! what was seen, and JUnit XML for CI.

use std::fmt::Write as _;

use serde::Serialize;

use super::expect::Outcome;
use super::runner::{EvalPlan, TurnResult};
use crate::stats::percentile;

/// One variant's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantSummary {
    pub variant: String,
    pub fingerprint: String,
    pub turns: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// passed / turns.
    pub pass_rate: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    /// cache read / input tokens.
    pub cache_read_share: f64,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
}

pub fn summarize(plan: &EvalPlan, results: &[TurnResult]) -> Vec<VariantSummary> {
    plan.matrix
        .variants
        .iter()
        .enumerate()
        .map(|(index, variant)| {
            let mine: Vec<&TurnResult> =
                results.iter().filter(|r| r.spec.variant == index).collect();
            let count = |outcome| mine.iter().filter(|r| r.verdict.outcome == outcome).count();
            let sum = |f: fn(&TurnResult) -> u64| mine.iter().map(|r| f(r)).sum::<u64>();
            let input = sum(|r| r.observation.usage.input_tokens);
            let cache = sum(|r| r.observation.usage.cache_read_tokens);
            let mut latencies: Vec<u64> = mine
                .iter()
                .filter(|r| r.observation.error.is_none() && !r.observation.cancelled)
                .map(|r| r.observation.latency_ms)
                .collect();
            latencies.sort_unstable();
            VariantSummary {
                variant: variant.name.clone(),
                fingerprint: variant.fingerprint.clone(),
                turns: mine.len(),
                passed: count(Outcome::Pass),
                failed: count(Outcome::Fail),
                errors: count(Outcome::Error),
                pass_rate: ratio(count(Outcome::Pass) as u64, mine.len() as u64),
                input_tokens: input,
                output_tokens: sum(|r| r.observation.usage.output_tokens),
                cache_read_tokens: cache,
                cache_read_share: ratio(cache, input),
                latency_p50_ms: percentile(&latencies, 50),
                latency_p95_ms: percentile(&latencies, 95),
            }
        })
        .collect()
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `variant · claim · case #sample`
pub fn turn_label(plan: &EvalPlan, result: &TurnResult) -> String {
    let spec = &result.spec;
    format!(
        "{} · {} · {} #{}",
        plan.matrix.variants[spec.variant].name,
        spec.claim_id,
        plan.suite.suite.cases[spec.case].name,
        spec.sample
    )
}

/// Results in matrix order, for stable reports whatever order turns finished in.
pub fn in_matrix_order(results: &mut [TurnResult]) {
    results.sort_by_key(|r| r.spec.index);
}

/// JUnit XML: one testsuite per variant, one testcase per claim × case;
/// repeats are folded into a pass rate that must reach `threshold`.
pub fn junit_xml(plan: &EvalPlan, results: &[TurnResult], threshold: f64) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let mut suites = String::new();
    let (mut all_tests, mut all_failures) = (0, 0);
    for (index, variant) in plan.matrix.variants.iter().enumerate() {
        let mut cases: Vec<(String, usize, Vec<&TurnResult>)> = Vec::new();
        for result in results.iter().filter(|r| r.spec.variant == index) {
            let name = format!(
                "{} · {}",
                result.spec.claim_id, plan.suite.suite.cases[result.spec.case].name
            );
            match cases.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, _, samples)) => samples.push(result),
                None => cases.push((name, result.spec.index, vec![result])),
            }
        }
        cases.sort_by_key(|(_, first, _)| *first);
        let mut body = String::new();
        let mut failures = 0;
        for (name, _, samples) in &cases {
            let passed = samples
                .iter()
                .filter(|r| r.verdict.outcome == Outcome::Pass)
                .count();
            let rate = passed as f64 / samples.len() as f64;
            let seconds: f64 = samples
                .iter()
                .map(|r| r.observation.latency_ms as f64 / 1000.0)
                .sum();
            let _ = write!(
                body,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{seconds:.3}\"",
                escape(&format!("{}.{}", plan.suite.name, variant.name)),
                escape(name)
            );
            if rate + 1e-9 >= threshold {
                body.push_str("/>\n");
                continue;
            }
            failures += 1;
            let mut detail = String::new();
            for sample in samples
                .iter()
                .filter(|r| r.verdict.outcome != Outcome::Pass)
            {
                let _ = writeln!(
                    detail,
                    "sample {} ({}):",
                    sample.spec.sample,
                    sample.verdict.outcome.as_str()
                );
                for failure in &sample.verdict.failures {
                    let _ = writeln!(detail, "  - {failure}");
                }
            }
            let message = format!(
                "{passed} of {} samples passed (pass rate {:.0}%, threshold {:.0}%)",
                samples.len(),
                rate * 100.0,
                threshold * 100.0
            );
            let _ = write!(
                body,
                ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                escape(&message),
                escape(&detail)
            );
        }
        all_tests += cases.len();
        all_failures += failures;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n    <properties><property name=\"fingerprint\" value=\"{}\"/></properties>\n{body}  </testsuite>\n",
            escape(&format!("{} / {}", plan.suite.name, variant.name)),
            cases.len(),
            escape(&variant.fingerprint),
        );
    }
    let _ = write!(
        xml,
        "<testsuites name=\"{}\" tests=\"{all_tests}\" failures=\"{all_failures}\" errors=\"0\">\n{suites}</testsuites>\n",
        escape(&plan.suite.name)
    );
    xml
}

/// XML text and attribute escaping; characters XML 1.0 cannot carry are dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_xml_well_formed() {
        assert_eq!(escape("a<b & \"c\" \u{1}"), "a&lt;b &amp; &quot;c&quot; ");
    }
}
