//! promptlab's Chat Completions wire format against OpenAI's own SDK
//! (`openai`, PyPI, pinned; `.ci/install-references` puts it in
//! `.ci/venv`), driven by `.ci/references/openai-conformance.py`:
//! - for the same conversations (the chat's system prompt and every tool,
//!   a parallel tool call and both results; a reasoning model's effort; the
//!   judge's reply schema, made strict by the SDK's own rules) a local
//!   server records the request promptlab sends and the one the SDK sends,
//!   and they are equal on the fields the API is strict about (a call's
//!   `arguments` string compared as the JSON it holds);
//! - every test stream (tests/it/support/openai_streams.rs) is read by both
//!   to the same text, tool calls, usage and finish reason.
//!
//! Outside CI, without the SDK installed, each test says it skipped.

use crate::support;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::ThinkingLevel;
use promptlab::models::ModelTable;
use promptlab::provider::openai::{OpenAiConfig, OpenAiProvider};
use promptlab::provider::{
    AiMessage, ModelEvent, ModelProvider, ModelRequest, ToolCall, ToolResultMessage,
};
use serde_json::{Map, Value, json};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer};
use support::openai_streams::{all_streams, text_reply};
use support::references::{python_module, run_reference};
use tokio_util::sync::CancellationToken;

fn sdk() -> Option<(PathBuf, PathBuf)> {
    python_module("openai", "openai", "openai-conformance.py")
}

fn provider(base_url: &str, models: ModelTable) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        endpoint: promptlab::provider::endpoint::Endpoint::new(
            format!("{base_url}/v1"),
            Some("promptlab-fake-key".into()),
        ),
        http: promptlab::provider::transport::HttpSettings {
            max_attempts: 1,
            idle_timeout: Duration::from_secs(20),
            ..Default::default()
        },
        models: Arc::new(models),
        ..OpenAiConfig::default()
    })
    .unwrap()
}

/// One conversation as promptlab's loop holds it, and as an SDK user
/// writes it (`description`, read by the driver).
struct Conversation {
    request: ModelRequest,
    messages: Value,
    reasoning_effort: Option<&'static str>,
    models: ModelTable,
}

fn chat() -> Conversation {
    let tools: Vec<_> = promptlab::tools::all_tools(true)
        .iter()
        .map(|tool| tool.declaration())
        .collect();
    let calls = vec![
        ToolCall {
            id: Some("call_a1".into()),
            name: "get_claim_section".into(),
            args: json!({"section": "policy"}),
        },
        ToolCall {
            id: Some("call_b2".into()),
            name: "search_claim_file".into(),
            args: json!({"query": "excess £250 — Überschwemmung"}),
        },
    ];
    let request = ModelRequest {
        model: "gpt-test".into(),
        system: "You are the claims assistant.\nAnswer from the claim file only: «Zürich» ✓".into(),
        messages: vec![
            AiMessage::User {
                text: "What is the excess on this policy?".into(),
            },
            AiMessage::Assistant {
                text: String::new(),
                tool_calls: calls,
                provider_state: None,
            },
            AiMessage::ToolResults {
                results: vec![
                    ToolResultMessage {
                        call_id: Some("call_a1".into()),
                        name: "get_claim_section".into(),
                        ok: true,
                        content: "{\"excess\": \"£250\"}".into(),
                    },
                    ToolResultMessage {
                        call_id: Some("call_b2".into()),
                        name: "search_claim_file".into(),
                        ok: false,
                        content: "no match".into(),
                    },
                ],
            },
        ],
        tools: tools.into(),
        thinking_level: ThinkingLevel::Low,
        max_output_tokens: 8192,
        response_schema: None,
    };
    let messages = json!([
        {"role": "user", "content": "What is the excess on this policy?"},
        {"role": "assistant", "content": null, "calls": [
            {"id": "call_a1", "name": "get_claim_section", "args": {"section": "policy"}},
            {"id": "call_b2", "name": "search_claim_file", "args": {"query": "excess £250 — Überschwemmung"}}]},
        {"role": "tool", "id": "call_a1", "content": "{\"excess\": \"£250\"}"},
        {"role": "tool", "id": "call_b2", "content": "{\"error\":\"no match\"}"}
    ]);
    Conversation {
        request,
        messages,
        reasoning_effort: None,
        models: ModelTable::embedded(),
    }
}

