//! `promptlab chat` with the Gemini provider, through the real binary and a
//! local HTTP server: the missing-key error, and the key's secrecy.

use crate::support;

use support::http_server::{Reply, TestServer, fixture};
use support::{promptlab, run_command};

const SENTINEL: &str = "sk-SENTINEL-c0ffee-4b1d";

#[test]
fn without_a_key_the_turn_is_an_error_event_and_exit_1() {
    let out = run_command(promptlab().args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--no-record",
        "Is it covered?",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "{\"type\":\"error\",\"message\":\"GEMINI_API_KEY is not configured on the API.\"}\n"
    );
}

#[test]
fn a_turn_against_a_local_server_streams_its_answer() {
    let server = TestServer::start(vec![Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })]);
    let out = run_command(
        promptlab()
            .env("GEMINI_API_KEY", SENTINEL)
            .env("GEMINI_BASE_URL", &server.base_url)
            .args([
                "chat",
                "--claim-id",
                "CLM-HH-0001",
                "--no-record",
                "--model",
                "gemini-3.1-flash-lite",
                "Capital?",
            ]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Cheyenne"));
    let request = &server.requests()[0];
    assert_eq!(request.header("x-goog-api-key"), Some(SENTINEL));
    assert!(!request.target.contains(SENTINEL));
}

#[test]
fn the_key_never_appears_in_any_output() {
    let bad_key = String::from_utf8(fixture("unary-failure-api-key.json")).unwrap();
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(fixture("streaming-success-basic-reply-short.txt"))),
        Box::new(move |_| Reply::status(400, bad_key.clone())),
        Box::new(|_| Reply::stream("data: {broken\r\n\r\n")),
    ]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    for (base, format) in [
        (&server.base_url, "ndjson"),
        (&server.base_url, "pretty"),
        (&server.base_url, "sse"),
        (&unreachable, "pretty"),
    ] {
        let out = run_command(
            promptlab()
                .env("GEMINI_API_KEY", SENTINEL)
                .env("GEMINI_BASE_URL", base)
                .args([
                    "chat",
                    "--claim-id",
                    "CLM-HH-0001",
                    "--no-record",
                    "--format",
                    format,
                    "q",
                ]),
        );
        assert!(
            !out.stdout.contains(SENTINEL) && !out.stderr.contains(SENTINEL),
            "{format}: {}{}",
            out.stdout,
            out.stderr
        );
        assert!(!out.stdout.contains("c0ffee") && !out.stderr.contains("c0ffee"));
    }
}
