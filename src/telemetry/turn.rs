//! One turn as one trace, in the OpenTelemetry GenAI conventions. A
//! `TurnTrace` is an observer sink: it keeps what the turn's outputs say,
//! with the time each was seen, and builds the spans when the caller ends
//! it — after an eval has judged the turn, so the root carries its verdict:
//!
//! - `invoke_agent claims-assistant` (root): `gen_ai.operation.name`,
//!   `gen_ai.agent.name`, `gen_ai.conversation.id`, `gen_ai.provider.name`,
//!   `gen_ai.request.model`, `promptlab.*` (turn id, fingerprint, overridden
//!   ids, claim, capability, run log, cost); the turn's error as its status;
//! - `chat {model}` per model call (from the model-call records, with their
//!   own timings): provider, request and response model, usage, cached and
//!   thinking tokens, finish reasons, retries, cache hit, the call's error;
//! - `execute_tool {name}` per tool call the model asked for — every one in
//!   the records, so a call to an unknown tool, which streams no events,
//!   still gets its span, with status "unknown tool".
//!
//! Prompts, messages, answers, tool arguments and results are added only
//! when asked (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`),
//! in the conventions' JSON shapes (`content.rs`): each `chat` span says
//! what that call was told and what it said or asked for.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Span, SpanBuilder, SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, TraceState,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};

use super::Shared;
pub use super::attributes::Verdict;
use super::attributes::{add_verdict, count};
pub use super::content::MAX_CONTENT_BYTES;
use super::content::{self, Message};
use crate::chat::event::ChatEvent;
use crate::chat::{ModelCallRecord, PreparedTurn, TurnOutput, TurnStart};
use crate::sink::driver::{SinkRole, TurnSink};

/// The agent every root span names.
pub const AGENT_NAME: &str = "claims-assistant";

/// What a turn's caller knows that its outputs do not say.
#[derive(Debug, Clone, Default)]
pub struct TurnLabels {
    /// The `chat -i` session's id; `None`: the turn id.
    pub conversation_id: Option<String>,
    /// `gen_ai.provider.name`, e.g. `gcp.gemini`.
    pub provider: String,
    pub model: String,
    /// The conversation sent, as (role, text), for captured content.
    pub messages: Vec<(String, String)>,
    /// This turn's parent (`serve`: the request's `traceparent`), over the
    /// process's `TRACEPARENT`.
    pub parent: Option<super::TraceParent>,
}

impl TurnLabels {
    /// The conversation of `messages` as captured content takes it.
    pub fn conversation(messages: &[crate::chat::ChatMessage]) -> Vec<(String, String)> {
        messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    crate::chat::Role::User => "user",
                    crate::chat::Role::Assistant => "assistant",
                };
                (role.to_string(), m.text.clone())
            })
            .collect()
    }
}

/// A tool call as it was seen: started (its activity event) and finished
/// (its result).
#[derive(Debug, Clone, Copy)]
struct ToolSeen {
    started: SystemTime,
    finished: Option<(SystemTime, bool)>,
}

pub struct TurnTrace {
    shared: Arc<Shared>,
    /// Chosen up front, so the run log can name the trace before it exists.
    trace_id: [u8; 16],
    span_id: [u8; 8],
    labels: TurnLabels,
    start: Option<TurnStart>,
    prepared: Option<PreparedTurn>,
    calls: Vec<ModelCallRecord>,
    tools: HashMap<String, ToolSeen>,
    answer: String,
    error: Option<String>,
    cancelled: bool,
    ended: Option<SystemTime>,
    run_log: Option<String>,
    cost_usd: Option<f64>,
}

impl TurnTrace {
    pub(super) fn new(shared: Arc<Shared>, labels: TurnLabels) -> TurnTrace {
        let random = uuid::Uuid::new_v4().into_bytes();
        let parent = labels.parent.or(shared.parent);
        let trace_id = parent.map_or(uuid::Uuid::new_v4().into_bytes(), |p| p.trace_id);
        let mut span_id = [0u8; 8];
        span_id.copy_from_slice(&random[..8]);
        TurnTrace {
            shared,
            trace_id,
            span_id,
            labels,
            start: None,
            prepared: None,
            calls: Vec::new(),
            tools: HashMap::new(),
            answer: String::new(),
            error: None,
            cancelled: false,
            ended: None,
            run_log: None,
            cost_usd: None,
        }
    }

    /// The trace and root span this turn's spans will have (hex).
    pub fn ids(&self) -> crate::runs::record::TraceRef {
        crate::runs::record::TraceRef {
            trace_id: data_encoding::HEXLOWER.encode(&self.trace_id),
            span_id: data_encoding::HEXLOWER.encode(&self.span_id),
        }
    }

