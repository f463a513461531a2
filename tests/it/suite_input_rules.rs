//! Suite and override inputs that would check nothing or drop a check are
//! refused with exit 2 and a message naming the field: a blank text or
//! pattern, a `rubricThreshold` with no rubric to apply to, a key given
//! twice in JSON, a literal `--case`/`--claim` that names nothing.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::eval::{LoadedSuite, Selection};
use promptlab::prompts::PromptRegistry;
use support::plans::plan_of;
use support::{promptlab, run_command};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The suite's error, after `invalid suite `<path>`: `.
fn suite_error(dir: &Path, name: &str, text: &str) -> String {
    let path = write(dir, name, text);
    let error = LoadedSuite::load(&path, PromptRegistry::embedded())
        .expect_err("the suite is refused")
        .to_string();
    let prefix = format!("invalid suite `{}`: ", path.display());
    error
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{error}"))
        .to_string()
}

const CLAIMS: &str = "claims: {ids: [CLM-HH-0001]}\n";

#[test]
fn a_blank_text_or_pattern_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "cases:\n  - {name: a, message: hi, expect: {answerContains: \"\"}}\n",
            "field `cases[0].expect.answerContains[0]`: the text is blank",
        ),
        (
            "cases:\n  - {name: a, message: hi, expect: {answerContains: [excess, \"  \"]}}\n",
            "field `cases[0].expect.answerContains[1]`: the text is blank",
        ),
        (
            "defaults: {expect: {answerNotContains: \"\"}}\ncases:\n  - {name: a, message: hi}\n",
            "field `defaults.expect.answerNotContains[0]`: the text is blank",
        ),
        (
            "cases:\n  - {name: a, message: hi, expect: {answerMatches: \"\"}}\n",
            "field `cases[0].expect.answerMatches[0]`: the pattern is blank",
        ),
    ];
    for (body, said) in cases {
        assert_eq!(
            suite_error(dir.path(), "s.yaml", &format!("{CLAIMS}{body}")),
            said
        );
    }
    let json = r#"{"cases": [{"name": "a", "message": "hi", "expect": {"answerNotContains": ["x", ""]}}]}"#;
    assert_eq!(
        suite_error(dir.path(), "s.json", json),
        "field `cases[0].expect.answerNotContains[1]`: the text is blank"
    );
}

#[test]
fn eval_exits_2_on_a_blank_expectation() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "s.yaml",
        &format!(
            "{CLAIMS}cases:\n  - {{name: a, message: hi, expect: {{answerContains: \"\"}}}}\n"
        ),
    );
    let out = run_command(promptlab().args(["eval", "--list"]).arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "error: invalid suite `{}`: field `cases[0].expect.answerContains[0]`: the text is blank",
            path.display()
        )
    );
}

#[test]
fn a_rubric_threshold_without_a_rubric_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        suite_error(
            dir.path(),
            "s.yaml",
            &format!(
                "{CLAIMS}cases:\n  - {{name: a, message: hi, expect: {{rubricThreshold: 0.5}}}}\n"
            ),
        ),
        "field `cases[0].expect.rubricThreshold`: no rubric criterion to apply it to (give `rubric` here or in `defaults`)"
    );
    assert_eq!(
        suite_error(
            dir.path(),
            "s.yaml",
            &format!(
                "{CLAIMS}defaults: {{expect: {{rubricThreshold: 0.5}}}}\ncases:\n  - {{name: a, message: hi}}\n"
            ),
        ),
        "field `defaults.expect.rubricThreshold`: no case has a rubric criterion to apply it to"
    );
}

#[test]
fn a_rubric_threshold_with_a_rubric_here_or_in_the_defaults_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    for body in [
        "defaults: {expect: {rubric: is polite}}\ncases:\n  - {name: a, message: hi, expect: {rubricThreshold: 0.5}}\n",
        "defaults: {expect: {rubricThreshold: 0.5}}\ncases:\n  - {name: a, message: hi}\n  - {name: b, message: hi, expect: {rubric: is polite}}\n",
    ] {
        let path = write(dir.path(), "s.yaml", &format!("{CLAIMS}{body}"));
        LoadedSuite::load(&path, PromptRegistry::embedded()).unwrap();
    }
}

const SMOKE: &str = "claims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ncases:\n  - {name: excess, message: hi}\n  - {name: summary, message: hi}\n";

fn selection(cases: &[&str], claims: &[&str]) -> Selection {
    Selection {
        cases: cases.iter().map(|c| c.to_string()).collect(),
        claims: claims.iter().map(|c| c.to_string()).collect(),
        shard: None,
    }
}

#[test]
fn a_literal_case_or_claim_that_names_nothing_is_an_error_beside_a_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let check = |cases: &[&str], claims: &[&str]| {
        plan_of(dir.path(), SMOKE, selection(cases, claims))
            .check_selection()
            .map_err(|error| error.to_string())
    };
    assert_eq!(
        check(&["excess", "sumary"], &[]),
        Err("--case `sumary`: suite `suite` has no such case; did you mean `summary`?".into())
    );
    assert_eq!(
        check(&["excess", "nope"], &[]),
        Err("--case `nope`: suite `suite` has no such case".into())
    );
    assert_eq!(
        check(&[], &["CLM-HH-0001", "CLM-HH-0002"]),
        Err(
            "--claim `CLM-HH-0002`: suite `suite` has no such claim; did you mean `CLM-HH-0001`?"
                .into()
        )
    );
    // A claim of the store that this suite does not run names nothing here.
    assert!(check(&[], &["CLM-PL-0005"]).is_err());
    assert_eq!(check(&["excess", "summary"], &["CLM-MTR-0002"]), Ok(()));
}

#[test]
fn a_glob_that_matches_nothing_stays_a_filter() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_of(
        dir.path(),
        SMOKE,
        selection(&["exc*", "nope*"], &["CLM-?X-*", "*"]),
    );
    assert_eq!(plan.check_selection(), Ok(()));
    assert_eq!(plan.unsharded_count(), 2, "excess on both claims");
}

#[test]
fn a_json_override_file_giving_a_prompt_twice_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "ov.json",
        "{\"prompts\": {\"system.base\": \"a\", \"system.base\": \"b\"}}",
    );
    let out = run_command(promptlab().args(["prompts", "fingerprint"]).arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "error: invalid override file `{}`: field `prompts`, line 1 column 46: duplicate mapping key: system.base",
            path.display()
        )
    );
}

#[test]
fn a_json_suite_giving_an_inline_prompt_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"{"variants": [{"name": "v", "prompts": {"system.base": "a", "system.base": "b"}}], "cases": [{"name": "a", "message": "hi"}]}"#;
    assert_eq!(
        suite_error(dir.path(), "s.json", json),
        "field `variants[0].prompts`, line 1 column 73: duplicate mapping key: system.base"
    );
}

#[test]
fn eval_exits_2_on_a_misspelt_case_beside_a_good_one_and_on_a_zero_threshold() {
    let runs = tempfile::tempdir().unwrap();
    for (flags, message) in [
        (
            &["--case", "excess", "--case", "sumary"][..],
            "error: --case `sumary`: suite `smoke` has no such case; did you mean `summary`?",
        ),
        (
            &["--pass-threshold", "0"][..],
            "error: --pass-threshold must be above 0 and at most 1, got 0",
        ),
    ] {
        let out = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", runs.path())
                .args(["eval", "suites/smoke.yaml", "--provider", "script"])
                .args(flags),
        );
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim_end(), message);
    }
    assert!(!runs.path().join("default").exists(), "nothing ran");
}