/// A reasoning model (listed with its levels): medium is sent as high.
fn reasoning() -> Conversation {
    let dir = tempfile::tempdir().unwrap();
    let file = support::write(
        dir.path(),
        "models.yaml",
        "models:\n  gpt-test:\n    source: s\n    date: d\n    reasoningEffort: [low, high]\n",
    );
    let mut conversation = chat();
    conversation.request.thinking_level = ThinkingLevel::Medium;
    conversation.reasoning_effort = Some("high");
    conversation.models = ModelTable::embedded().with_file(&file).unwrap();
    conversation
}

fn judge() -> Conversation {
    Conversation {
        request: ModelRequest {
            model: "gpt-test".into(),
            system: "You grade answers.".into(),
            messages: vec![AiMessage::User {
                text: "Criterion: names the excess.".into(),
            }],
            tools: Vec::new().into(),
            thinking_level: ThinkingLevel::Low,
            max_output_tokens: 2048,
            response_schema: Some(promptlab::judge::reply::rubric_schema()),
        },
        messages: json!([{"role": "user", "content": "Criterion: names the excess."}]),
        reasoning_effort: None,
        models: ModelTable::embedded(),
    }
}

fn description(conversation: &Conversation) -> Value {
    let request = &conversation.request;
    json!({
        "model": request.model,
        "system": request.system,
        "tools": request.tools,
        "messages": conversation.messages,
        "maxCompletionTokens": request.max_output_tokens,
        "reasoningEffort": conversation.reasoning_effort,
        "responseSchema": request.response_schema,
    })
}

/// The fields of a Chat Completions request the API is strict about; a
/// call's `arguments` string as the JSON it holds.
fn strict_fields(request: &RecordedRequest) -> Value {
    let body = request.json();
    let mut fields = Map::new();
    for key in [
        "model",
        "tools",
        "stream",
        "stream_options",
        "max_completion_tokens",
        "max_tokens",
        "reasoning_effort",
        "response_format",
    ] {
        fields.insert(key.into(), body.get(key).cloned().unwrap_or(Value::Null));
    }
    let mut messages = body["messages"].clone();
    for message in messages.as_array_mut().into_iter().flatten() {
        for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
            let arguments = call["function"]["arguments"].as_str().unwrap_or("");
            call["function"]["arguments"] =
                serde_json::from_str(arguments).unwrap_or(json!(arguments));
        }
    }
    fields.insert("messages".into(), messages);
    fields.insert("path".into(), json!(request.target));
    fields.insert(
        "bearer".into(),
        json!(
            request
                .header("authorization")
                .map(|v| v.starts_with("Bearer "))
        ),
    );
    Value::Object(fields)
}

