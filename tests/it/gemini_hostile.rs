//! Gemini behind hostile servers, through the real binary and real local
//! HTTP servers, asserting on stdout, stderr and the run-log file: a
//! redirect to another origin (the key and the body are not re-sent), an
//! error body that echoes the key (redacted everywhere), a password in
//! `GEMINI_BASE_URL` (never shown), a stream that never ends and a 50 MB
//! reply (stopped at the text bound, the log complete), and a stream that
//! trickles past `--max-call-time`.

use crate::support;

use std::path::Path;
use std::time::Duration;

use promptlab::runs::{RunLog, RunStatus, read_run_log};
use support::http_server::{Reply, TestServer};
use support::{Run, promptlab, run_command};

/// Long enough to be redacted; the `+` and `/` have URL-encoded forms.
const KEY: &str = "AIzaSy-hostile+test/KEY-0123456789";

fn text_chunk(text: &str) -> String {
    let chunk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]});
    format!("data: {chunk}\r\n\r\n")
}

/// A stand-in for Gemini that sends `chunk` again and again, `pause` apart,
/// until the client goes away.
fn endless(chunk: Vec<u8>, pause: Duration) -> TestServer {
    TestServer::start(vec![Box::new(move |_| Reply::Endless {
        head: Vec::new(),
        chunk: chunk.clone(),
        pause,
    })])
}

/// `chat` against `base`, recording into `runs`.
fn chat(base: &str, runs: &Path, extra_env: &[(&str, &str)]) -> Run {
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", base)
        .env("PROMPTLAB_RUNS_DIR", runs)
        .args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--format",
            "ndjson",
            "Is it covered?",
        ]);
    for (name, value) in extra_env {
        command.env(name, value);
    }
    run_command(&mut command)
}

/// The one run log under `runs`, read back; its raw text too.
fn the_log(runs: &Path) -> (RunLog, String) {
    let mut found = Vec::new();
    for version in std::fs::read_dir(runs).expect("a runs folder").flatten() {
        for file in std::fs::read_dir(version.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if file.path().extension().is_some_and(|ext| ext == "ndjson") {
                found.push(file.path());
            }
        }
    }
    assert_eq!(found.len(), 1, "one run log: {found:?}");
    let text = std::fs::read_to_string(&found[0]).unwrap();
    (read_run_log(&found[0]).expect("a readable log"), text)
}

/// The `error` event's message, which must be stdout's last line.
fn last_error(stdout: &str) -> String {
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "error", "{stdout:.300}");
    last["message"].as_str().unwrap().to_string()
}

