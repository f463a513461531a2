//! The shared transport's retry policy, seen from both of its protocols
//! against real servers on 127.0.0.1: a refused connection is retried for
//! Gemini and for the worker alike (nothing reached the server), and every
//! retry is announced before its wait — as a `ModelEvent::Retry` from the
//! Gemini provider, a `TurnOutput::Notice` from a turn — with the status,
//! the try about to be made and the wait.

use crate::support;

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::{ChatEvent, ThinkingLevel, TurnOutput};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::gemini::{GeminiConfig, GeminiProvider};
use promptlab::provider::{AiMessage, ModelEvent, ModelProvider, ModelRequest, RetryNotice};
use promptlab::worker::{Endpoint, WorkerClient, WorkerConfig};
use support::http_server::{Reply, Responder, TestServer, fixture};
use tokio_util::sync::CancellationToken;

const OVERLOADED: &str =
    r#"{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}"#;
const DONE: &str = r#"{"type":"done","model":"m","usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":0},"turnId":"t","prompts":{"fingerprint":"default","overridden":[]}}"#;

/// An address nothing listens at: a port that was just free.
fn refused_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A server on `address`, once the client has been refused there. The
/// client waits at least half its backoff after announcing the retry, and
/// does not start waiting before the announcement has been read — so the
/// server is up before the retry, with no race.
fn serve_at(address: SocketAddr, responders: Vec<Responder>) -> TestServer {
    let listener = TcpListener::bind(address)
        .unwrap_or_else(|error| panic!("could not bind {address} again: {error}"));
    TestServer::on(listener, responders)
}

fn gemini(base_url: &str) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig {
        endpoint: promptlab::provider::endpoint::Endpoint::new(
            base_url.to_string(),
            Some("test-key-0123456789".into()),
        ),
        http: promptlab::provider::transport::HttpSettings {
            idle_timeout: Duration::from_secs(5),
            backoff: Duration::from_millis(200),
            ..Default::default()
        },
        ..GeminiConfig::default()
    })
    .unwrap()
}

fn model_request() -> ModelRequest {
    ModelRequest {
        model: "gemini-2.5-flash".into(),
        system: "s".into(),
        messages: vec![AiMessage::User { text: "q".into() }],
        tools: vec![].into(),
        thinking_level: ThinkingLevel::Low,
        max_output_tokens: 800,
        response_schema: None,
    }
}

fn success() -> Responder {
    Box::new(|_| Reply::stream(fixture("streaming-success-basic-reply-short.txt")))
}

fn worker(base_url: &str) -> WorkerClient {
    let mut config = WorkerConfig::new(Endpoint::parse(base_url).unwrap());
    config.http.backoff = Duration::from_millis(200);
    config.http.idle_timeout = Duration::from_secs(5);
    WorkerClient::new(config, PromptRegistry::embedded()).unwrap()
}

fn worker_request() -> promptlab::chat::ChatRequest {
    support::engine::request_for_id("CLM-HH-0001", "What is the excess?")
}

fn done_stream() -> Responder {
    Box::new(|_| Reply::stream(format!("data: {DONE}\n\n")))
}

