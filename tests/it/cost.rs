//! What runs cost (docs/cache.md#cost): prices from the table, thinking
//! tokens recorded, unknown never shown as 0, and `eval --max-cost`
//! stopping new turns — against a local HTTP test server standing in for
//! Gemini.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer};
use support::{Run, promptlab, run_command, write};

/// A one-call answer with these token counts.
fn answer(prompt: u64, output: u64, thoughts: u64) -> Responder {
    Box::new(move |_| {
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "The excess is £350."}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output,
                "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + output + thoughts},
            "modelVersion": "test"
        });
        Reply::stream(format!("data: {chunk}\r\n\r\n"))
    })
}

/// `priced-model` at $1 per thousand tokens in and out, $2 thinking.
const PRICES: &str = "currency: USD\nmodels:\n  priced-model:\n    source: the test\n    date: 2026-11-30\n    input: 1000\n    cachedInput: 100\n    output: 1000\n    thinking: 2000\n";

fn suite(dir: &Path, repeats: u32) -> std::path::PathBuf {
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: cost\nclaims: {{ids: [CLM-HH-0001]}}\nrepeats: {repeats}\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    message: What is the excess?\n    expect: {{answerContains: excess}}\n"
        ),
    )
}

fn eval(dir: &Path, server: &TestServer, args: &[&str]) -> Run {
    let prices = write(dir, "prices.yaml", PRICES);
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "cost-test-key")
        .env("GEMINI_BASE_URL", &server.base_url)
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .arg("--prices")
        .arg(prices)
        .arg("eval")
        .arg(dir.join("suite.yaml"))
        .args(["-j", "1"])
        .args(args);
    if !args.contains(&"--format") {
        command.args(["--format", "ndjson"]);
    }
    run_command(&mut command)
}

fn records(stdout: &str, kind: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == kind)
        .collect()
}

#[test]
fn a_turn_costs_its_tokens_at_the_table_rates_with_thinking_apart() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 1);
    // 10 in, 3 answer + 2 thinking out: 10×$0.001 + 3×$0.001 + 2×$0.002 = $0.017.
    let server = TestServer::start(vec![answer(10, 3, 2)]);
    let out = eval(dir.path(), &server, &["--model", "priced-model"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let variant = &records(&out.stdout, "summary")[0]["variants"][0];
    assert!(
        (variant["costUsd"].as_f64().unwrap() - 0.017).abs() < 1e-9,
        "{variant}"
    );
    assert_eq!(variant["thinkingTokens"], 2);
    assert_eq!(
        variant["outputTokens"], 5,
        "thinking is part of the output tokens"
    );
    let log = walk_one(&dir.path().join("runs"));
    let footer: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert!(
        (footer["costUsd"].as_f64().unwrap() - 0.017).abs() < 1e-9,
        "{footer}"
    );
    assert_eq!(footer["thinkingTokens"], 2);
}

#[test]
fn a_model_without_a_price_costs_unknown_never_zero() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 1);
    let server = TestServer::start(vec![answer(10, 3, 0)]);
    let out = eval(dir.path(), &server, &["--model", "gemini-9-ultra"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let variant = &records(&out.stdout, "summary")[0]["variants"][0];
    assert!(variant["costUsd"].is_null(), "{variant}");
    let mut pretty = promptlab();
    pretty
        .arg("eval")
        .arg(dir.path().join("suite.yaml"))
        .arg("--report")
        .arg(dir.path().join("runs"));
    let shown = run_command(&mut pretty);
    assert!(
        shown.stdout.contains("cost unknown (unknown/turn)"),
        "{}",
        shown.stdout
    );
}

#[test]
fn the_budget_stops_new_turns_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 4);
    let server = TestServer::start((0..4).map(|_| answer(10, 3, 2)).collect());
    // $0.017 a turn: after two turns ($0.034) the $0.03 budget is reached.
    let out = eval(
        dir.path(),
        &server,
        &["--model", "priced-model", "--max-cost", "0.03"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        server.requests().len(),
        2,
        "no turn started once the budget was reached"
    );
    let summary = &records(&out.stdout, "summary")[0];
    assert_eq!(summary["notRun"], 2);
    assert!(
        (summary["budgetReached"]["spentUsd"].as_f64().unwrap() - 0.034).abs() < 1e-9,
        "{summary}"
    );
    let pretty = eval(
        dir.path(),
        &TestServer::start((0..4).map(|_| answer(10, 3, 2)).collect()),
        &[
            "--model",
            "priced-model",
            "--max-cost",
            "$0.03",
            "--format",
            "pretty",
        ],
    );
    assert!(
        pretty
            .stdout
            .contains("budget of $0.0300 reached ($0.0340 spent): 2 of 4 turns not run"),
        "{}",
        pretty.stdout
    );

    let unpriced = eval(
        dir.path(),
        &server,
        &["--model", "gemini-9-ultra", "--max-cost", "1"],
    );
    assert_eq!(unpriced.code, 2);
    assert!(
        unpriced
            .stderr
            .contains("--max-cost: model `gemini-9-ultra` has no price"),
        "{}",
        unpriced.stderr
    );
    for bad in ["0", "-1", "five"] {
        let refused = eval(dir.path(), &server, &["--max-cost", bad]);
        assert_eq!(refused.code, 2, "{bad}: {}", refused.stderr);
    }
}

