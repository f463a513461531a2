//! The OpenAI-compatible provider against a real HTTP server on 127.0.0.1
//! playing an OpenAI-compatible server: a tool round (the request's system
//! prompt, tools, replayed assistant turn and tool results by id), parallel
//! calls, usage with cached and reasoning tokens, deltas split anywhere (a
//! property), each error status, an error object in the stream, a stream
//! cut before its finish reason or `[DONE]`, an endless stream, a redirect.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::ThinkingLevel;
use promptlab::provider::openai::{OpenAiConfig, OpenAiProvider};
use promptlab::provider::transport::CallLimits;
use promptlab::provider::{
    AiMessage, CallSummary, ErrorKind, ModelEvent, ModelProvider, ModelRequest, ProviderError,
    ToolCall, ToolResultMessage,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer};
use support::openai_streams::{delta, finish, parallel_calls, sse, text_reply, usage};
use tokio_util::sync::CancellationToken;

/// Long enough to be redacted.
const KEY: &str = "sk-test-openai-0123456789abcdef";

fn config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        api_key: Some(KEY.into()),
        base_url: format!("{base_url}/v1"),
        idle_timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        ..OpenAiConfig::default()
    }
}

fn provider(base_url: &str) -> OpenAiProvider {
    OpenAiProvider::new(config(base_url)).unwrap()
}

fn request(messages: Vec<AiMessage>) -> ModelRequest {
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

fn ask() -> Vec<AiMessage> {
    vec![AiMessage::User {
        text: "What is the excess?".into(),
    }]
}

/// Everything one call streamed: text, calls, and its end.
#[derive(Debug)]
struct Outcome {
    text: String,
    calls: Vec<ToolCall>,
    retries: usize,
    end: Result<CallSummary, ProviderError>,
}

async fn call(provider: &OpenAiProvider, request: ModelRequest) -> Outcome {
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

#[tokio::test]
async fn a_tool_round_sends_the_conversation_as_chat_completions_and_replays_the_turn() {
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(parallel_calls())),
        Box::new(|_| Reply::stream(text_reply("The excess is £250."))),
    ]);
    let provider = provider(&server.base_url);
    let first = call(&provider, request(ask())).await;
    let summary = first.end.unwrap();
    assert_eq!(
        first.calls,
        vec![
            ToolCall {
                id: Some("call_a".into()),
                name: "get_claim_section".into(),
                args: json!({"section": "policy"})
            },
            ToolCall {
                id: Some("call_b".into()),
                name: "search_claim_file".into(),
                args: json!({"query": "excess £250"})
            },
        ]
    );
    assert_eq!(
        (
            summary.usage.input_tokens,
            summary.usage.cache_read_tokens,
            summary.usage.output_tokens,
            summary.thinking_tokens
        ),
        (1200, 1024, 80, 64)
    );
    assert_eq!(summary.model_version.as_deref(), Some("gpt-test-2026"));
    let mut messages = ask();
    messages.push(AiMessage::Assistant {
        text: String::new(),
        tool_calls: first.calls.clone(),
        provider_state: summary.provider_state.clone(),
    });
    messages.push(AiMessage::ToolResults {
        results: vec![
            ToolResultMessage {
                call_id: Some("call_a".into()),
                name: "get_claim_section".into(),
                ok: true,
                content: "{\"excess\": \"£250\"}".into(),
            },
            ToolResultMessage {
                call_id: Some("call_b".into()),
                name: "search_claim_file".into(),
                ok: false,
                content: "no match".into(),
            },
        ],
    });
    let second = call(&provider, request(messages)).await;
    assert_eq!(second.text, "The excess is £250.");
    second.end.unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].target, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = requests[1].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 4096);
    assert!(body.get("max_tokens").is_none() && body.get("reasoning_effort").is_none());
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are the claims assistant."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "What is the excess?"})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_claim_section", "arguments": "{\"section\": \"policy\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "search_claim_file", "arguments": "{\"query\": \"excess £250\"}"}}]}),
        "the assistant turn goes back exactly as it was streamed"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"excess\": \"£250\"}"})
    );
    assert_eq!(
        body["messages"][4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"error\":\"no match\"}"})
    );
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), promptlab::tools::all_tools(true).len());
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(
        tools[0]["function"]["name"],
        promptlab::tools::all_tools(true)[0].declaration().name
    );
    assert!(tools[0]["function"]["parameters"].is_object());
}

