//! The end of an eval turn, once its calls are done: its verdict judged on
//! exactly what its log records and written into the log's footer
//! (`record_verdict`), the log completed alone or in a group commit
//! (`Committing`), a lost log made an error (`lost_log`), and what the turn
//! tells the feed last (`hand_on`: room for its `Finished` taken while it
//! holds its `-j` slot).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::TrySendError;
use tokio_util::sync::CancellationToken;

use super::expect::{Observation, Outcome, Verdict};
use super::feed::{EvalMessage, tell};
use super::judging::judge_rubric;
use super::log_commit::GroupMember;
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
use super::run_settings::RunSettings;
use super::runner::{TurnResult, end_trace};
use crate::judge::Judge;
use crate::runs::RunStatus;
use crate::runs::record::RecordedVerdict;
use crate::sink::driver::{TurnSink, ready_or_idle};
use crate::sink::run_log::{RunRecorder, WrittenLog};

/// A judged turn's last steps: its spend, room in the feed for what it has
/// left to say, its slot given up, its log's group commit, its `Finished`.
pub(super) async fn hand_on(
    plan: &EvalPlan,
    settings: &RunSettings,
    slot: tokio::sync::OwnedSemaphorePermit,
    (result, committing): (TurnResult, Option<Committing>),
    messages: &Sender<EvalMessage>,
) -> TurnResult {
    if let Some(budget) = &settings.limits.budget {
        budget.spend(&result);
    }
    let result = result.kept();
    // Room for its `Finished` and for the warning should its log's commit
    // fail, taken while the turn holds its slot: a reader that has fallen
    // behind holds back the next turns, instead of finished ones piling up,
    // and a turn waiting for its commit needs no more room than it holds
    // (a closed feed: no room, nothing to say).
    let needed = messages.max_capacity().min(2);
    let mut room = messages.reserve_many(needed).await.ok();
    // Given up only now: the next turn is checked against a budget that
    // counts this one's spend. A turn waiting for its log's group commit
    // holds no slot, or the group could never fill.
    drop(slot);
    let result = match committing {
        Some(committing) => committing.wait(plan, result, room.as_mut()).await,
        None => result,
    };
    let finished = EvalMessage::Finished(Box::new(result.clone()));
    match room.as_mut().and_then(Iterator::next) {
        Some(permit) => permit.send(finished),
        // A feed of one message, whose room the warning took.
        None if room.is_some() => tell(messages, finished).await,
        None => {}
    }
    result
}

/// Judges the turn on exactly the numbers its footer records (so that a
/// merge of shards, which judges from the logs, reaches the same verdict),
/// puts its rubric criteria to the judge, then completes the log with the
/// verdict and the judge calls in it.
pub(super) async fn record_verdict(
    plan: &EvalPlan,
    spec: &TurnSpec,
    mut observation: Observation,
    (mut recorder, member): (RunRecorder, Option<GroupMember>),
    judge: Option<&Judge>,
    cancel: &CancellationToken,
    messages: &Sender<EvalMessage>,
) -> (TurnResult, Option<Committing>) {
    let Some(mut footer) = recorder.draft_footer(RunStatus::Cancelled) else {
        let error = "the turn ended before its run log was opened".to_string();
        return (
            lost_log(plan, spec, observation, error, messages).await,
            None,
        );
    };
    observation.latency_ms = footer.total_ms;
    observation.thinking_tokens = footer.thinking_tokens;
    observation.cost_usd = footer.cost_usd;
    observation.cached_calls = footer.cached_calls;
    let expect = plan.expectations(spec);
    let rubric = match judge {
        Some(judge) => {
            // The judge's retries are told as this turn's notices: at once
            // while the feed has room, else in order once the judge is done
            // (a sync callback cannot wait for room).
            let held = Arc::new(parking_lot::Mutex::new(Vec::new()));
            let notices = judge_notices(messages, spec, &held);
            let seen = &observation;
            let judging = judge_rubric(judge, expect, &seen.message, seen, cancel, Some(&notices));
            // A judge is a model call away: the log is written out first.
            let rubric = ready_or_idle(judging, || recorder.idle()).await;
            let held = std::mem::take(&mut *held.lock());
            for message in held {
                ready_or_idle(tell(messages, message), || recorder.idle()).await;
            }
            rubric
        }
        None => Vec::new(),
    };
    let verdict = super::expect::judge(expect, &observation, &rubric);
    footer.verdict = Some(RecordedVerdict {
        outcome: verdict.outcome,
        failures: verdict.failures.clone(),
        rubric: verdict.rubric.clone(),
    });
    let (finished, committing) = finish_log(recorder, member, footer).await;
    let result = match finished {
        Ok(Some(path)) => TurnResult {
            run_log: Some(path),
            ..TurnResult::new(spec, observation, verdict)
        },
        Ok(None) => {
            let error = "the turn ended before its run log was opened".to_string();
            lost_log(plan, spec, observation, error, messages).await
        }
        Err(error) => {
            let error = format!("could not complete it: {error}");
            lost_log(plan, spec, observation, error, messages).await
        }
    };
    (result, committing)
}

