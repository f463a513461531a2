//! Comparing prompt versions on what was recorded (SPEC §8): runs paired by
//! prompt version (variant, or fingerprint for chat turns), suite, claim,
//! case and sample; verdict changes, answer diffs, tools, tokens, cache reads
//! and latency; pass rates with confidence intervals and McNemar's exact test
//! over the paired verdicts; and CI gates that say when they cannot judge.
//! Never calls a model.

pub mod gate;
pub mod pairwise;
pub mod render;
pub mod set;
pub mod sides;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::judge::JudgeSpend;
use crate::runs::record::Outcome;
use crate::stats::{mcnemar_exact, percentile, wilson_interval};

pub use gate::{GateResult, Gates};
pub use pairwise::{PairJudgement, PairwiseSummary, judge_pairs};
pub use set::{CompareError, RunEntry, RunFilter, RunSet, SetAside, UnreadableLog, load_set};

/// The significance level for calling a change in pass rate more than noise.
pub const SIGNIFICANCE: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictChange {
    PassToFail,
    FailToPass,
    /// Both pass, or both fail.
    Same,
    /// One side ended in an error or was cancelled: it cannot be judged.
    Errored,
    /// One side has no verdict (chat turns).
    NotComparable,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    /// The prompt versions paired (`default`, or `default ↔ 6ebc72c8dd76`).
    pub version: String,
    pub claim: String,
    pub case: String,
    pub sample: u32,
    pub change: VerdictChange,
    pub answer_changed: bool,
    pub tools_changed: bool,
    pub a: RunEntry,
    pub b: RunEntry,
    /// The pairwise judge's reading (`compare --judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<PairJudgement>,
}

/// Which version of A was compared with which version of B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VersionPair {
    pub a: String,
    pub b: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SideSummary {
    pub label: String,
    pub source: String,
    /// The prompt versions (variants, or fingerprints of chat turns).
    pub versions: Vec<String>,
    /// The model settings its runs asked for (`model · thinking level`).
    pub models: Vec<String>,
    /// Runs compared.
    pub runs: usize,
    /// Runs with a verdict (eval runs).
    pub judged: usize,
    /// Runs that errored, were cancelled or never finished: left out of the
    /// token and latency figures, which would otherwise read an error's
    /// few tokens as "better".
    pub errored_runs: usize,
    pub passed: usize,
    pub pass_rate: Option<f64>,
    /// 95% Wilson interval of the pass rate.
    pub pass_rate_interval: Option<(f64, f64)>,
    /// Over the finished runs; unknown (`null`) when a run's server left
    /// the count out.
    pub input_tokens: Distribution,
    pub output_tokens: Distribution,
    pub latency_ms: Distribution,
    /// Cache-read tokens / input tokens over all runs; unknown when either
    /// count is.
    pub cache_read_share: Option<f64>,
    /// Its runs' tokens summed (null where a server left a count out), and
    /// how many of their model calls lacked usage.
    pub usage: crate::event::Usage,
    /// Runs made by a provider that does not call a model (script, replay).
    pub offline_runs: usize,
    /// Rubric verdicts behind its runs' verdicts, and the judge tokens of
    /// those calls made (cache hits cost nothing): never in the chat's tokens.
    pub judge_calls: usize,
    pub judge_usage: crate::event::Usage,
    /// What its runs' chat model calls cost, in USD; absent when any is
    /// unknown (an unpriced model).
    pub cost_usd: Option<f64>,
    /// Runs with a model call answered from the cache (left out of latency).
    pub cached_runs: usize,
    pub superseded: Vec<SetAside>,
    pub not_selected: Vec<SetAside>,
    /// Replays of recorded turns: not runs of their own, never compared.
    pub replays: Vec<SetAside>,
    pub unreadable: Vec<UnreadableLog>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Distribution {
    pub median: Option<u64>,
    pub p95: Option<u64>,
}

impl Distribution {
    /// Of token counts: unknown when any is — a median of the runs whose
    /// server reported would pass for the side's.
    fn of_counts(counts: impl Iterator<Item = Option<u64>>) -> Distribution {
        match counts.collect::<Option<Vec<u64>>>() {
            Some(values) => Distribution::of(values),
            None => Distribution::default(),
        }
    }

    fn of(mut values: Vec<u64>) -> Distribution {
        values.sort_unstable();
        Distribution {
            median: percentile(&values, 50),
            p95: percentile(&values, 95),
        }
    }
}

/// The overall reading of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    /// Same verdicts, answers and tools on every pair.
    NoChange,
    /// Differences, but no significant change in pass rate.
    NoSignificantChange,
    Better,
    Worse,
    /// Chat turns: no verdicts to test; answers or tools differ.
    AnswersDiffer,
    /// Nothing paired: nothing to conclude.
    NothingPaired,
}

