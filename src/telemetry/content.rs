//! Captured content in the shapes of the GenAI conventions' JSON schemas
//! (`gen-ai-input-messages.json`, `gen-ai-output-messages.json`,
//! `gen-ai-system-instructions.json`): messages of typed parts — `text`,
//! `tool_call` (id, name, arguments), `tool_call_response` (id, response) —
//! an output message's `finish_reason`, and system instructions as a list
//! of parts. Viewers such as Phoenix drop an attribute that does not match.
//!
//! An attribute is at most `MAX_CONTENT_BYTES`: past it, the longest
//! contents are cut, each ending in [`TRUNCATED`], so what is sent is
//! always valid JSON of the same shape, never a document cut mid-way.

use serde::Serialize;
use serde_json::Value;

use crate::chat::ModelCallRecord;
use crate::provider::ToolCall;

/// The longest captured content attribute, in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;
/// What ends a content cut to fit (`docs/telemetry.md`).
pub const TRUNCATED: &str = "…truncated";

/// One message: a role and its parts; an output message also says why the
/// model stopped.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: &'static str,
    pub parts: Vec<Part>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        content: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolCallResponse {
        id: String,
        response: Value,
    },
}

impl Message {
    pub fn text(role: &'static str, text: &str) -> Message {
        Message {
            role,
            parts: vec![Part::Text {
                content: text.to_string(),
            }],
            finish_reason: None,
        }
    }

    /// What the model said in call `call`: its text (when it said any),
    /// then the tools it asked for, and why it stopped.
    pub fn said_in(call: &ModelCallRecord) -> Message {
        let mut parts = Vec::new();
        if !call.text.is_empty() || call.tool_calls.is_empty() {
            parts.push(Part::Text {
                content: call.text.clone(),
            });
        }
        parts.extend(tool_calls(call));
        Message {
            role: "assistant",
            parts,
            finish_reason: Some(finish_reason(call)),
        }
    }

    /// The results of the tools `asked` called for, as call `answered` was
    /// given them: a `tool` message each, as the conventions' viewers read
    /// them (Phoenix takes one response a message).
    pub fn results_of(asked: &ModelCallRecord, answered: &ModelCallRecord) -> Vec<Message> {
        let ids: Vec<String> = (asked.tool_calls.iter().enumerate())
            .map(|(index, call)| call_id(call, asked.round, index))
            .collect();
        (answered.tool_results_in.iter().enumerate())
            .map(|(position, result)| Message {
                role: "tool",
                parts: vec![Part::ToolCallResponse {
                    id: (result.call_id.clone())
                        .or_else(|| ids.get(position).cloned())
                        .unwrap_or_default(),
                    response: Value::String(result.content.clone()),
                }],
                finish_reason: None,
            })
            .collect()
    }
}

/// The id a tool call goes by: the model's, else the one the loop gave it.
pub fn call_id(call: &ToolCall, round: u32, index: usize) -> String {
    crate::chat::decide::call_id(call, round, index)
}

fn tool_calls(call: &ModelCallRecord) -> impl Iterator<Item = Part> + '_ {
    (call.tool_calls.iter().enumerate()).map(|(index, tool)| Part::ToolCall {
        id: call_id(tool, call.round, index),
        name: tool.name.clone(),
        arguments: tool.args.clone(),
    })
}

/// The conventions' finish reason for a call: `stop`, `length`,
/// `content_filter`, `tool_call` or `error`, from what the provider said
/// (Gemini's `STOP`, `MAX_TOKENS`, `SAFETY`; OpenAI's `stop`, `length`,
/// `tool_calls`, `content_filter`), else from what the call did. A reason
/// it names none for goes as the provider said it, lowercased.
pub fn finish_reason(call: &ModelCallRecord) -> String {
    if call.error.is_some() {
        return "error".to_string();
    }
    if !call.tool_calls.is_empty() {
        return "tool_call".to_string();
    }
    let said = call
        .summary
        .as_ref()
        .and_then(|s| s.finish_reason.as_deref());
    match said.map(str::to_ascii_lowercase).as_deref() {
        None | Some("stop" | "finish_reason_unspecified") => "stop".to_string(),
        Some("max_tokens" | "length") => "length".to_string(),
        Some("safety" | "recitation" | "blocklist" | "prohibited_content" | "spii")
        | Some("content_filter") => "content_filter".to_string(),
        Some("tool_calls" | "function_call") => "tool_call".to_string(),
        Some(other) => other.to_string(),
    }
}

/// `messages` as the attribute's JSON, within `MAX_CONTENT_BYTES`.
pub fn messages_json(messages: &[Message]) -> String {
    fit(serde_json::to_value(messages).unwrap_or_default())
}

/// The system prompt as `gen_ai.system_instructions`: a list of one text
/// part, within `MAX_CONTENT_BYTES`.
pub fn system_instructions_json(text: &str) -> String {
    let parts = [Part::Text {
        content: text.to_string(),
    }];
    fit(serde_json::to_value(parts).unwrap_or_default())
}

/// A tool call's arguments as JSON text within `MAX_CONTENT_BYTES`: past
/// it, the JSON text cut, as a JSON string.
pub fn arguments_json(arguments: &Value) -> String {
    fit(serde_json::json!({ "arguments": arguments }))
        .strip_prefix("{\"arguments\":")
        .and_then(|rest| rest.strip_suffix('}'))
        .map(str::to_string)
        .unwrap_or_default()
}

