//! Chat Completions chunks into our stream items: text deltas forwarded at
//! once, parallel tool calls assembled from their argument deltas by index
//! and given when the choice finishes, `[DONE]`, an `error` object in the
//! stream, usage (`include_usage`) field by field, finish reasons (`length`
//! keeps its usage), and the assistant message as the server built it, for
//! its provider_state.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::errors::{OpenAiError, from_value, is_retryable, parse_error_body};
use super::wire::provider_state;
use crate::event::Usage;
use crate::provider::sse::SseItem;
use crate::provider::transport::call::Decoder;
use crate::provider::{CallSummary, ErrorKind, ModelEvent, ProviderError, ToolCall};

/// No call reports more tokens than this; a larger count is not believed.
const MAX_TOKENS: u64 = 1_000_000_000;

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    /// Which call this delta continues; a server that sends each call whole
    /// may leave it out (its place in the list is then its index).
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A call being assembled from its deltas.
#[derive(Debug, Default)]
struct PendingCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
pub struct ChunkDecoder {
    text: String,
    refusal: String,
    calls: BTreeMap<u64, PendingCall>,
    usage: Option<Value>,
    model: Option<String>,
    finish_reason: Option<String>,
    done: bool,
    warnings: Vec<String>,
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::of(ErrorKind::Malformed, message)
}

/// A server's error object (in a body or the stream) as a typed error.
fn from_server(error: &OpenAiError) -> ProviderError {
    let kind = match error.status() {
        Some(code) => ErrorKind::Status {
            code,
            retryable: is_retryable(code),
        },
        None => ErrorKind::Other,
    };
    ProviderError::of(kind, error.describe(None))
}