fn assert_complete_error_log(runs: &Path, message: &str) -> String {
    let (log, text) = the_log(runs);
    let footer = log.footer.expect("the log is complete");
    assert_eq!(footer.status, RunStatus::Error);
    assert_eq!(footer.error.as_deref(), Some(message));
    assert_eq!(footer.cost_usd, None, "a stopped call's cost is unknown");
    text
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_re_sends_nothing() {
    let elsewhere = TestServer::start(vec![]);
    let target = format!("{}/collect?key=leak#frag", elsewhere.base_url);
    let redirecting = TestServer::start(vec![Box::new(move |_| Reply::Status {
        code: 307,
        headers: vec![("Location".into(), target.clone())],
        body: String::new(),
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&redirecting.base_url, runs.path(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = format!(
        "Gemini answered 307 to {}/collect: redirects are not followed",
        elsewhere.base_url
    );
    assert_eq!(last_error(&out.stdout), message);
    assert!(
        elsewhere.requests().is_empty(),
        "nothing reached the other origin"
    );
    assert_eq!(redirecting.requests().len(), 1, "not retried");
    assert_complete_error_log(runs.path(), &message);
}

#[test]
fn a_relative_redirect_or_one_with_userinfo_is_named_without_secrets() {
    for (location, shown) in [
        ("/v2/steal?key=1".to_string(), "/v2/steal".to_string()),
        (
            "http://user:pa55word@127.0.0.1:9/x?token=t".to_string(),
            "http://127.0.0.1:9/x".to_string(),
        ),
    ] {
        let target = location.clone();
        let server = TestServer::start(vec![Box::new(move |_| Reply::Status {
            code: 302,
            headers: vec![("Location".into(), target.clone())],
            body: String::new(),
        })]);
        let shown = if shown.starts_with('/') {
            format!("{}{shown}", server.base_url)
        } else {
            shown
        };
        let runs = tempfile::tempdir().unwrap();
        let out = chat(&server.base_url, runs.path(), &[]);
        let message = format!("Gemini answered 302 to {shown}: redirects are not followed");
        assert_eq!(last_error(&out.stdout), message);
        assert!(!out.stdout.contains("pa55word") && !out.stdout.contains("key=1"));
    }
}

#[test]
fn an_error_body_echoing_the_key_is_redacted_in_stdout_stderr_and_the_log() {
    let encoded = "AIzaSy-hostile%2Btest%2FKEY-0123456789";
    let body = serde_json::json!({"error": {
        "code": 400,
        "message": format!("API key not valid: {KEY} (as sent: {encoded})"),
        "status": "INVALID_ARGUMENT"
    }})
    .to_string();
    let again = body.clone();
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::status(400, body.clone())),
        Box::new(move |_| Reply::status(400, again.clone())),
    ]);
    let runs = tempfile::tempdir().unwrap();
    for format in ["ndjson", "pretty"] {
        let mut command = promptlab();
        command
            .env("GEMINI_API_KEY", KEY)
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", runs.path())
            .args(["chat", "--claim-id", "CLM-HH-0001", "--format", format, "q"]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 1);
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !text.contains(KEY) && !text.contains(encoded),
                "{format}: {text}"
            );
        }
        assert!(
            out.stdout
                .contains("API key not valid: [redacted] (as sent: [redacted])"),
            "{}",
            out.stdout
        );
    }
    for log in support::run_logs_under(runs.path()) {
        let text = std::fs::read_to_string(log).unwrap();
        assert!(!text.contains(KEY) && !text.contains(encoded), "{text}");
        assert!(text.contains("[redacted]"));
    }
    // Nor does any other file there (the stored prompts).
    for file in support::files_under(runs.path()) {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains(KEY) && !text.contains(encoded), "{text}");
    }
}

#[test]
fn a_key_where_the_excerpt_would_cut_it_is_redacted_whole() {
    // Not Google's error shape: the message is an excerpt of 200 characters,
    // which would end in the middle of the key.
    let body = format!("{}{KEY} trailing text", "p".repeat(190));
    let server = TestServer::start(vec![Box::new(move |_| Reply::status(418, body.clone()))]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    let message = last_error(&out.stdout);
    assert!(message.contains("[redacted]"), "{message}");
    assert!(!out.stdout.contains(&KEY[..8]), "{}", out.stdout);
}

#[test]
fn a_key_echoed_in_the_streamed_answer_is_redacted_in_stdout_and_the_log() {
    let stream = format!(
        "{}{}data: {}\r\n\r\n",
        text_chunk("Your key is "),
        text_chunk(&format!("{KEY}, and it is valid.")),
        serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]})
    );
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(stream.clone()))]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("[redacted], and it is valid."),
        "{}",
        out.stdout
    );
    let (_, log) = the_log(runs.path());
    for text in [&out.stdout, &out.stderr, &log] {
        assert!(!text.contains(KEY), "{text}");
    }
}

