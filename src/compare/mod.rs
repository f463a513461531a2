//! Comparing prompt versions on what was recorded (SPEC §8): runs paired by
//! prompt version (variant, or fingerprint for chat turns), suite, claim,
//! case and sample; verdict changes, answer diffs, tools, tokens, cache reads
//! and latency; pass rates with confidence intervals and McNemar's exact test
//! over the paired verdicts; and CI gates that say when they cannot judge.
//! Never calls a model.

pub mod fold;
pub mod gate;
pub mod pairwise;
pub mod render;
pub mod set;
pub mod sides;
pub mod stream;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::judge::JudgeSpend;
use crate::stats::{mcnemar_exact, percentile};

use fold::{FirstN, PairCounts, SideDistributions, SideFold};

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
    /// How many runs it set aside of each kind, however few are listed
    /// (two eval runs list the first `--worst N` of each).
    pub set_aside_totals: SetAsideTotals,
}

/// How many runs a side set aside, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAsideTotals {
    pub superseded: usize,
    pub not_selected: usize,
    pub replays: usize,
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

    pub fn of(mut values: Vec<u64>) -> Distribution {
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
    /// Worst first: pass→fail, errors, fail→pass, then other changes, then
    /// the rest. Two eval runs list only the worst `--worst N` (chosen by
    /// `fold::WorstKey`); `paired` counts them all.
    pub pairs: Vec<Pair>,
    /// Every pair, however few `pairs` lists.
    pub paired: usize,
    /// Pairs whose verdict, answer or tools changed, or that errored.
    pub changed_pairs: usize,
    /// Pairs with a side without a verdict (chat turns).
    pub not_comparable: usize,
    /// Runs of A with no partner in B (two eval runs: the first `--worst N`).
    pub only_in_a: Vec<RunEntry>,
    pub only_in_b: Vec<RunEntry>,
    /// How many runs are only in A, however few `only_in_a` lists.
    pub only_in_a_total: usize,
    pub only_in_b_total: usize,
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
    let (mut pairs, mut only_in_a) = (Vec::new(), FirstN::new(usize::MAX));
    for run in &a.runs {
        let partner = versions
            .iter()
            .find(|v| v.a == run.version())
            .and_then(|v| remaining_b.remove(&(v.b.clone(), key(run))));
        match partner {
            Some(other) => pairs.push(pair(run.clone(), other)),
            None => only_in_a.offer(run.clone()),
        }
    }
    let mut only_in_b = FirstN::new(usize::MAX);
    remaining_b
        .into_values()
        .for_each(|run| only_in_b.offer(run));
    let warnings = side_warnings(&runs_of(&a), &runs_of(&b), &versions);
    let mut counts = PairCounts::default();
    for pair in &pairs {
        counts.add(pair.change, pair.answer_changed || pair.tools_changed);
    }
    Ok(assemble(
        [side(&a), side(&b)],
        versions,
        pairs,
        [only_in_a, only_in_b],
        counts,
        warnings,
    ))
}

/// The comparison of two sides' summaries, their pairs (those listed, and
/// the counts of all), the runs only in one side, and the warnings.
fn assemble(
    [a, b]: [SideSummary; 2],
    versions: Vec<VersionPair>,
    mut pairs: Vec<Pair>,
    [only_in_a, only_in_b]: [FirstN<RunEntry>; 2],
    counts: PairCounts,
    warnings: Vec<String>,
) -> Comparison {
    pairs.sort_by_key(|pair| {
        (
            rank(pair),
            pair.version.clone(),
            pair.claim.clone(),
            pair.case.clone(),
            pair.sample,
        )
    });
    let judged_pairs = counts.judged();
    let (pass_to_fail, fail_to_pass) = (counts.pass_to_fail, counts.fail_to_pass);
    let p_value = (judged_pairs > 0).then(|| mcnemar_exact(pass_to_fail, fail_to_pass));
    let conclusion = conclude(&counts, only_in_a.total + only_in_b.total, p_value);
    Comparison {
        a,
        b,
        versions,
        errored: counts.errored,
        power: power(pass_to_fail, fail_to_pass),
        pairs,
        paired: counts.pairs,
        changed_pairs: counts.changed,
        not_comparable: counts.not_comparable,
        only_in_a_total: only_in_a.total,
        only_in_b_total: only_in_b.total,
        only_in_a: only_in_a.first,
        only_in_b: only_in_b.first,
        pass_to_fail,
        fail_to_pass,
        judged_pairs,
        p_value,
        conclusion,
        warnings,
        pairwise: None,
    }
}

/// How many runs a side holds of one prompt version, provider and model
/// setting: what its warnings are said from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunsOf {
    pub version: String,
    pub provider: String,
    pub model: String,
    pub runs: usize,
}

fn runs_of(set: &RunSet) -> Vec<RunsOf> {
    let mut counted: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for run in &set.runs {
        *counted
            .entry((run.version(), &run.provider, &run.model))
            .or_default() += 1;
    }
    counted
        .into_iter()
        .map(|((version, provider, model), runs)| RunsOf {
            version: version.to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            runs,
        })
        .collect()
}