#[tokio::test]
async fn the_model_table_chooses_max_tokens_and_reasoning_effort() {
    let dir = tempfile::tempdir().unwrap();
    let file = support::write(
        dir.path(),
        "models.yaml",
        "models:\n  old-vllm:\n    source: s\n    date: d\n    maxTokensField: max_tokens\n  o-think:\n    source: s\n    date: d\n    reasoningEffort: [low, high]\n",
    );
    let table = promptlab::models::ModelTable::embedded()
        .with_file(&file)
        .unwrap();
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(text_reply("a"))),
        Box::new(|_| Reply::stream(text_reply("b"))),
    ]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        models: std::sync::Arc::new(table),
        ..config(&server.base_url)
    })
    .unwrap();
    let mut old = request(ask());
    old.model = "old-vllm".into();
    call(&provider, old).await.end.unwrap();
    let mut thinking = request(ask());
    thinking.model = "o-think".into();
    thinking.thinking_level = ThinkingLevel::Medium;
    call(&provider, thinking).await.end.unwrap();
    let requests = server.requests();
    let (old, thinking) = (requests[0].json(), requests[1].json());
    assert_eq!(old["max_tokens"], 4096);
    assert!(old.get("max_completion_tokens").is_none() && old.get("reasoning_effort").is_none());
    assert_eq!(
        thinking["reasoning_effort"], "high",
        "medium fitted to the next level up"
    );
    assert_eq!(thinking["max_completion_tokens"], 4096);
}

/// `body` in chunks at the given cut points.
fn pieces(body: &str, piece: usize) -> Reply {
    Reply::Stream {
        body: body.as_bytes().to_vec(),
        piece,
        pause: Duration::ZERO,
    }
}

/// `text` cut into deltas at `cuts` (character positions).
fn split_at(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.push(0);
    points.push(chars.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// However the text and the arguments are cut into deltas, and however
    /// the bytes are cut into reads, the same answer and calls come out.
    #[test]
    fn deltas_split_anywhere_read_the_same(
        text_cuts in proptest::collection::vec(0usize..64, 0..8),
        arg_cuts in proptest::collection::vec(0usize..64, 0..8),
        piece in 1usize..97,
    ) {
        let text = "Die Selbstbeteiligung beträgt £250 — «Zürich» ✓";
        let args = json!({"query": "excess £250 \"quoted\" \\ ✓"}).to_string();
        let mut chunks = vec![delta(json!({"role": "assistant", "content": ""}))];
        chunks.extend(split_at(text, &text_cuts).into_iter().map(|t| delta(json!({"content": t}))));
        chunks.push(delta(json!({"tool_calls": [{"index": 0, "id": "call_q", "type": "function", "function": {"name": "search_claim_file", "arguments": ""}}]})));
        chunks.extend(split_at(&args, &arg_cuts).into_iter().map(|a| delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}))));
        chunks.push(finish("tool_calls"));
        chunks.push(usage(50, 0, 20, 0));
        let body = sse(&chunks);
        let server = TestServer::start(vec![Box::new(move |_| pieces(&body, piece))]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = runtime.block_on(call(&provider(&server.base_url), request(ask())));
        prop_assert_eq!(outcome.text, text);
        prop_assert_eq!(outcome.calls.len(), 1);
        prop_assert_eq!(&outcome.calls[0].args, &serde_json::from_str::<Value>(&args).unwrap());
        let summary = outcome.end.unwrap();
        prop_assert_eq!(
            &summary.provider_state.unwrap()["openai"]["message"]["tool_calls"][0]["function"]["arguments"],
            &json!(args)
        );
    }
}

