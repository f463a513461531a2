//! Running a suite's turns with bounded concurrency: each turn recorded as a
//! run log (labelled with its place in the matrix), judged, reported as it
//! finishes and put in the run's spill (`eval::spill`), as are the turns
//! `--resume` and `--report` read from logs. One turn failing never stops
//! the others; cancelling stops new turns from starting and cancels the
//! running ones.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::expect::{Observation, Outcome, Verdict, last_user_message};
pub use super::feed::{EvalMessage, FEED_CAPACITY, Feed};
use super::feed::{Watch, tell};
use super::judging::judge_rubric;
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
pub use super::recorded::{
    index_recorded, index_recorded_counted, merge_recorded, missing_result, result_from_log, resume,
};
pub use super::run_settings::{ProviderChoice, RunSettings};
use super::spill::ResultStore;
use crate::chat::service::TurnContext;
use crate::judge::Judge;
use crate::provider::cache::CachingProvider;
use crate::runs::RunStatus;
use crate::runs::record::RecordedVerdict;
use crate::sink::driver::drive;
use crate::sink::run_log::{GroupCommit, RunRecorder, WrittenLog};
use crate::telemetry::TurnLabels;
use crate::worker::TurnRunner;

/// One judged turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub spec: TurnSpec,
    pub observation: Observation,
    pub verdict: Verdict,
    pub run_log: Option<PathBuf>,
    /// Why the turn's run log could not be written: the turn then counts
    /// as an error, since nothing can check or merge it later.
    pub log_error: Option<String>,
    /// Taken from an earlier run (`--resume`) or from run logs (`--report`).
    pub from_log: bool,
}

impl TurnResult {
    /// What the turn adds to its variant's numbers (`runs::tally`).
    pub fn numbers(&self) -> crate::runs::tally::TurnNumbers {
        crate::runs::tally::TurnNumbers {
            outcome: Some(self.verdict.outcome),
            errored: self.verdict.outcome == Outcome::Error,
            usage: self.observation.usage,
            latency_ms: Some(self.observation.latency_ms),
            cached: self.observation.cached_calls > 0,
        }
    }

    /// What a finished turn keeps for the end of the run (what goes into
    /// the run's spill, `eval::spill`): its verdict, numbers, ids and as
    /// much of its answer as JUnit shows (one character more, so that JUnit
    /// still knows it was cut) — not the tool calls, client actions, tool
    /// evidence or question it was judged on.
    pub fn kept(mut self) -> TurnResult {
        let observation = &mut self.observation;
        let shown = super::junit::ANSWER_CHARS + 1;
        if let Some((cut, _)) = observation.answer.char_indices().nth(shown) {
            observation.answer.truncate(cut);
        }
        observation.answer.shrink_to_fit();
        observation.tool_calls = Vec::new();
        observation.client_actions = Vec::new();
        observation.tools = Vec::new();
        observation.message = String::new();
        self
    }

    pub fn new(spec: &TurnSpec, observation: Observation, verdict: Verdict) -> TurnResult {
        TurnResult {
            spec: spec.clone(),
            observation,
            verdict,
            run_log: None,
            log_error: None,
            from_log: false,
        }
    }
}