#[tokio::test]
async fn gemini_retries_a_refused_connection_and_says_so() {
    let address = refused_address();
    let provider = gemini(&format!("http://{address}"));
    let mut stream = provider.stream_turn(model_request(), CancellationToken::new());
    let notice = match stream.next().await {
        Some(Ok(ModelEvent::Retry(notice))) => notice,
        other => panic!("expected a retry notice for the refused connection, got {other:?}"),
    };
    assert_eq!((notice.status, notice.attempt, notice.of), (None, 2, 3));
    assert!(
        notice
            .to_string()
            .starts_with("could not reach Gemini; retrying (2 of 3) in "),
        "{notice}"
    );
    assert!(
        notice
            .error
            .starts_with(&format!("could not reach Gemini at http://{address}"))
    );
    let server = serve_at(address, vec![success()]);
    let (mut text, mut retries) = (String::new(), None);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ModelEvent::TextDelta(delta) => text.push_str(&delta),
            ModelEvent::Done(summary) => retries = Some(summary.retries),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(text, "The capital of Wyoming is **Cheyenne**.\n");
    assert_eq!(retries, Some(1));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_worker_retries_a_refused_connection_and_says_so() {
    let address = refused_address();
    let client = worker(&format!("http://{address}"));
    let mut turn = Box::pin(client.run_turn(worker_request(), CancellationToken::new()));
    assert!(matches!(turn.next().await, Some(TurnOutput::Started(_))));
    let notice = match turn.next().await {
        Some(TurnOutput::Notice(notice)) => notice,
        other => panic!("expected a retry notice for the refused connection, got {other:?}"),
    };
    assert!(
        notice
            .to_string()
            .starts_with("could not reach the deployment; retrying (2 of 3) in "),
        "{notice}"
    );
    let server = serve_at(address, vec![done_stream()]);
    let rest: Vec<TurnOutput> = turn.collect().await;
    assert!(
        matches!(rest.last(), Some(TurnOutput::Event(ChatEvent::Done(_)))),
        "{rest:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// Every retry of a call, in order, and how it ended.
async fn gemini_notices(provider: &GeminiProvider) -> (Vec<RetryNotice>, Option<String>) {
    let mut stream = provider.stream_turn(model_request(), CancellationToken::new());
    let (mut notices, mut error) = (Vec::new(), None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Retry(notice)) => notices.push(notice),
            Ok(_) => {}
            Err(failure) => error = Some(failure.message),
        }
    }
    (notices, error)
}

#[tokio::test]
async fn each_gemini_retry_is_announced_with_its_status_try_and_wait() {
    let server = TestServer::start(vec![
        Box::new(|_| Reply::status(503, OVERLOADED)),
        Box::new(|_| Reply::Status {
            code: 429,
            headers: vec![("Retry-After".into(), "0.25".into())],
            body: String::new(),
        }),
        success(),
    ]);
    let (notices, error) = gemini_notices(&gemini(&server.base_url)).await;
    assert_eq!(error, None);
    let shown: Vec<String> = notices.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(
        shown[0].starts_with("Gemini answered 503; retrying (2 of 3) in "),
        "{shown:?}"
    );
    assert!(
        shown[1].starts_with("Gemini answered 429; rate-limited, retrying in "),
        "a 429 is retried by the rate rule, not the try count: {shown:?}"
    );
    assert!(notices[1].rate_limited);
    assert!(
        (250..750).contains(&notices[1].wait_ms),
        "the server's Retry-After plus at most 0.5 s of jitter: {}",
        notices[1].wait_ms
    );
    assert_eq!(
        notices[0].error,
        "Gemini API error 503 UNAVAILABLE: The model is overloaded."
    );
}

#[tokio::test]
async fn an_in_stream_overload_retry_is_announced_too() {
    let event = format!("data: {OVERLOADED}\r\n\r\n");
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::stream(event.clone())),
        success(),
    ]);
    let (notices, error) = gemini_notices(&gemini(&server.base_url)).await;
    assert_eq!(error, None);
    assert_eq!(notices.len(), 1);
    assert_eq!((notices[0].status, notices[0].attempt), (Some(503), 2));
}

#[tokio::test]
async fn a_call_that_is_not_retried_announces_nothing() {
    let server = TestServer::start(vec![Box::new(|_| {
        Reply::status(
            400,
            r#"{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}"#,
        )
    })]);
    let (notices, error) = gemini_notices(&gemini(&server.base_url)).await;
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(
        error.as_deref(),
        Some("Gemini API error 400 INVALID_ARGUMENT: bad")
    );
}

#[tokio::test]
async fn a_local_turn_passes_its_model_s_notices_on() {
    let server = TestServer::start(vec![
        Box::new(|_| Reply::status(503, OVERLOADED)),
        success(),
    ]);
    let result = support::engine::run_turn(
        gemini(&server.base_url),
        support::engine::request_for_id("CLM-HH-0001", "What is the excess?"),
    )
    .await;
    assert_eq!(result.notices.len(), 1, "{:?}", result.notices);
    assert!(
        result.notices[0]
            .to_string()
            .starts_with("Gemini answered 503")
    );
    assert!(matches!(result.events.last(), Some(ChatEvent::Done(_))));
}