fn error_body(message: &str, kind: &str, code: Value) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

#[tokio::test]
async fn client_errors_keep_the_servers_message_and_are_not_retried() {
    for (status, body, expected) in [
        (
            400,
            error_body(
                "Unrecognized request argument supplied: foo",
                "invalid_request_error",
                Value::Null,
            ),
            "OpenAI API error 400 (invalid_request_error): Unrecognized request argument supplied: foo",
        ),
        (
            401,
            error_body(
                &format!("Incorrect API key provided: {KEY}."),
                "invalid_request_error",
                json!("invalid_api_key"),
            ),
            "OpenAI API error 401 (invalid_api_key): Incorrect API key provided: [redacted].",
        ),
        (
            403,
            error_body(
                "Project does not have access to model gpt-test",
                "invalid_request_error",
                json!("model_not_found"),
            ),
            "OpenAI API error 403 (model_not_found): Project does not have access to model gpt-test",
        ),
        (
            404,
            r#"{"error":"model \"gpt-test\" not found, try pulling it first"}"#.to_string(),
            "OpenAI API error 404: model \"gpt-test\" not found, try pulling it first",
        ),
    ] {
        let server =
            TestServer::start(vec![Box::new(move |_| Reply::status(status, body.clone()))]);
        let outcome = call(&provider(&server.base_url), request(ask())).await;
        let error = outcome.end.unwrap_err();
        assert_eq!(
            error.kind,
            ErrorKind::Status {
                code: status,
                retryable: false
            }
        );
        assert_eq!(error.message, expected);
        assert_eq!(server.requests().len(), 1, "{status} is not retried");
    }
}

#[tokio::test]
async fn a_429_with_retry_after_and_a_503_are_retried_then_succeed() {
    let limited = error_body(
        "Rate limit reached for gpt-test",
        "requests",
        json!("rate_limit_exceeded"),
    );
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::Status {
            code: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: limited.clone(),
        }),
        Box::new(|_| Reply::status(503, "upstream connect error")),
        Box::new(|_| Reply::stream(text_reply("ok"))),
    ]);
    let outcome = call(&provider(&server.base_url), request(ask())).await;
    assert_eq!(outcome.text, "ok");
    assert_eq!(outcome.retries, 2);
    assert_eq!(outcome.end.unwrap().retries, 2);
}

