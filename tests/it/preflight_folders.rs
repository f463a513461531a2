//! Folders checked before any turn (exit 2, nothing run): a runs folder that
//! cannot take run logs is found before the first paid call, not after the
//! last; a claim store that is not there is said to be missing, not every
//! claim in it. (Run as root in CI, so "unwritable" is a path through a file.)

use crate::support;

use std::path::Path;

use support::{promptlab, run_command, write};

fn unwritable_runs_dir(dir: &Path) -> std::path::PathBuf {
    write(dir, "not-a-folder", "a file where a folder should be");
    dir.join("not-a-folder").join("runs")
}

/// `eval` of the scripted smoke suite into `runs`.
fn eval_smoke(runs: &Path) -> support::Run {
    run_command(promptlab().env("PROMPTLAB_RUNS_DIR", runs).args([
        "eval",
        "suites/smoke.yaml",
        "--provider",
        "script",
    ]))
}

#[test]
fn eval_refuses_a_runs_folder_it_cannot_write_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    let runs = unwritable_runs_dir(dir.path());
    let out = eval_smoke(&runs);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "cannot record run logs in `{}` (--runs-dir, PROMPTLAB_RUNS_DIR): `{}` is not a folder; nothing was run",
            runs.display(),
            dir.path().join("not-a-folder").display()
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pass"), "no turn ran: {}", out.stderr);
    // --list records nothing, so it does not need the folder.
    let listed = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &runs).args([
        "eval",
        "suites/smoke.yaml",
        "--provider",
        "script",
        "--list",
    ]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
}

#[test]
fn chat_refuses_an_unwritable_runs_folder_unless_it_does_not_record() {
    let dir = tempfile::tempdir().unwrap();
    let runs = unwritable_runs_dir(dir.path());
    let chat = |extra: &[&str]| {
        run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args(support::SCRIPTED_CHAT)
                .args(["--format", "ndjson"])
                .args(extra)
                .arg("Excess?"),
        )
    };
    let out = chat(&[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stdout.is_empty(),
        "no event before the check: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("cannot record run logs in"),
        "{}",
        out.stderr
    );
    assert_eq!(chat(&["--no-record"]).code, 0);
}

#[test]
fn a_missing_claim_store_is_a_usage_error_naming_the_flag_and_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("claims");
    let expected = format!(
        "error: the claim store `{}` is not a folder: run where the claims/ folder is, or point --claims-dir (or PROMPTLAB_CLAIMS_DIR) at one",
        missing.display()
    );
    let chat_args = [&support::SCRIPTED_CHAT[..], &["--no-record", "Excess?"]].concat();
    for args in [
        &chat_args[..],
        &["prompts", "show", "--claim-id", "CLM-HH-0001"][..],
        &[
            "eval",
            "suites/smoke.yaml",
            "--provider",
            "script",
            "--list",
        ][..],
    ] {
        let out = run_command(promptlab().arg("--claims-dir").arg(&missing).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(
            out.stderr.starts_with(&expected),
            "{args:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_missing_id_in_an_existing_store_keeps_the_exact_error_event() {
    let out = support::run(&[
        "chat",
        "--claim-id",
        "CLM-NOPE-9999",
        "--provider",
        "script",
        "--script",
        "tests/data/scripts/excess.yaml",
        "--no-record",
        "--format",
        "ndjson",
        "Excess?",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stdout.lines().last().unwrap(),
        r#"{"type":"error","message":"Claim CLM-NOPE-9999 not found."}"#
    );
}

/// A runs folder that is a link to nothing cannot be made: refused before
/// any turn, naming the link and where it points (it was a bare "File
/// exists (os error 17)", exit 1).
#[cfg(unix)]
#[test]
fn a_runs_folder_that_is_a_dangling_link_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let nowhere = dir.path().join("nowhere");
    std::os::unix::fs::symlink(&nowhere, &runs).unwrap();
    let out = eval_smoke(&runs);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let said = format!(
        "cannot record run logs in `{0}` (--runs-dir, PROMPTLAB_RUNS_DIR): `{0}` is a link to `{1}`, which does not exist; nothing was run",
        runs.display(),
        nowhere.display()
    );
    assert!(out.stderr.contains(&said), "{}", out.stderr);
}

/// Reading the history of a runs folder that is a file is a usage error
/// (it was "0 runs", exit 0); one not made yet simply holds no runs.
#[test]
fn listing_a_runs_folder_that_is_a_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "runs", "a file where a folder should be");
    for args in [["runs", "list"], ["evals", "list"]] {
        let out = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &file).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        let said = format!(
            "the runs folder `{}` (--runs-dir, PROMPTLAB_RUNS_DIR) is not a folder",
            file.display()
        );
        assert!(out.stderr.contains(&said), "{args:?}: {}", out.stderr);
    }
    let missing = dir.path().join("not-yet");
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &missing)
            .args(["runs", "list"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// The folder a variant's logs go in is checked too, and the stored
/// prompts': a file in its place was found only after every turn had run
/// and lost its log.
#[test]
fn eval_refuses_a_variant_s_log_folder_it_cannot_write_before_any_turn() {
    for blocked in ["default", "prompts"] {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        let file = write(&runs, blocked, "a file where a folder should be");
        let out = eval_smoke(&runs);
        assert_eq!(out.code, 2, "{blocked}: {}{}", out.stdout, out.stderr);
        let said = format!("`{}` is not a folder; nothing was run", file.display());
        assert!(out.stderr.contains(&said), "{blocked}: {}", out.stderr);
        assert_eq!(support::run_logs_under(&runs).len(), 0, "no turn ran");
    }
}
