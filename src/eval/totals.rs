//! Everything the end of an eval run says, gathered in one pass over its
//! spill (`spill::ResultStore`) in matrix order, fold by fold
//! (`fold::folds`): each variant's numbers and its folds' (thresholds,
//! pass@k, pass^k), JUnit's counts, the tags, the turns read from logs by
//! the run that recorded them, the lost logs and the first failures shown.
//! Nothing it keeps grows with the turns or the groups: the latencies of
//! the exact percentiles are counted by value (`stats::ValueCounts`).
//!
//! Every pass over the spill goes through `checked`, which holds each record
//! to the plan: a turn this run selected, at its own place in the matrix.

use std::collections::BTreeMap;

use super::fold::{CaseFold, CaseOutcome, Folded, folds};
use super::junit::SuiteCounts;
use super::matrix::{PreparedVariant, TurnSpec};
use super::plan::EvalPlan;
use super::report::{TurnsFromRun, VariantSummary, turn_label};
use super::runner::TurnResult;
use super::spill::{ResultStore, SpillError, SpillProblem};
use super::tags::{TagSummary, TagTotals};
use crate::cost::Cost;
use crate::judge::JudgeSpend;
use crate::runs::record::Outcome;
use crate::runs::tally::TallyBuilder;

/// The end of a run, in numbers.
pub struct RunTotals {
    pub summaries: Vec<VariantSummary>,
    /// Whether every selected claim × case reached its threshold.
    pub every_case_passed: bool,
    /// Each variant's JUnit testsuite counts.
    pub junit: SuiteCounts,
    pub tags: Vec<TagSummary>,
    /// Turns with a result.
    pub turns: usize,
    pub passed: usize,
    pub failed: usize,
    pub errored: usize,
    /// Selected turns with no result (cancelled, or held back by a budget).
    pub not_run: usize,
    /// `label: why`, for each turn whose run log was lost.
    pub logs_lost: Vec<String>,
    /// The first turns that did not pass, as many as are shown.
    pub failing: Vec<TurnResult>,
    /// All the turns that did not pass.
    pub failing_count: usize,
    /// Turns read from logs, by the eval run that recorded them.
    pub from_runs: Vec<TurnsFromRun>,
    /// Turns read from logs (resumed, merged, re-scored).
    pub from_logs: usize,
    /// Per variant: turns that failed only rubric criteria of a judge whose
    /// verdicts do not decide the exit code (`EvalPlan::rubric_decides`).
    pub rubric_advisory: Vec<usize>,
}

/// One variant's numbers while its turns are read.
struct VariantTotals {
    numbers: TallyBuilder,
    turns: usize,
    cost: Cost,
    judge: JudgeSpend,
    thinking_tokens: u64,
    logs_lost: usize,
    cached_turns: usize,
    /// Turns selected.
    planned: usize,
    /// Of its claim × case groups: those with a result, those that reached
    /// their threshold, with a pass, with every sample passed; the most
    /// samples one has.
    cases: usize,
    cases_met: usize,
    passed_once: usize,
    passed_all: usize,
    samples_per_case: u32,
}

impl VariantTotals {
    fn new() -> VariantTotals {
        VariantTotals {
            numbers: TallyBuilder::default(),
            turns: 0,
            cost: Cost::ZERO,
            judge: JudgeSpend::default(),
            thinking_tokens: 0,
            logs_lost: 0,
            cached_turns: 0,
            planned: 0,
            cases: 0,
            cases_met: 0,
            passed_once: 0,
            passed_all: 0,
            samples_per_case: 0,
        }
    }

    /// Counts one of its claim × case groups.
    fn add_fold(&mut self, fold: &CaseFold) {
        self.planned += fold.samples as usize;
        if fold.outcome == CaseOutcome::NotRun {
            return;
        }
        self.cases += 1;
        self.cases_met += usize::from(fold.outcome == CaseOutcome::Pass);
        self.passed_once += usize::from(fold.passed >= 1);
        self.passed_all += usize::from(fold.passed == fold.samples);
        self.samples_per_case = self.samples_per_case.max(fold.samples);
    }

    fn add(&mut self, result: &TurnResult) {
        self.numbers.add(result.numbers());
        self.turns += 1;
        self.cost = self.cost + Cost::from(result.observation.cost_usd);
        self.judge += JudgeSpend::of_rubric(&result.verdict.rubric);
        self.thinking_tokens = self
            .thinking_tokens
            .saturating_add(result.observation.thinking_tokens);
        self.logs_lost += usize::from(result.log_error.is_some());
        self.cached_turns += usize::from(result.observation.cached_calls > 0);
    }

    /// The variant's summary.
    fn finish(self, variant: &PreparedVariant) -> VariantSummary {
        let numbers = self.numbers.finish();
        let share = |kept: usize| {
            if self.cases == 0 {
                0.0
            } else {
                kept as f64 / self.cases as f64
            }
        };
        let planned = self.planned;
        let (cost, judge, turns) = (self.cost, self.judge, self.turns);
        VariantSummary {
            variant: variant.name.clone(),
            fingerprint: variant.fingerprint.clone(),
            model: variant.model.model.clone(),
            provider: variant.model.provider.map(|kind| kind.name().to_string()),
            thinking_level: variant.model.thinking_level,
            force_thinking_level: variant.model.forced,
            planned,
            turns: numbers.turns,
            passed: numbers.passed,
            failed: numbers.failed,
            errors: numbers.errors,
            not_run: planned.saturating_sub(turns),
            logs_lost: self.logs_lost,
            pass_rate: numbers.pass_rate.unwrap_or(0.0),
            pass_rate_interval: numbers.pass_rate_interval,
            usage: numbers.usage,
            cache_read_share: numbers.cache_read_share,
            latency_p50_ms: numbers.latency_p50_ms,
            latency_p95_ms: numbers.latency_p95_ms,
            ignored_overrides: variant.ignored.iter().map(ToString::to_string).collect(),
            cases: self.cases,
            cases_met: self.cases_met,
            samples_per_case: self.samples_per_case,
            pass_at_k: share(self.passed_once),
            pass_all_k: share(self.passed_all),
            judge_calls: judge.calls,
            judge_cached: judge.cached,
            judge_usage: judge.usage,
            thinking_tokens: self.thinking_tokens,
            cost_usd: cost.usd(),
            cost_per_turn_usd: cost.usd().filter(|_| turns > 0).map(|c| c / turns as f64),
            judge_cost_usd: judge.cost.usd(),
            cached_turns: self.cached_turns,
        }
    }
}