/// Runs the plan's remaining turns at most `concurrency` at a time, each
/// an ordinary task (a `JoinSet` under a semaphore of `-j`) — on whatever
/// runtime polls this, `eval`'s being one thread: a turn's syncs (its log,
/// a new prompt, a cache entry) go to the blocking pool and a full feed is
/// awaited, so no turn's wait stalls the others; each finished turn goes
/// to `store` (the run's spill:
/// nothing of it stays in memory here) in the order turns finish. Once
/// `cancel` fires (or the budget is spent) no turn starts.
pub async fn run_turns(
    plan: Arc<EvalPlan>,
    settings: Arc<RunSettings>,
    cancel: CancellationToken,
    messages: Sender<EvalMessage>,
    store: &mut ResultStore,
) {
    // With a budget, variants take turns, so a stop leaves none with no runs.
    let order: Box<dyn Iterator<Item = TurnSpec> + Send + '_> = if settings.budget.is_some() {
        Box::new(plan.to_run_round_robin())
    } else {
        Box::new(plan.to_run())
    };
    // Nobody reads a turn's events as they happen unless the feed carries
    // them: the logs can then be synced and renamed in groups.
    let group = (!settings.feed.events).then(GroupCommit::new);
    let slots = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for spec in order {
        // A slot first: never more than `-j` turns run (and at most
        // `log_commit::MAX_WAITING` more wait for their log's group), and a
        // turn is checked against the budget when it could really start.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        while let Some(joined) = tasks.try_join_next() {
            joined_result(joined, store);
        }
        if cancel.is_cancelled() || settings.budget.as_ref().is_some_and(|b| !b.allows_start()) {
            break;
        }
        let (plan, settings) = (Arc::clone(&plan), Arc::clone(&settings));
        let (cancel, messages, group) = (cancel.clone(), messages.clone(), group.clone());
        tasks.spawn(async move {
            // Boxed: a turn's state is freed once it is judged, not kept
            // for as long as the task waits for its group commit.
            let turn = Box::pin(run_one(&plan, &settings, &spec, (cancel, group), &messages));
            let (result, committing) = turn.await;
            hand_on(&plan, &settings, slot, (result, committing), &messages).await
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined_result(joined, store);
    }
}

