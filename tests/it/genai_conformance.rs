//! promptlab's Gemini wire format against Google's own SDK (`google-genai`,
//! PyPI, pinned; `.ci/install-references` puts it in `.ci/venv`), driven by
//! `.ci/references/genai-conformance.py`:
//! - for the same conversations (the chat's system instruction and every
//!   tool declaration, a signed parallel function call and its results; a
//!   2.5 model's thinking budget; the judge's reply schema) a local server
//!   records the request promptlab sends and the one the SDK sends, and
//!   they are equal on the fields the API is strict about, allowing only
//!   what the API reads as the same (camelCase or snake_case keys, the
//!   base64 alphabet of signatures, enum letter case, a role on the system
//!   instruction);
//! - every recorded response in `tests/data/gemini/` is read by both to the
//!   same text, calls, signatures, usage and finish reason.
//!
//! Outside CI, without the SDK installed, each test says it skipped.

use crate::support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::ThinkingLevel;
use promptlab::models::ModelTable;
use promptlab::provider::gemini::{GeminiConfig, GeminiProvider};
use promptlab::provider::{
    AiMessage, ModelEvent, ModelProvider, ModelRequest, ToolCall, ToolResultMessage,
};
use serde_json::{Value, json};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer, fixture};
use support::references::{python_module, run_reference};
use support::wire_compare::{signature_hex, strict_fields};
use tokio_util::sync::CancellationToken;

/// A real signature: the first in a recorded call (vercel/ai's
/// google-tool-call fixture).
fn recorded_signature() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gemini/google-tool-call.chunks.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let chunk: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    chunk["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
        .as_str()
        .unwrap()
        .to_string()
}

fn sdk() -> Option<(PathBuf, PathBuf)> {
    python_module("google.genai", "google-genai", "genai-conformance.py")
}

fn provider(base_url: &str) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig {
        endpoint: promptlab::provider::endpoint::Endpoint::new(
            base_url.to_string(),
            Some("promptlab-fake-key".into()),
        ),
        http: promptlab::provider::transport::HttpSettings {
            max_attempts: 1,
            idle_timeout: Duration::from_secs(20),
            ..Default::default()
        },
        ..GeminiConfig::default()
    })
    .unwrap()
}

fn quiet_success() -> Responder {
    Box::new(|_| Reply::stream(fixture("streaming-success-basic-reply-short.txt")))
}

/// One conversation, as promptlab's loop holds it and as the SDK is given it.
struct Conversation {
    request: ModelRequest,
    /// The thinking the model must get (models/gemini.yaml, by hand).
    thinking: Value,
    contents: Value,
}

/// The chat: the system instruction, every tool, a signed parallel call
/// (only the first part signed, as Gemini does) and both results.
fn chat(model: &str, asked: ThinkingLevel, thinking: Value) -> Conversation {
    let tools: Vec<_> = promptlab::tools::all_tools(true)
        .iter()
        .map(|tool| tool.declaration())
        .collect();
    let first = json!({"functionCall": {"name": "get_claim_section", "args": {"section": "policy"}, "id": "call-a1"}, "thoughtSignature": recorded_signature()});
    let second = json!({"functionCall": {"name": "search_claim_file", "args": {"query": "excess £250 — Überschwemmung"}, "id": "call-b2"}});
    let request = ModelRequest {
        model: model.to_string(),
        system: "You are the claims assistant.\nAnswer from the claim file only: «Zürich» ✓".into(),
        messages: vec![
            AiMessage::User {
                text: "What is the excess on this policy?".into(),
            },
            AiMessage::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: Some("call-a1".into()),
                        name: "get_claim_section".into(),
                        args: json!({"section": "policy"}),
                    },
                    ToolCall {
                        id: Some("call-b2".into()),
                        name: "search_claim_file".into(),
                        args: json!({"query": "excess £250 — Überschwemmung"}),
                    },
                ],
                provider_state: Some(json!({"gemini": {"parts": [first, second]}})),
            },
            AiMessage::ToolResults {
                results: vec![
                    ToolResultMessage {
                        call_id: Some("call-a1".into()),
                        name: "get_claim_section".into(),
                        ok: true,
                        content: "{\"excess\": \"£250\"}".into(),
                    },
                    ToolResultMessage {
                        call_id: Some("call-b2".into()),
                        name: "search_claim_file".into(),
                        ok: false,
                        content: "no match".into(),
                    },
                ],
            },
        ],
        tools: tools.into(),
        thinking_level: ModelTable::embedded().fit(model, asked).sent,
        max_output_tokens: 8192,
        response_schema: None,
    };
    let contents = json!([
        {"role": "user", "parts": [{"text": "What is the excess on this policy?"}]},
        {"role": "model", "parts": [first, second]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_claim_section", "id": "call-a1", "response": {"result": "{\"excess\": \"£250\"}"}}},
            {"functionResponse": {"name": "search_claim_file", "id": "call-b2", "response": {"error": "no match"}}}
        ]}
    ]);
    Conversation {
        request,
        thinking,
        contents,
    }
}