/// Issue 61: the key echoed over three deltas, none of which holds it,
/// reached the run log's `model_call` record and `providerState` and the
/// model cache whole, and stdout in pieces that joined to it. Every file
/// the turn leaves and every byte it prints are read.
#[test]
fn a_key_echoed_across_deltas_reaches_no_output_log_or_cache() {
    let (head, rest) = KEY.split_at(9);
    let (middle, tail) = rest.split_at(11);
    let stream = format!(
        "{}{}{}data: {}\r\n\r\n",
        text_chunk(&format!("Your key is {head}")),
        text_chunk(middle),
        text_chunk(&format!("{tail}, and it is valid.")),
        serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}})
    );
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(stream.clone()))]);
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", &server.base_url)
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args([
            "chat",
            "--cache",
            "--claim-id",
            "CLM-HH-0001",
            "--format",
            "ndjson",
            "Is it covered?",
        ]);
    let out = run_command(&mut command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let deltas: String = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "text_delta")
        .map(|event| event["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "Your key is [redacted], and it is valid.");
    let mut read = vec![out.stdout.clone(), out.stderr.clone()];
    for file in support::files_under(dir.path()) {
        read.push(String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned());
    }
    assert!(
        read.len() >= 4,
        "the log, its prompt and the cache entry were written"
    );
    for text in &read {
        assert!(!text.contains(KEY), "{text:.400}");
    }
    let (_, log) = the_log(&runs);
    assert!(log.contains("[redacted]"), "{log:.400}");
}

#[test]
fn a_key_a_server_writes_in_json_escapes_is_redacted_in_stdout_and_the_log() {
    // JSON may write any character as `\uXXXX` and `/` as `\/`; a server
    // that does so for the key must not get it past the redaction.
    let escaped: String = KEY
        .chars()
        .map(|c| match c {
            '/' => "\\/".to_string(),
            'A'..='Z' => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect();
    let stream = format!(
        "data: {{\"candidates\": [{{\"content\": {{\"role\": \"model\", \"parts\": [{{\"text\": \"key: {escaped}.\"}}]}}, \"finishReason\": \"STOP\"}}]}}\r\n\r\n"
    );
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(stream.clone()))]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("key: [redacted]."), "{}", out.stdout);
    let (_, log) = the_log(runs.path());
    for text in [&out.stdout, &out.stderr, &log] {
        let decoded = text.replace("\\/", "/");
        assert!(!decoded.contains(KEY) && !text.contains(&escaped), "{text}");
    }
}

#[test]
fn the_basic_credential_a_base_url_makes_is_redacted_when_echoed() {
    // The server echoes the Authorization header the client really sent.
    let server = TestServer::start(vec![Box::new(|request| {
        let sent = request
            .header("authorization")
            .unwrap_or("none")
            .to_string();
        Reply::status(400, format!("bad credentials: authorization: {sent}"))
    })]);
    let base = server
        .base_url
        .replacen("http://", "http://proxyuser:pa55word-0f-a-proxy@", 1);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&base, runs.path(), &[]);
    assert_eq!(out.code, 1);
    let sent = server.requests()[0]
        .header("authorization")
        .expect("the client sent the userinfo as Basic")
        .to_string();
    let credential = sent.strip_prefix("Basic ").expect("Basic");
    let message = last_error(&out.stdout);
    assert!(
        message.contains("authorization: Basic [redacted]"),
        "{message}"
    );
    let log = assert_complete_error_log(runs.path(), &message);
    for text in [&out.stdout, &out.stderr, &log] {
        assert!(!text.contains(credential), "{text}");
    }
}