/// Plain text within `MAX_CONTENT_BYTES` (a tool's result).
pub fn text(text: &str) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        return text.to_string();
    }
    let keep = floor_boundary(text, MAX_CONTENT_BYTES - TRUNCATED.len());
    format!("{}{TRUNCATED}", &text[..keep])
}

/// The keys whose values are content, and may be cut.
const CONTENT_KEYS: [&str; 3] = ["content", "response", "arguments"];

/// `document` as JSON text, its longest contents cut until it fits: each
/// cut content becomes a string ending in `TRUNCATED`, taking off at least
/// what the text is over by, so the loop ends; a document still too long
/// when every content is cut to the marker is sent as it then is.
fn fit(mut document: Value) -> String {
    loop {
        let text = document.to_string();
        let Some(excess) = text.len().checked_sub(MAX_CONTENT_BYTES).filter(|&e| e > 0) else {
            return text;
        };
        let mut largest = None;
        largest_content(&document, String::new(), &mut largest);
        let Some((size, pointer)) = largest else {
            return text;
        };
        let Some(content) = document.pointer_mut(&pointer) else {
            return text;
        };
        let whole = match content.take() {
            Value::String(text) => text,
            other => other.to_string(),
        };
        if size <= TRUNCATED.len() + 2 {
            // Every content is down to the marker: nothing left to cut.
            *content = Value::String(whole);
            return document.to_string();
        }
        let keep = floor_boundary(&whole, whole.len().saturating_sub(excess + TRUNCATED.len()));
        *content = Value::String(format!("{}{TRUNCATED}", &whole[..keep]));
    }
}

/// The JSON pointer of the longest content under `value`, by its
/// serialised size.
fn largest_content(value: &Value, at: String, largest: &mut Option<(usize, String)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                if CONTENT_KEYS.contains(&key.as_str()) {
                    let size = inner.to_string().len();
                    if largest.as_ref().is_none_or(|(most, _)| size > *most) {
                        *largest = Some((size, pointer));
                    }
                } else {
                    largest_content(inner, pointer, largest);
                }
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                largest_content(inner, format!("{at}/{index}"), largest);
            }
        }
        _ => {}
    }
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts() -> impl Strategy<Value = Vec<String>> {
        // Long runs of characters JSON escapes (quotes, controls) and of
        // multi-byte ones, so that cuts land inside escapes and characters.
        let piece = prop_oneof![
            Just("a".to_string()),
            Just("\"".to_string()),
            Just("\u{1}".to_string()),
            Just("£".to_string()),
            Just("🦀".to_string()),
        ];
        let content = (piece, 0usize..40_000).prop_map(|(piece, n)| piece.repeat(n));
        proptest::collection::vec(content, 1..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the contents, the attribute is JSON of the same shape
        /// within the bound, and each content is whole or a prefix of
        /// itself ending in the marker (the oracle: serde_json's reading).
        #[test]
        fn messages_stay_json_of_their_shape_within_the_bound(texts in texts()) {
            let messages: Vec<Message> = texts.iter().map(|t| Message::text("user", t)).collect();
            let json = messages_json(&messages);
            prop_assert!(json.len() <= MAX_CONTENT_BYTES, "{}", json.len());
            let read: Value = serde_json::from_str(&json).unwrap();
            let read = read.as_array().unwrap();
            prop_assert_eq!(read.len(), texts.len());
            for (message, text) in read.iter().zip(&texts) {
                let content = message["parts"][0]["content"].as_str().unwrap();
                match content.strip_suffix(TRUNCATED) {
                    Some(kept) if content != text => prop_assert!(text.starts_with(kept)),
                    _ => prop_assert_eq!(content, text.as_str()),
                }
            }
        }
    }

    #[test]
    fn finish_reasons_take_the_conventions_words() {
        let call = |reason: Option<&str>, tools: bool, error: bool| {
            let mut call: ModelCallRecord = serde_json::from_value(serde_json::json!({
                "round": 1, "startedMs": 0, "latencyMs": 1, "text": "",
            }))
            .unwrap();
            if let Some(reason) = reason {
                call.summary = Some(crate::provider::CallSummary {
                    finish_reason: Some(reason.to_string()),
                    ..Default::default()
                });
            }
            if tools {
                call.tool_calls.push(ToolCall {
                    id: None,
                    name: "t".to_string(),
                    args: Value::Null,
                });
            }
            if error {
                call.error = Some("boom".to_string());
            }
            finish_reason(&call)
        };
        assert_eq!(call(Some("STOP"), false, false), "stop");
        assert_eq!(call(Some("MAX_TOKENS"), false, false), "length");
        assert_eq!(call(Some("length"), false, false), "length");
        assert_eq!(call(Some("SAFETY"), false, false), "content_filter");
        assert_eq!(call(Some("STOP"), true, false), "tool_call");
        assert_eq!(call(Some("tool_calls"), false, false), "tool_call");
        assert_eq!(call(None, false, true), "error");
        assert_eq!(
            call(Some("MALFORMED_FUNCTION_CALL"), false, false),
            "malformed_function_call"
        );
        assert_eq!(call(None, false, false), "stop");
    }
}
