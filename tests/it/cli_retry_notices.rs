//! A retrying model says so, through the real binary: `chat`'s pretty view
//! prints each retry on stderr and the run log records it as a `notice`
//! (machine formats keep their stdout as the spec fixes it), and `eval`
//! writes a `notice` NDJSON record and a progress line.

use crate::support;

use std::path::Path;

use support::http_server::{Reply, Responder, TestServer, fixture};
use support::{promptlab, run_command, write};

const KEY: &str = "test-key-0123456789";
const OVERLOADED: &str =
    r#"{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}"#;
// The server asks for no wait: what is said is its 0 s plus jitter.
const NOTICE: &str = "Gemini answered 503; retrying (2 of 3) in 0.";

fn busy_then(then: Responder) -> Vec<Responder> {
    vec![
        Box::new(|_| Reply::Status {
            code: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: OVERLOADED.into(),
        }),
        then,
    ]
}

fn chat(server: &TestServer, runs: &Path, format: &str) -> support::Run {
    run_command(
        promptlab()
            .env("GEMINI_API_KEY", KEY)
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", runs)
            .args(["chat", "--claim-id", "CLM-HH-0001", "--format", format])
            .arg("Capital?"),
    )
}

fn logs_text(runs: &Path) -> String {
    support::run_logs_under(runs)
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect()
}

#[test]
fn chat_says_each_retry_on_stderr_and_records_it() {
    let server = TestServer::start(busy_then(Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })));
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server, runs.path(), "pretty");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains(NOTICE), "{}", out.stderr);
    assert!(!out.stdout.contains("retrying"), "{}", out.stdout);
    let log = logs_text(runs.path());
    let notice = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["record"] == "notice")
        .unwrap_or_else(|| panic!("no notice record in {log}"));
    assert_eq!(notice["notice"]["status"], 503);
    assert_eq!(notice["notice"]["attempt"], 2);
    assert_eq!(
        notice["notice"]["error"],
        "Gemini API error 503 UNAVAILABLE: The model is overloaded."
    );
    // Readers (replay, runs show, compare) take the log as before.
    for path in support::run_logs_under(runs.path()) {
        let log = promptlab::runs::read_run_log_checked(&path).unwrap();
        assert!(log.footer.is_some());
    }
}

#[test]
fn chat_ndjson_keeps_stdout_to_the_events() {
    let server = TestServer::start(busy_then(Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })));
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server, runs.path(), "ndjson");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(NOTICE),
        "a piped chat still says why it waits: {}",
        out.stderr
    );
    for line in out.stdout.lines() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_ne!(event["type"], "notice", "{line}");
    }
    assert!(logs_text(runs.path()).contains("\"record\":\"notice\""));
}

#[test]
fn eval_writes_a_notice_record_and_a_progress_line() {
    const DONE: &str = r#"{"type":"done","model":"m","usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":0},"turnId":"t","prompts":{"fingerprint":"default","overridden":[]}}"#;
    let server = TestServer::start(busy_then(Box::new(|_| {
        Reply::stream(format!(
            "data: {{\"type\":\"text_delta\",\"text\":\"The excess is 250.\"}}\n\ndata: {DONE}\n\n"
        ))
    })));
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: retries\nclaims:\n  ids: [CLM-HH-0001]\ncases:\n  - name: excess\n    message: What is the excess?\n    expect: {answerContains: excess}\n",
    );
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .env("PROMPTLAB_ENDPOINT", &server.base_url)
            .args(["eval", "--provider", "worker", "--format", "ndjson"])
            .arg(&suite),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let notice = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["kind"] == "notice")
        .unwrap_or_else(|| panic!("no notice record in {}", out.stdout));
    assert_eq!(notice["case"], "excess");
    assert_eq!(notice["claim"], "CLM-HH-0001");
    assert_eq!(notice["notice"]["who"], "the deployment");
    assert_eq!(notice["notice"]["status"], 503);
    assert!(
        out.stderr
            .contains("the deployment answered 503; retrying (2 of 3) in 0."),
        "{}",
        out.stderr
    );
}