#[test]
fn a_password_in_the_base_url_is_never_shown_or_recorded() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let base = format!("http://proxyuser:pa55word-0f-a-proxy@{address}/v?token=t0ken-in-query");
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&base, runs.path(), &[]);
    assert_eq!(out.code, 1);
    let message = last_error(&out.stdout);
    assert!(
        message.starts_with(&format!("could not reach Gemini at http://{address}/v: ")),
        "{message}"
    );
    let log = assert_complete_error_log(runs.path(), &message);
    for text in [&out.stdout, &out.stderr, &log] {
        for secret in ["pa55word", "proxyuser", "t0ken-in-query"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

#[test]
fn a_short_key_is_said_once_to_be_unredactable() {
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "short")
        .env("GEMINI_BASE_URL", "http://127.0.0.1:9")
        .args(["chat", "--claim-id", "CLM-HH-0001", "--no-record", "q"]);
    let out = run_command(&mut command);
    let warning =
        "warning: GEMINI_API_KEY is shorter than 8 characters, too short to redact safely";
    assert_eq!(out.stderr.matches(warning).count(), 1, "{}", out.stderr);
}

#[test]
fn a_stream_that_never_ends_is_stopped_at_16_mib_of_text_and_logged_whole() {
    let chunk = text_chunk(&"never ending ".repeat(5_000)).into_bytes();
    let server = endless(chunk, Duration::ZERO);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = "Gemini's reply grew past 16 MiB of text in one call; the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert_complete_error_log(runs.path(), message);
}

/// A stream that reports its usage as it goes (as Gemini does, in every
/// chunk) and never ends: the stopped call keeps the tokens reported so far,
/// and its cost stays unknown, since what was billed is not known.
#[test]
fn a_stopped_call_keeps_the_usage_reported_so_far_with_its_cost_unknown() {
    let chunk = serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "more ".repeat(5_000)}]}}],
        "usageMetadata": {"promptTokenCount": 1234, "candidatesTokenCount": 777, "totalTokenCount": 2011}
    });
    let chunk = format!("data: {chunk}\r\n\r\n").into_bytes();
    let server = endless(chunk, Duration::ZERO);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = "Gemini's reply grew past 16 MiB of text in one call; the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert_complete_error_log(runs.path(), message);
    let (log, _) = the_log(runs.path());
    let footer = log.footer.clone().unwrap();
    assert_eq!(
        footer.usage.input_tokens,
        Some(1234),
        "the tokens reported so far are kept"
    );
    assert_eq!(footer.usage.output_tokens, Some(777));
    let call = log.model_calls().next().unwrap();
    assert!(
        call.summary.as_ref().unwrap().partial,
        "marked as cut short"
    );
}

#[test]
fn a_50_mb_reply_is_stopped_at_the_text_bound() {
    let piece = text_chunk(&"x".repeat(64 * 1024));
    let body = piece
        .repeat(50 * 1024 * 1024 / piece.len() + 1)
        .into_bytes();
    let server = TestServer::start(vec![Box::new(move |_| Reply::Stream {
        body: body.clone(),
        piece: 256 * 1024,
        pause: Duration::ZERO,
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = "Gemini's reply grew past 16 MiB of text in one call; the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert_complete_error_log(runs.path(), message);
}

#[test]
fn a_stream_that_trickles_past_max_call_time_is_stopped() {
    let chunk = text_chunk("drip ").into_bytes();
    let server = endless(chunk, Duration::from_millis(50));
    let runs = tempfile::tempdir().unwrap();
    let out = chat(
        &server.base_url,
        runs.path(),
        &[("PROMPTLAB_MAX_CALL_TIME", "1s")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = "Gemini's call took longer than 1s (--max-call-time); the call was stopped";
    assert_eq!(last_error(&out.stdout), message);
    assert!(
        out.stdout.contains("drip"),
        "text streamed before the bound"
    );
    assert_complete_error_log(runs.path(), message);
}

#[test]
fn a_bad_max_call_time_is_a_usage_error() {
    for bad in ["0", "soon", "-5s"] {
        let flag = format!("--max-call-time={bad}");
        let out = run_command(promptlab().args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--no-record",
            &flag,
            "q",
        ]));
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(
            out.stderr.contains("expected a duration above 0"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn a_reply_asking_for_too_many_tool_calls_is_stopped_before_any_tool_runs() {
    // 129 calls in one event: one past the bound, a few KB on the wire.
    let call = serde_json::json!({"functionCall": {"name": "get_claim_section", "args": {"section": "policy"}}});
    let parts: Vec<_> = std::iter::repeat_n(call, 129).collect();
    let chunk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]});
    let stream = format!("data: {chunk}\r\n\r\n");
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(stream.clone()))]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let message = last_error(&out.stdout);
    assert_eq!(
        message,
        "Gemini's reply asked for more than 128 tool calls in one call; the call was stopped"
    );
    assert!(
        !out.stdout.contains("\"activity\""),
        "no tool ran: {:.500}",
        out.stdout
    );
    let log = assert_complete_error_log(runs.path(), &message);
    // Nor is what passed the bound kept: the calls forwarded before it (its
    // record's `toolCalls`), not the reply's parts (`providerState`).
    assert_eq!(log.matches("get_claim_section").count(), 128, "{log:.2000}");
    assert!(!log.contains("providerState"), "{log:.2000}");
    assert_eq!(server.requests().len(), 1, "no second request");
}

#[test]
fn a_reply_with_as_many_tool_calls_as_the_bound_runs_them() {
    let call = serde_json::json!({"functionCall": {"name": "get_claim_section", "args": {"section": "policy"}}});
    let parts: Vec<_> = std::iter::repeat_n(call, 128).collect();
    let calls = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]});
    let first = format!("data: {calls}\r\n\r\n");
    let answer = format!(
        "{}data: {}\r\n\r\n",
        text_chunk("Done."),
        serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]})
    );
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::stream(first.clone())),
        Box::new(move |_| Reply::stream(answer.clone())),
    ]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server.base_url, runs.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.matches("\"type\":\"tool_result\"").count(), 128);
}