#[tokio::test]
async fn a_server_asking_too_long_a_wait_is_not_retried() {
    let server = TestServer::start(vec![Box::new(|_| Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "3600".into())],
        body: error_body(
            "Rate limit reached",
            "requests",
            json!("rate_limit_exceeded"),
        ),
    })]);
    let error = call(&provider(&server.base_url), request(ask()))
        .await
        .end
        .unwrap_err();
    assert!(
        error
            .message
            .starts_with("OpenAI API error 429 (rate_limit_exceeded): Rate limit reached"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_exhaust_the_retries_with_the_servers_message() {
    let body = error_body(
        "The server had an error while processing your request.",
        "server_error",
        Value::Null,
    );
    let responders: Vec<Responder> = (0..3)
        .map(|_| {
            let body = body.clone();
            Box::new(move |_: &_| Reply::status(500, body.clone())) as Responder
        })
        .collect();
    let server = TestServer::start(responders);
    let error = call(&provider(&server.base_url), request(ask()))
        .await
        .end
        .unwrap_err();
    assert_eq!(
        error.kind,
        ErrorKind::Status {
            code: 500,
            retryable: true
        }
    );
    assert!(
        error
            .message
            .contains("OpenAI API error 500 (server_error): The server had an error"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_error_object_in_the_stream_after_text_ends_the_call() {
    let body = format!(
        "data: {}\n\ndata: {}\n\n",
        delta(json!({"content": "The excess"})),
        json!({"error": {"message": format!("context overflow for key {KEY}"), "type": "BadRequestError", "code": 400}})
    );
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let outcome = call(&provider(&server.base_url), request(ask())).await;
    assert_eq!(outcome.text, "The excess");
    let error = outcome.end.unwrap_err();
    assert_eq!(
        error.kind,
        ErrorKind::Status {
            code: 400,
            retryable: false
        }
    );
    assert_eq!(
        error.message,
        "OpenAI API error 400 (BadRequestError): context overflow for key [redacted]"
    );
}

#[tokio::test]
async fn a_stream_without_done_or_finish_reason_is_an_error_keeping_its_usage() {
    let no_done = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\n",
        delta(json!({"content": "Hi"})),
        finish("stop"),
        usage(9, 0, 2, 0)
    );
    let no_reason = format!("data: {}\n\n", delta(json!({"content": "Hi"})));
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::stream(no_done.clone())),
        Box::new(move |_| Reply::stream(no_reason.clone())),
    ]);
    let provider = provider(&server.base_url);
    let error = call(&provider, request(ask())).await.end.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Dropped);
    assert!(error.message.contains("[DONE]"), "{}", error.message);
    assert_eq!(
        error.summary.unwrap().usage.input_tokens,
        9,
        "the reported usage is kept"
    );
    let error = call(&provider, request(ask())).await.end.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Dropped);
    assert!(
        error.message.contains("no finish reason"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn length_ends_the_call_in_an_error_that_keeps_its_usage() {
    let body = sse(&[
        delta(json!({"content": "The ex"})),
        finish("length"),
        usage(300, 0, 16, 0),
    ]);
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let error = call(&provider(&server.base_url), request(ask()))
        .await
        .end
        .unwrap_err();
    assert!(
        error.message.contains("output limit") && error.message.contains("length"),
        "{}",
        error.message
    );
    let summary = error.summary.unwrap();
    assert_eq!(
        (summary.usage.input_tokens, summary.usage.output_tokens),
        (300, 16)
    );
    assert_eq!(summary.finish_reason.as_deref(), Some("length"));
}

#[tokio::test]
async fn an_endless_stream_is_stopped_at_the_text_bound() {
    let chunk = format!("data: {}\n\n", delta(json!({"content": "x".repeat(100)})));
    let server = TestServer::start(vec![Box::new(move |_| Reply::Endless {
        head: Vec::new(),
        chunk: chunk.clone().into_bytes(),
        pause: Duration::ZERO,
    })]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        limits: CallLimits {
            max_text_bytes: 10_000,
            ..CallLimits::default()
        },
        ..config(&server.base_url)
    })
    .unwrap();
    let outcome = call(&provider, request(ask())).await;
    assert_eq!(outcome.end.unwrap_err().kind, ErrorKind::TooLarge);
    assert!(outcome.text.len() <= 10_100);
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_the_key_goes_nowhere_else() {
    let elsewhere = TestServer::start(vec![]);
    let target = format!("{}/steal", elsewhere.base_url);
    let server = TestServer::start(vec![Box::new(move |_| Reply::Status {
        code: 307,
        headers: vec![("Location".into(), target.clone())],
        body: String::new(),
    })]);
    let error = call(&provider(&server.base_url), request(ask()))
        .await
        .end
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Redirected);
    assert_eq!(
        error.message,
        format!(
            "the OpenAI-compatible server at {}/v1 answered 307 to {}/steal: redirects are not followed",
            server.base_url, elsewhere.base_url
        )
    );
    assert!(
        elsewhere.requests().is_empty(),
        "nothing, and no key, reached the other origin"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_needs_no_key_gets_no_authorization_header() {
    let server = TestServer::start(vec![Box::new(|_| Reply::stream(text_reply("hi")))]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        api_key: None,
        ..config(&server.base_url)
    })
    .unwrap();
    assert_eq!(call(&provider, request(ask())).await.text, "hi");
    assert_eq!(server.requests()[0].header("authorization"), None);
}