/// Tells the judge's retry notices of `spec` into the feed, or into `held`
/// once the feed is full (and after that, to keep their order).
fn judge_notices(
    messages: &Sender<EvalMessage>,
    spec: &TurnSpec,
    held: &Arc<parking_lot::Mutex<Vec<EvalMessage>>>,
) -> crate::judge::RetryNotices {
    let (messages, spec, held) = (messages.clone(), spec.clone(), Arc::clone(held));
    crate::judge::RetryNotices::new(move |notice| {
        let mut held = held.lock();
        let message = EvalMessage::Notice(spec.clone(), notice);
        if !held.is_empty() {
            held.push(message);
        } else if let Err(TrySendError::Full(message)) = messages.try_send(message) {
            held.push(message);
        }
    })
}

/// Writes the footer and completes the log alone, or leaves it to its
/// group commit (the path it will have, and its place in the group). A log
/// completed alone is synced and renamed off the runtime's threads.
async fn finish_log(
    mut recorder: RunRecorder,
    member: Option<GroupMember>,
    footer: crate::runs::record::RunFooter,
) -> (std::io::Result<Option<PathBuf>>, Option<Committing>) {
    let Some(member) = member else {
        // What the log holds is written out before the turn waits for the
        // blocking pool (nothing, unless it is batched).
        recorder.idle();
        let finished = tokio::task::spawn_blocking(move || recorder.finish_with(footer));
        return (finished.await.unwrap_or_else(join_failed), None);
    };
    // Written here, not on the blocking pool: the footer goes to the page
    // cache in one `write` of a few KB, cheaper than handing it to a thread.
    match recorder.finish_written(footer) {
        Ok(Some(log)) => {
            let path = log.final_path().to_path_buf();
            let trace = None;
            (Ok(Some(path)), Some(Committing { member, log, trace }))
        }
        Ok(None) => (Ok(None), None),
        Err(error) => (Err(error), None),
    }
}

/// A blocking step's task that did not finish (it panicked).
fn join_failed<T>(joined: tokio::task::JoinError) -> std::io::Result<T> {
    Err(std::io::Error::other(joined))
}

/// A judged turn's log waiting for its group commit.
pub(super) struct Committing {
    pub(super) member: GroupMember,
    pub(super) log: WrittenLog,
    pub(super) trace: Option<Box<crate::telemetry::TurnTrace>>,
}

impl Committing {
    /// `result` once its log is synced and renamed; an error, as any turn
    /// whose log was not written is, when it could not be.
    async fn wait(
        self,
        plan: &EvalPlan,
        result: TurnResult,
        room: Option<&mut tokio::sync::mpsc::PermitIterator<'_, EvalMessage>>,
    ) -> TurnResult {
        let result = match self.member.commit(self.log).await {
            Ok(_) => result,
            Err(error) => {
                let error = format!("could not complete it: {error}");
                let TurnResult {
                    spec, observation, ..
                } = result;
                let (result, warning) = lost_log_result(plan, &spec, observation, error);
                if let Some(permit) = room.and_then(Iterator::next) {
                    permit.send(warning);
                }
                result
            }
        };
        if let Some(trace) = self.trace {
            end_trace(plan, trace, &result);
        }
        result
    }
}

/// A turn whose run log was not written is an error, whatever its answer;
/// the warning is told first.
pub(super) async fn lost_log(
    plan: &EvalPlan,
    spec: &TurnSpec,
    observation: Observation,
    error: String,
    messages: &Sender<EvalMessage>,
) -> TurnResult {
    let (result, warning) = lost_log_result(plan, spec, observation, error);
    tell(messages, warning).await;
    result
}

/// `lost_log`'s result and its warning.
fn lost_log_result(
    plan: &EvalPlan,
    spec: &TurnSpec,
    observation: Observation,
    error: String,
) -> (TurnResult, EvalMessage) {
    let label = crate::eval::report::spec_label(plan, spec);
    let warning = format!("run log of {label} not written: {error}");
    let verdict = Verdict::new(
        Outcome::Error,
        vec![format!("run log not written: {error}")],
    );
    let result = TurnResult {
        log_error: Some(error),
        ..TurnResult::new(spec, observation, verdict)
    };
    (result, EvalMessage::Warning(warning))
}