    /// The run log the turn was recorded in (`promptlab.run_log`).
    pub fn set_run_log(&mut self, path: &std::path::Path) {
        self.run_log = Some(path.display().to_string());
    }

    /// The turn's cost, when its price is known (`promptlab.cost_usd`).
    pub fn set_cost(&mut self, usd: Option<f64>) {
        self.cost_usd = usd;
    }

    /// Builds and hands over the turn's spans; `verdict` is an eval's.
    pub fn end(self, verdict: Option<&Verdict>) {
        let Some(start) = self.start.clone() else {
            return;
        };
        let tracer = &self.shared.tracer;
        let began: SystemTime = start.started_at.into();
        let ended = self.ended.unwrap_or_else(SystemTime::now).max(began);
        let root = SpanBuilder::from_name(format!("invoke_agent {AGENT_NAME}"))
            .with_kind(SpanKind::Internal)
            .with_trace_id(opentelemetry::trace::TraceId::from_bytes(self.trace_id))
            .with_span_id(opentelemetry::trace::SpanId::from_bytes(self.span_id))
            .with_start_time(began)
            .with_attributes(self.root_attributes(&start))
            .start_with_context(tracer, &self.parent_context());
        let cx = Context::new().with_span(root);
        let mut spans = 1;
        for (index, call) in self.calls.iter().enumerate() {
            spans += self.call_spans(&cx, began, index, call);
        }
        if let Some(remote) = &start.remote {
            self.remote_span(&cx, remote, began, ended);
            spans += 1;
        }
        let span = cx.span();
        if let Some(verdict) = verdict {
            add_verdict(&span, verdict, ended);
        }
        if let Some(error) = &self.error {
            span.set_status(Status::error(error.clone()));
        } else if self.cancelled {
            span.set_status(Status::error("cancelled"));
        }
        span.end_with_timestamp(ended);
        self.shared
            .stats
            .offered
            .fetch_add(spans, Ordering::Relaxed);
    }

    fn parent_context(&self) -> Context {
        match self.labels.parent.or(self.shared.parent) {
            Some(parent) => {
                let flags = if parent.sampled {
                    TraceFlags::SAMPLED
                } else {
                    TraceFlags::default()
                };
                let context = SpanContext::new(
                    opentelemetry::trace::TraceId::from_bytes(parent.trace_id),
                    opentelemetry::trace::SpanId::from_bytes(parent.span_id),
                    flags,
                    true,
                    TraceState::default(),
                );
                Context::new().with_remote_span_context(context)
            }
            None => Context::new(),
        }
    }

