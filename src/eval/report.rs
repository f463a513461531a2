//! What the end of an eval says, as types: per-variant statistics, turn
//! labels, and the typed NDJSON records that `eval --format ndjson` prints
//! (`docs/suites.md`); `totals` gathers their numbers from the spill.

use std::path::PathBuf;

use serde::Serialize;

use super::expect::Outcome;
use super::fold::{CaseFold, CaseOutcome};
use super::matrix::{Shard, TurnSpec};
use super::plan::EvalPlan;
use super::run_id::EvalRunKind;
use super::runner::TurnResult;
use crate::chat::event::{ChatEvent, Usage};
use crate::chat::request::ThinkingLevel;
use crate::judge::RubricVerdict;
use crate::provider::RetryNotice;

/// One variant's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantSummary {
    pub variant: String,
    pub fingerprint: String,
    /// The model the variant's turns asked for.
    pub model: String,
    /// The variant's own provider (`provider` in the suite); absent: the
    /// run's `--provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Their default thinking level (a quick action's own wins unless forced).
    pub thinking_level: ThinkingLevel,
    pub force_thinking_level: bool,
    /// Turns this run selected for the variant (this shard's).
    pub planned: usize,
    /// Turns with a result (run now, or taken from a log).
    pub turns: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// Planned turns that never ran (cancelled).
    pub not_run: usize,
    /// Turns whose run log could not be written (counted among the errors).
    pub logs_lost: usize,
    /// passed / turns.
    pub pass_rate: f64,
    /// 95% Wilson interval of the pass rate.
    pub pass_rate_interval: Option<(f64, f64)>,
    /// Tokens summed over its turns (`inputTokens`, `outputTokens`,
    /// `cacheReadTokens`: `null` where a server left the count out), and
    /// `usageUnreported`, the model calls that lacked usage (absent: none).
    #[serde(flatten)]
    pub usage: Usage,
    /// cache read / input tokens; `null` when either is unknown.
    pub cache_read_share: Option<f64>,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
    /// Overrides of the variant that were not applied, and why.
    pub ignored_overrides: Vec<String>,
    /// Claim × case groups (each with its repeats) with a result.
    pub cases: usize,
    /// Groups whose passes reached their threshold.
    pub cases_met: usize,
    /// The most samples a group has (the k of pass@k).
    pub samples_per_case: u32,
    /// Share of groups where at least one sample passed.
    pub pass_at_k: f64,
    /// Share of groups where every sample passed (pass^k).
    pub pass_all_k: f64,
    /// Rubric verdicts behind these turns (cache hits included).
    pub judge_calls: usize,
    /// Of those, answered from the judge cache.
    pub judge_cached: usize,
    /// Judge tokens of the calls made (never added to the chat's).
    pub judge_usage: Usage,
    /// Of the output tokens, thinking.
    pub thinking_tokens: u64,
    /// What the chat model calls cost, in USD; absent when any turn's
    /// cost is unknown (an unpriced model): never a guessed 0.
    pub cost_usd: Option<f64>,
    /// `costUsd` / turns.
    pub cost_per_turn_usd: Option<f64>,
    /// What the judge calls cost, apart from the chat's.
    pub judge_cost_usd: Option<f64>,
    /// Turns with a model call answered from the cache: left out of the
    /// latency percentiles.
    pub cached_turns: usize,
}

/// `variant · claim · case #sample`
pub fn spec_label(plan: &EvalPlan, spec: &TurnSpec) -> String {
    format!(
        "{} · {} · {} #{}",
        plan.matrix.variants[spec.variant].name,
        spec.claim_id,
        plan.suite.suite.cases[spec.case].name,
        spec.sample
    )
}

pub fn turn_label(plan: &EvalPlan, result: &TurnResult) -> String {
    spec_label(plan, &result.spec)
}

/// Where a turn sits in the matrix, as every NDJSON record names it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TurnPlace {
    pub variant: String,
    pub claim: String,
    pub case: String,
    pub sample: u32,
}

impl TurnPlace {
    pub fn of(plan: &EvalPlan, spec: &TurnSpec) -> TurnPlace {
        let labels = plan.labels(spec);
        TurnPlace {
            variant: labels.variant,
            claim: spec.claim_id.clone(),
            case: labels.case,
            sample: spec.sample,
        }
    }
}

/// One line of `eval --format ndjson`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum EvalRecord<'a> {
    /// An event of a running turn.
    Event {
        #[serde(flatten)]
        place: TurnPlace,
        event: &'a ChatEvent,
    },
    /// A running turn's model (or deployment) failed a try and is about
    /// to retry it: `Gemini answered 503; retrying (2 of 3) in 1.2 s`.
    Notice {
        #[serde(flatten)]
        place: TurnPlace,
        notice: &'a RetryNotice,
    },
    /// A judged turn.
    Turn(TurnRecord),
    /// A case's repeats on one claim, folded by its threshold.
    Case(CaseRecord),
    /// The last line.
    Summary(SummaryRecord),
    /// A turn `--list` plans (nothing runs).
    Planned {
        #[serde(flatten)]
        place: TurnPlace,
        model: String,
        #[serde(rename = "thinkingLevel")]
        thinking_level: ThinkingLevel,
        /// The case's tags.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tags: Vec<String>,
    },
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnRecord {
    #[serde(flatten)]
    pub place: TurnPlace,
    pub fingerprint: String,
    pub verdict: Outcome,
    pub failures: Vec<String>,
    /// Each rubric criterion's verdict and judge call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rubric: Vec<RubricVerdict>,
    pub usage: Usage,
    pub rounds: u32,
    pub latency_ms: u64,
    /// The turn id (its run log's name and header): absent only when the
    /// turn never started.
    pub turn_id: Option<String>,
    /// The eval run that recorded the turn: this run's, or — for a turn
    /// merged, resumed or re-scored from a log — the one in its header
    /// (absent in logs written before eval runs had ids).
    pub eval_run: Option<String>,
    /// The model the turn asked for.
    pub model: String,
    /// What its model calls cost in USD; absent: unknown.
    pub cost_usd: Option<f64>,
    pub run_log: Option<PathBuf>,
    /// Why the run log could not be written (the turn is then an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_error: Option<String>,
    pub from_log: bool,
}

