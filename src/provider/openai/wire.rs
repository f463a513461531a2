//! The Chat Completions request as typed serde structs: the assembled
//! system prompt first, the conversation (an assistant turn replayed from
//! its provider_state exactly as it was sent back), tools as JSON-Schema
//! functions, usage asked for in the stream, the output cap in the field
//! the model table names, `reasoning_effort` only for a model listed with
//! levels, and a judge's reply schema as `response_format` (strict).

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::models::{ModelTable, TokenField};
use crate::provider::{AiMessage, ModelRequest, ToolCall, ToolResultMessage};

/// The name `response_format.json_schema` carries (letters, digits, `_`, `-`).
pub const REPLY_SCHEMA_NAME: &str = "promptlab_reply";

#[derive(Debug, Serialize)]
pub struct ChatCompletionRequest<'a> {
    pub model: String,
    pub messages: Messages<'a>,
    /// The functions; left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
}

/// The system message, borrowed from the request (most of the body), then
/// the conversation: one JSON array.
#[derive(Debug)]
pub struct Messages<'a> {
    system: SystemMessage<'a>,
    conversation: Vec<Value>,
}

/// `{"role": "system", "content": …}`.
#[derive(Debug, Serialize)]
struct SystemMessage<'a> {
    role: &'static str,
    content: &'a str,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut messages = serializer.serialize_seq(Some(1 + self.conversation.len()))?;
        messages.serialize_element(&self.system)?;
        for message in &self.conversation {
            messages.serialize_element(message)?;
        }
        messages.end()
    }
}

#[derive(Debug, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

/// Maps our request to Chat Completions, with `table` saying how the model
/// takes its output cap and its reasoning level.
pub fn build_request<'a>(
    request: &'a ModelRequest,
    table: &ModelTable,
) -> ChatCompletionRequest<'a> {
    let mut conversation = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        push_message(&mut conversation, message);
    }
    let messages = Messages {
        system: SystemMessage {
            role: "system",
            content: &request.system,
        },
        conversation,
    };
    let cap = Some(request.max_output_tokens);
    let (max_completion_tokens, max_tokens) = match table.token_field(&request.model) {
        TokenField::MaxCompletionTokens => (cap, None),
        TokenField::MaxTokens => (None, cap),
    };
    let tools = request.tools.iter().map(|tool| Tool {
        r#type: "function",
        function: Function {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    });
    ChatCompletionRequest {
        model: request.model.clone(),
        messages,
        tools: tools.collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_completion_tokens,
        max_tokens,
        reasoning_effort: table
            .reasoning_effort(&request.model, request.thinking_level)
            .map(|level| level.as_str()),
        response_format: request.response_schema.as_ref().map(|schema| {
            json!({
                "type": "json_schema",
                "json_schema": {
                    "name": REPLY_SCHEMA_NAME,
                    "schema": super::schema::to_strict(schema),
                    "strict": true,
                },
            })
        }),
    }
}

/// A tool as a Chat Completions function, in the loop's order.
#[derive(Debug, Serialize)]
pub struct Tool<'a> {
    r#type: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

fn push_message(messages: &mut Vec<Value>, message: &AiMessage) {
    match message {
        AiMessage::User { text } => messages.push(json!({"role": "user", "content": text})),
        AiMessage::Assistant {
            text,
            tool_calls,
            provider_state,
        } => messages
            .push(replayed(provider_state.as_ref()).unwrap_or_else(|| assistant(text, tool_calls))),
        AiMessage::ToolResults { results } => {
            messages.extend(results.iter().enumerate().map(|(i, r)| tool_result(i, r)));
        }
    }
}

/// The assistant message this adapter recorded, if this provider_state is ours.
fn replayed(state: Option<&Value>) -> Option<Value> {
    let message = state?.get("openai")?.get("message")?;
    message.is_object().then(|| message.clone())
}

/// An assistant turn rebuilt from its text and calls (one recorded by
/// another provider, or a replay without state).
fn assistant(text: &str, calls: &[ToolCall]) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    message.insert("content".into(), content);
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({
                    "id": call_id(call.id.as_deref(), index),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.args.to_string()},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// A tool's result, answering its call by id; a failed one says so as
/// `{"error": …}`, as Gemini's `functionResponse` does.
fn tool_result(index: usize, result: &ToolResultMessage) -> Value {
    let content = if result.ok {
        result.content.clone()
    } else {
        json!({"error": result.content}).to_string()
    };
    json!({
        "role": "tool",
        "tool_call_id": call_id(result.call_id.as_deref(), index),
        "content": content,
    })
}

/// A call's id; one made by a model that gave none (a script, another
/// provider) is named by its position, the same in the call and its result.
fn call_id(id: Option<&str>, index: usize) -> String {
    match id {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("call_{index}"),
    }
}

/// Where this provider_state holds answer text (the message's `content`,
/// when it is a string), as JSON pointers: text a run log may keep once,
/// with the answer.
pub fn plain_text_slots(state: &Value) -> Vec<String> {
    const CONTENT: &str = "/openai/message/content";
    match state.pointer(CONTENT) {
        Some(Value::String(_)) => vec![CONTENT.to_string()],
        _ => Vec::new(),
    }
}

/// The provider_state the adapter attaches to an assistant turn: the
/// message as the server sent it back, to be replayed as is.
pub fn provider_state(message: Value) -> Value {
    Value::Object(Map::from_iter([(
        "openai".to_string(),
        Value::Object(Map::from_iter([("message".to_string(), message)])),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests whose system text needs escaping (quotes, a control
    /// character, a backslash, non-ASCII), with every tool and with none.
    fn sample_requests() -> Vec<ModelRequest> {
        let system: std::sync::Arc<str> =
            "Claim \"CLM-1\":\n\t£1,200 — <b>\u{7}</b> \\ {{x}}".into();
        let all = crate::tools::offered_tools(true).declarations.clone();
        [all, Vec::new().into()]
            .into_iter()
            .map(|tools| ModelRequest {
                model: "gpt-5-mini".into(),
                system: std::sync::Arc::clone(&system),
                messages: vec![AiMessage::User {
                    text: "What is the excess?".into(),
                }],
                tools,
                thinking_level: crate::prompts::thinking::ThinkingLevel::Low,
                max_output_tokens: 100,
                response_schema: None,
            })
            .collect()
    }

    /// The typed request sends the bytes the `json!` values serialised in
    /// place did (commit 7a0ba07): the system message first, then the
    /// conversation, and the tools as functions.
    #[test]
    fn the_typed_request_sends_the_bytes_the_json_values_did() {
        for request in sample_requests() {
            let tools = &request.tools;
            let table = ModelTable::shipped();
            let sent = serde_json::to_string(&build_request(&request, &table)).unwrap();
            let mut in_place: Value = serde_json::from_str(&sent).unwrap();
            in_place["messages"] = json!([
                {"role": "system", "content": request.system},
                {"role": "user", "content": "What is the excess?"},
            ]);
            let functions: Vec<Value> = tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                    }})
                })
                .collect();
            match functions.is_empty() {
                true => assert!(in_place.get("tools").is_none()),
                false => in_place["tools"] = Value::Array(functions),
            }
            assert_eq!(sent, serde_json::to_string(&in_place).unwrap());
        }
    }
}
