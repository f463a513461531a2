//! The model-call cache (`--cache`, docs/cache.md) against a local HTTP
//! server standing in for Gemini: a warm run calls no model and reaches the
//! same verdicts, an edit misses only the turns it changes, repeats stay
//! separate samples, errors are never cached, and concurrent runs share a
//! cache safely.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer};
use support::{Run, promptlab, run_command, write};

fn answer() -> Responder {
    Box::new(|_| {
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "The excess is £350."}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 10, "totalTokenCount": 1010},
        });
        Reply::stream(format!("data: {chunk}\r\n\r\n"))
    })
}

fn answers(count: usize) -> Vec<Responder> {
    (0..count).map(|_| answer()).collect()
}

/// Two cases, one a quick action (its own capability prompt), `repeats` samples each.
fn suite(dir: &Path, repeats: u32, variant_overrides: Option<&Path>) -> PathBuf {
    let variants = variant_overrides
        .map(|path| {
            format!(
                "variants:\n  - name: edited\n    overrides: [{}]\n",
                path.display()
            )
        })
        .unwrap_or_default();
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: cached\nclaims: {{ids: [CLM-HH-0001]}}\nrepeats: {repeats}\ndefaults: {{today: 2026-11-30}}\n{variants}\
             cases:\n  - name: excess\n    message: What is the excess?\n    expect: {{answerContains: excess}}\n\
             \x20 - name: summary\n    capability: summarise\n    message: Summarise this claim.\n    expect: {{answerContains: excess}}\n"
        ),
    )
}

/// With `--cache` unless `--no-cache` is given; `-j 2` unless `-j` is.
fn eval(dir: &Path, server: &TestServer, extra: &[&str]) -> Run {
    let mut command = eval_command(dir, server);
    if !extra.contains(&"--no-cache") {
        command.arg("--cache");
    }
    if !extra.contains(&"-j") {
        command.args(["-j", "2"]);
    }
    command.args(extra);
    run_command(&mut command)
}

fn eval_command(dir: &Path, server: &TestServer) -> std::process::Command {
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "cache-test-key")
        .env("GEMINI_BASE_URL", &server.base_url)
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("eval")
        .arg(dir.join("suite.yaml"))
        .args(["--format", "ndjson"]);
    command
}

fn turns(stdout: &str) -> Vec<Value> {
    let mut turns: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "turn")
        .collect();
    turns.sort_by_key(|t| format!("{}{}{}", t["variant"], t["case"], t["sample"]));
    turns
}

fn verdicts(stdout: &str) -> Vec<(String, String, String)> {
    turns(stdout)
        .iter()
        .map(|t| {
            (
                t["case"].to_string(),
                t["sample"].to_string(),
                t["verdict"].to_string(),
            )
        })
        .collect()
}

#[test]
fn a_warm_run_calls_no_model_and_reaches_the_same_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 3, None);
    let server = TestServer::start(answers(6));
    let cold = eval(dir.path(), &server, &[]);
    assert_eq!(cold.code, 0, "{}", cold.stderr);
    assert_eq!(
        server.requests().len(),
        6,
        "repeats are separate samples: 2 cases × 3, none collapsed"
    );
    let warm = eval(dir.path(), &server, &[]);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    assert_eq!(
        server.requests().len(),
        6,
        "the warm run made no model request"
    );
    assert_eq!(verdicts(&cold.stdout), verdicts(&warm.stdout));
    // Same events, marked as cached in the logs; cost nothing, no latency.
    let summary: Value = warm
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["kind"] == "summary")
        .unwrap();
    let variant = &summary["variants"][0];
    assert_eq!(variant["cachedTurns"], 6);
    assert_eq!(variant["costUsd"], 0.0);
    assert!(
        variant["latencyP50Ms"].is_null(),
        "cached turns say nothing of latency: {variant}"
    );
    let log = turns(&warm.stdout)[0]["runLog"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.contains("\"cached\":true"), "{text}");
    // `cache: true` in the suite caches too, and --no-cache overrides it.
    let text = std::fs::read_to_string(dir.path().join("suite.yaml")).unwrap();
    std::fs::write(
        dir.path().join("suite.yaml"),
        text.replace("repeats: 3", "repeats: 3\ncache: true"),
    )
    .unwrap();
    let mut command = eval_command(dir.path(), &server);
    assert_eq!(run_command(&mut command).code, 0);
    assert_eq!(
        server.requests().len(),
        6,
        "`cache: true`: all from the cache"
    );
    let uncached = eval(dir.path(), &server, &["--no-cache"]);
    assert!(
        uncached.code != 2 && server.requests().len() > 6,
        "{}",
        uncached.stderr
    );
}

