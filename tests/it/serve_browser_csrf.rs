//! A hostile page in a real browser against `promptlab serve` on the
//! user's key (headless Chromium; `--host-resolver-rules` maps
//! `evil.example` to 127.0.0.1, so this works offline):
//!
//! - **CSRF**: a page served from another origin (`http://evil.example:PORT2`,
//!   a second tiny local server) posts to `/api/chat` and `/api/feedback`
//!   with `mode: "no-cors"` — text, a typeless blob, a form, multipart —
//!   and with CORS; none may start a turn.
//! - **DNS rebinding**: the same name pointed at serve's own port is
//!   same-origin to the browser, so CORS never applies: the Host check must
//!   refuse the page, its reads and its posts.
//!
//! The mock Gemini counts model requests. Serve runs one turn at a time,
//! and a turn holds its slot until its run log is complete, so once a
//! legitimate turn afterwards has been answered in full, every forged turn
//! that had been accepted would have been recorded: then exactly one run
//! log and one model request prove that none was.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;
use support::browser::Browser;
use support::http_server::{Reply, TestServer, fixture};
use support::promptlab;
use support::serve::{Server, chat_body, sse_events};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "AIzaSy-browser-csrf-test-key";

/// A page server on 127.0.0.1 answering every request with `html`.
fn page_server(html: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut tcp in listener.incoming().flatten() {
            let mut head = [0u8; 8192];
            let _ = tcp.read(&mut head);
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                html.len()
            );
            let _ = tcp.write_all(answer.as_bytes());
        }
    });
    port
}

/// The attacker's page: every way to post without a preflight, and one with.
fn attack_page(serve_port: u16) -> String {
    let body = chat_body("forged: read me the claimant's address").to_string();
    let script = format!(
        r#"
const body = {body};
const direct = "http://127.0.0.1:{serve_port}/api/";
const rebound = "http://evil.example:{serve_port}/api/";
const form = new FormData(); form.append("x", body);
const tries = [
  fetch(direct + "chat", {{method: "POST", mode: "no-cors", body}}),
  fetch(direct + "chat", {{method: "POST", mode: "no-cors", body: new Blob([body])}}),
  fetch(direct + "chat", {{method: "POST", mode: "no-cors", body: new URLSearchParams({{x: body}})}}),
  fetch(direct + "chat", {{method: "POST", mode: "no-cors", body: form}}),
  fetch(direct + "chat", {{method: "POST", mode: "no-cors", headers: {{"content-type": "application/json"}}, body}}),
  fetch(rebound + "chat", {{method: "POST", mode: "no-cors", body}}),
  fetch(direct + "feedback", {{method: "POST", mode: "no-cors", body: JSON.stringify({{turnId: "x", vote: "up"}})}}),
  fetch(direct + "chat", {{method: "POST", headers: {{"content-type": "application/json"}}, body}}),
];
window.attempts = Promise.allSettled(tries).then(results => results.map(r => r.status));
document.body.dataset.ready = "1";
"#,
        body = json!(body),
    );
    format!("<!doctype html><html><body><p>cute cats</p><script>{script}</script></body></html>")
}

fn gemini_mock() -> TestServer {
    TestServer::start(vec![Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })])
}

fn start_serve(model: &TestServer) -> Server {
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", &model.base_url);
    Server::start_with(command, &["--provider", "gemini", "--max-concurrent", "1"])
}

fn port_of(server: &Server) -> u16 {
    server.url.rsplit(':').next().unwrap().parse().unwrap()
}

/// A legitimate turn, retried while a slot is taken, read to its end.
async fn legitimate_turn(server: &Server) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let response = reqwest::Client::new()
            .post(server.at("/api/chat"))
            .header("content-type", "application/json")
            .body(chat_body("What is the excess?").to_string())
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            return sse_events(&response.text().await.unwrap());
        }
        assert_eq!(response.status(), 503, "only a busy slot delays it");
        assert!(Instant::now() < deadline, "the slot never came free");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn launch() -> Browser {
    Browser::launch_with(
        1000,
        700,
        &["--host-resolver-rules=MAP evil.example 127.0.0.1"],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_on_another_origin_cannot_start_a_turn_or_vote() {
    let model = gemini_mock();
    let server = start_serve(&model);
    let page_port = page_server(attack_page(port_of(&server)));
    let mut browser = launch();
    browser.open_url(&format!("http://evil.example:{page_port}/"), WAIT);
    let settled = browser.eval("window.attempts");
    assert_eq!(settled.as_array().map(Vec::len), Some(8), "{settled}");

    let events = legitimate_turn(&server).await;
    assert_eq!(events.last().unwrap()["type"], "done", "{events:?}");
    let logs = server.wait_for_logs(1, WAIT);
    assert_eq!(logs.len(), 1, "only the legitimate turn ran: {logs:#?}");
    assert_eq!(
        model.requests().len(),
        1,
        "only the legitimate turn reached the model"
    );
    let votes = promptlab::runs::feedback::read_feedback(&logs[0].path).unwrap();
    assert!(votes.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebound_name_gets_neither_the_page_nor_the_api() {
    let model = gemini_mock();
    let server = start_serve(&model);
    let port = port_of(&server);
    let mut browser = launch();
    let rebound = format!("http://evil.example:{port}/");
    browser.navigate(&rebound, WAIT);
    let text = browser.eval("document.body.innerText");
    let refused = json!({
        "error": "Host `evil.example` is not allowed; serve --allowed-host evil.example allows it"
    });
    let shown: serde_json::Value = serde_json::from_str(text.as_str().unwrap().trim()).unwrap();
    assert_eq!(shown, refused);
    // Same-origin now, so the page could read any answer: all are refused.
    let statuses = browser.eval(&format!(
        r#"Promise.all([
            fetch("/api/claims").then(r => r.status),
            fetch("/api/claims/CLM-HH-0001").then(r => r.status),
            fetch("/api/runs").then(r => r.status),
            fetch("/api/chat", {{method: "POST", headers: {{"content-type": "application/json"}}, body: {body}}}).then(r => r.status),
        ])"#,
        body = json!(chat_body("forged").to_string())
    ));
    assert_eq!(statuses, json!([403, 403, 403, 403]));
    let events = legitimate_turn(&server).await;
    assert_eq!(events.last().unwrap()["type"], "done");
    assert_eq!(server.wait_for_logs(1, WAIT).len(), 1);
    assert_eq!(model.requests().len(), 1);
}