#[test]
fn a_stall_names_the_flag_that_sets_the_idle_timeout() {
    let server = endless(text_chunk("late").into_bytes(), Duration::from_secs(10));
    let runs = tempfile::tempdir().unwrap();
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", &server.base_url)
        .env("PROMPTLAB_RUNS_DIR", runs.path())
        .args(["chat", "--claim-id", "CLM-HH-0001", "--format", "ndjson"])
        .args(["--idle-timeout", "0.3", "Is it covered?"]);
    let out = run_command(&mut command);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        last_error(&out.stdout),
        "Gemini's stream stalled: nothing arrived for 0.3 s (--idle-timeout)"
    );
}

/// Issue 61: `--max-call-time` took `20s`, but `--idle-timeout 10s` and
/// `--connect-timeout 10s` were refused. Every time flag (and its
/// variable) reads a humantime duration, a bare number still seconds.
#[test]
fn every_time_flag_takes_a_duration_or_a_number_of_seconds() {
    for (flags, env) in [
        (
            vec!["--idle-timeout", "300ms", "--connect-timeout", "10s"],
            None,
        ),
        (vec!["--idle-timeout=0.3", "--max-call-time", "2m"], None),
        (
            vec![],
            Some([
                ("PROMPTLAB_IDLE_TIMEOUT", "300ms"),
                ("PROMPTLAB_CONNECT_TIMEOUT", "1m"),
            ]),
        ),
    ] {
        let server = endless(text_chunk("late").into_bytes(), Duration::from_secs(10));
        let runs = tempfile::tempdir().unwrap();
        let mut command = promptlab();
        command
            .env("GEMINI_API_KEY", KEY)
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", runs.path())
            .args(["chat", "--claim-id", "CLM-HH-0001", "--format", "ndjson"])
            .args(&flags)
            .arg("Is it covered?");
        for (name, value) in env.into_iter().flatten() {
            command.env(name, value);
        }
        let out = run_command(&mut command);
        assert_eq!(out.code, 1, "{flags:?}: {}", out.stderr);
        assert_eq!(
            last_error(&out.stdout),
            "Gemini's stream stalled: nothing arrived for 0.3 s (--idle-timeout)"
        );
    }
    for bad in [
        "--idle-timeout=soon",
        "--connect-timeout=0",
        "--idle-timeout=2d",
    ] {
        let out = run_command(promptlab().args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--no-record",
            bad,
            "q",
        ]));
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("expected a duration above 0 and at most a day"),
            "{bad}: {}",
            out.stderr
        );
    }
}
