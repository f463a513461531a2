//! Running a suite's turns with bounded concurrency: each turn recorded as a
//! run log (labelled with its place in the matrix), judged, and reported as
//! it finishes. One turn failing never stops the others; cancelling stops
//! new turns from starting and cancels the running ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chrono::NaiveDate;
use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::expect::{Observation, Outcome, Verdict, judge};
use super::matrix::{Matrix, TurnSpec};
use super::suite::{LoadedSuite, case_messages};
use crate::chat::event::ChatEvent;
use crate::chat::request::{ChatRequest, ClaimInput, PromptOptions, ThinkingLevel};
use crate::chat::service::{TurnContext, TurnOutput, run_chat_turn};
use crate::claims::ClaimStore;
use crate::prompts::PromptRegistry;
use crate::provider::ModelProvider;
use crate::provider::replay::ReplayProvider;
use crate::provider::script::ScriptProvider;
use crate::runs::record::{RecordedVerdict, RunLabels};
use crate::runs::{RunHeader, RunStatus, read_run_log, scan_runs};
use crate::sink::run_log::RunRecorder;

/// Identifies one turn of a suite across machines and runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnKey {
    pub suite: String,
    pub fingerprint: String,
    pub claim: String,
    pub case: String,
    pub sample: u32,
}

/// A suite ready to run: its matrix and the turns this run takes.
pub struct EvalPlan {
    pub suite: LoadedSuite,
    pub matrix: Matrix,
    pub turns: Vec<TurnSpec>,
}

impl EvalPlan {
    pub fn key(&self, spec: &TurnSpec) -> TurnKey {
        TurnKey {
            suite: self.suite.name.clone(),
            fingerprint: self.matrix.variants[spec.variant].fingerprint.clone(),
            claim: spec.claim_id.clone(),
            case: self.suite.suite.cases[spec.case].name.clone(),
            sample: spec.sample,
        }
    }

    pub fn labels(&self, spec: &TurnSpec) -> RunLabels {
        RunLabels {
            suite: self.suite.name.clone(),
            variant: self.matrix.variants[spec.variant].name.clone(),
            case: self.suite.suite.cases[spec.case].name.clone(),
            sample: spec.sample,
        }
    }

    /// The chat request of one turn.
    pub fn request(
        &self,
        spec: &TurnSpec,
        model: &str,
        thinking_level: ThinkingLevel,
        today: NaiveDate,
    ) -> ChatRequest {
        let case = &self.suite.suite.cases[spec.case];
        let settings = case.settings(&self.suite.suite.defaults);
        ChatRequest {
            claim: ClaimInput::Document(Box::new(self.matrix.claims[&spec.claim_id].clone())),
            messages: case_messages(case),
            prompt: PromptOptions {
                capability: settings.capability,
                locale: settings.locale,
                brand: settings.brand,
                screen_actions: settings.screen_actions.unwrap_or(false),
                voice: settings.voice.unwrap_or(false),
                overrides: self.matrix.variants[spec.variant].overrides.clone(),
            },
            model: model.to_string(),
            thinking_level,
            today: settings.today.unwrap_or(today),
        }
    }

    /// Judges an observation against this turn's expectations.
    pub fn judge(&self, spec: &TurnSpec, seen: &Observation) -> Verdict {
        let case = &self.suite.suite.cases[spec.case];
        judge(&case.settings(&self.suite.suite.defaults).expect, seen)
    }
}

/// The key of a recorded turn, from its header.
pub fn key_of_header(header: &RunHeader) -> Option<TurnKey> {
    let labels = header.labels.as_ref()?;
    Some(TurnKey {
        suite: labels.suite.clone(),
        fingerprint: header.fingerprint.clone(),
        claim: header.claim.as_ref()?.id.clone(),
        case: labels.case.clone(),
        sample: labels.sample,
    })
}