impl TurnRecord {
    pub fn of(plan: &EvalPlan, result: &TurnResult) -> TurnRecord {
        TurnRecord {
            place: TurnPlace::of(plan, &result.spec),
            fingerprint: plan.matrix.variants[result.spec.variant]
                .fingerprint
                .clone(),
            verdict: result.verdict.outcome,
            failures: result.verdict.failures.clone(),
            rubric: result.verdict.rubric.clone(),
            usage: result.observation.usage,
            rounds: result.observation.rounds,
            latency_ms: result.observation.latency_ms,
            turn_id: result.observation.turn_id.clone(),
            eval_run: if result.from_log {
                result.observation.eval_run.clone()
            } else {
                Some(plan.eval_run.clone())
            },
            model: plan.matrix.variants[result.spec.variant]
                .model
                .model
                .clone(),
            cost_usd: result.observation.cost_usd,
            run_log: result.run_log.clone(),
            log_error: result.log_error.clone(),
            from_log: result.from_log,
        }
    }
}

/// A variant × claim × case and its folded verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseRecord {
    pub variant: String,
    pub claim: String,
    pub case: String,
    pub fingerprint: String,
    /// Samples selected.
    pub samples: u32,
    pub passed: u32,
    pub failed: u32,
    pub errors: u32,
    /// Passes needed (from `passThreshold`, `minPasses` or `--pass-threshold`).
    pub required: u32,
    pub verdict: CaseOutcome,
}

impl CaseRecord {
    pub fn of(plan: &EvalPlan, fold: &CaseFold) -> CaseRecord {
        let variant = &plan.matrix.variants[fold.variant];
        CaseRecord {
            variant: variant.name.clone(),
            claim: fold.claim.clone(),
            case: plan.suite.suite.cases[fold.case].name.clone(),
            fingerprint: variant.fingerprint.clone(),
            samples: fold.samples,
            passed: fold.passed,
            failed: fold.failed,
            errors: fold.errors,
            required: fold.required,
            verdict: fold.outcome,
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRecord {
    pub suite: String,
    /// This invocation's eval run id (`ev-…`).
    pub eval_run: String,
    /// What it did: ran turns (`run`, also with `--resume`), merged recorded
    /// ones (`merge`, `--report`) or judged them again (`rescore`).
    pub run_kind: EvalRunKind,
    /// Turns taken from run logs (resumed, merged, re-scored), by the eval
    /// run that recorded them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_runs: Vec<TurnsFromRun>,
    /// `I/N` when this run is one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Turns with a result.
    pub turns: usize,
    /// Turns this run selected.
    pub planned: usize,
    pub not_run: usize,
    pub logs_lost: usize,
    pub cancelled: bool,
    /// `--max-cost`, when it stopped turns from starting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_reached: Option<BudgetRecord>,
    /// `--max-cost`: model calls whose cost it could not count, their server
    /// having reported no usage; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub budget_unenforced_calls: u32,
    /// A quota a server said is spent (SPEC §14): no turn started after it;
    /// the message names it. Absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_spent: Option<String>,
    /// Per model that met a 429 or a quota: the 429s, the episodes, the
    /// time waited and queued, and the live limit's history. Absent when
    /// none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_limits: Vec<crate::provider::transport::RateLimits>,
    pub variants: Vec<VariantSummary>,
    /// Pass rates per case tag and variant (absent when no case has a tag).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<super::tags::TagSummary>,
    /// Ignored overrides and unknown placeholders, one line each by variant
    /// (what `--strict` refuses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The rubric judge's calibration (SPEC §15): status, kappa, labels,
    /// identity, and whether its verdicts decided the exit code. Absent
    /// without rubric criteria.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_calibration: Option<super::calibration::JudgeCalibration>,
    pub exit: u8,
}

/// How many of the summary's turns came from one earlier eval run's logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnsFromRun {
    /// Absent for logs written before eval runs had ids.
    pub eval_run: Option<String>,
    pub turns: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRecord {
    pub limit_usd: f64,
    /// Chat and judge calls of the finished turns.
    pub spent_usd: f64,
}

/// `shard 2/3: 8 of 24 turns`
pub fn shard_line(shard: Shard, selected: usize, whole: usize) -> String {
    format!(
        "shard {}/{}: {selected} of {whole} turns",
        shard.index, shard.count
    )
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}
