//! Gemini's JSON, as typed serde structs: the request we send and the chunks
//! we receive (`GenerateContentRequest` / `GenerateContentResponse`, v1beta).
//! Every response field is optional, as proto3 JSON omits empty values.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::models::{GeminiThinking, ModelTable};
use crate::provider::{AiMessage, ModelRequest, ToolResultMessage};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest<'a> {
    pub contents: Vec<Content>,
    pub system_instruction: SystemInstruction<'a>,
    /// Left out when there are no tools: Gemini refuses a JSON reply
    /// (`responseMimeType`) together with function calling.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    pub generation_config: GenerationConfig,
}

#[derive(Debug, Serialize)]
pub struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Parts stay raw JSON so that replayed model parts go back byte for byte.
    pub parts: Vec<Value>,
}

/// The system prompt, borrowed from the request: it is most of the body,
/// and is only serialised.
#[derive(Debug, Serialize)]
pub struct SystemInstruction<'a> {
    pub parts: [TextPart<'a>; 1],
}

#[derive(Debug, Serialize)]
pub struct TextPart<'a> {
    pub text: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool<'a> {
    pub function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// Plain JSON Schema (`parametersJsonSchema`), as our declarations are.
    pub parameters_json_schema: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    pub function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, Serialize)]
pub struct FunctionCallingConfig {
    pub mode: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    pub max_output_tokens: u32,
    pub thinking_config: ThinkingConfig,
    /// `application/json` when a response schema is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

/// `thinkingLevel` for the models that take it, `thinkingBudget` for those
/// that take a budget (2.5): each answers 400 to the other.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ThinkingConfig {
    #[serde(rename = "thinkingLevel")]
    Level(&'static str),
    #[serde(rename = "thinkingBudget")]
    Budget(u32),
}

/// Maps our request to Gemini's: system prompt, history with the model's own
/// parts replayed from provider_state, tools in the loop's order, thinking
/// as `table` says the model takes it (the level is already fitted).
pub fn build_request<'a>(
    request: &'a ModelRequest,
    table: &ModelTable,
) -> GenerateContentRequest<'a> {
    let has_tools = !request.tools.is_empty();
    let tools = request.tools.iter().map(|tool| FunctionDeclaration {
        name: &tool.name,
        description: &tool.description,
        parameters_json_schema: &tool.parameters,
    });
    GenerateContentRequest {
        contents: request.messages.iter().map(content_for).collect(),
        system_instruction: SystemInstruction {
            parts: [TextPart {
                text: &request.system,
            }],
        },
        tools: match has_tools {
            true => vec![Tool {
                function_declarations: tools.collect(),
            }],
            false => Vec::new(),
        },
        tool_config: has_tools.then_some(ToolConfig {
            function_calling_config: FunctionCallingConfig { mode: "AUTO" },
        }),
        generation_config: GenerationConfig {
            max_output_tokens: request.max_output_tokens,
            thinking_config: match table.control(&request.model, request.thinking_level) {
                GeminiThinking::Level(level) => ThinkingConfig::Level(level.as_str()),
                GeminiThinking::Budget(tokens) => ThinkingConfig::Budget(tokens),
            },
            response_mime_type: request
                .response_schema
                .is_some()
                .then_some("application/json"),
            response_schema: request
                .response_schema
                .as_ref()
                .map(super::schema::to_gemini),
        },
    }
}

fn content_for(message: &AiMessage) -> Content {
    match message {
        AiMessage::User { text } => Content {
            role: Some("user"),
            parts: vec![json!({"text": text})],
        },
        AiMessage::Assistant {
            text,
            tool_calls,
            provider_state,
        } => {
            // Never rebuild a model turn from its text and calls when its own
            // parts exist: they carry the signatures Gemini checks.
            let parts = match replay_parts(provider_state.as_ref()) {
                Some(parts) => parts,
                None => {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"text": text}));
                    }
                    for call in tool_calls {
                        let mut function_call = Map::new();
                        if let Some(id) = &call.id {
                            function_call.insert("id".into(), json!(id));
                        }
                        function_call.insert("name".into(), json!(call.name));
                        function_call.insert("args".into(), call.args.clone());
                        parts.push(json!({"functionCall": function_call}));
                    }
                    parts
                }
            };
            Content {
                role: Some("model"),
                parts,
            }
        }
        AiMessage::ToolResults { results } => Content {
            role: Some("user"),
            parts: results.iter().map(function_response).collect(),
        },
    }
}

/// The model's own parts, if this provider_state is ours.
fn replay_parts(state: Option<&Value>) -> Option<Vec<Value>> {
    let state = state?.get("gemini")?;
    let parts = state.get("parts")?.as_array()?;
    (!parts.is_empty()).then(|| parts.clone())
}

