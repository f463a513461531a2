//! A streamed answer in the run log (issue #66): its deltas written as
//! `text` records, its text kept once — while the user still sees every
//! delta — and read back as the calls a log of schema 4 held. Logs of
//! schema 4 as the previous version wrote them (`tests/data/runlog-v4/`,
//! two turns over OpenAI's and Gemini's recorded streams, with what `runs
//! show` and `replay` printed for them then) read as before.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::chat::ChatEvent;
use promptlab::runs::{RunLog, read_run_log};
use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer, fixture};
use support::openai_streams::{delta, finish, sse, usage};
use support::{promptlab, run_command, run_logs_under};

const V4: &str = "tests/data/runlog-v4";

/// The schema-4 log of each provider's turn, by the provider's name.
fn v4_log(provider: &str) -> PathBuf {
    let logs = run_logs_under(&support::repo_root().join(V4));
    logs.into_iter()
        .find(|log| read_run_log(log).unwrap().header.provider == provider)
        .unwrap()
}

fn printed(name: &str) -> String {
    std::fs::read_to_string(support::repo_root().join(V4).join("printed").join(name)).unwrap()
}

/// The replay's `done` has a fresh turn id; all else is as it was.
fn fresh(text: &str) -> String {
    let at = text.find("\"turnId\":\"").unwrap() + 10;
    format!("{}{}", &text[..at], &text[at + 36..])
}

#[test]
fn logs_of_schema_4_show_and_replay_as_they_did() {
    for provider in ["openai", "gemini"] {
        let log = v4_log(provider);
        let relative = log.strip_prefix(support::repo_root()).unwrap();
        let relative = relative.to_str().unwrap();
        assert_eq!(read_run_log(&log).unwrap().header.schema, 4);
        let run = |args: &[&str]| run_command(promptlab().env("TZ", "UTC").args(args));
        let shown = run(&["runs", "show", relative]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        assert_eq!(shown.stdout, printed(&format!("{provider}.show.txt")));
        let events = run(&["runs", "show", relative, "--format", "ndjson"]);
        assert_eq!(
            events.stdout,
            printed(&format!("{provider}.show-ndjson.txt"))
        );
        let replayed = run(&["replay", relative, "--no-record"]);
        assert_eq!(replayed.code, 0, "{}", replayed.stderr);
        let said = printed(&format!("{provider}.replay-stderr.txt"));
        assert_eq!(replayed.stderr, said);
        let stdout = printed(&format!("{provider}.replay.txt"));
        assert_eq!(fresh(&replayed.stdout), fresh(&stdout));
    }
}

/// The streams the schema-4 logs were recorded from.
fn replies(provider: &str) -> Vec<Responder> {
    if provider == "gemini" {
        let round_one = String::from_utf8(fixture(
            "fantasy__TestGoogleCommon__gemini-3-pro-preview__tool_streaming.0.sse",
        ))
        .unwrap()
        .replace(
            r#""name": "weather","args": {"location": "Florence, Italy"}"#,
            r#""name": "get_claim_section","args": {"section": "coverage"}"#,
        );
        let round_two =
            fixture("fantasy__TestGoogleCommon__gemini-3-pro-preview__tool_streaming.1.sse");
        return vec![
            Box::new(move |_| Reply::stream(round_one.clone())),
            Box::new(move |_| Reply::stream(round_two.clone())),
        ];
    }
    let text = |pieces: &[&str]| -> Vec<Value> {
        pieces
            .iter()
            .map(|piece| delta(json!({"content": piece})))
            .collect()
    };
    let mut round_one = vec![delta(json!({"role": "assistant", "content": ""}))];
    round_one.extend(text(&["Let me ", "check the ", "policy."]));
    round_one.extend([
        delta(json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_claim_section", "arguments": ""}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"section\": \"policy\"}"}}]})),
        finish("tool_calls"),
        usage(1200, 900, 40, 0),
    ]);
    let mut round_two = vec![delta(json!({"role": "assistant", "content": ""}))];
    round_two.extend(text(&[
        "The excess",
        " is £350",
        ", as the",
        " policy section",
        " records.",
    ]));
    round_two.extend([finish("stop"), usage(1500, 1100, 20, 0)]);
    let (one, two) = (sse(&round_one), sse(&round_two));
    vec![
        Box::new(move |_| Reply::stream(one.clone())),
        Box::new(move |_| Reply::stream(two.clone())),
    ]
}

