//! Variants that change the model and thinking level (issue 20): the model
//! reaches the wire, resume never reuses a turn of another model, the plan
//! and the run log say which model and level, and compare says when the
//! sides differ in model.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::http_server::{Reply, TestServer, fixture};
use support::{promptlab, run_command, write};

const OK: &str = "turns:\n  - text: The excess is in the policy.\n    usage: {inputTokens: 10, outputTokens: 5, cacheReadTokens: 0}\n";

fn suite(dir: &Path, variants: &str) -> PathBuf {
    write(dir, "ok.yaml", OK);
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: models\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\n{variants}cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n"
        ),
    )
}

const TWO_MODELS: &str = "variants:\n  - name: lite-low\n    model: gemini-3.1-flash-lite\n    thinkingLevel: low\n  - name: pro-high\n    model: gemini-3-pro\n    thinkingLevel: high\n";

#[test]
fn each_variant_asks_the_wire_for_its_own_model() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), TWO_MODELS);
    let server = TestServer::start(
        (0..2)
            .map(|_| {
                Box::new(|_: &_| Reply::stream(fixture("streaming-success-basic-reply-short.txt")))
                    as support::http_server::Responder
            })
            .collect(),
    );
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .env("GEMINI_API_KEY", "test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            // Wide enough for the summary's model column (80 leaves it out).
            .env("COLUMNS", "160")
            .args(["eval", "-j", "1", "--min-pass-rate", "0"])
            .arg(&suite),
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let mut paths: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    paths.sort();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(
        paths[0].starts_with("/v1beta/models/gemini-3-pro:streamGenerateContent"),
        "{paths:?}"
    );
    assert!(
        paths[1].starts_with("/v1beta/models/gemini-3.1-flash-lite:streamGenerateContent"),
        "{paths:?}"
    );
    let levels: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["generationConfig"]["thinkingConfig"]["thinkingLevel"].to_string())
        .collect();
    assert!(
        levels.iter().any(|l| l.to_lowercase().contains("high")),
        "{levels:?}"
    );
    assert!(out.stdout.contains("gemini-3-pro · high"), "{}", out.stdout);
}

#[test]
fn same_prompt_other_model_is_another_version_and_list_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let two = suite(dir.path(), TWO_MODELS);
    let out = run_command(promptlab().args(["eval", "--list"]).arg(&two));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("lite-low\tgemini-3.1-flash-lite · low\tCLM-HH-0001\texcess\t1"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("pro-high\tgemini-3-pro · high\t"),
        "{}",
        out.stdout
    );
    let twins = suite(
        dir.path(),
        "variants:\n  - name: a\n    model: m1\n  - name: b\n    model: m1\n",
    );
    let out = run_command(promptlab().args(["eval", "--list"]).arg(&twins));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("same prompt version and model"),
        "{}",
        out.stderr
    );
}

#[test]
fn resume_never_reuses_a_turn_recorded_under_another_model() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "");
    let eval = |model: &str| {
        run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args(["eval", "--provider", "script", "--resume", "--model", model])
                .arg(&suite),
        )
    };
    assert_eq!(eval("model-a").code, 0);
    let again = eval("model-b");
    assert!(
        again.stderr.contains("0 turns already done, 1 to run"),
        "{}",
        again.stderr
    );
    let same = eval("model-a");
    assert!(
        same.stderr.contains("1 turns already done, 0 to run"),
        "{}",
        same.stderr
    );
}

#[test]
fn a_forced_thinking_level_wins_over_the_quick_action_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    write(dir.path(), "ok.yaml", OK);
    // `summarise` sets its own thinking level; the variant forces `minimal`.
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: forced\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\nvariants:\n  - name: forced\n    thinkingLevel: minimal\n    forceThinkingLevel: true\ncases:\n  - name: summary\n    capability: summarise\n    message: Summarise.\n    script: ok.yaml\n",
    );
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["eval", "--provider", "script"])
            .arg(&suite),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let paths = promptlab::runs::store::run_log_paths(&runs).unwrap();
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&paths[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["thinkingLevel"], "minimal");
    assert_eq!(header["request"]["forceThinkingLevel"], true);
}

#[test]
fn compare_says_when_the_sides_differ_in_model() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "");
    for (folder, model) in [("A", "model-a"), ("B", "model-b")] {
        let out = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", dir.path().join(folder))
                .args(["eval", "--provider", "script", "--model", model])
                .arg(&suite),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let out = run_command(
        promptlab()
            .arg("compare")
            .arg(dir.path().join("A"))
            .arg(dir.path().join("B")),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("the sides differ in model: A `default` ran model-a · low, B `default` ran model-b · low"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("model-a · low"), "{}", out.stdout);
}

#[test]
fn two_variants_of_one_run_compare_with_the_model_difference_named() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), TWO_MODELS);
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["eval", "--provider", "script"])
            .arg(&suite),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let side = |variant: &str| format!("{}@{variant}", runs.display());
    let out = run_command(
        promptlab()
            .arg("compare")
            .arg(side("lite-low"))
            .arg(side("pro-high"))
            .args(["--format", "json"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(report["pairs"][0]["version"], "lite-low ↔ pro-high");
    assert!(
        report["warnings"]
            .to_string()
            .contains("the sides differ in model"),
        "{}",
        report["warnings"]
    );
}

/// At 80 columns (every CI log) and 120, the eval summary of variants that
/// differ only in model keeps the model column — the one that tells them
/// apart — and says the columns alike in every row once above the table.
#[test]
fn the_model_column_survives_80_columns_and_alike_columns_are_said_once() {
    let dir = tempfile::tempdir().unwrap();
    for width in [80usize, 120] {
        let out = run_command(
            promptlab()
                .env(
                    "PROMPTLAB_RUNS_DIR",
                    dir.path().join(format!("runs-{width}")),
                )
                .env("COLUMNS", width.to_string())
                .args([
                    "eval",
                    "suites/models.yaml",
                    "--provider",
                    "script",
                    "--quiet",
                ]),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let table: Vec<&str> = out
            .stdout
            .lines()
            .skip_while(|line| !line.starts_with("Suite models"))
            .skip(1)
            .take_while(|line| !line.contains(": cost"))
            .collect();
        assert!(
            table[0].starts_with("all rows: fingerprint default"),
            "{width}: {}",
            out.stdout
        );
        let text = table.join("\n");
        for model in ["gemini-3.1-flash-lite · low", "gemini-3-pro-preview · high"] {
            assert!(text.contains(model), "{width}: {text}");
        }
        for line in &table {
            assert!(line.chars().count() <= width, "{width}: {line}");
        }
    }
}
