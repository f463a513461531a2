//! Comparing prompt versions on what was recorded (SPEC §8): runs paired by
//! claim, case and sample; verdict changes, answer diffs, tools, tokens,
//! cache reads and latency; pass rates with confidence intervals and
//! McNemar's exact test over the paired verdicts. Never calls a model.

pub mod render;
pub mod set;

use serde::Serialize;

use crate::runs::record::Outcome;
use crate::stats::{mcnemar_exact, percentile, wilson_interval};

pub use set::{CompareError, RunEntry, RunSet, load_set};

/// The significance level for calling a change in pass rate more than noise.
pub const SIGNIFICANCE: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictChange {
    PassToFail,
    FailToPass,
    Same,
    /// One side has no verdict (chat runs) or an error.
    NotComparable,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    pub claim: String,
    pub case: String,
    pub sample: u32,
    pub change: VerdictChange,
    pub answer_changed: bool,
    pub tools_changed: bool,
    pub a: RunEntry,
    pub b: RunEntry,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideSummary {
    pub label: String,
    pub source: String,
    pub runs: usize,
    /// Runs with a verdict (eval runs).
    pub judged: usize,
    pub passed: usize,
    pub pass_rate: Option<f64>,
    /// 95% Wilson interval of the pass rate.
    pub pass_rate_interval: Option<(f64, f64)>,
    pub input_tokens: Distribution,
    pub output_tokens: Distribution,
    pub latency_ms: Distribution,
    /// Cache-read tokens / input tokens over all runs.
    pub cache_read_share: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Distribution {
    pub median: Option<u64>,
    pub p95: Option<u64>,
}

impl Distribution {
    fn of(mut values: Vec<u64>) -> Distribution {
        values.sort_unstable();
        Distribution {
            median: percentile(&values, 50),
            p95: percentile(&values, 95),
        }
    }
}

/// The overall reading of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    /// Same verdicts, answers and tools on every pair.
    NoChange,
    /// Differences, but no significant change in pass rate.
    NoSignificantChange,
    Better,
    Worse,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub a: SideSummary,
    pub b: SideSummary,
    /// Worst first: pass→fail, fail→pass, then other changes, then the rest.
    pub pairs: Vec<Pair>,
    pub only_in_a: Vec<RunEntry>,
    pub only_in_b: Vec<RunEntry>,
    pub pass_to_fail: usize,
    pub fail_to_pass: usize,
    /// McNemar's exact two-sided p-value over paired verdicts.
    pub p_value: f64,
    pub conclusion: Conclusion,
}

pub fn compare(a: RunSet, b: RunSet) -> Comparison {
    let mut pairs = Vec::new();
    let mut only_in_a = Vec::new();
    let mut remaining_b: std::collections::BTreeMap<_, _> =
        b.runs.iter().map(|run| (run.key(), run.clone())).collect();
    for run in &a.runs {
        match remaining_b.remove(&run.key()) {
            Some(other) => pairs.push(pair(run.clone(), other)),
            None => only_in_a.push(run.clone()),
        }
    }
    let only_in_b: Vec<RunEntry> = remaining_b.into_values().collect();
    pairs.sort_by_key(|pair| {
        (
            rank(pair),
            pair.claim.clone(),
            pair.case.clone(),
            pair.sample,
        )
    });
    let pass_to_fail = pairs
        .iter()
        .filter(|p| p.change == VerdictChange::PassToFail)
        .count();
    let fail_to_pass = pairs
        .iter()
        .filter(|p| p.change == VerdictChange::FailToPass)
        .count();
    let p_value = mcnemar_exact(pass_to_fail, fail_to_pass);
    let changed = |p: &Pair| {
        p.answer_changed
            || p.tools_changed
            || matches!(
                p.change,
                VerdictChange::PassToFail | VerdictChange::FailToPass
            )
    };
    let any_difference =
        pairs.iter().any(changed) || !only_in_a.is_empty() || !only_in_b.is_empty();
    let conclusion = match (p_value < SIGNIFICANCE, pass_to_fail.cmp(&fail_to_pass)) {
        (true, std::cmp::Ordering::Greater) => Conclusion::Worse,
        (true, std::cmp::Ordering::Less) => Conclusion::Better,
        _ if !any_difference => Conclusion::NoChange,
        _ => Conclusion::NoSignificantChange,
    };
    Comparison {
        a: side(&a),
        b: side(&b),
        pairs,
        only_in_a,
        only_in_b,
        pass_to_fail,
        fail_to_pass,
        p_value,
        conclusion,
    }
}

fn pair(a: RunEntry, b: RunEntry) -> Pair {
    let outcome = |run: &RunEntry| run.verdict.as_ref().map(|v| v.outcome);
    let change = match (outcome(&a), outcome(&b)) {
        (Some(Outcome::Pass), Some(Outcome::Fail | Outcome::Error)) => VerdictChange::PassToFail,
        (Some(Outcome::Fail | Outcome::Error), Some(Outcome::Pass)) => VerdictChange::FailToPass,
        (Some(_), Some(_)) => VerdictChange::Same,
        _ => VerdictChange::NotComparable,
    };
    Pair {
        claim: a.claim.clone(),
        case: a.case.clone(),
        sample: a.sample,
        change,
        answer_changed: a.answer != b.answer,
        tools_changed: a.tools != b.tools,
        a,
        b,
    }
}

fn rank(pair: &Pair) -> u8 {
    match (pair.change, pair.answer_changed || pair.tools_changed) {
        (VerdictChange::PassToFail, _) => 0,
        (VerdictChange::FailToPass, _) => 1,
        (_, true) => 2,
        _ => 3,
    }
}

fn side(set: &RunSet) -> SideSummary {
    let judged: Vec<&RunEntry> = set.runs.iter().filter(|r| r.verdict.is_some()).collect();
    let passed = judged
        .iter()
        .filter(|r| {
            r.verdict
                .as_ref()
                .is_some_and(|v| v.outcome == Outcome::Pass)
        })
        .count();
    let input: u64 = set.runs.iter().map(|r| r.usage.input_tokens).sum();
    let cache: u64 = set.runs.iter().map(|r| r.usage.cache_read_tokens).sum();
    SideSummary {
        label: set.label.clone(),
        source: set.source.clone(),
        runs: set.runs.len(),
        judged: judged.len(),
        passed,
        pass_rate: (!judged.is_empty()).then(|| passed as f64 / judged.len() as f64),
        pass_rate_interval: wilson_interval(passed, judged.len()),
        input_tokens: Distribution::of(set.runs.iter().map(|r| r.usage.input_tokens).collect()),
        output_tokens: Distribution::of(set.runs.iter().map(|r| r.usage.output_tokens).collect()),
        latency_ms: Distribution::of(set.runs.iter().filter_map(|r| r.latency_ms).collect()),
        cache_read_share: if input == 0 {
            0.0
        } else {
            cache as f64 / input as f64
        },
    }
}
