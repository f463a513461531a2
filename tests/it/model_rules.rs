//! The model table (`models/gemini.yaml`, `--models`) through the real
//! binary against a local Gemini server: each model gets the thinking
//! control it takes, the run log records the level asked for and the one
//! sent, the model-call cache keys on the one sent, a forced level the model
//! lacks is refused before any turn; and usage is never lost or invented —
//! an early stop keeps its tokens and cost, an impossible count is an error.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::http_server::{Reply, Responder, TestServer};
use support::{Run, promptlab, run_command};

fn answer(finish: &str, usage: &str) -> Responder {
    let body = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"role\":\"model\",\"parts\":[{{\"text\":\"The excess is £250.\"}}]}},\"finishReason\":\"{finish}\"}}],\"usageMetadata\":{usage}}}\r\n\r\n"
    );
    Box::new(move |_| Reply::stream(body.clone()))
}

fn ok() -> Responder {
    answer(
        "STOP",
        r#"{"promptTokenCount":100,"candidatesTokenCount":5}"#,
    )
}

fn chat(server: &TestServer, runs: &Path, args: &[&str]) -> Run {
    run_command(
        promptlab()
            .env("GEMINI_API_KEY", "rules-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", runs)
            .args(["chat", "--claim-id", "CLM-HH-0001", "--format", "ndjson"])
            .args(args)
            .arg("What is the excess?"),
    )
}

/// Every record of every run log under `dir`.
fn logs(dir: &Path) -> Vec<Vec<Value>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path: PathBuf = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "ndjson") {
                let text = std::fs::read_to_string(&path).unwrap();
                found.push(
                    text.lines()
                        .map(|line| serde_json::from_str(line).unwrap())
                        .collect(),
                );
            }
        }
    }
    found
}

