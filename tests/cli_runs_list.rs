//! `runs list` filters through the real binary: `--provider`, and
//! `--fingerprint` given an override file (as `compare` takes one), with
//! clear errors for a bad value.

mod support;

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
        out.stderr.contains("neither a fingerprint"),
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
    let provider = in_runs(dir.path(), &["runs", "list", "--provider", "openai"]);
    assert_eq!(provider.code, 2);
    assert!(
        provider.stderr.contains("gemini, script, replay"),
        "{}",
        provider.stderr
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