#[test]
fn an_edit_misses_only_the_turns_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let edit = write(
        dir.path(),
        "edit.yaml",
        "prompts:\n  capability.summarise: Summarise in three bullet points.\n",
    );
    suite(dir.path(), 1, None);
    let server = TestServer::start(answers(3));
    assert_eq!(eval(dir.path(), &server, &[]).code, 0);
    assert_eq!(server.requests().len(), 2);
    // Only the quick action's prompt changes: only its turn calls the model.
    suite(dir.path(), 1, Some(&edit));
    let edited = eval(dir.path(), &server, &[]);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    assert_eq!(
        server.requests().len(),
        3,
        "one new request, for the summary turn"
    );
    let sent = server.requests()[2].json();
    assert!(
        sent["systemInstruction"]
            .to_string()
            .contains("three bullet points")
    );
}

#[test]
fn an_errored_call_is_never_cached() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 1, None);
    let refused: Responder = Box::new(|_| {
        Reply::status(
            400,
            r#"{"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}}"#,
        )
    });
    let server = TestServer::start(vec![refused, answer(), answer(), answer()]);
    let first = eval(dir.path(), &server, &["-j", "1"]);
    assert_eq!(first.code, 1, "{}", first.stdout);
    let before = server.requests().len();
    let second = eval(dir.path(), &server, &["-j", "1"]);
    assert_eq!(second.code, 0, "{}", second.stdout);
    assert_eq!(
        server.requests().len(),
        before + 1,
        "the errored turn asked again; the other came from the cache"
    );
}

#[test]
fn concurrent_evals_share_one_cache_safely() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 5, None);
    let server = TestServer::start(answers(40));
    let children: Vec<_> = (0..2)
        .map(|_| {
            eval_command(dir.path(), &server)
                .args(["--cache", "-j", "2"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let made = server.requests().len();
    assert!(
        (10..=20).contains(&made),
        "each process made at most its 10 calls: {made}"
    );
    let warm = eval(dir.path(), &server, &[]);
    assert_eq!(warm.code, 0);
    assert_eq!(
        server.requests().len(),
        made,
        "every entry written by either is whole and read back"
    );
    let leftovers: Vec<PathBuf> = support::files_under(&dir.path().join("cache"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn chat_with_cache_answers_an_unchanged_turn_without_the_model() {
    let dir = tempfile::tempdir().unwrap();
    // One answer; any further request gets a 500.
    let server = TestServer::start(answers(1));
    let chat = || {
        let mut command = promptlab();
        command
            .env("GEMINI_API_KEY", "cache-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args([
                "chat",
                "--claim-id",
                "CLM-HH-0001",
                "--cache",
                "--format",
                "ndjson",
                "What is the excess?",
            ]);
        run_command(&mut command)
    };
    let live = chat();
    assert_eq!(live.code, 0, "{}", live.stderr);
    let cached = chat();
    assert_eq!(cached.code, 0, "{}", cached.stderr);
    assert_eq!(
        server.requests().len(),
        1,
        "the second turn came from the cache"
    );
    let shape = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|mut event| {
                event.as_object_mut().unwrap().remove("turnId");
                event.to_string()
            })
            .collect()
    };
    assert_eq!(
        shape(&live.stdout),
        shape(&cached.stdout),
        "the same events"
    );
}

#[test]
fn cache_stats_prune_and_clear_touch_only_entries() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 1, None);
    let server = TestServer::start(answers(2));
    assert_eq!(eval(dir.path(), &server, &[]).code, 0);
    let keep = write(&dir.path().join("cache").join("model"), "notes.txt", "mine");
    let cache = |args: &[&str]| {
        let mut command = promptlab();
        command
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("cache")
            .args(args);
        run_command(&mut command)
    };
    let stats = cache(&["stats"]);
    assert_eq!(stats.code, 0, "{}", stats.stderr);
    assert!(
        stats.stdout.contains("model: 2 model calls"),
        "{}",
        stats.stdout
    );
    assert!(stats.stdout.contains("judge: empty"), "{}", stats.stdout);
    let pruned = cache(&["prune", "--older-than", "1h"]);
    assert!(
        pruned.stdout.contains("model: pruned 0 model calls"),
        "{}",
        pruned.stdout
    );
    let cleared = cache(&["clear", "--model"]);
    assert!(
        cleared.stdout.contains("model: removed 2 model calls"),
        "{}",
        cleared.stdout
    );
    assert!(
        keep.exists(),
        "a file that is not an entry is never removed"
    );
    assert!(cache(&["stats"]).stdout.contains("model: empty"));
    let bad = cache(&["prune", "--older-than", "soon"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("not a duration"), "{}", bad.stderr);
}

#[test]
fn another_endpoint_is_another_model() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestServer::start(answers(1));
    let second = TestServer::start(answers(1));
    for server in [&first, &second] {
        let mut command = promptlab();
        command
            .env("GEMINI_API_KEY", "cache-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args([
                "chat",
                "--no-record",
                "--claim-id",
                "CLM-HH-0001",
                "--cache",
                "--format",
                "ndjson",
                "What is the excess?",
            ]);
        assert_eq!(run_command(&mut command).code, 0);
    }
    assert_eq!(
        second.requests().len(),
        1,
        "a mock's answer is never served for another endpoint"
    );
}