    fn root_attributes(&self, start: &TurnStart) -> Vec<KeyValue> {
        let conversation = self
            .labels
            .conversation_id
            .clone()
            .unwrap_or_else(|| start.turn_id.clone());
        let overridden: Vec<StringValue> = start
            .applied_overrides
            .keys()
            .map(|id| StringValue::from(id.clone()))
            .collect();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", AGENT_NAME),
            KeyValue::new("gen_ai.conversation.id", conversation),
            KeyValue::new("gen_ai.provider.name", self.labels.provider.clone()),
            KeyValue::new("gen_ai.request.model", self.model()),
            KeyValue::new("promptlab.requested_model", self.labels.model.clone()),
            KeyValue::new("promptlab.turn_id", start.turn_id.clone()),
            KeyValue::new("promptlab.fingerprint", start.fingerprint.clone()),
            KeyValue::new(
                "promptlab.overridden",
                Value::Array(Array::String(overridden)),
            ),
        ];
        if let Some(prepared) = &self.prepared {
            attributes.push(KeyValue::new("promptlab.claim", prepared.claim_id.clone()));
            attributes.push(KeyValue::new(
                "promptlab.capability",
                prepared
                    .capability
                    .clone()
                    .unwrap_or_else(|| "free chat".to_string()),
            ));
        }
        if let Some(path) = &self.run_log {
            attributes.push(KeyValue::new("promptlab.run_log", path.clone()));
        }
        if let Some(usd) = self.cost_usd {
            attributes.push(KeyValue::new("promptlab.cost_usd", usd));
        }
        if self.shared.capture_content {
            attributes.extend(self.system_instructions());
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                content::messages_json(&self.conversation()),
            ));
            let finish_reason = if self.error.is_some() {
                "error".to_string()
            } else {
                self.calls
                    .last()
                    .map_or("stop".to_string(), content::finish_reason)
            };
            let mut answer = Message::text("assistant", &self.answer);
            answer.finish_reason = Some(finish_reason);
            attributes.push(KeyValue::new(
                "gen_ai.output.messages",
                content::messages_json(&[answer]),
            ));
        }
        attributes
    }

    /// The `chat` span of call `index` and its tool spans; how many.
    fn call_spans(
        &self,
        cx: &Context,
        began: SystemTime,
        index: usize,
        call: &ModelCallRecord,
    ) -> u64 {
        let start = began + Duration::from_millis(call.started_ms);
        let end = start + Duration::from_millis(call.latency_ms);
        let mut span = SpanBuilder::from_name(format!("chat {}", self.model()))
            .with_kind(SpanKind::Client)
            .with_start_time(start)
            .with_attributes(self.call_attributes(index, call))
            .start_with_context(&self.shared.tracer, cx);
        if let Some(error) = &call.error {
            span.set_status(Status::error(error.clone()));
        }
        span.end_with_timestamp(end);
        let next = self.calls.get(index + 1);
        let mut spans = 1;
        for (position, tool) in call.tool_calls.iter().enumerate() {
            self.tool_span(cx, tool, (call.round, position), end, next);
            spans += 1;
        }
        spans
    }

    fn call_attributes(&self, index: usize, call: &ModelCallRecord) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", self.labels.provider.clone()),
            KeyValue::new("gen_ai.request.model", self.model()),
            KeyValue::new("promptlab.round", i64::from(call.round)),
        ];
        if let Some(summary) = &call.summary {
            let usage = summary.usage;
            // A count the server did not report is left out, never sent as 0.
            attributes.extend(
                [
                    ("gen_ai.usage.input_tokens", usage.input_tokens),
                    ("gen_ai.usage.output_tokens", usage.output_tokens),
                    (
                        "gen_ai.usage.cache_read.input_tokens",
                        usage.cache_read_tokens,
                    ),
                ]
                .into_iter()
                .filter_map(|(name, tokens)| Some(KeyValue::new(name, count(tokens?)))),
            );
            attributes.extend([
                KeyValue::new(
                    "promptlab.usage.thinking_tokens",
                    count(summary.thinking_tokens),
                ),
                KeyValue::new("promptlab.retries", i64::from(summary.retries)),
                KeyValue::new("promptlab.cache_hit", summary.cached),
            ]);
            if let Some(model) = &summary.model_version {
                attributes.push(KeyValue::new("gen_ai.response.model", model.clone()));
            }
            if let Some(reason) = &summary.finish_reason {
                let reasons = vec![StringValue::from(reason.clone())];
                attributes.push(KeyValue::new(
                    "gen_ai.response.finish_reasons",
                    Value::Array(Array::String(reasons)),
                ));
            }
        }
        if self.shared.capture_content {
            attributes.extend(self.system_instructions());
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                content::messages_json(&self.told_in(index)),
            ));
            attributes.push(KeyValue::new(
                "gen_ai.output.messages",
                content::messages_json(&[Message::said_in(call)]),
            ));
        }
        attributes
    }

    /// `gen_ai.request.model`: the model asked for, except where no model
    /// answered — a scripted or replayed turn is named by its provider
    /// (`promptlab.script`), so that no viewer prices it as the paid model
    /// it stood in for (`promptlab.requested_model` keeps that one).
    fn model(&self) -> String {
        match self.labels.provider.as_str() {
            provider @ ("promptlab.script" | "promptlab.replay") => provider.to_string(),
            _ => self.labels.model.clone(),
        }
    }

    /// `gen_ai.system_instructions`: the assembled system prompt as a list
    /// of parts, once the turn was assembled.
    fn system_instructions(&self) -> Option<KeyValue> {
        let prepared = self.prepared.as_ref()?;
        Some(KeyValue::new(
            "gen_ai.system_instructions",
            content::system_instructions_json(&prepared.system_text),
        ))
    }

    /// The conversation the turn was asked, as messages.
    fn conversation(&self) -> Vec<Message> {
        (self.labels.messages.iter())
            .map(|(role, text)| {
                Message::text(if role == "user" { "user" } else { "assistant" }, text)
            })
            .collect()
    }

    /// What call `index` was told besides its system prompt: the
    /// conversation, then each earlier round — what the model said and
    /// asked for, and the results of the tools it called.
    fn told_in(&self, index: usize) -> Vec<Message> {
        let mut messages = self.conversation();
        for (earlier, answered) in self.calls[..index].iter().zip(&self.calls[1..=index]) {
            // As the model was given it back: a finish reason is the output's.
            let mut said = Message::said_in(earlier);
            said.finish_reason = None;
            messages.push(said);
            messages.extend(Message::results_of(earlier, answered));
        }
        messages
    }

    /// A turn run by a deployment (`--provider worker`): one CLIENT child
    /// for the remote turn; its per-call detail stays on the deployment.
    fn remote_span(
        &self,
        cx: &Context,
        remote: &crate::chat::RemoteTurn,
        began: SystemTime,
        ended: SystemTime,
    ) {
        let mut span = SpanBuilder::from_name(format!("invoke_agent {AGENT_NAME} (deployment)"))
            .with_kind(SpanKind::Client)
            .with_start_time(began)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new("promptlab.endpoint", remote.endpoint.clone()),
                KeyValue::new("promptlab.claim_sent", remote.claim_sent),
            ])
            .start_with_context(&self.shared.tracer, cx);
        if let Some(error) = &self.error {
            span.set_status(Status::error(error.clone()));
        }
        span.end_with_timestamp(ended);
    }

    /// `execute_tool {name}`: timed by its events when it had them, else
    /// between its call and the next; ok or error from its result.
    fn tool_span(
        &self,
        cx: &Context,
        tool: &crate::provider::ToolCall,
        (round, position): (u32, usize),
        after: SystemTime,
        next: Option<&ModelCallRecord>,
    ) {
        let call_id = content::call_id(tool, round, position);
        let seen = self.tools.get(&call_id).copied();
        let result = next.and_then(|next| {
            next.tool_results_in
                .iter()
                .find(|r| r.call_id.is_some() && r.call_id == tool.id)
                .or_else(|| {
                    next.tool_results_in
                        .get(position)
                        .filter(|r| r.name == tool.name)
                })
        });
        let start = seen.map_or(after, |seen| seen.started);
        let end = seen
            .and_then(|seen| seen.finished.map(|(at, _)| at))
            .unwrap_or(start)
            .max(start);
        let known = crate::tools::find_tool(&crate::tools::all_tools(true), &tool.name).is_some();
        let ok = seen
            .and_then(|seen| seen.finished.map(|(_, ok)| ok))
            .or(result.map(|r| r.ok));
        let mut span = SpanBuilder::from_name(format!("execute_tool {}", tool.name))
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(
                [
                    Some(KeyValue::new("gen_ai.operation.name", "execute_tool")),
                    Some(KeyValue::new("gen_ai.tool.name", tool.name.clone())),
                    Some(KeyValue::new("gen_ai.tool.call.id", call_id.clone())),
                ]
                .into_iter()
                .flatten()
                .chain(self.tool_content(tool, result)),
            )
            .start_with_context(&self.shared.tracer, cx);
        if !known {
            span.set_status(Status::error("unknown tool"));
        } else if ok == Some(false) {
            let message =
                result.map_or("the tool failed".to_string(), |r| content::text(&r.content));
            span.set_status(Status::error(message));
        } else if ok == Some(true) {
            span.set_status(Status::Ok);
        }
        span.end_with_timestamp(end);
    }
}

