//! The `worker` provider against a real local HTTP server that misbehaves
//! on purpose (`support::http_server`): frames split anywhere, comments and
//! keep-alives, a stream that stops early, error statuses with and without
//! the Worker's JSON body, retries before the stream only, a stall, a
//! wrong content type, an endless event, and the in-flight cap.

use crate::support;

use std::time::Duration;

use futures_util::StreamExt;
use promptlab::chat::{ChatEvent, ChatRequest, TurnOutput};
use promptlab::prompts::PromptRegistry;
use promptlab::worker::{Endpoint, WorkerClient, WorkerConfig};
use support::http_server::{Reply, Responder, TestServer};
use tokio_util::sync::CancellationToken;

const DONE: &str = r#"{"type":"done","model":"m","usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":0},"turnId":"t","prompts":{"fingerprint":"default","overridden":[]}}"#;

fn client(server: &TestServer, tweak: impl FnOnce(&mut WorkerConfig)) -> WorkerClient {
    let mut config = WorkerConfig::new(Endpoint::parse(&server.base_url).unwrap());
    config.http.backoff = Duration::from_millis(10);
    config.http.idle_timeout = Duration::from_secs(5);
    tweak(&mut config);
    WorkerClient::new(config, PromptRegistry::embedded()).unwrap()
}

fn request() -> ChatRequest {
    support::engine::request_for_id("CLM-HH-0001", "What is the excess?")
}

async fn run(client: &WorkerClient, request: ChatRequest) -> Vec<TurnOutput> {
    client
        .run_turn(request, CancellationToken::new())
        .collect()
        .await
}

