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

use super::decide::{
    MAX_OUTPUT_TOKENS, MAX_ROUNDS, NextStep, call_id, limit_text, next_step, tool_events,
    unknown_tool_message,
};
use super::event::{ChatEvent, Done, PromptsUsed, Usage};
use super::history::to_ai_messages;
use super::request::{ChatRequest, ClaimInput, Locale, ThinkingLevel};
use super::system::{AssembledPrompt, assemble_prompt, prompt_settings};
use crate::claims::{ClaimError, ClaimStore, LoadedClaim};
use crate::digest::sha256_hex;
use crate::prompts::overrides::IgnoredOverride;
use crate::prompts::{PromptRegistry, fingerprint, resolve_overrides};
use crate::provider::{
    AiMessage, CallSummary, ModelEvent, ModelProvider, ModelRequest, ToolCall, ToolResultMessage,
};
use crate::tools::{
    ToolContext, ToolDeclaration, ToolOutcome, ToolSpec, all_tools, find_tool, run_tool,
};

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
    /// Always first.
    Started {
        turn_id: String,
        started_at: DateTime<Utc>,
    },
    /// The turn is set up and about to call the model.
    Prepared(Box<PreparedTurn>),
    /// An event for the front ends.
    Event(ChatEvent),
    /// The trace of one model call, after its events.
    ModelCall(Box<ModelCallRecord>),
    /// The cancel token fired; nothing follows.
    Cancelled,
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
    pub thinking_level: ThinkingLevel,
    pub prompt: AssembledPrompt,
    pub system_sha256: String,
    pub tools: Vec<ToolDeclaration>,
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
        let turn_id = uuid::Uuid::new_v4().to_string();
        yield TurnOutput::Started { turn_id: turn_id.clone(), started_at: Utc::now() };

        let (prepared, claim) = match prepare(&ctx, &request) {
            Ok(ready) => ready,
            Err(message) => {
                yield TurnOutput::Event(ChatEvent::Error { message });
                return;
            }
        };
        let tools = all_tools(request.prompt.screen_actions);
        let system = prepared.prompt.system_text();
        let thinking_level = prepared.thinking_level;
        let done_prompts = PromptsUsed {
            fingerprint: prepared.fingerprint.clone(),
            overridden: prepared.applied_overrides.keys().cloned().collect(),
        };
        let declarations = prepared.tools.clone();
        yield TurnOutput::Prepared(Box::new(prepared));

        let tool_ctx_claim = claim.claim;
        let mut messages = to_ai_messages(&request.messages);
        let mut usage = Usage::default();
        let mut answer_streamed = false;
        let mut results_in: Vec<ToolResultMessage> = Vec::new();

        for round in 1..=MAX_ROUNDS {
            let model_request = ModelRequest {
                model: request.model.clone(),
                system: system.clone(),
                messages: messages.clone(),
                tools: declarations.clone(),
                thinking_level,
                max_output_tokens: MAX_OUTPUT_TOKENS,
            };
            let started_ms = elapsed_ms(clock);
            let mut record = ModelCallRecord {
                round,
                started_ms,
                latency_ms: 0,
                first_text_ms: None,
                tool_results_in: std::mem::take(&mut results_in),
                text: String::new(),
                tool_calls: Vec::new(),
                summary: None,
                error: None,
            };
            let mut model = ctx.provider.stream_turn(model_request, cancel.clone());
            let outcome = loop {
                let item = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    item = model.next() => Some(item),
                };
                match item {
                    None => break CallEnd::Cancelled,
                    Some(None) => break CallEnd::Failed("the model's stream ended before the call finished".to_string()),
                    Some(Some(Err(error))) => break CallEnd::Failed(error.message),
                    Some(Some(Ok(ModelEvent::Done(summary)))) => break CallEnd::Finished(summary),
                    Some(Some(Ok(ModelEvent::ToolCall(call)))) => record.tool_calls.push(call),
                    Some(Some(Ok(ModelEvent::TextDelta(text)))) => {
                        if text.is_empty() {
                            continue;
                        }
                        record.first_text_ms.get_or_insert_with(|| elapsed_ms(clock));
                        record.text.push_str(&text);
                        answer_streamed = true;
                        yield TurnOutput::Event(ChatEvent::TextDelta { text });
                    }
                }
            };
            drop(model);
            record.latency_ms = elapsed_ms(clock).saturating_sub(started_ms);
            let summary = match outcome {
                CallEnd::Cancelled => {
                    yield TurnOutput::ModelCall(Box::new(record));
                    yield TurnOutput::Cancelled;
                    return;
                }
                CallEnd::Failed(message) => {
                    record.error = Some(message.clone());
                    yield TurnOutput::ModelCall(Box::new(record));
                    yield TurnOutput::Event(ChatEvent::Error { message });
                    return;
                }
                CallEnd::Finished(summary) => summary,
            };
            usage += summary.usage;
            record.summary = Some(summary.clone());
            let calls = record.tool_calls.clone();
            let text = record.text.clone();
            yield TurnOutput::ModelCall(Box::new(record));
            messages.push(AiMessage::Assistant {
                text,
                tool_calls: calls.clone(),
                provider_state: summary.provider_state,
            });

            let step = next_step(round, calls.len());
            if step == NextStep::Finish {
                break;
            }
            let tool_ctx = ToolContext { claim: &tool_ctx_claim };
            for (index, call) in calls.iter().enumerate() {
                if cancel.is_cancelled() {
                    yield TurnOutput::Cancelled;
                    return;
                }
                let id = call_id(call, round, index);
                let outcome = match find_tool(&tools, &call.name) {
                    None => ToolOutcome::error(unknown_tool_message(&call.name)),
                    Some(tool) => {
                        yield TurnOutput::Event(activity(&id, tool, &tool_ctx, call));
                        let outcome = run_tool(tool, &tool_ctx, &call.args);
                        for event in tool_events(&id, tool.name, &outcome) {
                            yield TurnOutput::Event(event);
                        }
                        outcome
                    }
                };
                results_in.push(ToolResultMessage {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    ok: outcome.ok,
                    content: outcome.content,
                });
            }
            messages.push(AiMessage::ToolResults { results: results_in.clone() });
            if step == NextStep::RunToolsThenLimit {
                yield TurnOutput::Event(ChatEvent::TextDelta { text: limit_text(answer_streamed) });
            }
        }
        yield TurnOutput::Event(ChatEvent::Done(Done {
            model: request.model.clone(),
            usage,
            turn_id,
            prompts: done_prompts,
        }));
    }
}

