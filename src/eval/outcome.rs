//! An eval's policy at its end, whatever renders it: the mode an
//! invocation runs in, the exit rule, the budget rule, the summary record
//! and the eval run kept in the runs folder's history (SPEC §9). The
//! binary turns flags into a mode and settings, and renders an
//! `EvalOutcome` (pretty, NDJSON, JUnit, Markdown).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::budget::Budget;
use super::calibration::JudgeCalibration;
use super::plan::EvalPlan;
use super::report::{BudgetRecord, EvalRecord, SummaryRecord};
use super::run_id::EvalRunKind;
use super::run_settings::RunLimits;
use super::spill::{ResultStore, SpillError};
use super::totals::{RunTotals, gather};
use crate::exit::Exit;
use crate::provider::transport::RateLimits;

/// What one `eval` invocation does (decided from its flags): every part
/// of `eval` asks for the mode instead of reading `--list`, `--report`,
/// `--rescore`, `--resume` and `--watch` itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalMode {
    /// `--list`: plan the turns and print them; nothing runs.
    List,
    /// Run the turns; with `--resume`, those already done are read back.
    Run { resume: bool },
    /// `--report DIR…`: merge the turns recorded there; nothing runs.
    Merge(Vec<PathBuf>),
    /// `--rescore`: judge recorded turns again (under `--report` folders,
    /// else the runs folder), no chat model call.
    Rescore(Vec<PathBuf>),
    /// `--watch`: run, then again on each change.
    Watch,
}

impl EvalMode {
    /// How the eval run is recorded: `run`, `merge` or `rescore`.
    pub fn run_kind(&self) -> EvalRunKind {
        match self {
            EvalMode::Rescore(_) => EvalRunKind::Rescore,
            EvalMode::Merge(_) => EvalRunKind::Merge,
            EvalMode::List | EvalMode::Run { .. } | EvalMode::Watch => EvalRunKind::Run,
        }
    }

    /// Whether some turns are judged from their logs rather than streamed
    /// while they ran (merged, resumed, re-scored).
    pub fn reads_logs(&self) -> bool {
        matches!(
            self,
            EvalMode::Merge(_) | EvalMode::Rescore(_) | EvalMode::Run { resume: true }
        )
    }

    /// Whether this invocation runs turns (and so writes run logs).
    pub fn runs_turns(&self) -> bool {
        matches!(self, EvalMode::Run { .. } | EvalMode::Watch)
    }
}

/// What the exit rule reads besides the results.
#[derive(Debug, Clone, Copy)]
pub struct ExitRule {
    /// `--pass-threshold`: the share of a case's repeats that must pass,
    /// for cases that set none of their own.
    pub pass_threshold: f64,
    /// `--min-pass-rate`: pass when every variant reaches it, instead of
    /// only when every case does.
    pub min_pass_rate: Option<f64>,
}

/// An ended eval: its totals (read from the spill in matrix order), why it
/// stopped early if it did, its budget, and the exit its rules give.
pub struct EvalOutcome<'a> {
    pub plan: &'a EvalPlan,
    pub totals: RunTotals,
    /// The signal that stopped it (Ctrl-C, SIGTERM).
    pub stop: Option<Exit>,
    /// `--max-cost`, when it was given.
    pub budget: Option<&'a Budget>,
    /// The spent quota that stopped turns from starting (SPEC §14).
    pub quota_spent: Option<String>,
    /// What each model that met a rate limit or a quota went through.
    pub rate_limits: Vec<RateLimits>,
    /// The rubric judge's calibration at the run's start (SPEC §15); none
    /// without rubric criteria.
    pub judge_calibration: Option<JudgeCalibration>,
    /// The exit rule's result; a renderer that fails to write a report
    /// makes it a failure (`failed`).
    pub exit: Exit,
}

