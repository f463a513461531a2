//! `promptlab claims …` through the real binary.

use crate::support;

use support::{minimal_claim_json, promptlab, run, run_command, write};

#[test]
fn the_store_validates() {
    let out = run(&["claims", "validate"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("claims valid"));
}

#[test]
fn malformed_claims_are_named_precisely_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.json", &minimal_claim_json("G-1", "ok"));
    let bad_date = write(
        dir.path(),
        "bad-date.json",
        &minimal_claim_json("B-1", "x").replace("2024-03-02", "2024-13-02"),
    );
    let missing = write(
        dir.path(),
        "missing.yaml",
        "id: M-1\nlineOfBusiness: Pet\nstatus: open\npolicy:\n  number: P\n  periodStart: 2024-01-01\nincident:\n  date: 2024-01-02\n  description: Vet bill\n",
    );
    let not_json = write(
        dir.path(),
        "broken.json",
        "{\"id\": \"X\",\n  \"status\": }",
    );
    let out = run(&[
        "claims",
        "validate",
        good.to_str().unwrap(),
        bad_date.to_str().unwrap(),
        missing.to_str().unwrap(),
        not_json.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(
        lines[0].contains("bad-date.json`: field `incident.date`, line 1"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("expected a date as YYYY-MM-DD, got `2024-13-02`"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("missing.yaml`: field `policy.periodEnd`"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("missing required field"), "{}", lines[1]);
    assert!(
        lines[2].contains("broken.json`: field `status`, line 2 column 13: expected value"),
        "{}",
        lines[2]
    );
    assert!(out.stderr.contains("3 of 4 claims invalid"));
}

#[test]
fn a_store_file_must_carry_its_own_id() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "A-1.json", &minimal_claim_json("A-2", "x"));
    let out = run_command(promptlab().args([
        "claims",
        "validate",
        "--claims-dir",
        dir.path().to_str().unwrap(),
    ]));
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("the file is named for `A-1` but the claim's id is `A-2`"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_malformed_claim_given_to_prompts_show_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.json",
        &minimal_claim_json("B", "x").replace("\"lineOfBusiness\":\"Household\",", ""),
    );
    let out = run(&["prompts", "show", "--claim", bad.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: invalid claim `"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("field `lineOfBusiness`"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_claims_dir_comes_from_the_environment_too() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "E-1.yaml",
        "id: E-1\nlineOfBusiness: Cyber\nstatus: open\npolicy: {number: P, periodStart: 2024-01-01, periodEnd: 2024-12-31}\nincident: {date: 2024-05-05, description: Ransomware}\n",
    );
    let out = run_command(promptlab().env("PROMPTLAB_CLAIMS_DIR", dir.path()).args([
        "claims",
        "brief",
        "E-1",
        "--today",
        "2026-01-01",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(
            "## Claim brief\nClaim E-1. Today is 2026-01-01.\nLine of business: Cyber\n"
        )
    );
}

#[test]
fn show_reads_a_section_or_names_the_ones_there_are() {
    let out = run(&["claims", "show", "CLM-HH-0001", "--section", "financials"]);
    assert_eq!(out.code, 0);
    let value: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(value["outstanding"], "17100.00");
    let out = run(&["claims", "show", "CLM-MIN-0004", "--section", "financials"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("(it has: overview, policy, incident)"),
        "{}",
        out.stderr
    );
}

#[test]
fn list_shows_every_claim() {
    let out = run(&["claims", "list", "--json"]);
    assert_eq!(out.code, 0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    let store_files = std::fs::read_dir(support::repo_root().join("claims"))
        .unwrap()
        .count();
    assert_eq!(rows.len(), store_files);
}

#[test]
fn claims_show_keeps_c0_and_c1_controls_from_the_terminal_losslessly() {
    // Issue #27: U+009B (a CSI) in a claim reached the terminal raw.
    let dir = tempfile::tempdir().unwrap();
    let hostile = "Leak\u{9b}2J\u{1b}]0;title\u{7}\u{7f} in the loft";
    let json = minimal_claim_json("C-1", hostile);
    write(dir.path(), "C-1.json", &json);
    let claims_dir = dir.path().to_str().unwrap();
    let shown = run(&["claims", "--claims-dir", claims_dir, "show", "C-1"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        !shown.stdout.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        shown.stdout
    );
    assert!(shown.stdout.contains("\\u009b2J"), "{}", shown.stdout);
    let claim: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        claim["incident"]["description"], hostile,
        "a JSON reader gets the text back"
    );

    // The brief and the assembled prompt carry the claim's text too.
    for args in [
        &["claims", "--claims-dir", claims_dir, "brief", "C-1"][..],
        &[
            "prompts",
            "--claims-dir",
            claims_dir,
            "show",
            "--claim-id",
            "C-1",
        ],
    ] {
        let shown = run(args);
        assert_eq!(shown.code, 0, "{args:?}: {}", shown.stderr);
        assert!(
            shown.stdout.contains("Leak2J]0;title in the loft"),
            "{}",
            shown.stdout
        );
        assert!(
            !shown.stdout.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?}: {:?}",
            shown.stdout
        );
    }
}