/// The judge: one question, no tools, a JSON reply in the rubric schema.
fn judge() -> Conversation {
    let request = ModelRequest {
        model: "gemini-3.1-pro-preview".into(),
        system: "You grade answers.".into(),
        messages: vec![AiMessage::User {
            text: "Criterion: names the excess.".into(),
        }],
        tools: Vec::new().into(),
        thinking_level: ThinkingLevel::Low,
        max_output_tokens: 2048,
        response_schema: Some(promptlab::judge::reply::rubric_schema()),
    };
    Conversation {
        request,
        thinking: json!({"level": "low"}),
        contents: json!([{"role": "user", "parts": [{"text": "Criterion: names the excess."}]}]),
    }
}

fn description(conversation: &Conversation) -> Value {
    let request = &conversation.request;
    json!({
        "model": request.model,
        "system": request.system,
        "tools": request.tools,
        "contents": conversation.contents,
        "thinking": conversation.thinking,
        "maxOutputTokens": request.max_output_tokens,
        "responseSchema": request.response_schema,
    })
}

/// The request promptlab sends and the one the SDK sends.
async fn both_requests(
    conversation: &Conversation,
    python: &Path,
    script: &Path,
) -> (RecordedRequest, RecordedRequest) {
    let server = TestServer::start(vec![quiet_success(), quiet_success()]);
    let mut stream = provider(&server.base_url)
        .stream_turn(conversation.request.clone(), CancellationToken::new());
    while let Some(item) = stream.next().await {
        item.expect("promptlab's call succeeds");
    }
    let body = serde_json::to_vec(&description(conversation)).unwrap();
    let said = run_reference(
        python,
        &[
            script.as_os_str(),
            OsStr::new("request"),
            OsStr::new(&server.base_url),
        ],
        &body,
    );
    assert!(said.ok, "the SDK failed: {}", said.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request from each");
    (requests[0].clone(), requests[1].clone())
}

async fn same_request(conversation: Conversation) {
    let Some((python, script)) = sdk() else {
        return;
    };
    let (ours, theirs) = both_requests(&conversation, &python, &script).await;
    let (ours, theirs) = (strict_fields(&ours), strict_fields(&theirs));
    assert_eq!(
        ours,
        theirs,
        "promptlab's request (left) differs from google-genai's (right):\n{}\n{}",
        serde_json::to_string_pretty(&ours).unwrap(),
        serde_json::to_string_pretty(&theirs).unwrap()
    );
}

#[tokio::test]
async fn the_chat_request_matches_the_sdks_with_medium_sent_as_high_to_3_pro() {
    same_request(chat(
        "gemini-3-pro-preview",
        ThinkingLevel::Medium,
        json!({"level": "high"}),
    ))
    .await;
}

#[tokio::test]
async fn a_2_5_model_gets_a_thinking_budget_as_the_sdk_sends_it() {
    same_request(chat(
        "gemini-2.5-pro",
        ThinkingLevel::Minimal,
        json!({"budget": 128}),
    ))
    .await;
    same_request(chat(
        "gemini-2.5-flash",
        ThinkingLevel::Medium,
        json!({"budget": 8192}),
    ))
    .await;
}

#[tokio::test]
async fn the_judge_request_matches_the_sdks() {
    same_request(judge()).await;
}

/// Every recorded stream (not the unary error bodies).
fn stream_fixtures() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gemini");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".sse") || name.ends_with(".txt"))
        .filter(|name| name != "SOURCES.md")
        .collect();
    names.sort();
    names
}

