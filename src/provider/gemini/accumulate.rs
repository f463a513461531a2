//! Turning Gemini's streamed chunks into our stream items, and rebuilding the
//! model's own parts (with every `thoughtSignature` where it arrived) as the
//! turn's provider_state.

use serde_json::{Value, json};

use super::errors::{GoogleError, from_value, parse_error_body};
use super::usage::read_usage;
use super::wire::{GenerateContentResponse, PartView, provider_state};
use crate::event::Usage;
use crate::provider::sse::SseItem;
use crate::provider::{CallSummary, ErrorKind, ModelEvent, ProviderError, ToolCall};

/// A problem found in the stream: an error whose kind says whether it may
/// be retried (when nothing of the call has been forwarded yet).
pub type StreamFault = ProviderError;

fn fatal(message: impl Into<String>) -> StreamFault {
    ProviderError::of(ErrorKind::Malformed, message)
}

/// Google's error object inside a stream, as a status error.
fn from_google(error: &GoogleError) -> StreamFault {
    let kind = match error.code.and_then(|code| u16::try_from(code).ok()) {
        Some(code) => ErrorKind::Status {
            code,
            retryable: super::errors::is_retryable(i64::from(code)),
        },
        None => ErrorKind::Other,
    };
    ProviderError::of(kind, error.describe(None))
}

/// How a call ended that did not finish normally. A call that reached the
/// model keeps its usage: Google bills a stopped answer too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndFault {
    pub message: String,
    pub summary: Option<Box<CallSummary>>,
}

impl From<EndFault> for ProviderError {
    fn from(fault: EndFault) -> ProviderError {
        ProviderError::new(fault.message).with_summary(fault.summary.map(|summary| *summary))
    }
}

#[derive(Debug, Default)]
pub struct CallAccumulator {
    parts: Vec<Value>,
    /// Parts skipped and usage fields left out, for the call's record.
    warnings: Vec<String>,
    usage: Option<Value>,
    model_version: Option<String>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    block_reason: Option<(String, Option<String>)>,
}

impl CallAccumulator {
    pub fn new() -> CallAccumulator {
        CallAccumulator::default()
    }

