//! `serve` keeps a bounded amount of a turn's stream for a client that does
//! not read it: a real `promptlab serve` against a stand-in for Gemini that
//! streams text without end, and a raw TCP client that sends its request and
//! never reads. The turn must be cancelled (its run log says so) long before
//! the model's 16 MiB text bound ends the call: without the bound on what
//! waits for the client, the whole stream would pile up in memory and the
//! log would end with the text bound's error instead.

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use promptlab::runs::RunStatus;
use support::http_server::{Reply, TestServer};
use support::promptlab;
use support::serve::{Server, chat_body};

#[test]
fn a_client_that_never_reads_its_stream_gets_its_turn_cancelled() {
    // 64 KB of text per chunk, as fast as the socket takes it.
    let text = "x".repeat(64 * 1024);
    let chunk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]});
    let chunk = format!("data: {chunk}\r\n\r\n").into_bytes();
    let gemini = TestServer::start(vec![Box::new(move |_| Reply::Endless {
        head: Vec::new(),
        chunk: chunk.clone(),
        pause: Duration::ZERO,
    })]);
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "AIzaSy-backpressure-test-key")
        .env("GEMINI_BASE_URL", &gemini.base_url);
    let server = Server::start_with(command, &["--provider", "gemini"]);
    let address = server.url.strip_prefix("http://").unwrap().to_string();

    let body = chat_body("Is it covered?").to_string();
    let request = format!(
        "POST /api/chat HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut client = TcpStream::connect(&address).unwrap();
    client.write_all(request.as_bytes()).unwrap();
    // The client now reads nothing, and stays connected.

    let logs = server.wait_for_logs(1, Duration::from_secs(60));
    let footer = logs[0].footer.as_ref().expect("the log is complete");
    assert_eq!(
        footer.status,
        RunStatus::Cancelled,
        "the turn stops for the client that does not read, not at the text bound: {footer:?}"
    );
    drop(client);
}
