//! A case's repeats on one claim, folded into one verdict by its threshold
//! (`passThreshold` or `minPasses`, else `--pass-threshold`): the verdict CI
//! gates on, JUnit reports and the `case` NDJSON record carries.

use std::collections::BTreeMap;

use serde::Serialize;

use super::expect::Outcome;
use super::plan::EvalPlan;
use super::runner::TurnResult;

/// How many of a case's samples must pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A share of the samples (0 < share ≤ 1), rounded up.
    Share(f64),
    /// This many of the suite's repeats.
    MinPasses(u32),
}

impl Threshold {
    /// Passes required of `samples` samples, of a suite of `repeats`. A shard
    /// holds only some of a case's samples: `minPasses` then applies as the
    /// same share of them (the merge folds them all).
    pub fn required(self, samples: u32, repeats: u32) -> u32 {
        let share = match self {
            Threshold::Share(share) => share,
            Threshold::MinPasses(passes) if samples >= repeats => return passes.min(samples),
            Threshold::MinPasses(passes) => f64::from(passes) / f64::from(repeats.max(1)),
        };
        // `- 1e-9`: 0.8 × 5 is 4.000000000000001 in floating point, not 5.
        ((share * f64::from(samples)) - 1e-9).ceil().max(1.0) as u32
    }

    pub fn describe(self) -> String {
        match self {
            Threshold::Share(share) => format!("{:.0}% of samples", share * 100.0),
            Threshold::MinPasses(passes) => format!("{passes} passes"),
        }
    }
}

/// The folded verdict of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CaseOutcome {
    /// At least the required samples passed.
    Pass,
    /// Too few passed, even counting the errored and unrun ones.
    Fail,
    /// Too few passed, but errors (or turns not run) could have made up the
    /// difference: the threshold could not be judged.
    Error,
    /// None of its samples ran.
    NotRun,
}

/// One variant × claim × case and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseFold {
    pub variant: usize,
    pub case: usize,
    pub claim: String,
    /// Samples this run selected.
    pub samples: u32,
    pub ran: u32,
    pub passed: u32,
    pub failed: u32,
    pub errors: u32,
    pub required: u32,
    pub threshold: Threshold,
    pub outcome: CaseOutcome,
    /// Its turns' latencies, summed (what JUnit gives as its time).
    pub time_ms: u64,
}

/// The case's threshold, else `default_share` (`--pass-threshold`).
pub fn threshold_of(plan: &EvalPlan, case: usize, default_share: f64) -> Threshold {
    let settings = plan.suite.suite.cases[case].settings(&plan.suite.suite.defaults);
    match (settings.min_passes, settings.pass_threshold) {
        (Some(passes), _) => Threshold::MinPasses(passes),
        (None, Some(share)) => Threshold::Share(share),
        (None, None) => Threshold::Share(default_share),
    }
}

/// Variant, case, claim.
type GroupKey = (usize, usize, String);

/// One group's counts while its turns are read.
#[derive(Default)]
struct Counts {
    /// The matrix index of its first sample.
    first: usize,
    samples: u32,
    ran: u32,
    passed: u32,
    failed: u32,
    errors: u32,
    time_ms: u64,
}

/// Folds turns one at a time (in any order) into every selected variant ×
/// claim × case: what it keeps is counts per group, nothing per turn.
pub struct CaseFolder<'a> {
    plan: &'a EvalPlan,
    default_share: f64,
    groups: BTreeMap<GroupKey, Counts>,
}

impl<'a> CaseFolder<'a> {
    /// `default_share`: `--pass-threshold`, for cases that set none.
    pub fn new(plan: &'a EvalPlan, default_share: f64) -> CaseFolder<'a> {
        let mut groups: BTreeMap<GroupKey, Counts> = BTreeMap::new();
        for spec in plan.selected() {
            let first = spec.index - (spec.sample as usize - 1);
            let entry = groups
                .entry((spec.variant, spec.case, spec.claim_id))
                .or_insert_with(|| Counts {
                    first,
                    ..Counts::default()
                });
            entry.samples += 1;
        }
        CaseFolder {
            plan,
            default_share,
            groups,
        }
    }

    /// Counts one turn in its group (a turn of no selected group is not).
    pub fn add(&mut self, result: &TurnResult) {
        let spec = &result.spec;
        let key = (spec.variant, spec.case, spec.claim_id.clone());
        if let Some(entry) = self.groups.get_mut(&key) {
            entry.ran += 1;
            match result.verdict.outcome {
                Outcome::Pass => entry.passed += 1,
                Outcome::Fail => entry.failed += 1,
                Outcome::Error => entry.errors += 1,
            }
            entry.time_ms = entry.time_ms.saturating_add(result.observation.latency_ms);
        }
    }

    /// Every selected variant × claim × case, in matrix order.
    pub fn finish(self) -> Vec<CaseFold> {
        let (plan, default_share) = (self.plan, self.default_share);
        let mut folds: Vec<(usize, CaseFold)> = self
            .groups
            .into_iter()
            .map(|((variant, case, claim), counts)| {
                let threshold = threshold_of(plan, case, default_share);
                let required = threshold.required(counts.samples, plan.suite.repeats());
                let unrun = counts.samples.saturating_sub(counts.ran);
                let outcome = if counts.ran == 0 {
                    CaseOutcome::NotRun
                } else if counts.passed >= required {
                    CaseOutcome::Pass
                } else if counts.passed + counts.errors + unrun >= required {
                    CaseOutcome::Error
                } else {
                    CaseOutcome::Fail
                };
                let fold = CaseFold {
                    variant,
                    case,
                    claim,
                    samples: counts.samples,
                    ran: counts.ran,
                    passed: counts.passed,
                    failed: counts.failed,
                    errors: counts.errors,
                    required,
                    threshold,
                    outcome,
                    time_ms: counts.time_ms,
                };
                (counts.first, fold)
            })
            .collect();
        folds.sort_by_key(|(first, fold)| (fold.variant, *first));
        folds.into_iter().map(|(_, fold)| fold).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_round_up_and_never_ask_for_nothing() {
        assert_eq!(Threshold::Share(0.8).required(5, 5), 4);
        assert_eq!(Threshold::Share(0.5).required(5, 5), 3);
        assert_eq!(Threshold::Share(1.0).required(3, 3), 3);
        assert_eq!(Threshold::Share(0.01).required(3, 3), 1);
        assert_eq!(Threshold::MinPasses(4).required(5, 5), 4);
        // A shard with 2 of 5 samples: 4 of 5 is 80%, so 2 of 2.
        assert_eq!(Threshold::MinPasses(4).required(2, 5), 2);
    }
}
