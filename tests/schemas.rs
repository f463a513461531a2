//! The JSON that promptlab prints is a contract: its JSON Schemas are
//! generated from the very types that print it (`schemars`), checked in under
//! `docs/schemas/`, kept current by this test, and real output of the binary
//! is validated against them.
//!
//! After changing one of these types, regenerate the files with
//! `PROMPTLAB_UPDATE_SCHEMAS=1 cargo test --test schemas`.

mod support;

use std::path::PathBuf;

use serde_json::Value;
use support::{promptlab, run_command, write};

use promptlab::chat::prompt_report::{FingerprintReport, PromptDiff, PromptList, ShownPrompt};
use promptlab::claims::row::ClaimRow;
use promptlab::compare::render::CompareReport;
use promptlab::eval::report::EvalRecord;
use promptlab::event::ChatEvent;
use promptlab::runs::row::RunRow;

/// Each documented output: its file name and its schema from the types.
fn schemas() -> Vec<(&'static str, Value)> {
    let value = |schema: schemars::Schema| serde_json::to_value(schema).unwrap();
    vec![
        ("chat-event", value(schemars::schema_for!(ChatEvent))),
        (
            "eval-record",
            value(schemars::schema_for!(EvalRecord<'static>)),
        ),
        (
            "compare-report",
            value(schemars::schema_for!(CompareReport<'static>)),
        ),
        ("runs-list", value(schemars::schema_for!(Vec<RunRow>))),
        ("claims-list", value(schemars::schema_for!(Vec<ClaimRow>))),
        ("prompts-show", value(schemars::schema_for!(ShownPrompt))),
        ("prompts-list", value(schemars::schema_for!(PromptList))),
        (
            "prompts-fingerprint",
            value(schemars::schema_for!(FingerprintReport)),
        ),
        ("prompts-diff", value(schemars::schema_for!(PromptDiff))),
    ]
}

fn schema_path(name: &str) -> PathBuf {
    support::repo_root()
        .join("docs/schemas")
        .join(format!("{name}.schema.json"))
}

fn checked_in(name: &str) -> Value {
    let text = std::fs::read_to_string(schema_path(name))
        .unwrap_or_else(|e| panic!("docs/schemas/{name}.schema.json: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_checked_in_schemas_are_current() {
    let update = std::env::var_os("PROMPTLAB_UPDATE_SCHEMAS").is_some();
    for (name, schema) in schemas() {
        if update {
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            std::fs::create_dir_all(schema_path(name).parent().unwrap()).unwrap();
            std::fs::write(schema_path(name), text).unwrap();
        }
        assert_eq!(
            checked_in(name),
            schema,
            "docs/schemas/{name}.schema.json is out of date: run PROMPTLAB_UPDATE_SCHEMAS=1 cargo test --test schemas"
        );
    }
}

fn validate(name: &str, instance: &Value) {
    let validator = jsonschema::validator_for(&checked_in(name)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{instance}");
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn real_output_validates_against_the_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let chat = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &runs).args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "script",
        "--script",
        "tests/data/scripts/excess.yaml",
        "--format",
        "ndjson",
        "What is the excess?",
    ]));
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    for event in lines(&chat.stdout) {
        validate("chat-event", &event);
    }

    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is £350.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: s\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\nvariants:\n  - name: default\n  - name: terse\n    prompts: {system.base: Be brief.}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: £350}\n",
    );
    for extra in [&["--list"][..], &[][..]] {
        let eval = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args(["eval", "--provider", "script", "--format", "ndjson"])
                .args(extra)
                .arg(&suite),
        );
        assert_eq!(eval.code, 0, "{}", eval.stderr);
        let records = lines(&eval.stdout);
        assert!(!records.is_empty());
        for record in &records {
            validate("eval-record", record);
        }
    }

    let compare = run_command(
        promptlab()
            .arg("compare")
            .arg(format!("{}@default", runs.display()))
            .arg(format!("{}@terse", runs.display()))
            .args(["--format", "json"]),
    );
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    validate(
        "compare-report",
        &serde_json::from_str(&compare.stdout).unwrap(),
    );

    let listed = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["runs", "list", "--json"]),
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    validate("runs-list", &serde_json::from_str(&listed.stdout).unwrap());

    let claims = run_command(promptlab().args(["claims", "list", "--json"]));
    assert_eq!(claims.code, 0, "{}", claims.stderr);
    validate(
        "claims-list",
        &serde_json::from_str(&claims.stdout).unwrap(),
    );
}

#[test]
fn the_validator_rejects_what_breaks_the_contract() {
    // The checks above must be able to fail.
    let schema = checked_in("chat-event");
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&serde_json::json!({"type": "text_delta", "text": "a"})));
    assert!(!validator.is_valid(&serde_json::json!({"type": "text_delta"})));
    assert!(!validator.is_valid(&serde_json::json!({"type": "nope"})));
}