/// Whether McNemar's test could reach significance on these pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Power {
    /// Pass→fail plus fail→pass pairs.
    pub discordant: usize,
    /// The fewest discordant pairs that can ever give p < 0.05 (all one way).
    pub discordant_needed: usize,
    /// More pass→fail pairs (the rest unchanged) that would make the
    /// conclusion "worse"; none when it already is.
    pub more_regressions_needed: Option<usize>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub a: SideSummary,
    pub b: SideSummary,
    pub versions: Vec<VersionPair>,
    /// Worst first: pass→fail, errors, fail→pass, then other changes, then the rest.
    pub pairs: Vec<Pair>,
    pub only_in_a: Vec<RunEntry>,
    pub only_in_b: Vec<RunEntry>,
    pub pass_to_fail: usize,
    pub fail_to_pass: usize,
    /// Pairs where one side errored or was cancelled.
    pub errored: usize,
    /// Pairs with a pass/fail verdict on both sides.
    pub judged_pairs: usize,
    /// McNemar's exact two-sided p-value over paired verdicts; none for chat turns.
    pub p_value: Option<f64>,
    pub power: Power,
    pub conclusion: Conclusion,
    /// What the reader must know to trust the numbers.
    pub warnings: Vec<String>,
    /// Wins, losses and ties by a pairwise judge (`compare --judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseSummary>,
}

/// Pairs the runs of two sides and reads the result.
pub fn compare(a: RunSet, b: RunSet) -> Result<Comparison, CompareError> {
    let versions = match_versions(&a.versions(), &b.versions())?;
    let mut warnings = Vec::new();
    // One suite a side (a renamed suite file included) pairs across suites;
    // several pair suite with same-named suite.
    let by_suite = a.suites().len() > 1 || b.suites().len() > 1;
    let key = |run: &RunEntry| {
        let mut place = run.key();
        if !by_suite {
            place.suite = None;
        }
        place
    };
    let mut remaining_b: BTreeMap<_, RunEntry> = BTreeMap::new();
    for run in &b.runs {
        remaining_b.insert((run.version().to_string(), key(run)), run.clone());
    }
    let (mut pairs, mut only_in_a) = (Vec::new(), Vec::new());
    for run in &a.runs {
        let partner = versions
            .iter()
            .find(|v| v.a == run.version())
            .and_then(|v| remaining_b.remove(&(v.b.clone(), key(run))));
        match partner {
            Some(other) => pairs.push(pair(run.clone(), other)),
            None => only_in_a.push(run.clone()),
        }
    }
    let only_in_b: Vec<RunEntry> = remaining_b.into_values().collect();
    unmatched_version_warnings(&a, &b, &versions, &mut warnings);
    model_change_warnings(&a, &b, &versions, &mut warnings);
    pairs.sort_by_key(|pair| {
        (
            rank(pair),
            pair.version.clone(),
            pair.claim.clone(),
            pair.case.clone(),
            pair.sample,
        )
    });
    let count = |change| pairs.iter().filter(|p| p.change == change).count();
    let (pass_to_fail, fail_to_pass) = (
        count(VerdictChange::PassToFail),
        count(VerdictChange::FailToPass),
    );
    let judged_pairs = pass_to_fail + fail_to_pass + count(VerdictChange::Same);
    let p_value = (judged_pairs > 0).then(|| mcnemar_exact(pass_to_fail, fail_to_pass));
    for (name, side) in [("A", &a), ("B", &b)] {
        offline_warning(name, side, &mut warnings);
    }
    let conclusion = conclude(&pairs, &only_in_a, &only_in_b, p_value, judged_pairs);
    Ok(Comparison {
        a: side(&a),
        b: side(&b),
        versions,
        errored: count(VerdictChange::Errored),
        power: power(pass_to_fail, fail_to_pass),
        pairs,
        only_in_a,
        only_in_b,
        pass_to_fail,
        fail_to_pass,
        judged_pairs,
        p_value,
        conclusion,
        warnings,
        pairwise: None,
    })
}

