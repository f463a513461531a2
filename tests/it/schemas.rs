//! The JSON that promptlab prints is a contract: its JSON Schemas are
//! generated from the very types that print it (`schemars`), checked in under
//! `docs/schemas/`, kept current by this test, and real output of every
//! command that prints JSON is validated against them — by the `jsonschema`
//! crate, and by Ajv 8 in strict mode (npm, run by node; installed by
//! `.ci/install-references`, skipped outside CI when missing), the
//! JavaScript validator most consumers use.
//!
//! After changing one of these types, regenerate the files with
//! `PROMPTLAB_UPDATE_SCHEMAS=1 cargo test --test it schemas`.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{promptlab, run_command, write};

use promptlab::chat::prompt_report::{FingerprintReport, PromptDiff, PromptList, ShownPrompt};
use promptlab::claims::row::ClaimRow;
use promptlab::compare::render::CompareReport;
use promptlab::eval::report::EvalRecord;
use promptlab::event::ChatEvent;
use promptlab::index::history::{EvalRunDetail, EvalRunRow, Trend};
use promptlab::runs::record::PromptRecord;
use promptlab::runs::row::RunRow;

/// Each documented output: its file name and its schema from the types.
fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("chat-event", schema_of::<ChatEvent>()),
        ("eval-record", schema_of::<EvalRecord<'static>>()),
        ("compare-report", schema_of::<CompareReport<'static>>()),
        ("runs-list", schema_of::<Vec<RunRow>>()),
        ("claims-list", schema_of::<Vec<ClaimRow>>()),
        ("prompts-show", schema_of::<ShownPrompt>()),
        ("prompts-list", schema_of::<PromptList>()),
        ("prompts-fingerprint", schema_of::<FingerprintReport>()),
        ("prompts-diff", schema_of::<PromptDiff>()),
        ("evals-list", schema_of::<Vec<EvalRunRow>>()),
        ("evals-show", schema_of::<EvalRunDetail>()),
        ("evals-trend", schema_of::<Trend>()),
        ("run-log-prompt", schema_of::<PromptRecord>()),
    ]
}

/// A type's draft 2020-12 schema, in standard keywords only.
fn schema_of<T: schemars::JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(standard_numbers)
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).unwrap()
}

/// schemars marks Rust's number types with formats of its own (`uint64`,
/// `uint32`, `uint8`, `uint`, `double`, …) that no JSON Schema vocabulary
/// defines and Ajv's strict mode refuses ("unknown format"). Each gives way
/// to the bounds it stands for, which schemars writes as `minimum` and
/// `maximum` where a type has them; 32-bit bounds are added here.
fn standard_numbers(schema: &mut schemars::Schema) {
    if let Some(object) = schema.as_object_mut() {
        let format = object
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_string);
        let format = format.as_deref();
        let bounds: Option<(i64, i64)> = match format {
            Some("uint32") => Some((0, i64::from(u32::MAX))),
            Some("int32") => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
            _ => None,
        };
        if let Some((minimum, maximum)) = bounds {
            object.insert("minimum".into(), minimum.into());
            object.insert("maximum".into(), maximum.into());
        }
        let number_format = format.is_some_and(|f| {
            f.strip_prefix('u')
                .unwrap_or(f)
                .strip_prefix("int")
                .is_some_and(|bits| bits.chars().all(|c| c.is_ascii_digit()))
                || matches!(f, "double" | "float")
        });
        if number_format {
            object.remove("format");
        }
    }
    schemars::transform::transform_subschemas(&mut standard_numbers, schema);
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
            "docs/schemas/{name}.schema.json is out of date: run PROMPTLAB_UPDATE_SCHEMAS=1 cargo test --test it schemas"
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