impl Decoder for ChunkDecoder {
    fn accept(&mut self, item: SseItem) -> Result<Vec<ModelEvent>, ProviderError> {
        let data = match item {
            SseItem::Other(text) => {
                return Err(match parse_error_body(&text) {
                    Some(error) => from_server(&error),
                    None => malformed(format!(
                        "the server sent a malformed stream: unexpected text `{}`",
                        crate::text::quote(&text)
                    )),
                });
            }
            SseItem::Data(data) => data,
        };
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if self.done {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(&data).map_err(|error| {
            malformed(format!(
                "the server sent a malformed stream event ({error}): `{}`",
                crate::text::quote(&data)
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(from_server(&from_value(error)));
        }
        if let Some(usage) = chunk.usage.filter(|usage| !usage.is_null()) {
            self.usage = Some(usage);
        }
        if let Some(model) = chunk.model.filter(|model| !model.is_empty()) {
            self.model = Some(model);
        }
        let mut events = Vec::new();
        // One choice is asked for (no `n`); any other is not ours to read.
        for choice in chunk
            .choices
            .into_iter()
            .flatten()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.delta {
                events.extend(self.accept_delta(delta));
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty())
                && self.finish_reason.is_none()
            {
                self.finish_reason = Some(reason);
                events.extend(self.complete_calls()?);
            }
        }
        Ok(events)
    }

    fn finish(mut self, retries: u32) -> Result<CallSummary, ProviderError> {
        let counts = read_usage(self.usage.as_ref(), &mut self.warnings)?;
        // A finish reason means the model ran and stopped (an answer cut at
        // its limit is billed): its usage, reported or not, is the call's.
        // A server that sends none (llama-cpp-python's) leaves it unknown —
        // never the 0 tokens of a call that reached no model.
        let reached_model = self.usage.is_some() || self.finish_reason.is_some();
        let failure = self.failure();
        let message = self.message();
        let summary = CallSummary {
            usage: Usage::reported(counts.prompt, counts.completion, counts.cached),
            usage_detail: self.usage,
            provider_state: Some(provider_state(message)),
            model_version: self.model,
            finish_reason: self.finish_reason,
            retries,
            queued_ms: 0,
            // A breakdown of the output, priced at the output's rate when
            // the price table has no rate of its own: none known, none apart.
            thinking_tokens: counts.reasoning.unwrap_or(0),
            cached: false,
            warnings: self.warnings,
            partial: false,
        };
        match failure {
            None => Ok(summary),
            Some(error) => Err(error.with_summary(reached_model.then_some(summary))),
        }
    }
}

impl ChunkDecoder {
    pub fn new() -> ChunkDecoder {
        ChunkDecoder::default()
    }

    fn accept_delta(&mut self, delta: Delta) -> Option<ModelEvent> {
        for (place, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = call.index.unwrap_or(place as u64);
            let pending = self.calls.entry(index).or_default();
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                pending.id = Some(id);
            }
            if let Some(function) = call.function {
                pending
                    .name
                    .push_str(function.name.as_deref().unwrap_or(""));
                pending
                    .arguments
                    .push_str(function.arguments.as_deref().unwrap_or(""));
            }
        }
        let mut text = delta.content.unwrap_or_default();
        self.text.push_str(&text);
        if let Some(refusal) = delta.refusal {
            // A refusal is the model's answer to the user: shown as text.
            self.refusal.push_str(&refusal);
            text.push_str(&refusal);
        }
        (!text.is_empty()).then_some(ModelEvent::TextDelta(text))
    }

    /// The calls, whole, in their index order, once the choice finished.
    fn complete_calls(&self) -> Result<Vec<ModelEvent>, ProviderError> {
        self.calls
            .values()
            .map(|call| {
                if call.name.is_empty() {
                    return Err(malformed(
                        "the server sent a tool call without a function name",
                    ));
                }
                let args = if call.arguments.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&call.arguments).map_err(|error| {
                        malformed(format!(
                            "the model's call of `{}` has arguments that are not JSON ({error}): `{}`",
                            crate::text::quote(&call.name),
                            crate::text::quote(&call.arguments)
                        ))
                    })?
                };
                Ok(ModelEvent::ToolCall(ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args,
                }))
            })
            .collect()
    }

    /// The assistant message as streamed, to be sent back as it is.
    fn message(&self) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let content = if self.text.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            json!(self.text)
        };
        message.insert("content".into(), content);
        if !self.refusal.is_empty() {
            message.insert("refusal".into(), json!(self.refusal));
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .map(|(index, call)| {
                    json!({
                        "id": call.id.clone().unwrap_or_else(|| format!("call_{index}")),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        Value::Object(message)
    }

    /// Why the call did not finish normally, if it did not.
    fn failure(&self) -> Option<ProviderError> {
        let Some(reason) = self.finish_reason.as_deref() else {
            return Some(ProviderError::of(
                ErrorKind::Dropped,
                "the model's stream ended before the answer finished (no finish reason): the connection may have dropped",
            ));
        };
        if !self.done {
            return Some(ProviderError::of(
                ErrorKind::Dropped,
                "the model's stream ended without its closing `data: [DONE]`: the connection may have dropped",
            ));
        }
        let what = match reason {
            "stop" | "tool_calls" | "function_call" => return None,
            "length" => "the answer reached the output limit before it finished",
            "content_filter" => "the answer was stopped by the server's content filter",
            _ => "the model stopped unexpectedly",
        };
        Some(ProviderError::new(format!(
            "the model stopped: {what} (finish reason {})",
            crate::text::quote(reason)
        )))
    }
}

/// The counts promptlab uses; `None` when the server did not report one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub prompt: Option<u64>,
    pub cached: Option<u64>,
    pub completion: Option<u64>,
    pub reasoning: Option<u64>,
}

/// `usage` field by field. A server need not send it (`include_usage` is a
/// request: llama-cpp-python's server, for one, never does), nor each of
/// its counts (many leave `prompt_tokens_details` out): a count not given,
/// or given as no count (with a warning), is unknown — never 0, which would
/// pass `maxOutputTokens` and price the call as free. A count no call can
/// have (above 10⁹, or a part larger than its whole) makes the call an
/// error rather than a wrong cost.
pub fn read_usage(
    raw: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<Counts, ProviderError> {
    let mut counts = Counts::default();
    let Some(raw) = raw else {
        return Ok(counts);
    };
    let fields = [
        ("prompt_tokens", &raw["prompt_tokens"], &mut counts.prompt),
        (
            "prompt_tokens_details.cached_tokens",
            &raw["prompt_tokens_details"]["cached_tokens"],
            &mut counts.cached,
        ),
        (
            "completion_tokens",
            &raw["completion_tokens"],
            &mut counts.completion,
        ),
        (
            "completion_tokens_details.reasoning_tokens",
            &raw["completion_tokens_details"]["reasoning_tokens"],
            &mut counts.reasoning,
        ),
    ];
    for (name, value, slot) in fields {
        match value {
            Value::Null => {}
            Value::Number(number) => match number.as_u64().filter(|n| *n <= MAX_TOKENS) {
                Some(count) => *slot = Some(count),
                None => return Err(impossible(name, &number.to_string())),
            },
            other => warnings.push(format!(
                "usage {name} is not a count (`{}`): left out",
                crate::text::quote(&other.to_string())
            )),
        }
    }
    if let (Some(cached), Some(prompt)) = (counts.cached, counts.prompt)
        && cached > prompt
    {
        return Err(impossible(
            "prompt_tokens_details.cached_tokens",
            &cached.to_string(),
        ));
    }
    if let (Some(reasoning), Some(completion)) = (counts.reasoning, counts.completion)
        && reasoning > completion
    {
        return Err(impossible(
            "completion_tokens_details.reasoning_tokens",
            &reasoning.to_string(),
        ));
    }
    Ok(counts)
}

fn impossible(field: &str, shown: &str) -> ProviderError {
    malformed(format!(
        "the server reported an impossible token count: {field} {}",
        crate::text::quote(shown)
    ))
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
