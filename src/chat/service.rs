//! `run_chat_turn`: one chat turn as a stream (SPEC §1.5).
//!
//! The stream yields `TurnOutput`s: the `ChatEvent`s every front end shows,
//! plus what a recorder needs besides (the prepared prompt, each model
//! call's trace, and a cancellation marker). Dropping the stream or firing
//! the cancel token stops the model call at once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::decide::MAX_ROUNDS;
use super::event::ChatEvent;
use super::request::{ChatRequest, ClaimInput, Locale, ThinkingLevel};
use super::system::{AssembledPrompt, assemble_prompt, prompt_settings};
use super::turn_loop::{AfterCall, CallEnd, TurnLoop};
use crate::claims::{ClaimError, ClaimStore, LoadedClaim};
use crate::prompts::overrides::{IgnoredOverride, UnknownPlaceholder};
use crate::prompts::{PromptRegistry, fingerprint, resolve_overrides};
use crate::provider::{
    CallSummary, ModelEvent, ModelProvider, ModelStream, RetryNotice, ToolCall, ToolResultMessage,
};
use crate::tools::ToolDeclaration;

/// What a turn runs with besides its request.
#[derive(Clone)]
pub struct TurnContext {
    pub registry: &'static PromptRegistry,
    pub store: ClaimStore,
    pub provider: Arc<dyn ModelProvider>,
}

/// Everything a turn yields, in order.
#[derive(Debug, Clone)]
pub enum TurnOutput {
    /// Always first; carries what every sink needs to label the turn, so
    /// that none recomputes it.
    Started(Box<TurnStart>),
    /// The turn is set up and about to call the model.
    Prepared(Box<PreparedTurn>),
    /// An event for the front ends.
    Event(ChatEvent),
    /// The trace of one model call, after its events.
    ModelCall(Box<ModelCallRecord>),
    /// A model call (or a deployment's turn) failed a try and is about to
    /// retry it: said on the terminal, recorded in the run log, never an
    /// event of the wire (whose shapes are fixed).
    Notice(RetryNotice),
    /// The cancel token fired; nothing follows.
    Cancelled,
}

/// The start of a turn: its id, its time, and its prompt version (the
/// overrides resolved once, by the usable rule).
#[derive(Debug, Clone)]
pub struct TurnStart {
    pub turn_id: String,
    pub started_at: DateTime<Utc>,
    /// `default` or 12 hex characters.
    pub fingerprint: String,
    /// The applied overrides, id → text as written.
    pub applied_overrides: BTreeMap<String, String>,
    pub ignored_overrides: Vec<IgnoredOverride>,
    /// Applied overrides using a `{{name}}` no brand fills.
    pub unknown_placeholders: Vec<UnknownPlaceholder>,
    /// Set when the turn runs on a deployment (the `worker` provider)
    /// rather than in this process.
    pub remote: Option<RemoteTurn>,
}

/// Where a turn ran when it ran on a deployment, and what was sent there
/// besides what the run log's request record holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTurn {
    /// The endpoint, without credentials, query or fragment.
    pub endpoint: String,
    /// The claim document itself was sent (else its id, for the
    /// deployment's own store to resolve).
    pub claim_sent: bool,
    /// Every override sent, as written: the deployment applies its own
    /// usable rule, so these may differ from the locally applied ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
}

/// The turn as assembled: what the model is told and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedTurn {
    pub claim_id: String,
    pub claim_sha256: String,
    pub claim_origin: String,
    pub capability: Option<String>,
    pub locale: Locale,
    pub brand: String,
    /// The level asked for: a quick action's own, else the request's.
    pub thinking_level: ThinkingLevel,
    /// The level sent: `thinking_level` fitted to the model (models/gemini.yaml).
    pub thinking_sent: ThinkingLevel,
    /// How the model is told (`thinkingLevel`, or a `thinkingBudget`).
    pub thinking_control: crate::models::ThinkingControl,
    /// A line said once per run (`note: …` a level changed, `warning: …` rules unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_note: Option<String>,
    /// Each model call's output cap: 8,000, or the model's lower
    /// `maxOutputTokens` (SPEC §1.5).
    pub max_output_tokens: u32,
    pub prompt: AssembledPrompt,
    /// `prompt.system_text()`, joined once for the digest and every call.
    #[serde(skip)]
    pub system_text: Arc<str>,
    pub system_sha256: String,
    pub tools: Arc<[ToolDeclaration]>,
    pub tools_sha256: String,
    pub fingerprint: String,
    pub applied_overrides: BTreeMap<String, String>,
    pub ignored_overrides: Vec<IgnoredOverride>,
}

