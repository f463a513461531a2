//! Chat Completions streams as an OpenAI-compatible server sends them, for
//! tests/it/openai_provider.rs and tests/it/openai_conformance.rs (where OpenAI's
//! SDK reads the same ones): chunks with deltas, a finish reason, the usage
//! chunk `include_usage` asks for, then `data: [DONE]`; and a provider
//! pointed at a test server, with one call's whole outcome.

use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::ThinkingLevel;
use promptlab::provider::openai::{OpenAiConfig, OpenAiProvider};
use promptlab::provider::{
    AiMessage, CallSummary, ModelEvent, ModelProvider, ModelRequest, ProviderError, ToolCall,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One SSE event per chunk, then `[DONE]`.
pub fn sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

pub fn delta(delta: Value) -> Value {
    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1764547200, "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

pub fn finish(reason: &str) -> Value {
    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1764547200, "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

pub fn usage(prompt: u64, cached: u64, completion: u64, reasoning: u64) -> Value {
    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1764547200, "model": "gpt-test-2026",
        "choices": [], "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning}}})
}

pub fn text_reply(text: &str) -> String {
    sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": text})),
        finish("stop"),
        usage(10, 0, 3, 0),
    ])
}

/// Two calls whose arguments arrive interleaved, by index.
pub fn parallel_calls() -> String {
    sse(&[
        delta(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_claim_section", "arguments": ""}}]})),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"section\": \"pol"}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "search_claim_file", "arguments": "{\"query\""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "icy\"}"}}]})),
        delta(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \"excess £250\"}"}}]}),
        ),
        finish("tool_calls"),
        usage(1200, 1024, 80, 64),
    ])
}

/// Every stream both readers are put through, by name.
pub fn all_streams() -> Vec<(&'static str, String)> {
    let words = ["The ", "excess ", "is ", "£250", " — «Zürich» ✓"];
    let mut chunked = vec![delta(json!({"role": "assistant", "content": ""}))];
    chunked.extend(words.iter().map(|w| delta(json!({"content": w}))));
    chunked.push(finish("stop"));
    chunked.push(usage(5210, 4096, 412, 300));
    vec![
        ("text", text_reply("The excess is £250.")),
        (
            "chunked text with cached and reasoning tokens",
            sse(&chunked),
        ),
        ("parallel calls", parallel_calls()),
        (
            "text then a call",
            sse(&[
                delta(json!({"role": "assistant", "content": "Let me look."})),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_z", "type": "function", "function": {"name": "get_claim_section", "arguments": "{}"}}]}),
                ),
                finish("tool_calls"),
                usage(40, 0, 12, 0),
            ]),
        ),
        (
            "length",
            sse(&[
                delta(json!({"content": "The ex"})),
                finish("length"),
                usage(300, 0, 16, 0),
            ]),
        ),
        // A server need not send usage (llama-cpp-python's never does), nor
        // its details: what it did not send is unknown, not 0 (#62).
        (
            "no usage chunk",
            sse(&[
                delta(json!({"content": "The excess is £250."})),
                finish("stop"),
            ]),
        ),
        (
            "usage without its details",
            sse(&[
                delta(json!({"content": "The excess is £250."})),
                finish("stop"),
                json!({"id": "c1", "object": "chat.completion.chunk", "created": 1764547200, "model": "gpt-test-2026",
                    "choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}}),
            ]),
        ),
        (
            "an error in the stream",
            format!(
                "data: {}\n\ndata: {}\n\n",
                delta(json!({"content": "The"})),
                json!({"error": {"message": "The server had an error", "type": "server_error", "code": null}})
            ),
        ),
    ]
}

/// Long enough to be redacted.
pub const KEY: &str = "sk-test-openai-0123456789abcdef";

pub fn config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        endpoint: promptlab::provider::endpoint::Endpoint::new(
            format!("{base_url}/v1"),
            Some(KEY.into()),
        ),
        http: promptlab::provider::transport::HttpSettings {
            idle_timeout: Duration::from_secs(5),
            backoff: Duration::from_millis(10),
            ..Default::default()
        },
        ..OpenAiConfig::default()
    }
}

pub fn provider(base_url: &str) -> OpenAiProvider {
    OpenAiProvider::new(config(base_url)).unwrap()
}

pub fn request(messages: Vec<AiMessage>) -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        system: "You are the claims assistant.".into(),
        messages,
        tools: promptlab::tools::all_tools(true)
            .iter()
            .map(|tool| tool.declaration())
            .collect(),
        thinking_level: ThinkingLevel::Low,
        max_output_tokens: 4096,
        response_schema: None,
    }
}

pub fn ask() -> Vec<AiMessage> {
    vec![AiMessage::User {
        text: "What is the excess?".into(),
    }]
}

/// Everything one call streamed: text, calls, and its end.
#[derive(Debug)]
pub struct Outcome {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub retries: usize,
    pub end: Result<CallSummary, ProviderError>,
}

pub async fn call(provider: &OpenAiProvider, request: ModelRequest) -> Outcome {
    let mut stream = provider.stream_turn(request, CancellationToken::new());
    let (mut text, mut calls, mut retries) = (String::new(), Vec::new(), 0);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::TextDelta(delta)) => text.push_str(&delta),
            Ok(ModelEvent::ToolCall(call)) => calls.push(call),
            Ok(ModelEvent::Retry(_)) => retries += 1,
            Ok(ModelEvent::Done(summary)) => {
                return Outcome {
                    text,
                    calls,
                    retries,
                    end: Ok(summary),
                };
            }
            Err(error) => {
                return Outcome {
                    text,
                    calls,
                    retries,
                    end: Err(error),
                };
            }
        }
    }
    panic!("the stream ended without Done or an error");
}