/// The newest finished run log of each turn of `suite` under `dirs`;
/// with `done_only`, only turns that ended in `done`.
pub fn index_recorded(
    dirs: &[PathBuf],
    suite: &str,
    done_only: bool,
) -> std::io::Result<HashMap<TurnKey, PathBuf>> {
    let (summaries, _) = scan_runs(dirs)?;
    let mut newest: HashMap<TurnKey, (chrono::DateTime<chrono::Utc>, PathBuf)> = HashMap::new();
    for summary in summaries {
        let Some(footer) = summary.footer.as_ref().filter(|_| !summary.partial) else {
            continue;
        };
        if done_only && footer.status != RunStatus::Done {
            continue;
        }
        let Some(key) = key_of_header(&summary.header).filter(|key| key.suite == suite) else {
            continue;
        };
        let started = summary.header.started_at;
        if newest.get(&key).is_none_or(|(time, _)| started > *time) {
            newest.insert(key, (started, summary.path));
        }
    }
    Ok(newest
        .into_iter()
        .map(|(key, (_, path))| (key, path))
        .collect())
}

/// Where each turn's model answers come from.
pub enum ProviderChoice {
    /// One provider for every turn (Gemini).
    Shared(Arc<dyn ModelProvider>),
    /// A script per case (or one for all), started afresh for each turn.
    Script {
        default: Option<Arc<ScriptProvider>>,
        by_case: HashMap<usize, Arc<ScriptProvider>>,
    },
    /// Each turn replays its own recording.
    Replay(HashMap<TurnKey, PathBuf>),
}