/// One version on each side pair with each other whatever their names
/// (`compare default 6ebc72c8dd76`); several pair by name, variant with
/// same-named variant.
fn match_versions(a: &[String], b: &[String]) -> Result<Vec<VersionPair>, CompareError> {
    if let ([one_a], [one_b]) = (a, b) {
        return Ok(vec![VersionPair {
            a: one_a.clone(),
            b: one_b.clone(),
        }]);
    }
    let common: Vec<VersionPair> = a
        .iter()
        .filter(|name| b.contains(name))
        .map(|name| VersionPair {
            a: name.clone(),
            b: name.clone(),
        })
        .collect();
    if common.is_empty() {
        return Err(CompareError::Unpairable(format!(
            "cannot pair the runs: A holds {} and B holds {}, with no variant name in common; \
             choose one variant on each side with --variant NAME (repeatable), or one model \
             with --model NAME or --provider NAME",
            list_versions(a),
            list_versions(b)
        )));
    }
    Ok(common)
}

fn list_versions(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "{} version{} ({})",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        quoted.join(", ")
    )
}

fn unmatched_version_warnings(
    a: &RunSet,
    b: &RunSet,
    versions: &[VersionPair],
    warnings: &mut Vec<String>,
) {
    for (name, set, other, paired) in [
        (
            "A",
            a,
            "B",
            versions.iter().map(|v| &v.a).collect::<Vec<_>>(),
        ),
        ("B", b, "A", versions.iter().map(|v| &v.b).collect()),
    ] {
        for version in set.versions() {
            if !paired.contains(&&version) {
                let runs = set.runs.iter().filter(|r| r.version() == version).count();
                warnings.push(format!(
                    "variant `{version}` is only in {name} ({runs} runs, listed as unpaired): {other} has no variant of that name"
                ));
            }
        }
    }
}

/// One field of a run, by which paired versions are told apart.
type RunField = fn(&RunEntry) -> &str;

/// Says plainly when paired versions ran different providers, models or
/// thinking levels: a model change must never pass for a prompt change.
fn model_change_warnings(
    a: &RunSet,
    b: &RunSet,
    versions: &[VersionPair],
    warnings: &mut Vec<String>,
) {
    let ran = |set: &RunSet, version: &str, field: RunField| {
        let found: std::collections::BTreeSet<&str> = set
            .runs
            .iter()
            .filter(|r| r.version() == version)
            .map(field)
            .collect();
        found.into_iter().collect::<Vec<_>>().join(" and ")
    };
    let fields: [(&str, RunField); 2] = [
        // A deployment (`worker`) runs Gemini: comparing it with a local
        // Gemini run is what `--provider worker` is for, not a change.
        ("provider", |r| match r.provider.as_str() {
            "worker" => "gemini",
            provider => provider,
        }),
        ("model", |r| r.model.as_str()),
    ];
    for pair in versions {
        for (what, field) in fields {
            let (in_a, in_b) = (ran(a, &pair.a, field), ran(b, &pair.b, field));
            if in_a != in_b {
                warnings.push(format!(
                    "the sides differ in {what}: A `{}` ran {in_a}, B `{}` ran {in_b} — a difference may come from the {what}, not the prompt",
                    pair.a, pair.b
                ));
            }
        }
    }
}