/// What the reader must be told of the sides: versions with no partner,
/// paired versions that ran other models, runs that called no model.
fn side_warnings(a: &[RunsOf], b: &[RunsOf], versions: &[VersionPair]) -> Vec<String> {
    let mut warnings = Vec::new();
    unmatched_version_warnings(a, b, versions, &mut warnings);
    model_change_warnings(a, b, versions, &mut warnings);
    for (name, side) in [("A", a), ("B", b)] {
        offline_warning(name, side, &mut warnings);
    }
    warnings
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
    a: &[RunsOf],
    b: &[RunsOf],
    versions: &[VersionPair],
    warnings: &mut Vec<String>,
) {
    for (name, side, other, paired) in [
        (
            "A",
            a,
            "B",
            versions.iter().map(|v| &v.a).collect::<Vec<_>>(),
        ),
        ("B", b, "A", versions.iter().map(|v| &v.b).collect()),
    ] {
        let held: BTreeSet<&String> = side.iter().map(|r| &r.version).collect();
        for version in held {
            if !paired.contains(&version) {
                let runs: usize = side
                    .iter()
                    .filter(|r| &r.version == version)
                    .map(|r| r.runs)
                    .sum();
                warnings.push(format!(
                    "variant `{version}` is only in {name} ({runs} runs, listed as unpaired): {other} has no variant of that name"
                ));
            }
        }
    }
}

/// One field of a side's runs, by which paired versions are told apart.
type RunField = fn(&RunsOf) -> &str;

/// Says plainly when paired versions ran different providers, models or
/// thinking levels: a model change must never pass for a prompt change.
fn model_change_warnings(
    a: &[RunsOf],
    b: &[RunsOf],
    versions: &[VersionPair],
    warnings: &mut Vec<String>,
) {
    let ran = |side: &[RunsOf], version: &str, field: RunField| {
        let found: BTreeSet<&str> = side
            .iter()
            .filter(|r| r.version == version)
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

fn offline_warning(name: &str, side: &[RunsOf], warnings: &mut Vec<String>) {
    let offline_of = |r: &&RunsOf| set::OFFLINE_PROVIDERS.contains(&r.provider.as_str());
    let offline: usize = side.iter().filter(offline_of).map(|r| r.runs).sum();
    if offline > 0 {
        let providers: BTreeSet<&str> = side
            .iter()
            .filter(offline_of)
            .map(|r| r.provider.as_str())
            .collect();
        let providers: Vec<&str> = providers.into_iter().collect();
        let all: usize = side.iter().map(|r| r.runs).sum();
        warnings.push(format!(
            "{name} holds {offline} of {all} runs made by the {} provider: their answers do not come from a model, so they cannot show what a prompt change does",
            providers.join(" and ")
        ));
    }
}

fn conclude(counts: &PairCounts, unpaired: usize, p_value: Option<f64>) -> Conclusion {
    if counts.pairs == 0 {
        return Conclusion::NothingPaired;
    }
    let any_difference = counts.changed > 0 || counts.errored > 0 || unpaired > 0;
    let significant = p_value.is_some_and(|p| p < SIGNIFICANCE);
    match (significant, counts.pass_to_fail.cmp(&counts.fail_to_pass)) {
        (true, std::cmp::Ordering::Greater) => Conclusion::Worse,
        (true, std::cmp::Ordering::Less) => Conclusion::Better,
        _ if !any_difference => Conclusion::NoChange,
        _ if counts.judged() == 0 => Conclusion::AnswersDiffer,
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
    let change = fold::change_of(outcome(&a), outcome(&b));
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
        fold::is_changed(self.change, self.answer_changed || self.tools_changed)
    }
}

fn rank(pair: &Pair) -> u8 {
    fold::rank(pair.change, pair.answer_changed || pair.tools_changed)
}

fn side(set: &RunSet) -> SideSummary {
    let mut fold = SideFold::new();
    for run in &set.runs {
        let judge = run
            .verdict
            .as_ref()
            .map_or_else(JudgeSpend::default, |v| JudgeSpend::of_rubric(&v.rubric));
        fold.add(run, judge);
    }
    let finished = || set.runs.iter().filter(|r| !fold::errored(r));
    let spread = SideDistributions {
        input_tokens: Distribution::of_counts(finished().map(|r| r.usage.input_tokens)),
        output_tokens: Distribution::of_counts(finished().map(|r| r.usage.output_tokens)),
        latency_ms: Distribution::of(
            finished()
                .filter(|r| r.cached_calls == 0)
                .filter_map(|r| r.latency_ms)
                .collect(),
        ),
    };
    let mut summary = fold.finish(&set.label, &set.source, spread);
    summary.superseded = set.superseded.clone();
    summary.not_selected = set.not_selected.clone();
    summary.replays = set.replays.clone();
    summary.unreadable = set.unreadable.clone();
    summary.set_aside_totals = SetAsideTotals {
        superseded: set.superseded.len(),
        not_selected: set.not_selected.len(),
        replays: set.replays.len(),
    };
    summary
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