impl ProviderChoice {
    fn for_turn(&self, plan: &EvalPlan, spec: &TurnSpec) -> Result<Arc<dyn ModelProvider>, String> {
        match self {
            ProviderChoice::Shared(provider) => Ok(provider.clone()),
            ProviderChoice::Script { default, by_case } => by_case
                .get(&spec.case)
                .or(default.as_ref())
                .map(|script| Arc::new(script.restarted()) as Arc<dyn ModelProvider>)
                .ok_or_else(|| {
                    "no script for this case: give --script or a case `script`".to_string()
                }),
            ProviderChoice::Replay(recordings) => {
                let key = plan.key(spec);
                let path = recordings.get(&key).ok_or_else(|| {
                    format!(
                        "no recording of this turn to replay ({} · {} · {} #{})",
                        key.fingerprint, key.claim, key.case, key.sample
                    )
                })?;
                let log = read_run_log(path).map_err(|e| e.to_string())?;
                Ok(Arc::new(ReplayProvider::from_log(&log)))
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ProviderChoice::Shared(provider) => provider.name(),
            ProviderChoice::Script { .. } => "script",
            ProviderChoice::Replay(_) => "replay",
        }
    }
}

pub struct RunSettings {
    pub registry: &'static PromptRegistry,
    pub store: ClaimStore,
    pub runs_dir: PathBuf,
    pub concurrency: usize,
    pub model: String,
    pub thinking_level: ThinkingLevel,
    pub today: NaiveDate,
    pub provider: ProviderChoice,
}

/// One judged turn.
#[derive(Debug, Clone)]
pub struct TurnResult {
    pub spec: TurnSpec,
    pub observation: Observation,
    pub verdict: Verdict,
    pub run_log: Option<PathBuf>,
    /// Taken from an earlier run (`--resume`) or from run logs (`--report`).
    pub from_log: bool,
}

/// What a running suite reports as it goes.
#[derive(Debug, Clone)]
pub enum EvalMessage {
    Event(TurnSpec, ChatEvent),
    Finished(Box<TurnResult>),
    /// A problem that does not stop the suite (e.g. a run log not written).
    Warning(String),
}

/// Runs `plan.turns` at most `concurrency` at a time; results come back in
/// the order turns finish.
pub async fn run_turns(
    plan: &EvalPlan,
    settings: &RunSettings,
    cancel: CancellationToken,
    messages: UnboundedSender<EvalMessage>,
) -> Vec<TurnResult> {
    let jobs = plan.turns.iter().map(|spec| {
        let cancel = cancel.clone();
        let messages = messages.clone();
        async move {
            if cancel.is_cancelled() {
                return None;
            }
            let result = run_one(plan, settings, spec, cancel, &messages).await;
            let _ = messages.send(EvalMessage::Finished(Box::new(result.clone())));
            Some(result)
        }
    });
    futures_util::stream::iter(jobs)
        .buffer_unordered(settings.concurrency.max(1))
        .filter_map(|result| async move { result })
        .collect()
        .await
}

async fn run_one(
    plan: &EvalPlan,
    settings: &RunSettings,
    spec: &TurnSpec,
    cancel: CancellationToken,
    messages: &UnboundedSender<EvalMessage>,
) -> TurnResult {
    let clock = Instant::now();
    let mut observation = Observation::default();
    let provider = match settings.provider.for_turn(plan, spec) {
        Ok(provider) => provider,
        Err(message) => {
            observation.error = Some(message);
            let verdict = plan.judge(spec, &observation);
            return TurnResult {
                spec: spec.clone(),
                observation,
                verdict,
                run_log: None,
                from_log: false,
            };
        }
    };
    let request = plan.request(
        spec,
        &settings.model,
        settings.thinking_level,
        settings.today,
    );
    let mut recorder = Some(RunRecorder::new(
        &settings.runs_dir,
        &request,
        settings.registry,
        provider.name(),
        Some(plan.labels(spec)),
    ));
    let ctx = TurnContext {
        registry: settings.registry,
        store: settings.store.clone(),
        provider,
    };
    let turn = run_chat_turn(ctx, request, cancel);
    futures_util::pin_mut!(turn);
    while let Some(output) = turn.next().await {
        observation.observe(&output);
        if let Some(active) = recorder.as_mut()
            && let Err(error) = active.record(&output)
        {
            let _ = messages.send(EvalMessage::Warning(format!(
                "could not record a turn in `{}`: {error}",
                settings.runs_dir.display()
            )));
            recorder = None;
        }
        if let TurnOutput::Event(event) = output {
            let _ = messages.send(EvalMessage::Event(spec.clone(), event));
        }
    }
    observation.latency_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
    let Some(recorder) = recorder else {
        let verdict = plan.judge(spec, &observation);
        return TurnResult {
            spec: spec.clone(),
            observation,
            verdict,
            run_log: None,
            from_log: false,
        };
    };
    // Judge on exactly the numbers the footer records, so that a merge of
    // shards (which judges from the logs) reaches the same verdicts.
    let mut footer = recorder.draft_footer(RunStatus::Cancelled);
    if let Some(footer) = &footer {
        observation.latency_ms = footer.total_ms;
    }
    let verdict = plan.judge(spec, &observation);
    let run_log = match footer.take() {
        Some(mut footer) => {
            footer.verdict = Some(RecordedVerdict {
                outcome: verdict.outcome,
                failures: verdict.failures.clone(),
            });
            recorder.finish_with(footer).unwrap_or_else(|error| {
                let _ = messages.send(EvalMessage::Warning(format!(
                    "could not complete a run log: {error}"
                )));
                None
            })
        }
        None => None,
    };
    TurnResult {
        spec: spec.clone(),
        observation,
        verdict,
        run_log,
        from_log: false,
    }
}

/// A turn's result from its recorded run log.
pub fn result_from_log(plan: &EvalPlan, spec: &TurnSpec, path: &Path) -> TurnResult {
    let observation = match read_run_log(path) {
        Ok(log) => Observation::from_log(&log),
        Err(error) => Observation {
            error: Some(error.to_string()),
            ..Observation::default()
        },
    };
    let verdict = plan.judge(spec, &observation);
    TurnResult {
        spec: spec.clone(),
        observation,
        verdict,
        run_log: Some(path.to_path_buf()),
        from_log: true,
    }
}

/// A turn with no run log at all (a shard that never ran it).
pub fn missing_result(spec: &TurnSpec) -> TurnResult {
    let observation = Observation {
        error: Some("not run: no run log for this turn".into()),
        ..Observation::default()
    };
    let verdict = Verdict {
        outcome: Outcome::Error,
        failures: vec!["not run: no run log for this turn".into()],
    };
    TurnResult {
        spec: spec.clone(),
        observation,
        verdict,
        run_log: None,
        from_log: true,
    }
}