#[test]
fn a_bad_price_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in [
        ("currency: EUR\nmodels: {}\n", "only USD"),
        (
            "currency: USD\nmodels:\n  m: {source: s, date: d, input: -1, cachedInput: 0, output: 1}\n",
            "a rate must be",
        ),
        (
            "currency: USD\nmodels:\n  m: {source: s, date: d, input: 1, cachedInput: 0, output: 1, bonus: 2}\n",
            "bonus",
        ),
        ("not: [yaml", "--prices"),
    ] {
        let path = write(dir.path(), "p.yaml", text);
        let mut command = promptlab();
        command.arg("--prices").arg(&path).args(["claims", "list"]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{text}: {}", out.stderr);
    }
}

fn walk_one(dir: &Path) -> std::path::PathBuf {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        // `prompts/` holds the stored prompts, not logs.
        if path.is_dir() && entry.file_name() != "prompts" {
            return walk_one(&path);
        }
        if path.extension().is_some_and(|e| e == "ndjson") {
            return path;
        }
    }
    panic!("no run log under {}", dir.display())
}

#[test]
fn a_failed_call_costs_unknown_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path(), 1);
    let refused: Responder = Box::new(|_| {
        Reply::status(
            400,
            r#"{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}"#,
        )
    });
    let server = TestServer::start(vec![refused]);
    let out = eval(dir.path(), &server, &["--model", "priced-model"]);
    assert_eq!(out.code, 1);
    let variant = &records(&out.stdout, "summary")[0]["variants"][0];
    assert!(
        variant["costUsd"].is_null(),
        "a failed call may have been billed: {variant}"
    );
}

#[test]
fn a_budget_stop_leaves_every_variant_with_runs() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "suite.yaml",
        "name: cost\nclaims: {ids: [CLM-HH-0001]}\nrepeats: 3\ndefaults: {today: 2026-11-30}\n\
         variants:\n  - name: default\n  - name: terse\n    prompts: {system.base: Answer in one line.}\n\
         cases:\n  - name: excess\n    message: What is the excess?\n    expect: {answerContains: excess}\n",
    );
    let server = TestServer::start((0..6).map(|_| answer(10, 3, 2)).collect());
    // $0.017 a turn: the budget is reached after two turns.
    let out = eval(
        dir.path(),
        &server,
        &["--model", "priced-model", "--max-cost", "0.03"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let turns = records(&out.stdout, "turn");
    let variants: Vec<&str> = turns
        .iter()
        .map(|t| t["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["default", "terse"], "variants take turns");
    let summary = &records(&out.stdout, "summary")[0];
    for variant in summary["variants"].as_array().unwrap() {
        assert_eq!(variant["turns"], 1, "{variant}");
    }
}
