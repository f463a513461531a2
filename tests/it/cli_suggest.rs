//! "Did you mean" through the real binary: a mistyped claim id, capability,
//! prompt id in an override file, or turn-id prefix gets the nearest known
//! one under its error; a name near nothing gets no guess.

use crate::support;

use support::{promptlab, run, run_command};

#[test]
fn a_mistyped_claim_id_suggests_the_nearest_claim() {
    let out = run(&["claims", "brief", "CLM-HH-001"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("error: Claim CLM-HH-001 not found.\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("hint: did you mean `CLM-HH-0001`?"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_claim_id_near_nothing_gets_no_guess() {
    let out = run(&["claims", "brief", "WHOLLY-UNRELATED"]);
    assert_eq!(out.code, 1);
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
}

#[test]
fn a_chat_turn_with_a_mistyped_capability_hints_in_the_pretty_view_only() {
    let turn = |format: &str| {
        run(&[
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--capability",
            "sumarise",
            "--no-record",
            "--provider",
            "script",
            "--script",
            "tests/data/scripts/excess.yaml",
            "--format",
            format,
            "hi",
        ])
    };
    let pretty = turn("pretty");
    assert_eq!(pretty.code, 1, "{}", pretty.stderr);
    assert!(
        pretty.stdout.contains("hint: did you mean `summarise`?"),
        "{}",
        pretty.stdout
    );
    let ndjson = turn("ndjson");
    assert_eq!(ndjson.code, 1);
    assert!(!ndjson.stdout.contains("did you mean"), "{}", ndjson.stdout);
}

#[test]
fn a_mistyped_prompt_id_in_an_override_file_is_named_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    std::fs::write(&file, "prompts:\n  system.bse: Be brief.\n").unwrap();
    let out = run(&["prompts", "fingerprint", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("ignored  system.bse: not a known prompt id; did you mean `system.base`?"),
        "{}",
        out.stdout
    );
    let show = run(&[
        "prompts",
        "show",
        "--claim-id",
        "CLM-HH-0001",
        "--overrides",
        file.to_str().unwrap(),
    ]);
    assert!(
        show.stderr.contains("did you mean `system.base`?"),
        "{}",
        show.stderr
    );
}

#[test]
fn a_mistyped_turn_id_prefix_suggests_a_recorded_turn() {
    let out =
        run_command(promptlab().args(["--runs-dir", "runs/examples", "runs", "show", "64011136"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("hint: did you mean `64011163`?"),
        "{}",
        out.stderr
    );
}