impl<'a> EvalOutcome<'a> {
    /// The outcome of the results in `store`, every turn of the run;
    /// `shown`: how many failing turns the totals keep for display.
    pub fn of(
        plan: &'a EvalPlan,
        store: &mut ResultStore,
        (rule, shown): (ExitRule, usize),
        stop: Option<Exit>,
        limits: &'a RunLimits,
    ) -> Result<EvalOutcome<'a>, SpillError> {
        let totals = gather(plan, store, rule.pass_threshold, shown)?;
        let budget = limits.budget.as_deref();
        let quota_spent = limits.quota_spent();
        let mut exit = exit_rule(rule, &totals, stop, budget);
        // A spent quota is never a pass: turns it met errored, the rest did
        // not run.
        if quota_spent.is_some() && exit == Exit::Success {
            exit = Exit::Failure;
        }
        Ok(EvalOutcome {
            plan,
            totals,
            stop,
            budget,
            quota_spent,
            rate_limits: limits.rate_limits(),
            judge_calibration: None,
            exit,
        })
    }

    /// Why the turns that did not run did not: for JUnit's `skipped`.
    pub fn not_run_reason(&self) -> &'static str {
        if self.quota_spent.is_some() {
            "quota spent"
        } else if self.budget_reached().is_some() {
            "budget reached"
        } else {
            "cancelled"
        }
    }

    /// A run that passed fails after all (a report it owed not written).
    pub fn failed(&mut self) {
        if self.exit == Exit::Success {
            self.exit = Exit::Failure;
        }
    }

    /// `--max-cost`, when it held turns back.
    pub fn budget_reached(&self) -> Option<&Budget> {
        self.budget.filter(|budget| budget.reached())
    }

    /// The NDJSON `summary` record, also kept in the runs folder's history.
    pub fn summary_record(&self, mode: &EvalMode) -> SummaryRecord {
        let (plan, totals) = (self.plan, &self.totals);
        SummaryRecord {
            suite: plan.suite.name.clone(),
            eval_run: plan.eval_run.clone(),
            run_kind: mode.run_kind(),
            from_runs: totals.from_runs.clone(),
            shard: plan
                .selection
                .shard
                .map(|s| format!("{}/{}", s.index, s.count)),
            turns: totals.turns,
            planned: totals.turns + totals.not_run,
            not_run: totals.not_run,
            logs_lost: totals.logs_lost.len(),
            cancelled: self.stop.is_some(),
            budget_reached: self.budget_reached().map(|b| BudgetRecord {
                limit_usd: b.limit_usd(),
                spent_usd: b.spent_usd(),
            }),
            budget_unenforced_calls: self.budget.map_or(0, Budget::unenforced_calls),
            quota_spent: self.quota_spent.clone(),
            rate_limits: self.rate_limits.clone(),
            variants: totals.summaries.clone(),
            tags: totals.tags.clone(),
            warnings: plan.override_warnings(),
            judge_calibration: self.judge_calibration.clone(),
            exit: self.exit.number(),
        }
    }

    /// Keeps the eval run in the runs folder's history: its summary file
    /// (`evals/<id>.json`, #30, `evals list`), its turn ids read from the
    /// spill as they are written, then the index's one catch-up at the
    /// eval's end (SPEC §9; a failed catch-up leaves it to the next
    /// reader). Nothing where the runs folder does not exist (a merge of
    /// shard folders elsewhere). The error is the summary file's, for the
    /// caller to warn about: the eval's own outputs are written already.
    pub fn record(
        &self,
        mode: &EvalMode,
        (started_at, runs_dir): (DateTime<Utc>, &Path),
        store: &mut ResultStore,
    ) -> std::io::Result<()> {
        if !runs_dir.is_dir() {
            return Ok(());
        }
        let summary = self.summary_record(mode);
        let file = crate::index::evals::EvalRunFile {
            eval_run: summary.eval_run.clone(),
            run_kind: match summary.run_kind {
                EvalRunKind::Run => "run",
                EvalRunKind::Merge => "merge",
                EvalRunKind::Rescore => "rescore",
            }
            .to_string(),
            suite: summary.suite.clone(),
            shard: summary.shard.clone(),
            started_at,
            ended_at: Utc::now(),
            planned: summary.planned,
            cancelled: summary.cancelled,
            exit: summary.exit,
            // Written from the spill, never listed here.
            turn_ids: Vec::new(),
            from_logs: Vec::new(),
            // As printed: tagged like every NDJSON record.
            summary: serde_json::to_value(EvalRecord::Summary(summary)).unwrap_or_default(),
        };
        let mut turns = |each: &mut dyn FnMut(&str, bool) -> std::io::Result<()>| {
            let order = store.in_matrix_order().map_err(std::io::Error::other)?;
            order.turn_ids(each)
        };
        let recorded = crate::index::evals::record_eval_run(runs_dir, &file, &mut turns);
        let _ = crate::index::RunIndex::catch_up(runs_dir);
        recorded.map(|_| ())
    }
}

/// Ctrl-C or SIGTERM first; then 1 for a lost log; then any case whose
/// repeats did not reach its threshold (by default: any turn that did not
/// pass) — or, with `--min-pass-rate`, a variant below it; and a run whose
/// budget held turns back cannot pass, its unrun turns not judged.
fn exit_rule(
    rule: ExitRule,
    totals: &RunTotals,
    stop: Option<Exit>,
    budget: Option<&Budget>,
) -> Exit {
    if let Some(stop) = stop {
        return stop;
    }
    // A turn that failed only an advisory rubric counts as passed here.
    let deciding_rate = |(s, advisory): (&super::report::VariantSummary, &usize)| {
        s.pass_rate + *advisory as f64 / s.turns.max(1) as f64
    };
    let variants = totals.summaries.iter().zip(&totals.rubric_advisory);
    let below = match rule.min_pass_rate {
        Some(rate) => (variants.map(|v| (v.0.turns, deciding_rate(v))))
            .any(|(turns, pass_rate)| turns == 0 || pass_rate + 1e-9 < rate),
        None => !totals.every_case_passed,
    };
    if below || !totals.logs_lost.is_empty() || budget.is_some_and(Budget::reached) {
        Exit::Failure
    } else {
        Exit::Success
    }
}