/// One model call, as a run log keeps it for replay.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallRecord {
    pub round: u32,
    /// Milliseconds from the start of the turn.
    pub started_ms: u64,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_text_ms: Option<u64>,
    /// The tool results this call was given (the previous round's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results_in: Vec<ToolResultMessage>,
    /// Absent from a run log's record that keeps it in its `text` records
    /// (schema 5, `runs::answer_text`).
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// `None` when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<CallSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs one chat turn. The request must already be validated.
pub fn run_chat_turn(
    ctx: TurnContext,
    request: ChatRequest,
    cancel: CancellationToken,
) -> impl Stream<Item = TurnOutput> + Send + 'static {
    async_stream::stream! {
        let clock = Instant::now();
        let resolved = resolve_overrides(&request.prompt.overrides, ctx.registry);
        let start = TurnStart {
            turn_id: uuid::Uuid::new_v4().to_string(),
            started_at: Utc::now(),
            fingerprint: fingerprint(&resolved.applied),
            applied_overrides: resolved.applied,
            ignored_overrides: resolved.ignored,
            unknown_placeholders: resolved.unknown_placeholders,
            remote: None,
        };
        let turn_id = start.turn_id.clone();
        yield TurnOutput::Started(Box::new(start.clone()));

        let (prepared, claim) = match prepare(&ctx, &request, start) {
            Ok(ready) => ready,
            Err(error) => {
                let message = error.to_string();
                yield TurnOutput::Event(ChatEvent::Error { message });
                return;
            }
        };
        let mut turn = TurnLoop::new(&request, &prepared, claim, turn_id, clock);
        yield TurnOutput::Prepared(Box::new(prepared));

        for round in 1..=MAX_ROUNDS {
            let (model_request, mut record) = turn.start_call(round);
            let mut model = ctx.provider.stream_turn(model_request, cancel.clone());
            let end = loop {
                match next_model_event(&mut model, &cancel).await {
                    Ok(ModelEvent::TextDelta(text)) => {
                        if let Some(output) = turn.text(&mut record, text) {
                            yield output;
                        }
                    }
                    Ok(ModelEvent::ToolCall(call)) => record.tool_calls.push(call),
                    Ok(ModelEvent::Retry(notice)) => yield TurnOutput::Notice(notice),
                    Ok(ModelEvent::Done(summary)) => break CallEnd::Finished(Box::new(summary)),
                    Err(end) => break end,
                }
            };
            drop(model);
            let (outputs, after) = turn.end_call(record, end);
            for output in outputs {
                yield output;
            }
            let (calls, step) = match after {
                AfterCall::Stop => return,
                AfterCall::Finish => break,
                AfterCall::Tools(calls, step) => (calls, step),
            };
            for (index, call) in calls.iter().enumerate() {
                if cancel.is_cancelled() {
                    yield TurnOutput::Cancelled;
                    return;
                }
                if let Some(activity) = turn.activity(round, index, call) {
                    yield activity;
                }
                for output in turn.run_call(round, index, call) {
                    yield output;
                }
            }
            if let Some(limit) = turn.end_tools(step) {
                yield limit;
            }
        }
        yield turn.done();
    }
}

/// The model stream's next event, or how the call ended without one: the
/// cancel token fired, the stream failed, or it stopped before `Done`.
async fn next_model_event(
    model: &mut ModelStream,
    cancel: &CancellationToken,
) -> Result<ModelEvent, CallEnd> {
    let item = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(CallEnd::Cancelled),
        item = model.next() => item,
    };
    match item {
        // A provider stops its stream when it sees the token fire; if that
        // happened between the two polls above, the end is a cancellation
        // (seen with `serve`, whose disconnect watcher runs on another thread).
        None if cancel.is_cancelled() => Err(CallEnd::Cancelled),
        None => Err(CallEnd::Failed(
            "the model's stream ended before the call finished".to_string(),
            None,
        )),
        Some(Err(error)) => Err(CallEnd::Failed(error.message, error.summary)),
        Some(Ok(event)) => Ok(event),
    }
}

