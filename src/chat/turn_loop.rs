//! The state of one turn's loop (SPEC §1.5) and each step of it as plain
//! code: build the model request, take the model's text, end a model call,
//! run one tool call, end a round, say `done`. `run_chat_turn`'s stream only
//! sequences these steps and yields what they return, so that every event is
//! forwarded the moment it exists.

use std::sync::Arc;
use std::time::Instant;

use super::decide::{NextStep, call_id, limit_text, next_step, tool_events, unknown_tool_message};
use super::event::{ChatEvent, Done, PromptsUsed, Usage};
use super::history::to_ai_messages;
use super::request::ChatRequest;
use super::service::{ModelCallRecord, PreparedTurn, TurnOutput};
use crate::claims::LoadedClaim;
use crate::prompts::thinking::ThinkingLevel;
use crate::provider::{AiMessage, CallSummary, ModelRequest, ToolCall, ToolResultMessage};
use crate::tools::{
    ToolContext, ToolDeclaration, ToolOutcome, ToolSpec, all_tools, find_tool, run_tool,
};

/// How one model call ended.
pub enum CallEnd {
    Finished(Box<CallSummary>),
    /// With the usage of a call that reached the model before it failed.
    Failed(String, Option<Box<CallSummary>>),
    Cancelled,
}

/// What follows a model call.
pub enum AfterCall {
    /// The turn has ended (an error or a cancellation was emitted).
    Stop,
    /// No tool calls: the answer is complete.
    Finish,
    /// Run these tool calls, then `step` says whether to go round again.
    Tools(Vec<ToolCall>, NextStep),
}

/// Everything the loop carries from round to round.
pub struct TurnLoop {
    clock: Instant,
    model: String,
    turn_id: String,
    system: Arc<str>,
    /// The level the model takes (`models::ModelTable::fit`), as sent.
    thinking_sent: ThinkingLevel,
    /// Each call's output cap (`PreparedTurn::max_output_tokens`).
    max_output_tokens: u32,
    declarations: Arc<[ToolDeclaration]>,
    tools: Vec<&'static ToolSpec>,
    claim: Arc<LoadedClaim>,
    prompts: PromptsUsed,
    messages: Vec<AiMessage>,
    usage: Usage,
    answer_streamed: bool,
    /// This round's tool results, given to the next model call.
    results: Vec<ToolResultMessage>,
}

impl TurnLoop {
    pub fn new(
        request: &ChatRequest,
        prepared: &PreparedTurn,
        claim: Arc<LoadedClaim>,
        turn_id: String,
        clock: Instant,
    ) -> TurnLoop {
        TurnLoop {
            clock,
            model: request.model.clone(),
            turn_id,
            system: Arc::clone(&prepared.system_text),
            thinking_sent: prepared.thinking_sent,
            max_output_tokens: prepared.max_output_tokens,
            declarations: Arc::clone(&prepared.tools),
            tools: all_tools(request.prompt.screen_actions),
            claim,
            prompts: PromptsUsed {
                fingerprint: prepared.fingerprint.clone(),
                overridden: prepared.applied_overrides.keys().cloned().collect(),
            },
            messages: to_ai_messages(&request.messages),
            usage: Usage::default(),
            answer_streamed: false,
            results: Vec::new(),
        }
    }

    /// The next model call: what it is sent, and its record so far.
    pub fn start_call(&mut self, round: u32) -> (ModelRequest, ModelCallRecord) {
        let request = ModelRequest {
            model: self.model.clone(),
            system: Arc::clone(&self.system),
            messages: self.messages.clone(),
            tools: Arc::clone(&self.declarations),
            thinking_level: self.thinking_sent,
            max_output_tokens: self.max_output_tokens,
            response_schema: None,
        };
        let record = ModelCallRecord {
            round,
            started_ms: self.elapsed_ms(),
            latency_ms: 0,
            first_text_ms: None,
            tool_results_in: std::mem::take(&mut self.results),
            text: String::new(),
            tool_calls: Vec::new(),
            summary: None,
            error: None,
        };
        (request, record)
    }