/// Where this provider_state holds answer text as a plain part (`{"text":
/// …}` alone), as JSON pointers: text a run log may keep once, with the
/// answer. A signed part, a thought or a call is opaque and never named.
pub fn plain_text_slots(state: &Value) -> Vec<String> {
    let Some(parts) = state.pointer("/gemini/parts").and_then(Value::as_array) else {
        return Vec::new();
    };
    parts
        .iter()
        .enumerate()
        .filter(|(_, part)| {
            part.as_object().is_some_and(|part| {
                part.len() == 1 && part.get("text").is_some_and(Value::is_string)
            })
        })
        .map(|(index, _)| format!("/gemini/parts/{index}/text"))
        .collect()
}

/// The provider_state the adapter attaches to a model turn.
pub fn provider_state(parts: Vec<Value>) -> Value {
    // Built by moving `parts` in: `json!` would serialize a copy of them,
    // and a call's parts may hold 16 MiB of text (the bound on one call).
    let gemini = Map::from_iter([("parts".to_string(), Value::Array(parts))]);
    Value::Object(Map::from_iter([(
        "gemini".to_string(),
        Value::Object(gemini),
    )]))
}

fn function_response(result: &ToolResultMessage) -> Value {
    let key = if result.ok { "result" } else { "error" };
    let mut response = Map::new();
    if let Some(id) = &result.call_id {
        response.insert("id".into(), json!(id));
    }
    response.insert("name".into(), json!(result.name));
    response.insert("response".into(), json!({ key: result.content }));
    json!({"functionResponse": response})
}

/// One streamed chunk.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse {
    #[serde(default)]
    pub candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub usage_metadata: Option<Value>,
    #[serde(default)]
    pub model_version: Option<String>,
    /// A `data: {"error": …}` event.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    #[serde(default)]
    pub content: Option<CandidateContent>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub finish_message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct CandidateContent {
    /// Kept raw: these become provider_state.
    #[serde(default)]
    pub parts: Option<Vec<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
    #[serde(default)]
    pub block_reason_message: Option<String>,
}

/// What a part means to us. The part itself is kept as received.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartView {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub thought: Option<bool>,
    #[serde(default)]
    pub thought_signature: Option<String>,
    #[serde(default)]
    pub function_call: Option<FunctionCallView>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCallView {
    #[serde(default)]
    pub id: Option<String>,
    /// Absent in Vertex's streamed-arguments parts.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub partial_args: Option<Value>,
    #[serde(default)]
    pub will_continue: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::thinking::ThinkingLevel;
    use crate::tools::ToolDeclaration;

    fn request(tools: Vec<ToolDeclaration>, schema: Option<Value>) -> Value {
        let request = ModelRequest {
            model: "m".into(),
            system: "s".into(),
            messages: vec![],
            tools: tools.into(),
            thinking_level: ThinkingLevel::Low,
            max_output_tokens: 100,
            response_schema: schema,
        };
        serde_json::to_value(build_request(&request, &ModelTable::shipped())).unwrap()
    }

    #[test]
    fn tools_come_with_their_config_and_a_schema_asks_for_json() {
        let tool = ToolDeclaration {
            name: "get_claim_section".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        };
        let chat = request(vec![tool], None);
        assert_eq!(
            chat["tools"][0]["functionDeclarations"][0]["name"],
            "get_claim_section"
        );
        assert_eq!(chat["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
        assert!(chat["generationConfig"].get("responseMimeType").is_none());

        let judge = request(vec![], Some(json!({"type": "OBJECT"})));
        assert!(judge.get("tools").is_none() && judge.get("toolConfig").is_none());
        assert_eq!(
            judge["generationConfig"]["responseMimeType"],
            "application/json"
        );
        assert_eq!(
            judge["generationConfig"]["responseSchema"],
            json!({"type": "OBJECT"})
        );
    }

    #[test]
    fn each_model_gets_the_thinking_control_it_takes() {
        let table = crate::models::ModelTable::embedded();
        let body = |model: &str, level| {
            let request = ModelRequest {
                model: model.into(),
                system: "s".into(),
                messages: vec![],
                tools: vec![].into(),
                thinking_level: level,
                max_output_tokens: 100,
                response_schema: None,
            };
            serde_json::to_value(build_request(&request, &table))
                .unwrap()["generationConfig"]["thinkingConfig"]
                .clone()
        };
        assert_eq!(
            body("gemini-2.5-flash", ThinkingLevel::Minimal),
            json!({"thinkingBudget": 0})
        );
        assert_eq!(
            body("gemini-2.5-pro", ThinkingLevel::High),
            json!({"thinkingBudget": 32768})
        );
        assert_eq!(
            body("gemini-3-pro-preview", ThinkingLevel::High),
            json!({"thinkingLevel": "high"})
        );
        assert_eq!(
            body("gemini-9-ultra", ThinkingLevel::Medium),
            json!({"thinkingLevel": "medium"})
        );
    }
}