fn events(outputs: &[TurnOutput]) -> Vec<ChatEvent> {
    outputs
        .iter()
        .filter_map(|output| match output {
            TurnOutput::Event(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

/// The message of the turn's last event, which must be an `error`.
fn error_of(outputs: &[TurnOutput]) -> String {
    match events(outputs).last() {
        Some(ChatEvent::Error { message }) => message.clone(),
        other => panic!("expected the turn to end in an error, got {other:?}"),
    }
}

fn reply(make: impl Fn() -> Reply + Send + Sync + 'static) -> Responder {
    Box::new(move |_| make())
}

fn stream_in_pieces(body: &str, piece: usize) -> Responder {
    let body = body.as_bytes().to_vec();
    Box::new(move |_| Reply::Stream {
        body: body.clone(),
        piece,
        pause: Duration::ZERO,
    })
}

#[tokio::test]
async fn frames_split_anywhere_with_comments_and_keep_alives_arrive_whole() {
    let body = format!(
        ": hello\r\n\r\nevent: message\r\ndata: {{\"type\":\"text_delta\",\"text\":\"£350 \"}}\r\n\r\ndata:\n\n: ping\n\ndata: {{\"type\":\"text_delta\",\"text\":\"excess\"}}\n\ndata: {DONE}\n\n"
    );
    for piece in [1, 2, 3, 7, 4096] {
        let server = TestServer::start(vec![stream_in_pieces(&body, piece)]);
        let outputs = run(&client(&server, |_| {}), request()).await;
        assert!(matches!(outputs[0], TurnOutput::Started(_)));
        let events = events(&outputs);
        assert_eq!(events.len(), 3, "piece {piece}: {events:?}");
        assert_eq!(
            events[0],
            ChatEvent::TextDelta {
                text: "£350 ".into()
            }
        );
        assert!(matches!(events[2], ChatEvent::Done(_)));
    }
}

#[tokio::test]
async fn the_request_is_the_wire_body_with_the_bearer_token() {
    let server = TestServer::start(vec![stream_in_pieces(&format!("data: {DONE}\n\n"), 64)]);
    let client = client(&server, |config| config.token = Some("tok-sentinel".into()));
    let mut request = request();
    request.prompt.capability = Some("summarise".into());
    request.prompt.screen_actions = true;
    request
        .prompt
        .overrides
        .insert("system.base".into(), "Be brief.".into());
    run(&client, request).await;
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.target, "/api/chat");
    assert_eq!(sent.header("authorization"), Some("Bearer tok-sentinel"));
    let body = sent.json();
    assert_eq!(body["claimId"], "CLM-HH-0001");
    assert_eq!(body["messages"][0]["text"], "What is the excess?");
    assert_eq!(body["capability"], "summarise");
    assert_eq!(body["screenActions"], true);
    assert_eq!(body["overrides"]["system.base"], "Be brief.");
    assert_eq!(body["thinkingLevel"], "low");
    assert!(body.get("claim").is_none());
    assert!(!format!("{client:?}").contains("tok-sentinel"));
}

#[tokio::test]
async fn a_stream_that_stops_before_done_is_an_error() {
    let body = "data: {\"type\":\"text_delta\",\"text\":\"half an ans\"}\n\n";
    let server = TestServer::start(vec![stream_in_pieces(body, 5)]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(
        message.contains("ended before the turn finished"),
        "{message}"
    );
    assert!(message.contains("after 1 events"), "{message}");
}

#[tokio::test]
async fn a_connection_reset_mid_stream_is_an_error_and_not_retried() {
    let server = TestServer::start(vec![reply(|| Reply::ResetAfter {
        body: b"data: {\"type\":\"text_delta\",\"text\":\"a\"}\n\n".to_vec(),
    })]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(
        message.contains("dropped mid-stream") || message.contains("ended before"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing is retried once events flowed"
    );
}

#[tokio::test]
async fn a_400_quotes_the_deployments_own_message_and_is_not_retried() {
    let server = TestServer::start(vec![reply(|| {
        Reply::status(400, r#"{"error":"messages[0].text: the message is empty"}"#)
    })]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(
        message.contains("rejected the request (HTTP 400)"),
        "{message}"
    );
    assert!(
        message.contains("messages[0].text: the message is empty"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn refused_credentials_say_which_variable_to_check() {
    for code in [401, 403] {
        let server = TestServer::start(vec![reply(move || Reply::status(code, "nope"))]);
        let outputs = run(
            &client(&server, |c| c.token = Some("tok-x".into())),
            request(),
        )
        .await;
        let message = error_of(&outputs);
        assert!(message.contains(&format!("HTTP {code}")), "{message}");
        assert!(message.contains("PROMPTLAB_ENDPOINT_TOKEN"), "{message}");
        assert!(!message.contains("tok-x"), "{message}");
        assert_eq!(server.requests().len(), 1, "{code} is not retried");
    }
}

#[tokio::test]
async fn busy_and_failing_deployments_are_retried_before_the_stream() {
    let server = TestServer::start(vec![
        reply(|| Reply::Status {
            code: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: r#"{"error":"busy: 64 turns are running; try again shortly"}"#.into(),
        }),
        reply(|| Reply::status(429, "")),
        stream_in_pieces(&format!("data: {DONE}\n\n"), 9),
    ]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    assert!(matches!(events(&outputs).last(), Some(ChatEvent::Done(_))));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_say_how_many_tries() {
    let server = TestServer::start(vec![
        reply(|| Reply::status(502, "<html>bad gateway</html>")),
        reply(|| Reply::status(502, "<html>bad gateway</html>")),
        reply(|| Reply::status(502, "<html>bad gateway</html>")),
    ]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(
        message.contains("HTTP 502: <html>bad gateway</html>"),
        "{message}"
    );
    assert!(message.contains("after 3 tries"), "{message}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_named() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = Endpoint::parse(&format!(
        "http://user:pw-sentinel@127.0.0.1:{port}/api/chat?key=q-sentinel"
    ))
    .unwrap();
    let mut config = WorkerConfig::new(endpoint);
    config.http.backoff = Duration::from_millis(5);
    let client = WorkerClient::new(config, PromptRegistry::embedded()).unwrap();
    let outputs = run(&client, request()).await;
    let message = error_of(&outputs);
    assert!(
        message.contains("could not reach the deployment"),
        "{message}"
    );
    assert!(message.contains("after 3 tries"), "{message}");
    assert!(
        !message.contains("sentinel"),
        "no secret of the URL: {message}"
    );
}

#[tokio::test]
async fn a_stall_ends_at_the_idle_timeout() {
    let server = TestServer::start(vec![reply(|| Reply::StallAfter {
        body: b"data: {\"type\":\"text_delta\",\"text\":\"a\"}\n\n".to_vec(),
        hold: Duration::from_secs(30),
    })]);
    let client = client(&server, |c| {
        c.http.idle_timeout = Duration::from_millis(300)
    });
    let started = std::time::Instant::now();
    let outputs = run(&client, request()).await;
    let message = error_of(&outputs);
    // Set here, not by a flag: the message names the setting, not a flag
    // (`promptlab --provider worker --idle-timeout` names its flag).
    assert_eq!(
        message,
        "the deployment's stream stalled: nothing arrived for 0.3 s (the idle timeout)"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_page_that_is_not_an_event_stream_is_named() {
    let server = TestServer::start(vec![reply(|| Reply::status(200, "<html>login</html>"))]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(message.contains("not an event stream"), "{message}");
    assert!(message.contains("application/json"), "{message}");
}

#[tokio::test]
async fn an_endless_event_is_cut_off_at_the_cap() {
    let mut body = b"data: {\"type\":\"text_delta\",\"text\":\"".to_vec();
    body.resize(promptlab::worker::events::MAX_EVENT_BYTES + 4096, b'a');
    let server = TestServer::start(vec![Box::new(move |_| Reply::Stream {
        body: body.clone(),
        piece: 64 * 1024,
        pause: Duration::ZERO,
    })]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    let message = error_of(&outputs);
    assert!(message.contains("grew past"), "{message}");
}

#[tokio::test]
async fn events_after_the_last_one_are_not_read() {
    let body = format!("data: {DONE}\n\ndata: {{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n");
    let server = TestServer::start(vec![stream_in_pieces(&body, 1024)]);
    let outputs = run(&client(&server, |_| {}), request()).await;
    assert_eq!(events(&outputs).len(), 1);
}

#[tokio::test]
async fn cancelling_ends_the_turn_with_cancelled() {
    let server = TestServer::start(vec![reply(|| Reply::StallAfter {
        body: b": waiting\n\n".to_vec(),
        hold: Duration::from_secs(30),
    })]);
    let client = client(&server, |_| {});
    let cancel = CancellationToken::new();
    let turn = client.run_turn(request(), cancel.clone());
    futures_util::pin_mut!(turn);
    assert!(matches!(turn.next().await, Some(TurnOutput::Started(_))));
    cancel.cancel();
    assert!(matches!(turn.next().await, Some(TurnOutput::Cancelled)));
    assert!(turn.next().await.is_none());
}

#[tokio::test]
async fn never_more_than_max_concurrent_requests_in_flight() {
    let slow = || {
        Box::new(|_: &support::http_server::RecordedRequest| Reply::Stream {
            body: format!(": a\n\n: b\n\n: c\n\ndata: {DONE}\n\n").into_bytes(),
            piece: 8,
            pause: Duration::from_millis(15),
        }) as Responder
    };
    let server = TestServer::start((0..8).map(|_| slow()).collect());
    let client = client(&server, |c| c.max_concurrent = 2);
    let turns = (0..8).map(|_| run(&client, request()));
    let all = futures_util::future::join_all(turns).await;
    assert!(
        all.iter()
            .all(|outputs| matches!(events(outputs).last(), Some(ChatEvent::Done(_))))
    );
    assert_eq!(server.requests().len(), 8);
    assert_eq!(
        server.max_in_flight(),
        2,
        "the cap is reached and never passed"
    );
}
