//! A case's repeats on one claim, folded into one verdict by its threshold
//! (`passThreshold` or `minPasses`, else `--pass-threshold`): the verdict CI
//! gates on, JUnit reports and the `case` NDJSON record carries.

use serde::Serialize;

use super::expect::Outcome;
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
use super::runner::TurnResult;
use super::spill::{MatrixOrder, ResultStore, SpillError, SpillProblem};

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
    let settings = plan.settings(case);
    match (settings.min_passes, settings.pass_threshold) {
        (Some(passes), _) => Threshold::MinPasses(passes),
        (None, Some(share)) => Threshold::Share(share),
        (None, None) => Threshold::Share(default_share),
    }
}

/// What the spill gives, read beside the plan's selection: each turn that
/// ran, then — once its claim × case has no more samples — that group's
/// fold. A group's samples are contiguous in matrix order, so nothing is
/// kept but the counts of the group being read.
#[derive(Debug)]
pub enum Folded {
    Turn(Box<TurnResult>),
    Case(CaseFold),
}

/// Every selected variant × claim × case in matrix order, each turn that
/// ran and each group's fold (`Folded`). Each result is held to the plan:
/// a turn it selected, at its own place.
pub fn folds<'a>(
    plan: &'a EvalPlan,
    default_share: f64,
    store: &'a mut ResultStore,
) -> Result<Folds<'a>, SpillError> {
    Ok(Folds {
        plan,
        default_share,
        path: store.path().display().to_string(),
        selected: (Box::new(plan.selected()) as Box<dyn Iterator<Item = TurnSpec>>).peekable(),
        results: store.in_matrix_order()?.peekable(),
        group: None,
        failed: false,
    })
}

/// The folds of a run, read from its spill (`folds`).
pub struct Folds<'a> {
    plan: &'a EvalPlan,
    default_share: f64,
    /// The spill's, for its errors.
    path: String,
    selected: std::iter::Peekable<Box<dyn Iterator<Item = TurnSpec> + 'a>>,
    results: std::iter::Peekable<MatrixOrder<'a>>,
    /// The group being read: its first sample and its counts.
    group: Option<(TurnSpec, Counts)>,
    failed: bool,
}

/// One group's counts while its samples are read.
#[derive(Default)]
struct Counts {
    samples: u32,
    ran: u32,
    passed: u32,
    failed: u32,
    errors: u32,
    time_ms: u64,
}

impl Folds<'_> {
    /// The result of `spec`, when it ran: the next one of the spill, if
    /// it is this turn's (one of a turn not selected is an error).
    fn result_of(&mut self, spec: &TurnSpec) -> Result<Option<TurnResult>, SpillError> {
        let index = match self.results.peek() {
            None => return Ok(None),
            Some(Err(_)) => return self.results.next().transpose(),
            Some(Ok(result)) => result.spec.index,
        };
        if index > spec.index {
            return Ok(None);
        }
        match self.results.next().transpose()? {
            Some(result) if result.spec == *spec => Ok(Some(result)),
            _ if index == spec.index => Err(self.error(SpillProblem::Misplaced(index))),
            _ => Err(self.error(SpillProblem::NotSelected(index))),
        }
    }

    fn error(&self, problem: SpillProblem) -> SpillError {
        SpillError {
            path: self.path.clone(),
            problem,
        }
    }

    /// The next turn or fold; `None` once every selected turn and every
    /// result is read.
    fn step(&mut self) -> Result<Option<Folded>, SpillError> {
        loop {
            let same_group = match (&self.group, self.selected.peek()) {
                (Some((first, _)), Some(spec)) => {
                    (spec.variant, spec.case, &spec.claim_id)
                        == (first.variant, first.case, &first.claim_id)
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => {
                    return match self.results.next() {
                        None => Ok(None),
                        Some(Err(error)) => Err(error),
                        Some(Ok(result)) => {
                            Err(self.error(SpillProblem::NotSelected(result.spec.index)))
                        }
                    };
                }
            };
            if !same_group {
                let (first, counts) = self.group.take().expect("a group is being read");
                let fold = fold(self.plan, self.default_share, first, &counts);
                return Ok(Some(Folded::Case(fold)));
            }
            let spec = self.selected.next().expect("peeked");
            let result = self.result_of(&spec)?;
            let (_, counts) = self.group.get_or_insert_with(|| (spec, Counts::default()));
            counts.samples += 1;
            if let Some(result) = result {
                counts.ran += 1;
                match self.plan.deciding_outcome(&result.verdict) {
                    Outcome::Pass => counts.passed += 1,
                    Outcome::Fail => counts.failed += 1,
                    Outcome::Error => counts.errors += 1,
                }
                counts.time_ms = counts.time_ms.saturating_add(result.observation.latency_ms);
                return Ok(Some(Folded::Turn(Box::new(result))));
            }
        }
    }
}

impl Iterator for Folds<'_> {
    type Item = Result<Folded, SpillError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.step().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

/// One group's verdict: `first` its first selected sample.
fn fold(plan: &EvalPlan, default_share: f64, first: TurnSpec, counts: &Counts) -> CaseFold {
    let threshold = threshold_of(plan, first.case, default_share);
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
    CaseFold {
        variant: first.variant,
        case: first.case,
        claim: first.claim_id,
        samples: counts.samples,
        ran: counts.ran,
        passed: counts.passed,
        failed: counts.failed,
        errors: counts.errors,
        required,
        threshold,
        outcome,
        time_ms: counts.time_ms,
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
