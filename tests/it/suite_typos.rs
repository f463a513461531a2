//! Typos that used to pass: a misspelt tool name in `toolCalled` /
//! `toolNotCalled` is refused when the suite loads (also by `--list`), a
//! misspelt `{{placeholder}}` is warned about on stderr, in the NDJSON
//! summary and in the run log (refused under `--strict`), and a blank
//! override of a known id is not answered with "did you mean" that same id.

use crate::support;

use std::path::Path;

use promptlab::runs::read_run_log;
use serde_json::Value;
use support::{promptlab, run_command, write};

fn suite_with(dir: &Path, body: &str) -> std::path::PathBuf {
    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    write(
        dir,
        "suite.yaml",
        &format!("name: typos\nclaims:\n  ids: [CLM-HH-0001]\n{body}"),
    )
}

fn eval(dir: &Path, suite: &Path, extra: &[&str]) -> support::Run {
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
            .args(["eval", "--provider", "script"])
            .arg(suite)
            .args(extra),
    )
}

#[test]
fn a_misspelt_tool_name_is_refused_at_load_with_a_did_you_mean() {
    for key in ["toolNotCalled", "toolCalled"] {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite_with(
            dir.path(),
            &format!(
                "cases:\n  - name: a\n    message: Excess?\n    script: ok.yaml\n    expect:\n      {key}: [get_claim_sectoin]\n"
            ),
        );
        for extra in [&[][..], &["--list"][..], &["--strict"][..]] {
            let out = eval(dir.path(), &suite, extra);
            assert_eq!(out.code, 2, "{key} {extra:?}: {}{}", out.stdout, out.stderr);
            assert!(
                out.stderr.contains(&format!(
                    "field `cases[0].expect.{key}[0]`: unknown tool `get_claim_sectoin`; did you mean `get_claim_section`?"
                )),
                "{}",
                out.stderr
            );
            assert!(!dir.path().join("runs").exists(), "nothing ran");
        }
    }
}

#[test]
fn a_tool_name_far_from_any_lists_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite_with(
        dir.path(),
        "defaults:\n  expect:\n    toolCalled: [{name: lookup_everything}]\ncases:\n  - name: a\n    message: Excess?\n    script: ok.yaml\n",
    );
    let out = eval(dir.path(), &suite, &["--list"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("field `defaults.expect.toolCalled[0]`: unknown tool `lookup_everything` (the tools: get_claim_section, search_claim_file, read_document, get_schedule, highlight_panel, open_document)"),
        "{}",
        out.stderr
    );
}

const PLACEHOLDER_SUITE: &str = "variants:\n  - name: default\n  - name: typo\n    prompts:\n      system.base: You are {{assitant}}, working for {{product}}.\ncases:\n  - name: a\n    message: Excess?\n    script: ok.yaml\n";

#[test]
fn a_misspelt_placeholder_is_warned_about_everywhere_a_reader_looks() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite_with(dir.path(), PLACEHOLDER_SUITE);
    let out = eval(dir.path(), &suite, &["--format", "ndjson"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warning =
        "variant `typo`: override `system.base` uses `{{assitant}}`, which no brand fills";
    assert!(out.stderr.contains(warning), "{}", out.stderr);
    let summary: Value = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|record| record["kind"] == "summary")
        .expect("a summary record");
    let warnings = summary["warnings"].as_array().expect("summary warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(warning)),
        "{summary}"
    );
    let logs = support::run_logs_under(&dir.path().join("runs"));
    let headers: Vec<Value> = logs
        .iter()
        .map(|path| serde_json::to_value(read_run_log(path).unwrap().header).unwrap())
        .collect();
    assert_eq!(headers.len(), 2);
    let flagged: Vec<&Value> = headers
        .iter()
        .filter(|h| h.get("unknownPlaceholders").is_some())
        .collect();
    assert_eq!(
        flagged.len(),
        1,
        "only the typo variant's turn: {headers:?}"
    );
    assert_eq!(
        flagged[0]["unknownPlaceholders"],
        serde_json::json!([{"id": "system.base", "placeholder": "assitant"}])
    );
}

#[test]
fn strict_refuses_a_misspelt_placeholder_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite_with(dir.path(), PLACEHOLDER_SUITE);
    let out = eval(dir.path(), &suite, &["--strict"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("override problems (--strict)")
            && out.stderr.contains("`{{assitant}}`"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join("runs").exists(), "nothing ran");
}

#[test]
fn a_chat_turn_warns_about_a_misspelt_placeholder_and_a_blank_known_id_without_a_same_id_hint() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = write(
        dir.path(),
        "o.yaml",
        "prompts:\n  system.base: Hello from {{assitant}}.\n  system.safety: \"  \"\n  system.bse: x\n",
    );
    let out = support::scripted_chat(&[
        "--no-record",
        "--overrides",
        overrides.to_str().unwrap(),
        "Excess?",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("warning: override `system.base` uses `{{assitant}}`, which no brand fills"),
        "{}",
        out.stderr
    );
    let safety = out
        .stderr
        .lines()
        .find(|line| line.contains("`system.safety`"))
        .expect("the blank override is warned about");
    assert!(!safety.contains("did you mean"), "{safety}");
    let typo = out
        .stderr
        .lines()
        .find(|line| line.contains("`system.bse`"))
        .expect("the unknown id is warned about");
    assert!(typo.contains("did you mean `system.base`?"), "{typo}");
}