/// The turn of `provider`'s schema-4 log, recorded now into `runs`: what
/// it printed (NDJSON) and its log.
fn record_again(provider: &str, runs: &Path) -> (String, PathBuf) {
    let server = TestServer::start(replies(provider));
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    let (model, message) = match provider {
        "gemini" => {
            command
                .env("GEMINI_API_KEY", "test-key")
                .env("GEMINI_BASE_URL", &server.base_url)
                .arg("chat");
            ("gemini-3.1-flash-lite", "Is it covered?")
        }
        _ => {
            command
                .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
                .args(["chat", "--provider", "openai"]);
            ("gpt-5-mini", "What is the excess?")
        }
    };
    let out = run_command(command.args(["--model", model]).args([
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
        "--format",
        "ndjson",
        message,
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let logs = run_logs_under(runs);
    assert_eq!(logs.len(), 1, "{logs:?}");
    (out.stdout, logs.into_iter().next().unwrap())
}

fn answer(log: &RunLog) -> String {
    log.events()
        .filter_map(|event| match event {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_streamed_answer_is_kept_once_and_reads_back_as_schema_4_kept_it() {
    for (provider, piece) in [("openai", " records."), ("gemini", "Stay hydrated")] {
        let runs = tempfile::tempdir().unwrap();
        let (printed, path) = record_again(provider, runs.path());
        let (new, old) = (
            read_run_log(&path).unwrap(),
            read_run_log(&v4_log(provider)).unwrap(),
        );
        assert_eq!(new.header.schema, 5);
        assert_eq!(answer(&new), answer(&old));
        let calls = new.model_calls().zip(old.model_calls());
        assert_eq!(new.model_calls().count(), 2);
        for (new_call, old_call) in calls {
            assert_eq!(new_call.text, old_call.text);
            assert_eq!(new_call.tool_calls, old_call.tool_calls);
            let state = |call: &promptlab::chat::ModelCallRecord| {
                call.summary.as_ref().unwrap().provider_state.clone()
            };
            assert_eq!(
                serde_json::to_string(&state(new_call)).unwrap(),
                serde_json::to_string(&state(old_call)).unwrap(),
                "{provider}: the provider state reads back byte for byte"
            );
        }
        // The answer once in the log, where schema 4 had it three times.
        let bytes = std::fs::read_to_string(&path).unwrap();
        let old_bytes = std::fs::read_to_string(v4_log(provider)).unwrap();
        assert_eq!(old_bytes.matches(piece).count(), 3, "{provider}");
        assert_eq!(bytes.matches(piece).count(), 1, "{provider}: {bytes}");
        // The user saw every delta; the log holds them all, in fewer records.
        let seen = printed
            .lines()
            .filter(|l| l.contains(r#""type":"text_delta""#));
        let records: Vec<Value> = bytes
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|record| record["record"] == "text")
            .collect();
        let held: u64 = records.iter().map(|r| r["deltas"].as_u64().unwrap()).sum();
        assert_eq!(held, seen.count() as u64, "{provider}: {bytes}");
        assert!(!bytes.contains(r#""type":"text_delta""#), "{provider}");
        let replayed =
            run_command(promptlab().args(["replay", path.to_str().unwrap(), "--no-record"]));
        assert_eq!(replayed.code, 0, "{}", replayed.stderr);
        assert!(
            replayed.stderr.starts_with("replay matches the recording"),
            "{}",
            replayed.stderr
        );
    }
}