fn record<'a>(log: &'a [Value], kind: &str) -> &'a Value {
    log.iter()
        .find(|r| r["record"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record in {log:?}"))
}

#[test]
fn a_level_the_model_lacks_is_sent_as_the_next_one_up_and_both_are_recorded() {
    let runs = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![ok()]);
    let out = chat(
        &server,
        runs.path(),
        &[
            "--model",
            "gemini-3-pro-preview",
            "--thinking-level",
            "medium",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        serde_json::json!({"thinkingLevel": "high"})
    );
    assert_eq!(
        out.stderr
            .matches("note: gemini-3-pro-preview takes low or high: medium sent as high")
            .count(),
        1,
        "{}",
        out.stderr
    );
    let logs = logs(runs.path());
    let header = record(&logs[0], "header");
    assert_eq!(header["thinkingLevel"], "medium");
    assert_eq!(header["thinkingSent"], serde_json::json!({"level": "high"}));
}

#[test]
fn a_2_5_model_gets_a_budget_and_an_unknown_model_the_level_with_a_warning() {
    let runs = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![ok(), ok()]);
    let out = chat(
        &server,
        runs.path(),
        &["--model", "gemini-2.5-flash", "--thinking-level", "minimal"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("note:"), "{}", out.stderr);
    let out = chat(
        &server,
        runs.path(),
        &["--model", "gemini-9-ultra", "--thinking-level", "medium"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("warning: model `gemini-9-ultra` is not in the model table (models/gemini.yaml, --models): its thinking rules are unknown, so thinkingLevel medium is sent as asked"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    let thinking = |i: usize| requests[i].json()["generationConfig"]["thinkingConfig"].clone();
    assert_eq!(thinking(0), serde_json::json!({"thinkingBudget": 0}));
    assert_eq!(thinking(1), serde_json::json!({"thinkingLevel": "medium"}));
}

#[test]
fn a_models_file_adds_rules_and_a_bad_one_is_refused_precisely() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("models.yaml");
    std::fs::write(
        &file,
        "models:\n  gemini-9-ultra:\n    source: a test\n    date: 2026-12-01\n    thinkingBudget: {minimal: 64, low: 512, medium: 4096, high: 65536}\n",
    )
    .unwrap();
    let server = TestServer::start(vec![ok()]);
    let out = run_command(
        promptlab()
            .env("GEMINI_API_KEY", "rules-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_MODELS", &file)
            .args(["chat", "--claim-id", "CLM-HH-0001", "--no-record"])
            .args([
                "--model",
                "gemini-9-ultra",
                "--thinking-level",
                "medium",
                "Hi",
            ]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].json()["generationConfig"]["thinkingConfig"],
        serde_json::json!({"thinkingBudget": 4096})
    );
    for (text, problem) in [
        (
            "models:\n  m:\n    source: s\n    date: d\n    thinkingLevel: [low]\n    thinkingBudget: {minimal: 0, low: 1, medium: 2, high: 3}\n",
            "model `m`: give one of thinkingLevel, thinkingBudget or reasoningEffort",
        ),
        (
            "models:\n  m:\n    source: s\n    date: d\n    thinkingLevel: [extreme]\n",
            "field `models.m.thinkingLevel[0]`",
        ),
        (
            "models:\n  m:\n    source: s\n    date: d\n    thinkingBudget: {minimal: 9, low: 1, medium: 2, high: 3}\n",
            "model `m`: thinkingBudget must not fall from minimal to high",
        ),
        (
            "models:\n  m:\n    source: s\n    date: d\n",
            "model `m`: needs thinkingLevel",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = run_command(promptlab().arg("--models").arg(&file).args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--no-record",
            "Hi",
        ]));
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        let prefix = format!("--models `{}`: ", file.display());
        assert!(
            out.stderr.contains(&prefix) && out.stderr.contains(problem),
            "{text}: {}",
            out.stderr
        );
    }
}

fn suite(dir: &Path, variants: &str, case_expect: &str) -> PathBuf {
    let path = dir.join("suite.yaml");
    std::fs::write(
        &path,
        format!(
            "name: rules\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\nvariants:\n{variants}\
             cases:\n  - name: excess\n    message: What is the excess?\n    expect: {case_expect}\n"
        ),
    )
    .unwrap();
    path
}

fn eval(server: &TestServer, dir: &Path, suite: &Path, extra: &[&str]) -> Run {
    run_command(
        promptlab()
            .env("GEMINI_API_KEY", "rules-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .arg("eval")
            .arg(suite)
            .args(["-j", "1"])
            .args(extra),
    )
}

#[test]
fn a_forced_level_the_model_lacks_is_refused_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        "  - {name: pro-minimal-forced, model: gemini-3-pro-preview, thinkingLevel: minimal, forceThinkingLevel: true}\n",
        "{noError: true}",
    );
    let server = TestServer::start(vec![ok()]);
    let out = eval(&server, dir.path(), &path, &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "variant `pro-minimal-forced`: forceThinkingLevel: gemini-3-pro-preview takes low or high, not minimal"
        ),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty(), "no turn ran");
}