    /// Takes one SSE item; returns what to forward at once.
    pub fn accept(&mut self, item: SseItem) -> Result<Vec<ModelEvent>, StreamFault> {
        let data = match item {
            SseItem::Other(text) => {
                return Err(match parse_error_body(&text) {
                    Some(error) => from_google(&error),
                    None => fatal(format!(
                        "Gemini sent a malformed stream: unexpected text `{}`",
                        snippet(&text)
                    )),
                });
            }
            SseItem::Data(data) => data,
        };
        let chunk: GenerateContentResponse = serde_json::from_str(&data).map_err(|error| {
            fatal(format!(
                "Gemini sent a malformed stream event ({error}): `{}`",
                snippet(&data)
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(from_google(&from_value(error)));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        if let Some(version) = chunk.model_version {
            self.model_version = Some(version);
        }
        if let Some(feedback) = chunk.prompt_feedback
            && let Some(reason) = feedback.block_reason
        {
            self.block_reason = Some((reason, feedback.block_reason_message));
        }
        let mut events = Vec::new();
        let Some(candidate) = chunk.candidates.and_then(|c| c.into_iter().next()) else {
            return Ok(events);
        };
        if let Some(reason) = candidate.finish_reason {
            self.finish_reason = Some(reason);
            self.finish_message = candidate.finish_message;
        }
        for part in candidate.content.and_then(|c| c.parts).unwrap_or_default() {
            events.extend(self.accept_part(part)?);
        }
        Ok(events)
    }

    fn accept_part(&mut self, part: Value) -> Result<Option<ModelEvent>, StreamFault> {
        let view: PartView = serde_json::from_value(part.clone())
            .map_err(|error| fatal(format!("Gemini sent a malformed part ({error})")))?;
        if let Some(call) = view.function_call {
            let Some(name) = call.name.filter(|name| !name.is_empty()) else {
                // Vertex streams a call's arguments in nameless parts
                // (`partialArgs`, `willContinue`); the SDK skips them too.
                if call.partial_args.is_some() || call.will_continue.is_some() {
                    self.warnings.push(
                        "skipped a functionCall part without a name (streamed arguments: partialArgs/willContinue)"
                            .to_string(),
                    );
                    return Ok(None);
                }
                return Err(fatal(
                    "Gemini sent a malformed part (a functionCall without a name)",
                ));
            };
            self.parts.push(part);
            return Ok(Some(ModelEvent::ToolCall(ToolCall {
                id: call.id.filter(|id| !id.is_empty()),
                name,
                args: call.args.unwrap_or_else(|| json!({})),
            })));
        }
        let is_answer_text = view.text.is_some() && view.thought != Some(true);
        if is_answer_text && view.thought_signature.is_none() && is_plain_text(&part) {
            let text = view.text.unwrap_or_default();
            if text.is_empty() {
                return Ok(None);
            }
            self.append_text(&text);
            return Ok(Some(ModelEvent::TextDelta(text)));
        }
        // Signed text, thoughts and kinds we do not know: kept exactly.
        self.parts.push(part);
        match view.text {
            Some(text) if is_answer_text && !text.is_empty() => {
                Ok(Some(ModelEvent::TextDelta(text)))
            }
            _ => Ok(None),
        }
    }

    /// Consecutive unsigned text deltas merge into one part; a signed part is
    /// never merged into or out of.
    fn append_text(&mut self, text: &str) {
        if let Some(Value::Object(last)) = self.parts.last_mut()
            && last.len() == 1
            && let Some(Value::String(existing)) = last.get_mut("text")
        {
            existing.push_str(text);
            return;
        }
        self.parts.push(json!({"text": text}));
    }

    /// The call's summary, or the reason it did not finish normally (with
    /// the usage it reported, which is billed all the same). A token count
    /// that cannot be true makes the call an error, never a count of 0.
    pub fn finish(mut self, retries: u32) -> Result<CallSummary, EndFault> {
        let counts =
            read_usage(self.usage.as_ref(), &mut self.warnings).map_err(|error| EndFault {
                message: error.to_string(),
                summary: None,
            })?;
        let reached_model = self.usage.is_some();
        let failure = self.failure();
        let summary = CallSummary {
            usage: Usage::reported(
                counts.prompt,
                // Counts are bounded by `read_usage`: this cannot overflow.
                counts
                    .candidates
                    .zip(counts.thoughts)
                    .map(|(answer, thoughts)| answer.saturating_add(thoughts)),
                counts.cached,
            ),
            usage_detail: self.usage,
            provider_state: Some(provider_state(self.parts)),
            model_version: self.model_version,
            finish_reason: self.finish_reason,
            retries,
            queued_ms: 0,
            // A breakdown of the output: none known, none priced apart.
            thinking_tokens: counts.thoughts.unwrap_or(0),
            cached: false,
            warnings: self.warnings,
            partial: false,
        };
        match failure {
            None => Ok(summary),
            Some(message) => Err(EndFault {
                message,
                summary: reached_model.then(|| Box::new(summary)),
            }),
        }
    }

    /// Why the call did not finish normally, if it did not.
    fn failure(&self) -> Option<String> {
        if let Some((reason, message)) = &self.block_reason {
            let detail = message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            return Some(format!(
                "Gemini blocked the prompt (block reason {reason}){detail}"
            ));
        }
        match self.finish_reason.as_deref() {
            None => Some("Gemini's stream ended before the answer finished (no finish reason): the connection may have dropped".to_string()),
            Some("STOP") => None,
            Some(reason) => Some(finish_message(reason, self.finish_message.as_deref())),
        }
    }
}

/// A part that is nothing but `{"text": …}`.
fn is_plain_text(part: &Value) -> bool {
    part.as_object()
        .is_some_and(|map| map.len() == 1 && map.contains_key("text"))
}

fn finish_message(reason: &str, detail: Option<&str>) -> String {
    let what = match reason {
        "MAX_TOKENS" => "the answer reached the output limit before it finished",
        "SAFETY" | "IMAGE_SAFETY" => "the answer was stopped by Gemini's safety filters",
        "RECITATION" | "IMAGE_RECITATION" => {
            "the answer was stopped for reciting a source too closely"
        }
        "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            "the answer was stopped for prohibited or sensitive content"
        }
        "MALFORMED_FUNCTION_CALL" => "the model produced a malformed tool call",
        "LANGUAGE" => "the answer is in a language Gemini does not support",
        "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => "the model's tool calls were refused",
        _ => "the model stopped unexpectedly",
    };
    match detail {
        Some(detail) if !detail.trim().is_empty() => format!(
            "Gemini stopped: {what} (finish reason {reason}): {}",
            detail.trim()
        ),
        _ => format!("Gemini stopped: {what} (finish reason {reason})"),
    }
}

/// A short, printable excerpt of text we could not understand.
fn snippet(text: &str) -> String {
    let cleaned: String = text.chars().filter(|c| !c.is_control()).take(120).collect();
    if text.chars().count() > 120 {
        format!("{cleaned}…")
    } else {
        cleaned
    }
}

impl crate::provider::transport::call::Decoder for CallAccumulator {
    fn accept(&mut self, item: SseItem) -> Result<Vec<ModelEvent>, ProviderError> {
        CallAccumulator::accept(self, item)
    }

    fn finish(self, retries: u32) -> Result<CallSummary, ProviderError> {
        CallAccumulator::finish(self, retries).map_err(ProviderError::from)
    }
}

#[cfg(test)]
#[path = "accumulate_tests.rs"]
mod tests;