/// Reads the whole spill once, in matrix order, fold by fold;
/// `default_share` is `--pass-threshold`, `shown` how many failing turns
/// are kept to be shown.
pub fn gather(
    plan: &EvalPlan,
    store: &mut ResultStore,
    default_share: f64,
    shown: usize,
) -> Result<RunTotals, SpillError> {
    let mut variants: Vec<VariantTotals> = plan
        .matrix
        .variants
        .iter()
        .map(|_| VariantTotals::new())
        .collect();
    let mut tags = TagTotals::default();
    let mut from_runs: BTreeMap<Option<String>, usize> = BTreeMap::new();
    let mut totals = RunTotals::empty(variants.len());
    for read in folds(plan, default_share, store)? {
        match read? {
            Folded::Turn(result) => {
                if plan.deciding_outcome(&result.verdict) != result.verdict.outcome {
                    totals.rubric_advisory[result.spec.variant] += 1;
                }
                tags.add(plan, &result);
                variants[result.spec.variant].add(&result);
                totals.add(plan, *result, shown, &mut from_runs);
            }
            Folded::Case(fold) => {
                variants[fold.variant].add_fold(&fold);
                totals.junit.add(&fold);
                totals.every_case_passed &= fold.outcome == CaseOutcome::Pass;
            }
        }
    }
    let planned: usize = variants.iter().map(|v| v.planned).sum();
    totals.not_run = planned.saturating_sub(totals.turns);
    totals.summaries = variants
        .into_iter()
        .enumerate()
        .map(|(index, variant)| variant.finish(&plan.matrix.variants[index]))
        .collect();
    totals.tags = tags.finish(plan);
    totals.from_runs = turns_from_runs(from_runs);
    Ok(totals)
}

impl RunTotals {
    /// One turn's part in the counts, the lost logs and the failures shown.
    fn add(
        &mut self,
        plan: &EvalPlan,
        result: TurnResult,
        shown: usize,
        from_runs: &mut BTreeMap<Option<String>, usize>,
    ) {
        self.turns += 1;
        match result.verdict.outcome {
            Outcome::Pass => self.passed += 1,
            Outcome::Fail => self.failed += 1,
            Outcome::Error => self.errored += 1,
        }
        if let Some(error) = &result.log_error {
            let label = turn_label(plan, &result);
            self.logs_lost.push(format!("{label}: {error}"));
        }
        if result.from_log {
            self.from_logs += 1;
            *from_runs
                .entry(result.observation.eval_run.clone())
                .or_default() += 1;
        }
        if result.verdict.outcome != Outcome::Pass {
            self.failing_count += 1;
            if self.failing.len() < shown {
                self.failing.push(result);
            }
        }
    }

    fn empty(variants: usize) -> RunTotals {
        RunTotals {
            summaries: Vec::new(),
            every_case_passed: true,
            junit: SuiteCounts::new(variants),
            tags: Vec::new(),
            turns: 0,
            passed: 0,
            failed: 0,
            errored: 0,
            not_run: 0,
            logs_lost: Vec::new(),
            failing: Vec::new(),
            failing_count: 0,
            from_runs: Vec::new(),
            from_logs: 0,
            rubric_advisory: vec![0; variants],
        }
    }
}

/// The counts in id order (logs without an id last).
fn turns_from_runs(counts: BTreeMap<Option<String>, usize>) -> Vec<TurnsFromRun> {
    let mut runs: Vec<TurnsFromRun> = counts
        .into_iter()
        .map(|(eval_run, turns)| TurnsFromRun { eval_run, turns })
        .collect();
    runs.sort_by_key(|run| run.eval_run.is_none());
    runs
}

/// The spill's results in matrix order, each held to the plan: a turn it
/// selected, recorded with that turn's variant, claim, case and sample.
pub fn checked<'a>(
    plan: &'a EvalPlan,
    store: &'a mut ResultStore,
) -> Result<impl Iterator<Item = Result<TurnResult, SpillError>> + 'a, SpillError> {
    let mut selected = plan.selected().peekable();
    let mut failed = false;
    let mut order = store.in_matrix_order()?;
    Ok(std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let checked = order.next()?.and_then(|result| {
            let index = result.spec.index;
            while selected.next_if(|spec| spec.index < index).is_some() {}
            match selected.next_if(|spec: &TurnSpec| spec.index == index) {
                Some(spec) if spec == result.spec => Ok(result),
                Some(_) => Err(order.error(SpillProblem::Misplaced(index))),
                None => Err(order.error(SpillProblem::NotSelected(index))),
            }
        });
        failed = checked.is_err();
        Some(checked)
    }))
}
