//! `--provider worker` behind a hostile deployment, through the real
//! binary and real local servers, asserting on stdout, stderr and the run
//! log: a redirect to another origin (neither the claim nor the token is
//! re-sent), answers that echo the token (redacted everywhere), and
//! streams bounded in text and in time as Gemini's are.

use crate::support;

use std::path::Path;
use std::time::Duration;

use promptlab::runs::{RunStatus, read_run_log};
use support::http_server::{Reply, TestServer};
use support::{Run, promptlab, run_command};

const TOKEN: &str = "tok-hostile+worker/secret-9f3a";
const ENCODED: &str = "tok-hostile%2Bworker%2Fsecret-9f3a";

fn chat(runs: &Path, endpoint: &str, env: &[(&str, &str)]) -> Run {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", runs)
        .env("PROMPTLAB_ENDPOINT_TOKEN", TOKEN)
        .args([
            "chat",
            "--provider",
            "worker",
            "--endpoint",
            endpoint,
            "--send-claim",
        ])
        .args([
            "--claim-id",
            "CLM-HH-0001",
            "--format",
            "ndjson",
            "Is it covered?",
        ]);
    for (name, value) in env {
        command.env(name, value);
    }
    run_command(&mut command)
}

/// The error message of stdout's last event.
fn last_error(stdout: &str) -> String {
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "error", "{stdout:.300}");
    last["message"].as_str().unwrap().to_string()
}

/// The one run log's footer error, checked complete; and its raw text.
fn logged_error(runs: &Path) -> (Option<String>, String) {
    let version = std::fs::read_dir(runs).unwrap().flatten().next().unwrap();
    let file = std::fs::read_dir(version.path())
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    let log = read_run_log(&file.path()).unwrap();
    let footer = log.footer.expect("the log is complete");
    assert_eq!(footer.status, RunStatus::Error);
    (footer.error, std::fs::read_to_string(file.path()).unwrap())
}

#[test]
fn a_redirect_is_not_followed_and_the_claim_and_token_stay_home() {
    let elsewhere = TestServer::start(vec![]);
    let target = format!("{}/steal?x=1", elsewhere.base_url);
    let deployment = TestServer::start(vec![Box::new(move |_| Reply::Status {
        code: 307,
        headers: vec![("Location".into(), target.clone())],
        body: String::new(),
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(runs.path(), &deployment.base_url, &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = format!(
        "the deployment at {}/api/chat answered 307 to {}/steal: redirects are not followed",
        deployment.base_url, elsewhere.base_url
    );
    assert_eq!(last_error(&out.stdout), message);
    assert!(elsewhere.requests().is_empty(), "nothing was re-sent");
    assert_eq!(deployment.requests().len(), 1, "not retried");
    assert_eq!(
        logged_error(runs.path()).0.as_deref(),
        Some(message.as_str())
    );
}

#[test]
fn a_token_echoed_in_an_error_status_or_an_error_event_is_redacted() {
    let status_body =
        serde_json::json!({"error": format!("bad token {TOKEN} ({ENCODED})")}).to_string();
    let event = serde_json::json!({"type": "error", "message": format!("no such key: {TOKEN}")});
    let stream = format!("data: {event}\n\n");
    for reply in [Reply::status(401, status_body), Reply::stream(stream)] {
        let replies = std::sync::Mutex::new(Some(reply));
        let deployment = TestServer::start(vec![Box::new(move |_| {
            replies.lock().unwrap().take().expect("one request")
        })]);
        let runs = tempfile::tempdir().unwrap();
        let out = chat(runs.path(), &deployment.base_url, &[]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let message = last_error(&out.stdout);
        assert!(message.contains("[redacted]"), "{message}");
        let (_, log) = logged_error(runs.path());
        for text in [&out.stdout, &out.stderr, &log] {
            assert!(!text.contains(TOKEN) && !text.contains(ENCODED), "{text}");
        }
    }
}

/// Issue 61: a deployment echoing the token over text deltas, none of
/// which holds it whole, had each redacted alone: stdout and the log held
/// pieces that joined to it. The deltas are redacted as a stream.
#[test]
fn a_token_echoed_across_text_deltas_is_redacted_as_a_stream() {
    let done = r#"{"type":"done","model":"m","usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":0},"turnId":"t","prompts":{"fingerprint":"default","overridden":[]}}"#;
    for at in [1, 9, TOKEN.len() - 1] {
        let (head, tail) = TOKEN.split_at(at);
        let stream: String = [format!("token: {head}"), format!("{tail} ok")]
            .iter()
            .map(|text| {
                format!(
                    "data: {}\n\n",
                    serde_json::json!({"type": "text_delta", "text": text})
                )
            })
            .chain([format!("data: {done}\n\n")])
            .collect();
        let deployment = TestServer::start(vec![Box::new(move |_| Reply::stream(stream.clone()))]);
        let runs = tempfile::tempdir().unwrap();
        let out = chat(runs.path(), &deployment.base_url, &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text: String = out
            .stdout
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|event| event["type"] == "text_delta")
            .map(|event| event["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(text, "token: [redacted] ok", "cut at {at}");
        for file in support::files_under(runs.path()) {
            let logged = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(!logged.contains(TOKEN), "{logged:.400}");
        }
    }
}

#[test]
fn a_deployment_stream_past_max_call_time_is_stopped() {
    let deployment = TestServer::start(vec![Box::new(|_| Reply::Endless {
        head: Vec::new(),
        chunk: b": still thinking\n\n".to_vec(),
        pause: Duration::from_millis(50),
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(
        runs.path(),
        &deployment.base_url,
        &[("PROMPTLAB_MAX_CALL_TIME", "1s")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message =
        "the deployment's call took longer than 1s (--max-call-time); the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert_eq!(logged_error(runs.path()).0.as_deref(), Some(message));
}

#[test]
fn a_deployment_streaming_text_forever_is_stopped_at_16_mib() {
    let delta = serde_json::json!({"type": "text_delta", "text": "more ".repeat(10_000)});
    let deployment = TestServer::start(vec![Box::new(move |_| Reply::Endless {
        head: Vec::new(),
        chunk: format!("data: {delta}\n\n").into_bytes(),
        pause: Duration::ZERO,
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(runs.path(), &deployment.base_url, &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message =
        "the deployment's reply grew past 16 MiB of text in one call; the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert_eq!(logged_error(runs.path()).0.as_deref(), Some(message));
}