/// Why a turn could not start; its text is the exact message of the turn's
/// `error` event (SPEC §1.1).
#[derive(Debug, thiserror::Error)]
enum PrepareError {
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    #[error(transparent)]
    ClaimNotFound(Box<ClaimError>),
    #[error("Claim {id} could not be read: {source}")]
    ClaimUnreadable { id: String, source: Box<ClaimError> },
    #[error(transparent)]
    Setup(#[from] super::system::PromptSetupError),
}

/// Steps 1–2 of the turn once streaming has started: the provider is ready,
/// the claim resolves, the capability exists; then the prompt is assembled.
/// An `Err` is the exact message of the turn's `error` event.
fn prepare(
    ctx: &TurnContext,
    request: &ChatRequest,
    start: TurnStart,
) -> Result<(PreparedTurn, Arc<LoadedClaim>), PrepareError> {
    ctx.provider.check_ready()?;
    let claim = match &request.claim {
        ClaimInput::Document(claim) => Arc::clone(claim),
        ClaimInput::Id(id) => ctx
            .store
            .load(id)
            .map(Arc::new)
            .map_err(|error| match error {
                ClaimError::NotFound(_) => PrepareError::ClaimNotFound(Box::new(error)),
                source => PrepareError::ClaimUnreadable {
                    id: id.clone(),
                    source: Box::new(source),
                },
            })?,
    };
    let settings = prompt_settings(&request.prompt, ctx.registry, &claim.claim)?;
    let prompt = assemble_prompt(&settings, &claim.claim, request.today);
    let system_text: Arc<str> = prompt.system_text().into();
    let tools = crate::tools::offered_tools(request.prompt.screen_actions);
    let thinking_level = asked_thinking_level(
        settings
            .capability
            .and_then(|capability| capability.thinking_level),
        request.thinking_level,
        request.force_thinking_level,
    );
    // The table the provider sends by: its levels are what it can send.
    let models = ctx.provider.models();
    let openai = ctx.provider.fits_thinking_as() == crate::provider::ProviderKind::OpenAi;
    let fitted = if openai {
        models.fit_effort(&request.model, thinking_level)
    } else {
        models.fit(&request.model, thinking_level)
    };
    let brand = request
        .prompt
        .brand
        .clone()
        .unwrap_or_else(|| ctx.registry.default_brand().0.to_string());
    let prepared = PreparedTurn {
        claim_id: claim.claim.id.clone(),
        claim_sha256: claim.sha256.clone(),
        claim_origin: claim.origin.clone(),
        capability: request.prompt.capability.clone(),
        locale: settings.locale,
        brand,
        thinking_level,
        thinking_sent: fitted.sent,
        thinking_control: match openai {
            true => models.effort_control(&request.model, fitted.sent),
            false => models.control(&request.model, fitted.sent).into(),
        },
        thinking_note: fitted.note,
        max_output_tokens: models.output_cap(&request.model, super::decide::MAX_OUTPUT_TOKENS),
        system_sha256: crate::digest::sha256_hex(system_text.as_bytes()),
        system_text,
        tools_sha256: tools.sha256.clone(),
        prompt,
        tools: Arc::clone(&tools.declarations),
        fingerprint: start.fingerprint,
        applied_overrides: start.applied_overrides,
        ignored_overrides: start.ignored_overrides,
    };
    Ok((prepared, claim))
}

/// The level a turn asks for: its quick action's own (`capability`), unless
/// the request forces its own `requested` (an eval variant's `forceThinkingLevel`).
pub fn asked_thinking_level(
    capability: Option<ThinkingLevel>,
    requested: ThinkingLevel,
    forced: bool,
) -> ThinkingLevel {
    capability.filter(|_| !forced).unwrap_or(requested)
}