/// What promptlab read from one response, in the SDK driver's terms.
async fn promptlab_reads(name: &str) -> Value {
    let body = fixture(name);
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let request = judge().request;
    let mut stream = provider(&server.base_url).stream_turn(request, CancellationToken::new());
    let (mut text, mut calls, mut summary, mut error) = (String::new(), Vec::new(), None, None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::TextDelta(delta)) => text.push_str(&delta),
            Ok(ModelEvent::ToolCall(call)) => {
                calls.push(json!({"name": call.name, "args": call.args, "id": call.id}))
            }
            Ok(ModelEvent::Done(done)) => summary = Some(done),
            Ok(ModelEvent::Retry(_)) => {}
            Err(failure) => {
                summary = failure.summary.map(|s| *s);
                error = Some(failure.message);
            }
        }
    }
    let signatures: Vec<String> = summary
        .as_ref()
        .and_then(|s| s.provider_state.as_ref())
        .and_then(|state| state["gemini"]["parts"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|part| part["thoughtSignature"].as_str().map(signature_hex))
        .collect();
    // A stop without usage keeps no summary (its cost is unknown, not 0):
    // its reason is in the message.
    let stated_reason = error.as_deref().and_then(|message| {
        let (_, rest) = message.split_once("(finish reason ")?;
        Some(rest.split(')').next()?.to_string())
    });
    // No usage reported is unknown (null), never 0, on both sides.
    let usage = summary.as_ref().map_or(json!([null, null, null, 0]), |s| {
        json!([
            s.usage.input_tokens,
            s.usage.output_tokens,
            s.usage.cache_read_tokens,
            s.thinking_tokens
        ])
    });
    json!({
        "text": text,
        "calls": calls,
        "signatures": signatures,
        "usage": usage,
        "finishReason": summary.and_then(|s| s.finish_reason).or(stated_reason),
        "error": error.is_some(),
    })
}

/// What the SDK read, in the same terms.
fn sdk_read(seen: &Value) -> Value {
    let usage = &seen["usage"];
    let count = |key: &str| usage[key].as_u64().unwrap_or(0);
    let signatures: Vec<String> = seen["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| signature_hex(s.as_str().unwrap()))
        .collect();
    json!({
        "text": seen["text"],
        "calls": seen["calls"],
        "signatures": signatures,
        // A stream with no usage metadata reported none: unknown, not 0;
        // within it, a count left out is 0 (the SDK's None, proto3's default).
        "usage": if usage.is_null() {
            json!([null, null, null, 0])
        } else {
            json!([count("prompt"), count("candidates") + count("thoughts"), count("cached"), count("thoughts")])
        },
        "finishReason": seen["finishReason"],
        "error": !seen["error"].is_null(),
    })
}

/// The SDK raises only on an error event; promptlab also ends a turn in an
/// error on an abnormal stop (SAFETY, MAX_TOKENS, a blocked prompt, no
/// finish reason), which the SDK leaves to its caller to notice.
fn stops_early(read: &Value) -> bool {
    read["finishReason"] != "STOP"
}

#[tokio::test]
async fn every_recorded_response_reads_the_same_as_with_the_sdk() {
    let Some((python, script)) = sdk() else {
        return;
    };
    let names = stream_fixtures();
    assert!(names.len() >= 20, "the fixtures are there: {names:?}");
    let responders: Vec<Responder> = names
        .iter()
        .map(|name| {
            let body = fixture(name);
            Box::new(move |_: &RecordedRequest| Reply::stream(body.clone())) as Responder
        })
        .collect();
    let server = TestServer::start(responders);
    let count = names.len().to_string();
    let said = run_reference(
        &python,
        &[
            script.as_os_str(),
            OsStr::new("read"),
            OsStr::new(&server.base_url),
            OsStr::new(&count),
        ],
        b"",
    );
    assert!(said.ok, "the SDK failed: {}", said.stderr);
    let lines: Vec<&str> = said.stdout.lines().collect();
    assert_eq!(lines.len(), names.len(), "{}", said.stdout);
    for (name, line) in names.iter().zip(lines) {
        let theirs = sdk_read(&serde_json::from_str(line).unwrap());
        let mut ours = promptlab_reads(name).await;
        let mut theirs = theirs;
        match (ours["error"] == true, theirs["error"] == true) {
            (true, false) => {
                assert!(
                    stops_early(&ours),
                    "{name}: promptlab failed a stream the SDK read whole: {ours}"
                );
                ours["error"] = json!(false);
            }
            // An error event mid-stream: both fail; the SDK's last finish
            // reason before it raised is no ending.
            (true, true) => theirs["finishReason"] = ours["finishReason"].clone(),
            _ => {}
        }
        assert_eq!(
            ours, theirs,
            "{name}: promptlab (left) and google-genai (right) read it differently"
        );
    }
}