impl TurnTrace {
    /// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` of a
    /// tool span, when content is captured (the result as the model read
    /// it, when a later call was given it).
    fn tool_content(
        &self,
        tool: &crate::provider::ToolCall,
        result: Option<&crate::provider::ToolResultMessage>,
    ) -> Vec<KeyValue> {
        if !self.shared.capture_content {
            return Vec::new();
        }
        let mut attributes = vec![KeyValue::new(
            "gen_ai.tool.call.arguments",
            content::arguments_json(&tool.args),
        )];
        if let Some(result) = result {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.result",
                content::text(&result.content),
            ));
        }
        attributes
    }
}

impl TurnSink for TurnTrace {
    fn role(&self) -> SinkRole {
        SinkRole::Observer
    }

    fn accept(&mut self, output: &TurnOutput) -> io::Result<()> {
        let now = SystemTime::now();
        match output {
            TurnOutput::Started(start) => self.start = Some((**start).clone()),
            TurnOutput::Prepared(prepared) => self.prepared = Some((**prepared).clone()),
            TurnOutput::ModelCall(call) => self.calls.push((**call).clone()),
            // A call's retries are counted in its record (`promptlab.retries`).
            TurnOutput::Notice(_) => {}
            TurnOutput::Cancelled => {
                self.cancelled = true;
                self.ended = Some(now);
            }
            TurnOutput::Event(event) => match event {
                ChatEvent::Activity { id, .. } => {
                    self.tools.insert(
                        id.clone(),
                        ToolSeen {
                            started: now,
                            finished: None,
                        },
                    );
                }
                ChatEvent::ToolResult { id, ok, .. } => {
                    let seen = self.tools.entry(id.clone()).or_insert(ToolSeen {
                        started: now,
                        finished: None,
                    });
                    seen.finished = Some((now, *ok));
                }
                ChatEvent::TextDelta { text } => self.answer.push_str(text),
                ChatEvent::Error { message } => {
                    self.error = Some(message.clone());
                    self.ended = Some(now);
                }
                ChatEvent::Done(_) => self.ended = Some(now),
                ChatEvent::ClientAction(_) => {}
            },
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "the trace exporter".to_string()
    }
}
