//! `runs list` filters through the real binary: `--provider`, and
//! `--fingerprint` given an override file (as `compare` takes one), with
//! clear errors for a bad value.

use crate::support;

use std::path::Path;

use support::{promptlab, run_command};

fn in_runs(runs: &Path, args: &[&str]) -> support::Run {
    run_command(
        promptlab()
            .args(["--runs-dir", runs.to_str().unwrap()])
            .args(args),
    )
}

/// Two scripted turns: one with the plain-spoken overrides, one without.
fn two_runs(runs: &Path) {
    for extra in [&["--overrides", "overrides/plain-spoken.yaml"][..], &[][..]] {
        let mut args = vec![
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
            "tests/data/scripts/excess.yaml",
        ];
        args.extend_from_slice(extra);
        args.push("q");
        assert_eq!(in_runs(runs, &args).code, 0);
    }
}

#[test]
fn fingerprint_takes_an_override_file_and_provider_filters() {
    let dir = tempfile::tempdir().unwrap();
    two_runs(dir.path());
    let by_file = in_runs(
        dir.path(),
        &[
            "runs",
            "list",
            "--json",
            "--fingerprint",
            "overrides/plain-spoken.yaml",
        ],
    );
    assert_eq!(by_file.code, 0, "{}", by_file.stderr);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&by_file.stdout).unwrap();
    assert_eq!(rows.len(), 1, "{}", by_file.stdout);
    assert_ne!(rows[0]["fingerprint"], "default");
    let scripted = in_runs(dir.path(), &["runs", "list", "--provider", "script"]);
    assert!(scripted.stdout.contains("2 runs in"), "{}", scripted.stdout);
    let gemini = in_runs(dir.path(), &["runs", "list", "--provider", "gemini"]);
    assert!(gemini.stdout.starts_with("0 runs in"), "{}", gemini.stdout);
}

#[test]
fn a_fingerprint_that_is_neither_hex_nor_a_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = in_runs(
        dir.path(),
        &["runs", "list", "--fingerprint", "nosuch.yaml"],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("is neither an override file, a fingerprint"),
        "{}",
        out.stderr
    );
    let bad = in_runs(
        dir.path(),
        &["runs", "list", "--fingerprint", "claims/CLM-HH-0001.json"],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("invalid override file"),
        "{}",
        bad.stderr
    );
    let provider = in_runs(dir.path(), &["runs", "list", "--provider", "openia"]);
    assert_eq!(provider.code, 2);
    assert!(
        provider
            .stderr
            .contains("[possible values: gemini, openai, script, replay, worker]"),
        "{}",
        provider.stderr
    );
    // An eval run id that cannot be one is a typo, not a filter of 0 runs.
    let eval = in_runs(dir.path(), &["runs", "list", "--eval", "zz"]);
    assert_eq!(eval.code, 2, "{}", eval.stdout);
    assert_eq!(
        eval.stderr.trim_end(),
        "error: --eval `zz`: an eval run id starts with `ev-` (as the eval summary names it; \
         see `promptlab evals list`)"
    );
}

/// The message preview is the last user message on one line, control
/// characters dropped, cut to 80 characters with `…`; in the table it is
/// cut further to fit, and ids and times stay whole.
#[test]
fn the_message_preview_is_one_line_and_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let message = format!(
        "What is\nthe \u{1b}[31mexcess\u{7}?\t{}",
        "and more ".repeat(20)
    );
    let chat = in_runs(
        dir.path(),
        &[
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
            "tests/data/scripts/excess.yaml",
            &message,
        ],
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let json = in_runs(dir.path(), &["runs", "list", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json.stdout).unwrap();
    let preview = rows[0]["messagePreview"].as_str().unwrap();
    assert!(
        preview.starts_with("What is the [31mexcess? and more"),
        "{preview}"
    );
    assert_eq!(
        preview.chars().count(),
        81,
        "80 and the ellipsis: {preview}"
    );
    assert!(preview.ends_with('…'));
    let table = run_command(promptlab().env("COLUMNS", "110").args([
        "--runs-dir",
        dir.path().to_str().unwrap(),
        "runs",
        "list",
    ]));
    assert!(
        table.stdout.contains("┆ What is the [31mexcess"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("CLM-HH-0001"), "{}", table.stdout);
    for line in table
        .stdout
        .lines()
        .filter(|l| l.starts_with(['┌', '│', '└']))
    {
        assert!(line.chars().count() <= 110, "{line}");
    }
}

/// The fingerprint of overrides/plain-spoken.yaml, as `prompts fingerprint` prints it.
fn plain_spoken() -> String {
    let out = support::run(&["prompts", "fingerprint", "overrides/plain-spoken.yaml"]);
    out.stdout
        .split_whitespace()
        .find(|word| word.len() == 12 && word.bytes().all(|b| b.is_ascii_hexdigit()))
        .expect("a fingerprint")
        .to_string()
}

#[test]
fn a_unique_fingerprint_prefix_works_in_runs_list_and_compare_and_others_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    two_runs(dir.path());
    let fingerprint = plain_spoken();
    let prefix = &fingerprint[..6];
    let listed = in_runs(
        dir.path(),
        &["runs", "list", "--fingerprint", prefix, "--json"],
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["fingerprint"], fingerprint.as_str());
    let compared = in_runs(
        dir.path(),
        &["compare", "default", prefix, "--format", "json"],
    );
    assert_eq!(compared.code, 0, "{}", compared.stderr);
    assert!(
        compared.stdout.contains(&fingerprint),
        "{}",
        compared.stdout
    );
    // A prefix of no recorded version: named, with the nearest one.
    let mut near = fingerprint[..6].to_string();
    let last = near.pop().unwrap();
    near.push(if last == '0' { '1' } else { '0' });
    let missing = in_runs(dir.path(), &["compare", "default", &near]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains(&format!("no prompt version recorded in `{}` starts with `{near}`; did you mean `{fingerprint}`?", dir.path().display())),
        "{}",
        missing.stderr
    );
    // Two recorded versions sharing the prefix: both named.
    let twin = format!("{}ffffff", &fingerprint[..6]);
    std::fs::create_dir(dir.path().join(&twin)).unwrap();
    let ambiguous = in_runs(dir.path(), &["runs", "list", "--fingerprint", prefix]);
    assert_eq!(ambiguous.code, 2, "{}", ambiguous.stderr);
    assert!(
        ambiguous
            .stderr
            .contains("matches 2 recorded prompt versions: ")
            && ambiguous.stderr.contains(&twin),
        "{}",
        ambiguous.stderr
    );
}
