//! The Gemini provider against a real HTTP server on 127.0.0.1: signature
//! replay across a two-round turn, parallel calls, and every fault the
//! adapter must survive.

use crate::support;

use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::{ChatEvent, ThinkingLevel};
use promptlab::provider::gemini::{GeminiConfig, GeminiProvider};
use promptlab::provider::{AiMessage, ModelEvent, ModelProvider, ModelRequest};
use serde_json::{Value, json};
use support::engine::{request_for_id, run_turn};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer, fixture};
use tokio_util::sync::CancellationToken;

fn config(base_url: &str) -> GeminiConfig {
    GeminiConfig {
        endpoint: promptlab::provider::endpoint::Endpoint::new(
            base_url.to_string(),
            Some("test-key".into()),
        ),
        http: promptlab::provider::transport::HttpSettings {
            idle_timeout: Duration::from_secs(5),
            backoff: Duration::from_millis(10),
            ..Default::default()
        },
        ..GeminiConfig::default()
    }
}

fn provider(base_url: &str) -> GeminiProvider {
    GeminiProvider::new(config(base_url)).unwrap()
}

fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

fn first_signature(sse: &str) -> String {
    let start = sse.find("\"thoughtSignature\": \"").unwrap() + "\"thoughtSignature\": \"".len();
    sse[start..start + sse[start..].find('"').unwrap()].to_string()
}

const MISSING_SIGNATURE: &str = r#"{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:get_claim_section` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}"#;

#[tokio::test]
async fn a_two_round_tool_turn_replays_the_signature_byte_for_byte() {
    let round_one = text_of(fixture(
        "fantasy__TestGoogleCommon__gemini-3-pro-preview__tool_streaming.0.sse",
    ))
    .replace(
        r#""name": "weather","args": {"location": "Florence, Italy"}"#,
        r#""name": "get_claim_section","args": {"section": "coverage"}"#,
    );
    let signature = first_signature(&round_one);
    assert!(signature.len() > 500);
    let expected_signature = signature.clone();
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::stream(round_one.clone())),
        Box::new(move |request: &RecordedRequest| {
            let body = request.json();
            let model_part = &body["contents"][1]["parts"][0];
            let response = &body["contents"][2]["parts"][0]["functionResponse"];
            let replayed = body["contents"][1]["role"] == "model"
                && model_part["thoughtSignature"] == Value::String(expected_signature.clone())
                && model_part["functionCall"]
                    == json!({"name": "get_claim_section", "args": {"section": "coverage"}, "id": "89nz05jy"})
                && response["id"] == "89nz05jy"
                && response["name"] == "get_claim_section"
                && response["response"]["result"]
                    .as_str()
                    .is_some_and(|r| r.contains("Confirmed, subject to excess"));
            if replayed {
                Reply::stream(fixture(
                    "fantasy__TestGoogleCommon__gemini-3-pro-preview__tool_streaming.1.sse",
                ))
            } else {
                Reply::status(400, MISSING_SIGNATURE)
            }
        }),
    ]);
    let turn = run_turn(
        provider(&server.base_url),
        request_for_id("CLM-HH-0001", "Is it covered?"),
    )
    .await;
    assert_eq!(
        turn.shape(),
        [
            "activity get_claim_section: Reading the coverage section",
            "tool_result get_claim_section ok=true truncated=false",
            "text",
            "done"
        ],
        "{:?}",
        turn.events
    );
    assert!(turn.text().starts_with("The current weather in Florence"));
    assert_eq!(server.requests().len(), 2);
    let ChatEvent::Done(done) = turn.events.last().unwrap() else {
        panic!()
    };
    assert_eq!(done.usage.input_tokens, Some(65 + 206));
    assert_eq!(
        turn.calls[0]
            .summary
            .as_ref()
            .unwrap()
            .model_version
            .as_deref(),
        Some("gemini-3.1-pro-preview")
    );
}