#[test]
fn the_model_call_cache_keys_on_the_level_sent() {
    let dir = tempfile::tempdir().unwrap();
    // Both variants ask 3 Pro for a level it sends as high: one request.
    let path = suite(
        dir.path(),
        "  - {name: asks-medium, model: gemini-3-pro-preview, thinkingLevel: medium}\n  - {name: asks-high, model: gemini-3-pro-preview, thinkingLevel: high}\n",
        "{noError: true}",
    );
    let server = TestServer::start(vec![ok()]);
    let out = eval(&server, dir.path(), &path, &["--cache"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(server.requests().len(), 1, "{}", out.stderr);
    assert_eq!(
        out.stderr
            .matches("note: gemini-3-pro-preview takes low or high: medium sent as high")
            .count(),
        1,
        "said once per run: {}",
        out.stderr
    );
}

#[test]
fn an_early_stop_keeps_its_usage_and_cost() {
    let runs = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![answer(
        "MAX_TOKENS",
        r#"{"promptTokenCount":900,"candidatesTokenCount":8000,"thoughtsTokenCount":40}"#,
    )]);
    let out = chat(&server, runs.path(), &["--model", "gemini-3-pro-preview"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("finish reason MAX_TOKENS"),
        "{}",
        out.stdout
    );
    let logs = logs(runs.path());
    let footer = record(&logs[0], "footer");
    assert_eq!(footer["status"], "error");
    assert_eq!(footer["usage"]["inputTokens"], 900);
    assert_eq!(footer["usage"]["outputTokens"], 8040);
    let cost = footer["costUsd"]
        .as_f64()
        .expect("a known cost, not unknown");
    let expected = 900.0 * 2.0 / 1e6 + 8040.0 * 12.0 / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}

#[test]
fn an_impossible_token_count_is_an_error_never_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        "  - {name: pro, model: gemini-3-pro-preview, thinkingLevel: high}\n",
        "{maxOutputTokens: 10}",
    );
    let server = TestServer::start(vec![answer(
        "STOP",
        r#"{"promptTokenCount":100,"candidatesTokenCount":1e30}"#,
    )]);
    let out = eval(&server, dir.path(), &path, &["--format", "ndjson"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("Gemini reported an impossible token count: candidatesTokenCount 1e30"),
        "{}",
        out.stdout
    );
    let usage_field_warning = answer(
        "STOP",
        r#"{"promptTokenCount":"100","candidatesTokenCount":[5]}"#,
    );
    let runs = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![usage_field_warning]);
    let out = chat(&server, runs.path(), &["--model", "gemini-3-pro-preview"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let logs = logs(runs.path());
    let call = record(&logs[0], "model_call");
    assert_eq!(call["call"]["summary"]["usage"]["inputTokens"], 100);
    assert_eq!(
        call["call"]["summary"]["warnings"][0],
        "usageMetadata.candidatesTokenCount is not a token count (`[5]`): left out"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever a `--models` file holds, loading it is a table or an error.
    #[test]
    fn no_models_file_makes_loading_panic(text in "(models:\n  [a-z.-]{1,8}:\n    (source|date|thinkingLevel|thinkingBudget|x): [\\[\\]{}a-z0-9:, -]{0,40}\n){0,4}|[\\x00-\\x7f]{0,80}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.yaml");
        std::fs::write(&path, text).unwrap();
        let _ = promptlab::models::ModelTable::embedded().with_file(&path);
    }
}

/// A `--models` file is the table every kind of turn fits its level by,
/// not only Gemini's wire: a scripted chat turn and a scripted eval turn
/// record the level the file's rules give (with the shipped table the
/// unknown model would be sent `medium`).
#[test]
fn a_models_file_rules_scripted_and_replayed_turns_too() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.yaml");
    std::fs::write(
        &models,
        "models:\n  gemini-9-ultra:\n    source: a test\n    date: 2026-12-01\n    thinkingLevel: [low, high]\n",
    )
    .unwrap();
    let script = dir.path().join("answer.yaml");
    std::fs::write(
        &script,
        support::reports::answer_script("The excess is 250."),
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let base = |command: &mut std::process::Command| {
        command
            .arg("--models")
            .arg(&models)
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["--model", "gemini-9-ultra", "--thinking-level", "medium"]);
    };
    let mut chat = promptlab();
    chat.args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "script",
        "--script",
    ])
    .arg(&script);
    base(&mut chat);
    let out = run_command(chat.arg("What is the excess?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let suite = suite(dir.path(), "  - name: ultra\n", "{answerContains: excess}");
    let mut eval = promptlab();
    eval.arg("eval")
        .arg(&suite)
        .args(["--provider", "script", "--script"])
        .arg(&script);
    base(&mut eval);
    let out = run_command(&mut eval);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let logs = logs(&runs);
    assert_eq!(logs.len(), 2);
    for log in &logs {
        let header = record(log, "header");
        assert_eq!(header["thinkingLevel"], "medium");
        assert_eq!(
            header["thinkingSent"],
            serde_json::json!({"level": "high"}),
            "{header}"
        );
    }
}
