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
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::expect::{Observation, Outcome, Verdict, last_user_message};
pub use super::feed::{EvalMessage, FEED_CAPACITY, Feed};
use super::feed::{Watch, tell};
use super::log_commit::{GroupCommit, GroupMember};
use super::matrix::TurnSpec;
use super::plan::EvalPlan;
pub use super::recorded::{
    index_recorded, index_recorded_counted, merge_recorded, missing_result, resume,
};
pub use super::run_settings::{ProviderChoice, RunLimits, RunSettings};
use super::spill::ResultStore;
use super::turn_end::{Committing, hand_on, lost_log, record_verdict};
use crate::chat::service::TurnContext;
use crate::provider::cache::CachingProvider;
use crate::runs::prompt_store::StoredPromptNames;
use crate::sink::driver::{TurnSink, drive, ready_or_idle};
use crate::sink::run_log::RunRecorder;
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
/// `cancel` fires (or the budget or a quota is spent: `RunLimits`) no turn
/// starts.
pub async fn run_turns(
    plan: Arc<EvalPlan>,
    settings: Arc<RunSettings>,
    cancel: CancellationToken,
    messages: Sender<EvalMessage>,
    store: &mut ResultStore,
) {
    // With a budget, variants take turns, so a stop leaves none with no runs.
    let order: Box<dyn Iterator<Item = TurnSpec> + Send + '_> = if settings.limits.budget.is_some()
    {
        Box::new(plan.to_run_round_robin())
    } else {
        Box::new(plan.to_run())
    };
    // Nobody reads a turn's events as they happen unless the feed carries
    // them: the logs can then be synced and renamed in groups.
    let group = (!settings.feed.events).then(GroupCommit::new);
    // The prompts the run's turns have stored, each written by the first.
    let prompts = Arc::new(StoredPromptNames::default());
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
        if cancel.is_cancelled() || !settings.limits.allows_start() {
            break;
        }
        let (plan, settings) = (Arc::clone(&plan), Arc::clone(&settings));
        let (cancel, messages) = (cancel.clone(), messages.clone());
        let prompts = Arc::clone(&prompts);
        // Joined here, before the loop can end and close the group.
        let member = group.as_ref().map(GroupCommit::join);
        tasks.spawn(async move {
            // Boxed: a turn's state is freed once it is judged, not kept
            // for as long as the task waits for its group commit.
            let ending = (cancel, member, prompts);
            let turn = Box::pin(run_one(&plan, &settings, &spec, ending, &messages));
            let (result, committing) = turn.await;
            hand_on(&plan, &settings, slot, (result, committing), &messages).await
        });
    }
    // No turn starts now: the last group is synced as soon as its turns
    // have all queued their logs, not at its deadline.
    if let Some(group) = &group {
        group.close();
    }
    while let Some(joined) = tasks.join_next().await {
        joined_result(joined, store);
    }
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

/// A turn's token, its place in its log's group commit, and the prompts
/// its eval's turns have stored.
type TurnEnding = (
    CancellationToken,
    Option<GroupMember>,
    Arc<StoredPromptNames>,
);

/// Runs and judges one turn: its result, and its log's place in a group
/// commit when it has one (the result's log is named only once that
/// commit is done).
async fn run_one(
    plan: &EvalPlan,
    settings: &RunSettings,
    spec: &TurnSpec,
    (cancel, member, prompts): TurnEnding,
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
    let recorder = recorder_for(plan, settings, spec, (&runner, &request), trace.as_deref());
    let mut recorder = recorder.sharing_prompts(prompts);
    let mut watch = Watch::new(
        spec,
        last_user_message(&request.messages),
        messages,
        &settings.feed,
    );
    let clock = Instant::now();
    let turn = runner.run(request, cancel.clone());
    let delivery = match trace.as_mut() {
        Some(trace) => {
            drive(
                turn,
                &mut [&mut watch, &mut **trace, &mut recorder],
                &cancel,
            )
            .await
        }
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
            let recorder = (recorder, member);
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
    // Should the reader be behind, the log is written out before waiting.
    ready_or_idle(watch.flush(), || recorder.idle()).await;
    if let (TurnRunner::Worker(client), (Some(local), Some(reported))) =
        (runner, &watch.fingerprints)
        && let Some(warning) = client.fingerprint_warning(local, reported)
    {
        let telling = tell(watch.messages, EvalMessage::Warning(warning));
        ready_or_idle(telling, || recorder.idle()).await;
    }
    recorder.skip_time(watch.waited + waiting.elapsed());
}

/// Ends the turn's trace now, or hands it to its log's group commit: a
/// turn whose log waits for its group ends its trace once the log has its
/// name (or the turn is an error for want of it).
fn end_trace_or_hand_on(
    plan: &EvalPlan,
    trace: Option<Box<crate::telemetry::TurnTrace>>,
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
    // them: the log can be written out when the turn waits, not per record.
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

/// The turn's trace, when tracing is on; ended by `end_trace`. Boxed: a
/// turn's future carries it through its states, and without tracing (the
/// usual) a pointer's room is all it costs there.
fn start_trace(
    settings: &RunSettings,
    runner: &TurnRunner,
    request: &crate::chat::ChatRequest,
) -> Option<Box<crate::telemetry::TurnTrace>> {
    let tracing = settings.tracing.as_ref()?;
    Some(Box::new(tracing.turn(TurnLabels {
        provider: crate::telemetry::provider_name(runner.provider_name()),
        model: request.model.clone(),
        messages: TurnLabels::conversation(&request.messages),
        ..TurnLabels::default()
    })))
}

/// The turn's trace, ended once it is judged: its verdict on the root.
pub(super) fn end_trace(
    plan: &EvalPlan,
    mut trace: Box<crate::telemetry::TurnTrace>,
    result: &TurnResult,
) {
    if let Some(path) = &result.run_log {
        trace.set_run_log(path);
    }
    trace.set_cost(result.observation.cost_usd);
    let labels = plan.labels(&result.spec);
    let tags = &plan.suite.suite.cases[result.spec.case].tags;
    let verdict = super::trace::trace_verdict(&labels, tags, &result.verdict);
    trace.end(Some(&verdict));
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