fn offline_warning(name: &str, set: &RunSet, warnings: &mut Vec<String>) {
    let offline = set.offline_runs();
    if offline > 0 {
        let providers: std::collections::BTreeSet<&str> = set
            .runs
            .iter()
            .filter(|r| r.is_offline())
            .map(|r| r.provider.as_str())
            .collect();
        let providers: Vec<&str> = providers.into_iter().collect();
        warnings.push(format!(
            "{name} holds {offline} of {} runs made by the {} provider: their answers do not come from a model, so they cannot show what a prompt change does",
            set.runs.len(),
            providers.join(" and ")
        ));
    }
}

fn conclude(
    pairs: &[Pair],
    only_in_a: &[RunEntry],
    only_in_b: &[RunEntry],
    p_value: Option<f64>,
    judged_pairs: usize,
) -> Conclusion {
    if pairs.is_empty() {
        return Conclusion::NothingPaired;
    }
    let any_difference = pairs.iter().any(Pair::changed)
        || pairs.iter().any(|p| p.change == VerdictChange::Errored)
        || !only_in_a.is_empty()
        || !only_in_b.is_empty();
    let significant = p_value.is_some_and(|p| p < SIGNIFICANCE);
    let count = |change| pairs.iter().filter(|p| p.change == change).count();
    match (
        significant,
        count(VerdictChange::PassToFail).cmp(&count(VerdictChange::FailToPass)),
    ) {
        (true, std::cmp::Ordering::Greater) => Conclusion::Worse,
        (true, std::cmp::Ordering::Less) => Conclusion::Better,
        _ if !any_difference => Conclusion::NoChange,
        _ if judged_pairs == 0 => Conclusion::AnswersDiffer,
        _ => Conclusion::NoSignificantChange,
    }
}

/// How far these pairs are from a significant "worse".
pub fn power(pass_to_fail: usize, fail_to_pass: usize) -> Power {
    let discordant_needed = (1..64)
        .find(|n| mcnemar_exact(*n, 0) < SIGNIFICANCE)
        .unwrap_or(64);
    let more_regressions_needed = if pass_to_fail > fail_to_pass
        && mcnemar_exact(pass_to_fail, fail_to_pass) < SIGNIFICANCE
    {
        None
    } else {
        // A bounded search: past 100,000 more regressions nobody is waiting.
        (0..100_000).find(|more| {
            let worse = pass_to_fail + more;
            worse > fail_to_pass && mcnemar_exact(worse, fail_to_pass) < SIGNIFICANCE
        })
    };
    Power {
        discordant: pass_to_fail + fail_to_pass,
        discordant_needed,
        more_regressions_needed,
    }
}

fn pair(a: RunEntry, b: RunEntry) -> Pair {
    let outcome = |run: &RunEntry| run.verdict.as_ref().map(|v| v.outcome);
    let change = match (outcome(&a), outcome(&b)) {
        (Some(Outcome::Error), Some(_)) | (Some(_), Some(Outcome::Error)) => VerdictChange::Errored,
        (Some(Outcome::Pass), Some(Outcome::Fail)) => VerdictChange::PassToFail,
        (Some(Outcome::Fail), Some(Outcome::Pass)) => VerdictChange::FailToPass,
        (Some(_), Some(_)) => VerdictChange::Same,
        _ => VerdictChange::NotComparable,
    };
    let version = if a.version() == b.version() {
        a.version().to_string()
    } else {
        format!("{} ↔ {}", a.version(), b.version())
    };
    Pair {
        version,
        claim: a.claim.clone(),
        case: a.case.clone(),
        sample: a.sample,
        change,
        answer_changed: a.answer != b.answer,
        tools_changed: a.tools != b.tools,
        a,
        b,
        judged: None,
    }
}

