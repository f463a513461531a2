//! Everything the end of an eval run says, gathered in one pass over its
//! spill (`spill::ResultStore`) in matrix order: each variant's numbers,
//! the folds (thresholds, pass@k, pass^k), the tags, the turns read from
//! logs by the run that recorded them, the lost logs and the first failures
//! shown. What it keeps grows with the groups (a fold's counts per variant
//! × claim × case), not the turns — but for the latencies of the exact
//! percentiles, 8 bytes a turn.
//!
//! Every pass over the spill goes through `checked`, which holds each record
//! to the plan: a turn this run selected, at its own place in the matrix.

use std::collections::BTreeMap;

use super::fold::{CaseFold, CaseFolder, CaseOutcome};
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
    /// Each case's repeats on each claim, folded by its threshold.
    pub folds: Vec<CaseFold>,
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
        }
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

    /// The variant's summary; `groups`: its cases' folds that ran.
    fn finish(
        self,
        variant: &PreparedVariant,
        planned: usize,
        groups: &[&CaseFold],
    ) -> VariantSummary {
        let numbers = self.numbers.finish();
        let share = |keep: fn(&CaseFold) -> bool| {
            let kept = groups.iter().filter(|f| keep(f)).count();
            if groups.is_empty() {
                0.0
            } else {
                kept as f64 / groups.len() as f64
            }
        };
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
            input_tokens: numbers.input_tokens,
            output_tokens: numbers.output_tokens,
            cache_read_tokens: numbers.cache_read_tokens,
            cache_read_share: numbers.cache_read_share,
            latency_p50_ms: numbers.latency_p50_ms,
            latency_p95_ms: numbers.latency_p95_ms,
            ignored_overrides: variant.ignored.iter().map(ToString::to_string).collect(),
            cases: groups.len(),
            cases_met: groups
                .iter()
                .filter(|f| f.outcome == CaseOutcome::Pass)
                .count(),
            samples_per_case: groups.iter().map(|f| f.samples).max().unwrap_or(0),
            pass_at_k: share(|f| f.passed >= 1),
            pass_all_k: share(|f| f.passed == f.samples),
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

/// Reads the whole spill once; `default_share` is `--pass-threshold`,
/// `shown` how many failing turns are kept to be shown.
pub fn gather(
    plan: &EvalPlan,
    store: &mut ResultStore,
    default_share: f64,
    shown: usize,
) -> Result<RunTotals, SpillError> {
    let mut folder = CaseFolder::new(plan, default_share);
    let mut variants: Vec<VariantTotals> = plan
        .matrix
        .variants
        .iter()
        .map(|_| VariantTotals::new())
        .collect();
    let mut tags = TagTotals::default();
    let mut from_runs: BTreeMap<Option<String>, usize> = BTreeMap::new();
    let mut totals = RunTotals::empty();
    for result in checked(plan, store)? {
        let result = result?;
        folder.add(&result);
        tags.add(plan, &result);
        variants[result.spec.variant].add(&result);
        totals.turns += 1;
        match result.verdict.outcome {
            Outcome::Pass => totals.passed += 1,
            Outcome::Fail => totals.failed += 1,
            Outcome::Error => totals.errored += 1,
        }
        if let Some(error) = &result.log_error {
            totals
                .logs_lost
                .push(format!("{}: {error}", turn_label(plan, &result)));
        }
        if result.from_log {
            totals.from_logs += 1;
            *from_runs
                .entry(result.observation.eval_run.clone())
                .or_default() += 1;
        }
        if result.verdict.outcome != Outcome::Pass {
            totals.failing_count += 1;
            if totals.failing.len() < shown {
                totals.failing.push(result);
            }
        }
    }
    totals.folds = folder.finish();
    let mut planned = vec![0usize; variants.len()];
    for fold in &totals.folds {
        planned[fold.variant] += fold.samples as usize;
    }
    totals.not_run = planned.iter().sum::<usize>().saturating_sub(totals.turns);
    totals.summaries = variants
        .into_iter()
        .enumerate()
        .map(|(index, variant)| {
            let groups: Vec<&CaseFold> = (totals.folds.iter())
                .filter(|f| f.variant == index && f.outcome != CaseOutcome::NotRun)
                .collect();
            variant.finish(&plan.matrix.variants[index], planned[index], &groups)
        })
        .collect();
    totals.tags = tags.finish(plan);
    totals.from_runs = turns_from_runs(from_runs);
    Ok(totals)
}

impl RunTotals {
    fn empty() -> RunTotals {
        RunTotals {
            summaries: Vec::new(),
            folds: Vec::new(),
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