/// A judged turn's last steps: its spend, room in the feed for what it has
/// left to say, its slot given up, its log's group commit, its `Finished`.
async fn hand_on(
    plan: &EvalPlan,
    settings: &RunSettings,
    slot: tokio::sync::OwnedSemaphorePermit,
    (result, committing): (TurnResult, Option<Committing>),
    messages: &Sender<EvalMessage>,
) -> TurnResult {
    if let Some(budget) = &settings.budget {
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

/// A finished turn task's result, into the store. A turn that panicked
/// panics the run, as it did when turns were polled in one task: a bug, not
/// a verdict.
fn joined_result(joined: Result<TurnResult, tokio::task::JoinError>, store: &mut ResultStore) {
    match joined {
        Ok(result) => store.push(result),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Cancelled tasks: only when the set is dropped, which it is not here.
        Err(_) => {}
    }
}

/// Runs and judges one turn: its result, and its log's place in a group
/// commit when it has one (the result's log is named only once that
/// commit is done).
async fn run_one(
    plan: &EvalPlan,
    settings: &RunSettings,
    spec: &TurnSpec,
    (cancel, group): (CancellationToken, Option<Arc<GroupCommit>>),
    messages: &Sender<EvalMessage>,
) -> (TurnResult, Option<Committing>) {
    let runner = match &settings.provider {
        ProviderChoice::Worker(client) => TurnRunner::Worker(client.clone()),
        choice => match choice.for_turn(plan, spec) {
            Ok(provider) => {
                // A replay is recorded already: only live and scripted calls are cached.
                let provider = match (&settings.model_cache, choice) {
                    (Some(_), ProviderChoice::Replay { .. }) | (None, _) => provider,
                    (Some(cache), _) => {
                        Arc::new(CachingProvider::new(provider, cache.clone(), spec.sample))
                    }
                };
                TurnRunner::Local(TurnContext {
                    registry: settings.registry,
                    store: settings.store.clone(),
                    provider,
                })
            }
            Err(missing) => {
                let observation = Observation {
                    error: Some(missing.to_string()),
                    // No model was called.
                    cost_usd: Some(0.0),
                    ..Observation::default()
                };
                let verdict = plan.judge(spec, &observation, &[]);
                return (TurnResult::new(spec, observation, verdict), None);
            }
        },
    };
    let request = plan.request(spec, settings.today);
    let mut trace = start_trace(settings, &runner, &request);
    let recorder = recorder_for(plan, settings, spec, (&runner, &request), trace.as_ref());
    let mut recorder = match group {
        Some(group) => recorder.in_group(group),
        None => recorder,
    };
    let mut watch = Watch::new(
        spec,
        last_user_message(&request.messages),
        messages,
        &settings.feed,
    );
    let clock = Instant::now();
    let turn = runner.run(request, cancel.clone());
    let delivery = match trace.as_mut() {
        Some(trace) => drive(turn, &mut [&mut watch, trace, &mut recorder], &cancel).await,
        None => drive(turn, &mut [&mut watch, &mut recorder], &cancel).await,
    };
    let ran = clock.elapsed().saturating_sub(watch.waited);
    let latency_ms = u64::try_from(ran.as_millis()).unwrap_or(u64::MAX);
    tell_the_rest(&mut watch, &mut recorder, &runner).await;
    let mut observation = watch.observation;
    observation.latency_ms = latency_ms;
    let (result, committing) = match delivery.recorder_failures.into_iter().next() {
        Some(error) => (
            lost_log(plan, spec, observation, error, messages).await,
            None,
        ),
        None => {
            let judge = settings.judge.as_deref();
            record_verdict(plan, spec, observation, recorder, judge, &cancel, messages).await
        }
    };
    let committing = end_trace_or_hand_on(plan, trace, &result, committing);
    (result, committing)
}

/// Once a turn's calls are done: what the feed had no room for, then a
/// deployment's fingerprint warning. Waiting for the reader, now or in the
/// middle of its calls, is not the turn's time: its log's clock skips it.
async fn tell_the_rest(watch: &mut Watch<'_>, recorder: &mut RunRecorder, runner: &TurnRunner) {
    let waiting = Instant::now();
    watch.flush().await;
    if let (TurnRunner::Worker(client), (Some(local), Some(reported))) =
        (runner, &watch.fingerprints)
        && let Some(warning) = client.fingerprint_warning(local, reported)
    {
        tell(watch.messages, EvalMessage::Warning(warning)).await;
    }
    recorder.skip_time(watch.waited + waiting.elapsed());
}

/// Ends the turn's trace now, or hands it to its log's group commit: a
/// turn whose log waits for its group ends its trace once the log has its
/// name (or the turn is an error for want of it).
fn end_trace_or_hand_on(
    plan: &EvalPlan,
    trace: Option<crate::telemetry::TurnTrace>,
    result: &TurnResult,
    committing: Option<Committing>,
) -> Option<Committing> {
    match (trace, committing) {
        (Some(trace), Some(committing)) => Some(Committing {
            trace: Some(trace),
            ..committing
        }),
        (Some(trace), None) => {
            end_trace(plan, trace, result);
            None
        }
        (None, committing) => committing,
    }
}

/// The turn's run log, labelled with its place and naming its trace.
fn recorder_for(
    plan: &EvalPlan,
    settings: &RunSettings,
    spec: &TurnSpec,
    (runner, request): (&TurnRunner, &crate::chat::ChatRequest),
    trace: Option<&crate::telemetry::TurnTrace>,
) -> RunRecorder {
    let recorder = RunRecorder::new(
        &settings.runs_dir,
        request,
        runner.provider_name(),
        Some(plan.labels(spec)),
    )
    .with_prices(Arc::clone(&settings.prices));
    // Nobody reads a turn's events as they happen unless the feed carries
    // them: the log can be written out per model call, not per record.
    let recorder = if settings.feed.events {
        recorder
    } else {
        recorder.batched()
    };
    match trace {
        Some(trace) => recorder.with_trace(trace.ids()),
        None => recorder,
    }
}

/// The turn's trace, when tracing is on; ended by `end_trace`.
fn start_trace(
    settings: &RunSettings,
    runner: &TurnRunner,
    request: &crate::chat::ChatRequest,
) -> Option<crate::telemetry::TurnTrace> {
    let tracing = settings.tracing.as_ref()?;
    Some(tracing.turn(TurnLabels {
        provider: crate::telemetry::provider_name(runner.provider_name()),
        model: request.model.clone(),
        messages: TurnLabels::conversation(&request.messages),
        ..TurnLabels::default()
    }))
}

/// The turn's trace, ended once it is judged: its verdict on the root.
fn end_trace(plan: &EvalPlan, mut trace: crate::telemetry::TurnTrace, result: &TurnResult) {
    if let Some(path) = &result.run_log {
        trace.set_run_log(path);
    }
    trace.set_cost(result.observation.cost_usd);
    let labels = plan.labels(&result.spec);
    let tags = &plan.suite.suite.cases[result.spec.case].tags;
    let verdict = super::trace::trace_verdict(&labels, tags, &result.verdict);
    trace.end(Some(&verdict));
}

/// Judges the turn on exactly the numbers its footer records (so that a
/// merge of shards, which judges from the logs, reaches the same verdict),
/// puts its rubric criteria to the judge, then completes the log with the
/// verdict and the judge calls in it.
async fn record_verdict(
    plan: &EvalPlan,
    spec: &TurnSpec,
    mut observation: Observation,
    recorder: RunRecorder,
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
            let held = Arc::new(std::sync::Mutex::new(Vec::new()));
            let notices = judge_notices(messages, spec, &held);
            let seen = &observation;
            let rubric =
                judge_rubric(judge, &expect, &seen.message, seen, cancel, Some(&notices)).await;
            let held = std::mem::take(&mut *held.lock().unwrap_or_else(|e| e.into_inner()));
            for message in held {
                tell(messages, message).await;
            }
            rubric
        }
        None => Vec::new(),
    };
    let verdict = super::expect::judge(&expect, &observation, &rubric);
    footer.verdict = Some(RecordedVerdict {
        outcome: verdict.outcome,
        failures: verdict.failures.clone(),
        rubric: verdict.rubric.clone(),
    });
    let (finished, committing) = finish_log(recorder, footer).await;
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
    held: &Arc<std::sync::Mutex<Vec<EvalMessage>>>,
) -> crate::judge::RetryNotices {
    let (messages, spec, held) = (messages.clone(), spec.clone(), Arc::clone(held));
    crate::judge::RetryNotices::new(move |notice| {
        let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
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
    recorder: RunRecorder,
    footer: crate::runs::record::RunFooter,
) -> (std::io::Result<Option<PathBuf>>, Option<Committing>) {
    let Some(group) = recorder.group() else {
        let finished = tokio::task::spawn_blocking(move || recorder.finish_with(footer));
        return (finished.await.unwrap_or_else(join_failed), None);
    };
    // Written here, not on the blocking pool: the footer goes to the page
    // cache in one `write` of a few KB, cheaper than handing it to a thread.
    match recorder.finish_written(footer) {
        Ok(Some(log)) => {
            let path = log.final_path().to_path_buf();
            let trace = None;
            (Ok(Some(path)), Some(Committing { group, log, trace }))
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
struct Committing {
    group: Arc<GroupCommit>,
    log: WrittenLog,
    trace: Option<crate::telemetry::TurnTrace>,
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
        let result = match self.group.commit(self.log).await {
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
async fn lost_log(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_result_has_what_the_end_of_the_run_reads_and_no_more() {
        let spec = TurnSpec {
            index: 3,
            variant: 0,
            claim_id: "CLM-HH-0001".into(),
            case: 0,
            sample: 1,
        };
        let shown = super::super::junit::ANSWER_CHARS;
        let observation = Observation {
            answer: "é".repeat(shown + 50),
            tool_calls: vec![("get_claim_section".into(), serde_json::json!({}))],
            client_actions: vec![serde_json::json!({"action": "navigate"})],
            message: "What is the excess?".into(),
            latency_ms: 12,
            turn_id: Some("t".into()),
            ..Observation::default()
        };
        let verdict = Verdict::new(Outcome::Fail, vec!["no £350".into()]);
        let kept = TurnResult::new(&spec, observation, verdict.clone()).kept();
        // One character past what JUnit shows, so JUnit still marks the cut.
        assert_eq!(kept.observation.answer.chars().count(), shown + 1);
        assert!(
            kept.observation.tool_calls.is_empty() && kept.observation.client_actions.is_empty()
        );
        assert!(kept.observation.message.is_empty());
        assert_eq!(kept.verdict, verdict);
        assert_eq!(
            (
                kept.observation.latency_ms,
                kept.observation.turn_id.as_deref()
            ),
            (12, Some("t"))
        );
        let short = Observation {
            answer: "The excess is £350.".into(),
            ..Observation::default()
        };
        let kept = TurnResult::new(&spec, short, verdict).kept();
        assert_eq!(kept.observation.answer, "The excess is £350.");
    }
}
