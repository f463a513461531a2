//! `promptlab serve` over real HTTP: the binary listening on 127.0.0.1:0 and
//! a real client (reqwest). The SSE body is byte for byte `chat --format
//! sse`'s; bad bodies are 400s naming the field before any event; a client
//! that goes away cancels the turn and its log says so; the concurrency cap
//! answers 503 with Retry-After; SIGTERM cancels running turns and exits 0.

use crate::support;

use std::time::Duration;

use futures_util::StreamExt;
use promptlab::runs::RunStatus;
use support::serve::{Server, chat_body, sse_events};
use support::{promptlab, repo_root, run_command, slow_script};

const WAIT: Duration = Duration::from_secs(20);

fn excess() -> std::path::PathBuf {
    repo_root().join("tests/data/scripts/excess.yaml")
}

fn without_turn_id(sse: &str) -> String {
    regex::Regex::new(r#""turnId":"[0-9a-f-]{36}""#)
        .unwrap()
        .replace_all(sse, r#""turnId":"…""#)
        .into_owned()
}

#[tokio::test]
async fn the_stream_is_byte_identical_to_chat_format_sse_and_is_recorded() {
    let server = Server::start(&excess(), &[]);
    // Each turn plays the script from its start, as each `chat` does: the
    // second turn is as complete as the first.
    for _ in 0..2 {
        one_turn_like_chat(&server).await;
    }
    let logs = server.wait_for_logs(2, WAIT);
    for log in &logs {
        assert_eq!(
            log.footer.as_ref().expect("complete").status,
            RunStatus::Done
        );
    }
}

async fn one_turn_like_chat(server: &Server) {
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("What is the excess?").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let served = response.text().await.unwrap();
    let events = sse_events(&served);
    assert_eq!(events.last().unwrap()["type"], "done");

    let chat = run_command(promptlab().args([
        "chat",
        "--no-record",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "script",
        "--script",
        excess().to_str().unwrap(),
        "--today",
        "2025-01-01",
        "--format",
        "sse",
        "What is the excess?",
    ]));
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    assert_eq!(without_turn_id(&served), without_turn_id(&chat.stdout));
    let turn_id = events.last().unwrap()["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = std::time::Instant::now() + WAIT;
    while !server
        .logs()
        .iter()
        .any(|log| log.header.turn_id == turn_id)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "turn {turn_id} was not recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn bad_bodies_are_400s_naming_the_field_before_any_event() {
    let server = Server::start(&excess(), &[]);
    let client = reqwest::Client::new();
    let cases = [
        ("{", "body:"),
        (
            r#"{"messages":[{"role":"user","text":"x"}]}"#,
            "claim, claimId:",
        ),
        (
            r#"{"claimId":"a","claim":{},"messages":[{"role":"user","text":"x"}]}"#,
            "claim, claimId:",
        ),
        (
            r#"{"claim":{"id":"x"},"messages":[{"role":"user","text":"x"}]}"#,
            "claim:",
        ),
        (r#"{"claimId":"a","messages":[]}"#, "messages:"),
        (
            r#"{"claimId":"a","messages":[{"role":"assistant","text":"x"}]}"#,
            "messages[0].role:",
        ),
        (
            r#"{"claimId":"a","messages":[{"role":"user","text":"x"}],"brand":"nope"}"#,
            "brand:",
        ),
        (
            r#"{"claimId":"a","messages":[{"role":"user","text":"x"}],"locale":7}"#,
            "locale:",
        ),
    ];
    for (body, field) in cases {
        let response = client
            .post(server.at("/api/chat"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error: serde_json::Value =
            serde_json::from_str(&response.text().await.unwrap()).unwrap();
        let message = error["error"].as_str().unwrap();
        assert!(message.starts_with(field), "{body}: {message}");
    }
    let too_long = format!(
        r#"{{"claimId":"a","messages":[{{"role":"user","text":"{}"}}]}}"#,
        "x".repeat(20_001)
    );
    let response = client
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(too_long)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(server.logs().is_empty(), "no turn was started");
}

#[tokio::test]
async fn later_errors_are_error_events_in_the_stream() {
    let server = Server::start(&excess(), &[]);
    let mut body = chat_body("hi");
    body["claimId"] = "CLM-NOPE".into();
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let events = sse_events(&response.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["message"], "Claim CLM-NOPE not found.");
}

#[tokio::test]
async fn a_body_over_the_cap_is_413() {
    let server = Server::start(&excess(), &[]);
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(vec![b' '; 8 * 1024 * 1024 + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let error: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert!(error["error"].is_string());
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_turn_and_its_log_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&slow_script(dir.path()), &[]);
    // As a browser's Stop button does: read the first frame, then close.
    let connection = open_chat_stream(&server, &chat_body("count")).await;
    drop(connection);
    let logs = server.wait_for_logs(1, WAIT);
    let footer = logs[0].footer.as_ref().expect("a complete log");
    assert_eq!(footer.status, RunStatus::Cancelled, "{footer:?}");
    assert!(
        footer.total_ms < 1_400,
        "cancelled well before the script's 1.5 s: {} ms",
        footer.total_ms
    );
}

/// A raw HTTP/1.1 connection that has sent a chat request and read the
/// response up to its first SSE frame.
async fn open_chat_stream(server: &Server, body: &serde_json::Value) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = server.url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST /api/chat HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("data: ") {
        let n = tokio::time::timeout(WAIT, stream.read(&mut buffer))
            .await
            .expect("the first frame within the deadline")
            .unwrap();
        assert!(n > 0, "the server closed before the first frame");
        seen.extend_from_slice(&buffer[..n]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    stream
}

#[tokio::test]
async fn past_the_concurrency_cap_a_request_gets_503_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&slow_script(dir.path()), &["--max-concurrent", "1"]);
    let client = reqwest::Client::new();
    let first = client
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("a").to_string())
        .send()
        .await
        .unwrap();
    let mut stream = first.bytes_stream();
    assert!(
        stream.next().await.unwrap().is_ok(),
        "the first turn is running"
    );
    let second = client
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("b").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 503);
    assert_eq!(second.headers()["retry-after"], "1");
    let said: serde_json::Value = serde_json::from_slice(&second.bytes().await.unwrap()).unwrap();
    assert!(
        said["error"]
            .as_str()
            .unwrap()
            .ends_with("(serve --max-concurrent sets how many may)"),
        "the 503 names the flag that lifts it: {said}"
    );
    while stream.next().await.is_some() {}
    // The slot is freed just after the log is complete: poll for it.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let third = client
            .post(server.at("/api/chat"))
            .header("content-type", "application/json")
            .body(chat_body("c").to_string())
            .send()
            .await
            .unwrap();
        if third.status() == 200 {
            break;
        }
        assert_eq!(third.status(), 503);
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was never freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sigterm_cancels_running_turns_marks_their_logs_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&slow_script(dir.path()), &[]);
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("count").to_string())
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream();
    assert!(stream.next().await.unwrap().is_ok());
    let mut server = server;
    let runs = server.runs.clone();
    let (code, stderr) = server.stop("TERM", WAIT);
    assert_eq!(code, 0, "{stderr}");
    while stream.next().await.is_some() {}
    let log = support::run_logs_under(&runs)
        .iter()
        .map(|file| promptlab::runs::read_run_log(file).unwrap())
        .next()
        .expect("the turn was recorded");
    assert_eq!(log.footer.unwrap().status, RunStatus::Cancelled);
}

#[tokio::test]
async fn cors_is_off_unless_an_origin_is_given() {
    let origin = "http://localhost:5173";
    for (extra, allowed) in [(vec![], false), (vec!["--cors-origin", origin], true)] {
        let server = Server::start(&excess(), &extra);
        let response = reqwest::Client::new()
            .request(reqwest::Method::OPTIONS, server.at("/api/chat"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        let header = response.headers().get("access-control-allow-origin");
        assert_eq!(header.is_some(), allowed, "{extra:?}");
    }
}

#[test]
fn a_non_loopback_address_is_warned_about() {
    let mut server = Server::start(&excess(), &["--host", "0.0.0.0"]);
    assert!(server.url.starts_with("http://0.0.0.0:"));
    let (code, stderr) = server.stop("INT", WAIT);
    assert_eq!(code, 0);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
}

#[tokio::test]
async fn the_api_key_never_appears_in_a_response() {
    let key = "sk-test-ne7er-leak-this";
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", key)
        .env("GEMINI_BASE_URL", "http://127.0.0.1:9");
    let server = Server::start_with(command, &["--provider", "gemini"]);
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("hi").to_string())
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    assert!(
        sse_events(&body).last().unwrap()["type"] == "error",
        "{body}"
    );
    assert!(!body.contains(key));
}
