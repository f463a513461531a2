//! `promptlab prompts …` through the real binary: assembly, overrides,
//! fingerprints, and the errors a user can cause.

use crate::support;

use serde_json::Value;
use support::{minimal_claim_json, run, write};

const TODAY: &str = "2026-11-30";

fn show_json(extra: &[&str]) -> Value {
    let mut args = vec!["prompts", "show", "--today", TODAY, "--json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn block_ids(value: &Value) -> Vec<String> {
    value["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn raw_output_is_exactly_the_joined_blocks() {
    let json = show_json(&["--claim-id", "CLM-HH-0001", "--screen-actions", "--voice"]);
    let raw = run(&[
        "prompts",
        "show",
        "--today",
        TODAY,
        "--raw",
        "--claim-id",
        "CLM-HH-0001",
        "--screen-actions",
        "--voice",
    ]);
    let joined: Vec<&str> = json["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect();
    assert_eq!(raw.stdout, joined.join("\n\n"));
    assert_eq!(
        block_ids(&json),
        [
            "system.base",
            "system.screen_actions",
            "system.safety",
            "system.locale_uk",
            "claim.brief",
            "capability.claim_qa",
            "system.voice"
        ]
    );
}

#[test]
fn the_us_claim_gets_the_us_locale_unless_told_otherwise() {
    assert!(
        block_ids(&show_json(&["--claim-id", "CLM-CPR-0003"]))
            .contains(&"system.locale_us".to_string())
    );
    assert!(
        block_ids(&show_json(&[
            "--claim-id",
            "CLM-CPR-0003",
            "--locale",
            "uk"
        ]))
        .contains(&"system.locale_uk".to_string())
    );
}

#[test]
fn overrides_apply_are_branded_and_fingerprinted() {
    let json = show_json(&[
        "--claim-id",
        "CLM-HH-0001",
        "--overrides",
        "overrides/plain-spoken.yaml",
        "--brand",
        "northgate",
    ]);
    let base = &json["blocks"][0];
    assert_eq!(base["source"], "override");
    assert!(
        base["text"]
            .as_str()
            .unwrap()
            .starts_with("You are Nova, the claims assistant in Northgate ClaimCentre.")
    );
    let printed = run(&["prompts", "fingerprint", "overrides/plain-spoken.yaml"]);
    assert_eq!(printed.code, 0);
    assert_eq!(
        json["fingerprint"].as_str().unwrap(),
        printed.stdout.lines().next().unwrap()
    );
    assert_eq!(
        json["overridden"],
        serde_json::json!(["capability.summarise", "system.base"])
    );
    assert_ne!(json["fingerprint"], "default");
}

#[test]
fn the_brief_is_never_branded_or_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let claim = write(
        dir.path(),
        "c.json",
        &minimal_claim_json("C-9", "Leak seen by {{assistant}} at {{product}}"),
    );
    let overrides = write(
        dir.path(),
        "o.yaml",
        "prompts:\n  claim.brief: Nothing to see here.\n  system.base: I am {{assistant}}.\n",
    );
    let json = show_json(&[
        "--claim",
        claim.to_str().unwrap(),
        "--overrides",
        overrides.to_str().unwrap(),
    ]);
    let brief = json["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "claim.brief")
        .unwrap();
    assert_eq!(brief["source"], "built");
    assert!(
        brief["text"]
            .as_str()
            .unwrap()
            .contains("Leak seen by {{assistant}} at {{product}}")
    );
    assert_eq!(json["blocks"][0]["text"], "I am Clara.");
    assert_eq!(json["overridden"], serde_json::json!(["system.base"]));
    assert_eq!(json["ignored"][0]["id"], "claim.brief");
    assert_eq!(json["ignored"][0]["reason"]["kind"], "claim_brief");
}

#[test]
fn every_block_but_the_brief_is_branded() {
    let json = show_json(&[
        "--claim-id",
        "CLM-HH-0001",
        "--screen-actions",
        "--voice",
        "--capability",
        "coverage_check",
    ]);
    for block in json["blocks"].as_array().unwrap() {
        let text = block["text"].as_str().unwrap();
        for placeholder in ["{{assistant}}", "{{product}}", "{{pronunciation}}"] {
            assert!(
                !text.contains(placeholder),
                "{} still has {placeholder}",
                block["id"]
            );
        }
    }
}

#[test]
fn unusable_overrides_are_reported_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = write(
        dir.path(),
        "o.yaml",
        "prompts:\n  system.safety: '   '\n  system.unknown: hi\n",
    );
    let out = run(&[
        "prompts",
        "show",
        "--claim-id",
        "CLM-HH-0001",
        "--raw",
        "--overrides",
        overrides.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0);
    assert!(
        out.stderr
            .contains("warning: override `system.safety` (from `"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("ignored: the text is blank"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("override `system.unknown`"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_quick_action_gets_its_task_heading() {
    let json = show_json(&[
        "--claim-id",
        "CLM-MTR-0002",
        "--capability",
        "liability_review",
    ]);
    let task = &json["blocks"][4];
    assert_eq!(task["id"], "capability.liability_review");
    assert!(
        task["text"]
            .as_str()
            .unwrap()
            .starts_with("## Task: Review liability\n\n")
    );
}

#[test]
fn user_errors_get_one_message_and_the_documented_exit_code() {
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &[
                "prompts",
                "show",
                "--claim-id",
                "CLM-HH-0001",
                "--capability",
                "nope",
            ],
            1,
            "error: Unknown capability \"nope\"\n",
        ),
        (
            &["prompts", "show", "--claim-id", "../claims/CLM-HH-0001"],
            1,
            "error: Claim ../claims/CLM-HH-0001 not found.\n",
        ),
        (
            &["prompts", "show", "--claim-id", "NOPE-1"],
            1,
            "error: Claim NOPE-1 not found.\n",
        ),
        (
            &[
                "prompts",
                "show",
                "--claim-id",
                "CLM-HH-0001",
                "--brand",
                "acme",
            ],
            2,
            "error: brand: unknown brand `acme` (known: harbour, northgate, plain)\n",
        ),
        (
            &[
                "prompts",
                "show",
                "--claim-id",
                "CLM-HH-0001",
                "--overrides",
                "missing.yaml",
            ],
            2,
            "error: failed to read override file `missing.yaml`: No such file or directory (os error 2)\n",
        ),
    ];
    for (args, code, stderr) in cases {
        let out = run(args);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (*code, *stderr),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["prompts", "show"][..],
        &["prompts", "show", "--claim-id", "A", "--claim", "x.json"],
        &[
            "prompts",
            "show",
            "--claim-id",
            "CLM-HH-0001",
            "--locale",
            "fr",
        ],
        &[
            "prompts",
            "show",
            "--claim-id",
            "CLM-HH-0001",
            "--today",
            "30/11/2026",
        ],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_malformed_override_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = write(
        dir.path(),
        "bad.yaml",
        "name: x\nprompts:\n  system.base: [not, text]\n",
    );
    let out = run(&["prompts", "fingerprint", overrides.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bad.yaml"), "{}", out.stderr);
    assert!(
        out.stderr.contains("field `prompts.system.base`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("line 3"), "{}", out.stderr);
}

#[test]
fn fingerprint_lists_applied_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = write(
        dir.path(),
        "o.json",
        r#"{"prompts": {"system.base": "You are {{assistant}}, the claims assistant in {{product}}.\n", "nope": "x"}}"#,
    );
    let out = run(&["prompts", "fingerprint", overrides.to_str().unwrap()]);
    // The "one override" vector of tests/data/fingerprint.json.
    assert_eq!(
        out.stdout,
        "f088156511bf\napplied  system.base\nignored  nope: not a known prompt id\n"
    );
}

/// `prompts diff` lists every override of each set: those whose block is
/// in this context, those whose block is not (with the flag that brings it
/// in), and those ignored (with why and the nearest prompt id).
#[test]
fn prompts_diff_lists_every_override_and_the_flag_that_brings_it_in() {
    let dir = tempfile::tempdir().unwrap();
    let set = write(
        dir.path(),
        "many.yaml",
        "prompts:\n  system.base: You are {{assistant}}.\n  system.voice: Speak plainly.\n  system.locale_us: US spelling.\n  capability.timeline: Dates first.\n  capability.claim_qa: Answer briefly.\n  system.bse: typo\n",
    );
    let set = set.to_str().unwrap();
    let diff = |extra: &[&str]| {
        let mut args = vec![
            "prompts",
            "diff",
            "default",
            set,
            "--claim-id",
            "CLM-HH-0001",
        ];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let text = diff(&["--capability", "summarise"]);
    for line in [
        "overrides in A: none",
        "overrides in B (6):",
        "  capability.claim_qa  not in this context: drop --capability (free chat)",
        "  capability.timeline  not in this context: use --capability timeline",
        "  system.base          in this context",
        "  system.bse           ignored: not a known prompt id; did you mean `system.base`?",
        "  system.locale_us     not in this context: add --locale us",
        "  system.voice         not in this context: add --voice",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
    let json: Value =
        serde_json::from_str(&diff(&["--voice", "--locale", "us", "--json"])).unwrap();
    let statuses: Vec<(String, String, Value)> = json["b"]["overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_string(),
                o["status"].as_str().unwrap().to_string(),
                o["bringIn"].clone(),
            )
        })
        .collect();
    let expected = [
        ("capability.claim_qa", "inContext", Value::Null),
        (
            "capability.timeline",
            "notInContext",
            "add --capability timeline".into(),
        ),
        ("system.base", "inContext", Value::Null),
        ("system.bse", "ignored", Value::Null),
        ("system.locale_us", "inContext", Value::Null),
        ("system.voice", "inContext", Value::Null),
    ];
    let expected: Vec<(String, String, Value)> = expected
        .into_iter()
        .map(|(id, status, flag)| (id.to_string(), status.to_string(), flag))
        .collect();
    assert_eq!(statuses, expected);
    assert_eq!(json["a"]["overrides"], serde_json::json!([]));
}