#[tokio::test]
async fn parallel_calls_replay_in_one_model_turn_with_the_first_signed() {
    let round_one = text_of(fixture(
        "fantasy__TestGoogleCommon__gemini-3-pro-preview__multi_tool_streaming.0.sse",
    ))
    .replace(
        r#""name": "add","args": {"a": 2,"b": 3}"#,
        r#""name": "get_claim_section","args": {"section": "policy"}"#,
    )
    .replace(
        r#""name": "multiply","args": {"b": 3,"a": 2}"#,
        r#""name": "search_claim_file","args": {"query": "excess"}"#,
    );
    let signature = first_signature(&round_one);
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::stream(round_one.clone())),
        Box::new(move |request: &RecordedRequest| {
            let body = request.json();
            let calls = body["contents"][1]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let responses = body["contents"][2]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ok = body["contents"].as_array().map(Vec::len) == Some(3)
                && calls.len() == 2
                && calls[0]["thoughtSignature"] == Value::String(signature.clone())
                && calls[1].get("thoughtSignature").is_none()
                && calls[0]["functionCall"]["name"] == "get_claim_section"
                && calls[1]["functionCall"]["id"] == "k0srpqrc"
                && responses.len() == 2
                && responses[0]["functionResponse"]["id"] == "8hd01vsf"
                && responses[1]["functionResponse"]["id"] == "k0srpqrc"
                && responses[1]["functionResponse"]["name"] == "search_claim_file";
            if ok {
                Reply::stream(fixture(
                    "fantasy__TestGoogleCommon__gemini-3-pro-preview__multi_tool_streaming.1.sse",
                ))
            } else {
                Reply::status(400, MISSING_SIGNATURE)
            }
        }),
    ]);
    let turn = run_turn(
        provider(&server.base_url),
        request_for_id("CLM-HH-0001", "Excess?"),
    )
    .await;
    assert_eq!(
        turn.shape(),
        [
            "activity get_claim_section: Reading the policy section",
            "tool_result get_claim_section ok=true truncated=false",
            "activity search_claim_file: Searching the claim file",
            "tool_result search_claim_file ok=true truncated=false",
            "text",
            "done"
        ],
        "{:?}",
        turn.events
    );
    let ids: Vec<&str> = turn
        .events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Activity { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["8hd01vsf", "k0srpqrc"]);
}

fn simple_request() -> ModelRequest {
    ModelRequest {
        model: "gemini-3.1-flash-lite".into(),
        system: "s".into(),
        messages: vec![AiMessage::User { text: "q".into() }],
        tools: vec![].into(),
        thinking_level: ThinkingLevel::Low,
        max_output_tokens: 8000,
        response_schema: None,
    }
}

/// Streams one call; returns (text, error, retries of the finished call).
async fn call(provider: &GeminiProvider) -> (String, Option<String>, Option<u32>) {
    let mut stream = provider.stream_turn(simple_request(), CancellationToken::new());
    let (mut text, mut error, mut retries) = (String::new(), None, None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::TextDelta(t)) => text.push_str(&t),
            Ok(ModelEvent::Done(summary)) => retries = Some(summary.retries),
            Ok(ModelEvent::ToolCall(_) | ModelEvent::Retry(_)) => {}
            Err(e) => error = Some(e.message),
        }
    }
    (text, error, retries)
}

const OVERLOADED: &str = "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n";

fn success() -> Responder {
    Box::new(|_| Reply::stream(fixture("streaming-success-basic-reply-short.txt")))
}

#[tokio::test]
async fn a_429_with_retry_info_is_retried_then_succeeds() {
    let quota = text_of(fixture("google-429-retry-info.json")).replace("34.4s", "0.05s");
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::status(429, quota.clone())),
        success(),
    ]);
    let (text, error, retries) = call(&provider(&server.base_url)).await;
    assert_eq!(error, None);
    assert_eq!(text, "The capital of Wyoming is **Cheyenne**.\n");
    assert_eq!(retries, Some(1));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_503_with_retry_after_is_retried() {
    let server = TestServer::start(vec![
        Box::new(|_| Reply::Status {
            code: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: OVERLOADED.into(),
        }),
        success(),
    ]);
    let (_, error, retries) = call(&provider(&server.base_url)).await;
    assert_eq!((error, retries), (None, Some(1)));
}

#[tokio::test]
async fn three_503s_exhaust_the_retries_with_a_readable_message() {
    let server = TestServer::start(
        (0..4)
            .map(|_| Box::new(|_: &RecordedRequest| Reply::status(503, OVERLOADED)) as Responder)
            .collect(),
    );
    let (_, error, _) = call(&provider(&server.base_url)).await;
    assert_eq!(
        error.as_deref(),
        Some("Gemini API error 503 UNAVAILABLE: The model is overloaded. Please try again later.")
    );
    assert_eq!(server.requests().len(), 3, "at most 3 tries");
}