impl Pair {
    /// A verdict, answer or tool change worth showing.
    pub fn changed(&self) -> bool {
        self.answer_changed
            || self.tools_changed
            || matches!(
                self.change,
                VerdictChange::PassToFail | VerdictChange::FailToPass | VerdictChange::Errored
            )
    }
}

fn rank(pair: &Pair) -> u8 {
    match (pair.change, pair.answer_changed || pair.tools_changed) {
        (VerdictChange::PassToFail, _) => 0,
        (VerdictChange::Errored, _) => 1,
        (VerdictChange::FailToPass, _) => 2,
        (_, true) => 3,
        _ => 4,
    }
}

/// A run that did not end `done`, or whose verdict is an error.
fn errored(run: &RunEntry) -> bool {
    run.status != "done"
        || run
            .verdict
            .as_ref()
            .is_some_and(|v| v.outcome == Outcome::Error)
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
    let usage: crate::event::Usage = set.runs.iter().map(|r| r.usage).sum();
    let judge = set.runs.iter().filter_map(|r| r.verdict.as_ref()).fold(
        JudgeSpend::default(),
        |mut total, verdict| {
            total += JudgeSpend::of_rubric(&verdict.rubric);
            total
        },
    );
    let finished = || set.runs.iter().filter(|r| !errored(r));
    SideSummary {
        label: set.label.clone(),
        source: set.source.clone(),
        versions: set.versions(),
        models: set
            .runs
            .iter()
            .map(|r| r.model.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        runs: set.runs.len(),
        judged: judged.len(),
        passed,
        pass_rate: (!judged.is_empty()).then(|| passed as f64 / judged.len() as f64),
        pass_rate_interval: wilson_interval(passed, judged.len()),
        errored_runs: set.runs.iter().filter(|r| errored(r)).count(),
        input_tokens: Distribution::of_counts(finished().map(|r| r.usage.input_tokens)),
        output_tokens: Distribution::of_counts(finished().map(|r| r.usage.output_tokens)),
        latency_ms: Distribution::of(
            finished()
                .filter(|r| r.cached_calls == 0)
                .filter_map(|r| r.latency_ms)
                .collect(),
        ),
        cost_usd: set
            .runs
            .iter()
            .map(|r| crate::cost::Cost::from(r.cost_usd))
            .sum::<crate::cost::Cost>()
            .usd(),
        cached_runs: set.runs.iter().filter(|r| r.cached_calls > 0).count(),
        cache_read_share: usage.cache_read_share(),
        usage,
        offline_runs: set.offline_runs(),
        judge_calls: judge.calls,
        judge_usage: judge.usage,
        superseded: set.superseded.clone(),
        not_selected: set.not_selected.clone(),
        replays: set.replays.clone(),
        unreadable: set.unreadable.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_regressions_cannot_reach_significance_six_can() {
        let five = power(5, 0);
        assert_eq!(five.discordant_needed, 6);
        assert_eq!(five.more_regressions_needed, Some(1));
        assert_eq!(power(6, 0).more_regressions_needed, None);
        // With improvements too, more regressions are needed.
        assert_eq!(power(5, 1).more_regressions_needed, Some(3));
    }

    #[test]
    fn versions_pair_one_to_one_or_by_name() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let one = match_versions(&names(&["default"]), &names(&["6ebc72c8dd76"])).unwrap();
        assert_eq!(one[0].b, "6ebc72c8dd76");
        let by_name =
            match_versions(&names(&["default", "plain"]), &names(&["default", "plain"])).unwrap();
        assert_eq!(by_name.len(), 2);
        assert!(by_name.iter().all(|v| v.a == v.b));
        let error = match_versions(&names(&["x", "y"]), &names(&["z"])).unwrap_err();
        assert!(error.to_string().contains("--variant"), "{error}");
    }
}