async fn same_request(conversation: Conversation) {
    let Some((python, script)) = sdk() else {
        return;
    };
    let reply = || Box::new(|_: &RecordedRequest| Reply::stream(text_reply("ok"))) as Responder;
    let server = TestServer::start(vec![reply(), reply()]);
    let mut stream = provider(&server.base_url, conversation.models.clone())
        .stream_turn(conversation.request.clone(), CancellationToken::new());
    while let Some(item) = stream.next().await {
        item.expect("promptlab's call succeeds");
    }
    let body = serde_json::to_vec(&description(&conversation)).unwrap();
    let base = format!("{}/v1", server.base_url);
    let said = run_reference(
        &python,
        &[script.as_os_str(), OsStr::new("request"), OsStr::new(&base)],
        &body,
    );
    assert!(said.ok, "the SDK failed: {}", said.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request from each");
    let (ours, theirs) = (strict_fields(&requests[0]), strict_fields(&requests[1]));
    assert_eq!(
        ours,
        theirs,
        "promptlab's request (left) differs from openai's (right):\n{}\n{}",
        serde_json::to_string_pretty(&ours).unwrap(),
        serde_json::to_string_pretty(&theirs).unwrap()
    );
}

#[tokio::test]
async fn the_chat_request_with_a_tool_round_matches_the_sdks() {
    same_request(chat()).await;
}

#[tokio::test]
async fn a_reasoning_models_effort_is_sent_as_the_sdk_sends_it() {
    same_request(reasoning()).await;
}

#[tokio::test]
async fn the_judge_request_and_its_strict_schema_match_the_sdks() {
    same_request(judge()).await;
}

/// What promptlab read from one stream, in the driver's terms.
async fn promptlab_reads(body: String) -> Value {
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let request = judge().request;
    let mut stream = provider(&server.base_url, ModelTable::embedded())
        .stream_turn(request, CancellationToken::new());
    let (mut text, mut calls, mut summary, mut error) = (String::new(), Vec::new(), None, None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::TextDelta(delta)) => text.push_str(&delta),
            Ok(ModelEvent::ToolCall(call)) => {
                calls.push(json!({"id": call.id, "name": call.name, "args": call.args}))
            }
            Ok(ModelEvent::Done(done)) => summary = Some(done),
            Ok(ModelEvent::Retry(_)) => {}
            Err(failure) => {
                summary = failure.summary.map(|s| *s);
                error = Some(failure.message);
            }
        }
    }
    // No usage at all reads as the SDK's `None`; a count left out as null.
    let usage = summary
        .as_ref()
        .filter(|s| !s.usage.is_unreported())
        .map(|s| {
            json!({"prompt": s.usage.input_tokens, "cached": s.usage.cache_read_tokens,
            "completion": s.usage.output_tokens, "reasoning": s.thinking_tokens})
        });
    json!({
        "text": text,
        "calls": calls,
        "usage": usage,
        "finishReason": summary.and_then(|s| s.finish_reason),
        "error": error.is_some(),
    })
}

#[tokio::test]
async fn every_test_stream_reads_the_same_as_with_the_sdk() {
    let Some((python, script)) = sdk() else {
        return;
    };
    let streams = all_streams();
    let responders: Vec<Responder> = streams
        .iter()
        .map(|(_, body)| {
            let body = body.clone();
            Box::new(move |_: &RecordedRequest| Reply::stream(body.clone())) as Responder
        })
        .collect();
    let server = TestServer::start(responders);
    let base = format!("{}/v1", server.base_url);
    let count = streams.len().to_string();
    let said = run_reference(
        &python,
        &[
            script.as_os_str(),
            OsStr::new("read"),
            OsStr::new(&base),
            OsStr::new(&count),
        ],
        b"",
    );
    assert!(said.ok, "the SDK failed: {}", said.stderr);
    let lines: Vec<&str> = said.stdout.lines().collect();
    assert_eq!(lines.len(), streams.len(), "{}", said.stdout);
    for ((name, body), line) in streams.into_iter().zip(lines) {
        let mut theirs: Value = serde_json::from_str(line).unwrap();
        let mut ours = promptlab_reads(body).await;
        // The SDK leaves a `length` stop to its caller; promptlab ends the
        // turn in an error that keeps the usage.
        if theirs["finishReason"] == "length" {
            assert_eq!(ours["error"], true, "{name}: {ours}");
            ours["error"] = json!(false);
        }
        theirs["error"] = json!(!theirs["error"].is_null());
        if theirs["error"] == true {
            // Both fail; what each had read before is not compared.
            assert_eq!(
                ours["error"], true,
                "{name}: promptlab read a failing stream whole: {ours}"
            );
            continue;
        }
        assert_eq!(
            ours, theirs,
            "{name}: promptlab (left) and openai (right) read it differently"
        );
    }
}