enum CallEnd {
    Finished(CallSummary),
    Failed(String),
    Cancelled,
}

fn activity(id: &str, tool: &ToolSpec, ctx: &ToolContext<'_>, call: &ToolCall) -> ChatEvent {
    ChatEvent::Activity {
        id: id.to_string(),
        tool: tool.name.to_string(),
        label: (tool.label)(ctx, &call.args),
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Steps 1–2 of the turn once streaming has started: the provider is ready,
/// the claim resolves, the capability exists; then the prompt is assembled.
/// An `Err` is the exact message of the turn's `error` event.
fn prepare(
    ctx: &TurnContext,
    request: &ChatRequest,
) -> Result<(PreparedTurn, LoadedClaim), String> {
    ctx.provider.check_ready().map_err(|error| error.message)?;
    let claim = match &request.claim {
        ClaimInput::Document(claim) => (**claim).clone(),
        ClaimInput::Id(id) => ctx.store.load(id).map_err(|error| match error {
            ClaimError::NotFound(_) => error.to_string(),
            other => format!("Claim {id} could not be read: {other}"),
        })?,
    };
    let settings = prompt_settings(&request.prompt, ctx.registry, &claim.claim)
        .map_err(|error| error.to_string())?;
    let prompt = assemble_prompt(&settings, &claim.claim, request.today);
    let resolved = resolve_overrides(&request.prompt.overrides, ctx.registry);
    let tools: Vec<ToolDeclaration> = all_tools(request.prompt.screen_actions)
        .iter()
        .map(|tool| tool.declaration())
        .collect();
    let thinking_level = settings
        .capability
        .and_then(|capability| capability.thinking_level)
        .filter(|_| !request.force_thinking_level)
        .unwrap_or(request.thinking_level);
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
        system_sha256: sha256_hex(prompt.system_text()),
        tools_sha256: sha256_hex(serde_json::to_string(&tools).unwrap_or_default()),
        prompt,
        tools,
        fingerprint: fingerprint(&resolved.applied),
        applied_overrides: resolved.applied,
        ignored_overrides: resolved.ignored,
    };
    Ok((prepared, claim))
}