#[tokio::test]
async fn a_server_asking_too_long_a_wait_is_not_retried() {
    let quota = text_of(fixture("google-429-retry-info.json"));
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::status(429, quota.clone())),
        success(),
    ]);
    let provider = GeminiProvider::new(GeminiConfig {
        http: promptlab::provider::transport::HttpSettings {
            // A 429's waits are bounded by the rate wait (SPEC §14).
            max_rate_wait: Duration::from_secs(1),
            ..Default::default()
        },
        ..config(&server.base_url)
    })
    .unwrap();
    let (_, error, _) = call(&provider).await;
    let error = error.unwrap();
    assert!(
        error.starts_with(
            "Gemini API error 429 RESOURCE_EXHAUSTED: You exceeded your current quota"
        ),
        "{error}"
    );
    assert!(
        error.contains("asked to wait 34.4 s before retrying"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_bad_key_400_is_not_retried() {
    let body = text_of(fixture("unary-failure-api-key.json"));
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::status(400, body.clone())),
        success(),
    ]);
    let (_, error, _) = call(&provider(&server.base_url)).await;
    assert_eq!(
        error.as_deref(),
        Some(
            "Gemini API error 400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key."
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_connection_reset_mid_stream_ends_the_call_with_an_error() {
    let first_event = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Partial \"}],\"role\": \"model\"},\"index\": 0}]}\r\n\r\n";
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::ResetAfter {
            body: first_event.as_bytes().to_vec(),
        }),
        success(),
    ]);
    let (text, error, _) = call(&provider(&server.base_url)).await;
    assert_eq!(text, "Partial ");
    let error = error.unwrap();
    assert!(
        error.starts_with("the connection to Gemini dropped mid-stream"),
        "{error}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once text was forwarded"
    );
}

#[tokio::test]
async fn a_stream_that_just_stops_is_reported_as_truncated() {
    let first_event =
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Partial\"}]}}]}\r\n\r\n";
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(first_event))]);
    let (_, error, _) = call(&provider(&server.base_url)).await;
    assert!(error.unwrap().contains("no finish reason"));
}

#[tokio::test]
async fn a_malformed_frame_ends_the_call_with_an_error() {
    let server = TestServer::start(vec![Box::new(|_| {
        Reply::stream("data: {\"candidates\": [\r\n\r\n")
    })]);
    let (_, error, _) = call(&provider(&server.base_url)).await;
    let error = error.unwrap();
    assert!(
        error.starts_with("Gemini sent a malformed stream event (EOF while parsing"),
        "{error}"
    );
}

#[tokio::test]
async fn a_stall_past_the_idle_timeout_ends_the_call() {
    let first_event =
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Thinking\"}]}}]}\r\n\r\n";
    let server = TestServer::start(vec![Box::new(move |_| Reply::StallAfter {
        body: first_event.as_bytes().to_vec(),
        hold: Duration::from_secs(30),
    })]);
    let provider = GeminiProvider::new(GeminiConfig {
        http: promptlab::provider::transport::HttpSettings {
            idle_timeout: Duration::from_millis(300),
            ..Default::default()
        },
        ..config(&server.base_url)
    })
    .unwrap();
    let (text, error, _) = call(&provider).await;
    assert_eq!(text, "Thinking");
    assert_eq!(
        error.as_deref(),
        Some("Gemini's stream stalled: nothing arrived for 0.3 s (the idle timeout)")
    );
}

#[tokio::test]
async fn an_in_stream_overload_before_any_output_is_retried() {
    let event = "data: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}}\r\n\r\n";
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(event)), success()]);
    let (text, error, retries) = call(&provider(&server.base_url)).await;
    assert_eq!((error, retries), (None, Some(1)));
    assert!(text.starts_with("The capital"));
}

#[tokio::test]
async fn cancelling_drops_the_request_at_once() {
    let first_event = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Long answer\"}]}}]}\r\n\r\n";
    let server = TestServer::start(vec![Box::new(move |_| Reply::StallAfter {
        body: first_event.as_bytes().to_vec(),
        hold: Duration::from_secs(30),
    })]);
    let provider = provider(&server.base_url);
    let cancel = CancellationToken::new();
    let mut stream = provider.stream_turn(simple_request(), cancel.clone());
    assert!(matches!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta(_)))
    ));
    cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the stream ends without waiting for the server");
    assert!(next.is_none());
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (_, error, _) = call(&provider(&base)).await;
    let error = error.unwrap();
    assert!(
        error.starts_with(&format!("could not reach Gemini at {base}")),
        "{error}"
    );
}

#[tokio::test]
async fn without_a_key_the_provider_is_not_ready() {
    let provider = GeminiProvider::new(GeminiConfig::default()).unwrap();
    assert_eq!(
        provider.check_ready().unwrap_err().message,
        "GEMINI_API_KEY is not configured on the API."
    );
}