    /// A piece of the model's answer: the event to forward at once, if any.
    pub fn text(&mut self, record: &mut ModelCallRecord, text: String) -> Option<TurnOutput> {
        if text.is_empty() {
            return None;
        }
        let now = self.elapsed_ms();
        record.first_text_ms.get_or_insert(now);
        record.text.push_str(&text);
        self.answer_streamed = true;
        Some(TurnOutput::Event(ChatEvent::TextDelta { text }))
    }

    /// Ends a model call: its trace (and an error or cancellation when it
    /// failed) to emit, and what comes next.
    pub fn end_call(
        &mut self,
        mut record: ModelCallRecord,
        end: CallEnd,
    ) -> (Vec<TurnOutput>, AfterCall) {
        record.latency_ms = self.elapsed_ms().saturating_sub(record.started_ms);
        let summary = match end {
            CallEnd::Cancelled => {
                let outputs = vec![
                    TurnOutput::ModelCall(Box::new(record)),
                    TurnOutput::Cancelled,
                ];
                return (outputs, AfterCall::Stop);
            }
            CallEnd::Failed(message, summary) => {
                // A stopped answer is billed: its usage stays on the record.
                record.summary = summary.map(|summary| *summary);
                record.error = Some(message.clone());
                let outputs = vec![
                    TurnOutput::ModelCall(Box::new(record)),
                    TurnOutput::Event(ChatEvent::Error { message }),
                ];
                return (outputs, AfterCall::Stop);
            }
            CallEnd::Finished(summary) => *summary,
        };
        self.usage += summary.usage;
        let calls = record.tool_calls.clone();
        let step = next_step(record.round, calls.len());
        // The history is read only by a further call: the last call's text
        // and provider state (up to 16 MiB each) are kept once, in the trace.
        if step != NextStep::Finish {
            self.messages.push(AiMessage::Assistant {
                text: record.text.clone(),
                tool_calls: calls.clone(),
                provider_state: summary.provider_state.clone(),
            });
        }
        record.summary = Some(summary);
        let after = match step {
            NextStep::Finish => AfterCall::Finish,
            step => AfterCall::Tools(calls, step),
        };
        (vec![TurnOutput::ModelCall(Box::new(record))], after)
    }

    /// A known tool's `activity` event, emitted before it runs; none for an
    /// unknown tool.
    pub fn activity(&self, round: u32, index: usize, call: &ToolCall) -> Option<TurnOutput> {
        let tool = find_tool(&self.tools, &call.name)?;
        let ctx = ToolContext {
            claim: &self.claim.claim,
        };
        Some(TurnOutput::Event(ChatEvent::Activity {
            id: call_id(call, round, index),
            tool: tool.name.to_string(),
            label: (tool.label)(&ctx, &call.args),
        }))
    }

    /// Runs one tool call (an unknown tool gets an error result the model
    /// reads) and returns its `tool_result` and `client_action` events.
    pub fn run_call(&mut self, round: u32, index: usize, call: &ToolCall) -> Vec<TurnOutput> {
        let ctx = ToolContext {
            claim: &self.claim.claim,
        };
        let (outcome, events) = match find_tool(&self.tools, &call.name) {
            None => (
                ToolOutcome::error(unknown_tool_message(&call.name)),
                Vec::new(),
            ),
            Some(tool) => {
                let outcome = run_tool(tool, &ctx, &call.args);
                let id = call_id(call, round, index);
                let events = tool_events(&id, tool.name, &outcome);
                (outcome, events)
            }
        };
        self.results.push(ToolResultMessage {
            call_id: call.id.clone(),
            name: call.name.clone(),
            ok: outcome.ok,
            content: outcome.content,
        });
        events.into_iter().map(TurnOutput::Event).collect()
    }

    /// After a round's tools: their results join the history; the eighth
    /// round adds the limit message.
    pub fn end_tools(&mut self, step: NextStep) -> Option<TurnOutput> {
        self.messages.push(AiMessage::ToolResults {
            results: self.results.clone(),
        });
        (step == NextStep::RunToolsThenLimit).then(|| {
            TurnOutput::Event(ChatEvent::TextDelta {
                text: limit_text(self.answer_streamed),
            })
        })
    }

    /// The last event of a turn that did not fail.
    pub fn done(&self) -> TurnOutput {
        TurnOutput::Event(ChatEvent::Done(Done {
            model: self.model.clone(),
            usage: self.usage,
            turn_id: self.turn_id.clone(),
            prompts: self.prompts.clone(),
        }))
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