/// Runs the binary; its stdout, once it exits 0.
fn stdout_of(command: &mut std::process::Command) -> String {
    let out = run_command(command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

/// Real output of every command that prints JSON, by the schema it
/// promises: chat (NDJSON and the `data:` of SSE), replay and `runs show`
/// (NDJSON events), eval (NDJSON, `--list`), compare, `runs list`,
/// `claims list` and the four `prompts … --json`.
fn real_outputs(dir: &Path) -> Vec<(&'static str, Value)> {
    let runs = dir.join("runs");
    let in_runs = || {
        let mut command = promptlab();
        command.env("PROMPTLAB_RUNS_DIR", &runs);
        command
    };
    let mut outputs = Vec::new();
    let chat = ["chat", "--claim-id", "CLM-HH-0001", "--provider", "script"];
    let script = ["--script", "tests/data/scripts/excess.yaml"];
    for (format, data_only) in [("ndjson", false), ("sse", true)] {
        let text = stdout_of(
            in_runs()
                .args(chat)
                .args(script)
                .args(["--format", format])
                .arg("What is the excess?"),
        );
        for line in text.lines() {
            let json = if data_only {
                line.strip_prefix("data: ")
            } else {
                Some(line)
            };
            if let Some(json) = json {
                outputs.push(("chat-event", serde_json::from_str(json).unwrap()));
            }
        }
    }
    let log = promptlab::runs::store::run_log_paths(&runs)
        .unwrap()
        .remove(0);
    // A model whose server reported no usage: `null` counts and
    // `usageUnreported` in `done`, and below in the listing and the eval.
    let unreported = write(
        dir,
        "unreported.yaml",
        "turns:\n  - text: The excess is £350.\n    usage: null\n",
    );
    let text = stdout_of(in_runs().args(chat).arg("--script").arg(&unreported).args([
        "--format",
        "ndjson",
        "What is the excess?",
    ]));
    assert!(text.contains("\"usageUnreported\":1"), "{text}");
    outputs.extend(lines(&text).into_iter().map(|event| ("chat-event", event)));
    // The prompt the log names, stored once beside the logs.
    for stored in std::fs::read_dir(runs.join("prompts")).unwrap() {
        let bytes = std::fs::read(stored.unwrap().path()).unwrap();
        outputs.push(("run-log-prompt", serde_json::from_slice(&bytes).unwrap()));
    }
    let replays = [
        &["replay", "--format", "ndjson"][..],
        &["runs", "show", "--format", "ndjson"],
    ];
    for command in replays {
        let text = stdout_of(in_runs().args(command).arg(&log));
        outputs.extend(lines(&text).into_iter().map(|event| ("chat-event", event)));
    }

    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    let suite = write(
        dir,
        "suite.yaml",
        "name: s\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\nvariants:\n  - name: default\n  - name: terse\n    prompts: {system.base: Be brief.}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: £350}\n  - name: unreported\n    message: What is the excess?\n    script: unreported.yaml\n    expect: {answerContains: £350}\n",
    );
    let eval_runs = dir.join("eval-runs");
    for extra in [&["--list"][..], &[][..]] {
        let text = stdout_of(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &eval_runs)
                .args(["eval", "--provider", "script", "--format", "ndjson"])
                .args(extra)
                .arg(&suite),
        );
        let records = lines(&text);
        assert!(!records.is_empty());
        outputs.extend(records.into_iter().map(|record| ("eval-record", record)));
    }
    let one = |name: &'static str, command: &mut std::process::Command| {
        (
            name,
            serde_json::from_str::<Value>(&stdout_of(command)).unwrap(),
        )
    };
    outputs.push(one(
        "compare-report",
        promptlab()
            .arg("compare")
            .arg(format!("{}@default", eval_runs.display()))
            .arg(format!("{}@terse", eval_runs.display()))
            .args(["--format", "json"]),
    ));
    outputs.push(one("runs-list", in_runs().args(["runs", "list", "--json"])));
    let evals = |args: &[&str]| {
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &eval_runs)
            .arg("evals")
            .args(args);
        command
    };
    let listed = one("evals-list", &mut evals(&["list", "--json"]));
    let id = listed.1[0]["id"].as_str().expect("an eval run").to_string();
    outputs.push(listed);
    outputs.push(one("evals-show", &mut evals(&["show", &id, "--json"])));
    outputs.push(one(
        "evals-trend",
        &mut evals(&["trend", "--suite", "s", "--json"]),
    ));
    outputs.push(one(
        "claims-list",
        promptlab().args(["claims", "list", "--json"]),
    ));
    let prompts = [
        (
            "prompts-show",
            &["show", "--claim-id", "CLM-HH-0001", "--json"][..],
        ),
        ("prompts-list", &["list", "--json"][..]),
        (
            "prompts-fingerprint",
            &[
                "fingerprint",
                "overrides/plain-spoken.yaml",
                "overrides/strict-sources.json",
                "--json",
            ][..],
        ),
        (
            "prompts-diff",
            &[
                "diff",
                "default",
                "overrides/plain-spoken.yaml",
                "--claim-id",
                "CLM-HH-0001",
                "--json",
            ][..],
        ),
    ];
    for (name, args) in prompts {
        outputs.push(one(name, promptlab().arg("prompts").args(args)));
    }
    outputs
}

#[test]
fn real_output_validates_against_the_schemas() {
    let dir = tempfile::tempdir().unwrap();
    for (name, output) in real_outputs(dir.path()) {
        validate(name, &output);
    }
}

/// `ajv-check.mjs SCHEMA [INSTANCES]` under node: whether it passed, and what it said.
fn ajv(schema: &Path, instances: Option<&Path>) -> Option<(bool, String)> {
    let script = support::references::node_script("ajv-check.mjs", "ajv")?;
    support::references::node_script("ajv-check.mjs", "ajv-formats")?;
    let mut args = vec![schema.as_os_str()];
    args.extend(instances.map(Path::as_os_str));
    let said = support::references::run_node(&script, &args, b"");
    Some((said.ok, format!("{}{}", said.stdout, said.stderr)))
}

#[test]
fn ajv_compiles_every_schema_strictly_and_accepts_real_output() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = real_outputs(dir.path());
    for (name, _) in schemas() {
        let instances = dir.path().join(format!("{name}.ndjson"));
        let text: String = outputs
            .iter()
            .filter(|(schema, _)| *schema == name)
            .map(|(_, output)| format!("{output}\n"))
            .collect();
        assert!(!text.is_empty(), "no real output of {name} was checked");
        std::fs::write(&instances, text).unwrap();
        let Some((ok, said)) = ajv(&schema_path(name), Some(&instances)) else {
            return;
        };
        assert!(ok, "Ajv (strict) on {name}: {said}");
    }
}

#[test]
fn ajv_refuses_schemars_formats_and_invalid_output() {
    // The check above must be able to fail: schemars' own `uint64` format
    // (what the schemas held before) and an event missing its text.
    let dir = tempfile::tempdir().unwrap();
    let schema = write(
        dir.path(),
        "old.schema.json",
        r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer", "format": "uint64", "minimum": 0}"#,
    );
    let Some((ok, said)) = ajv(&schema, None) else {
        return;
    };
    assert!(!ok && said.contains("unknown format \"uint64\""), "{said}");
    let bad = write(dir.path(), "bad.ndjson", "{\"type\": \"text_delta\"}\n");
    let (ok, said) = ajv(&schema_path("chat-event"), Some(&bad)).unwrap();
    assert!(!ok && said.contains("1 invalid"), "{said}");
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
