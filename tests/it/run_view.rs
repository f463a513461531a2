//! One view of a recorded turn (`runs::view::RunView`) over every kind of
//! log — done, error, cancelled, partial, an eval turn with a verdict and a
//! log of the older header schema — read whole and from a listing alike.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use promptlab::runs::record::{LogState, Outcome, RunStatus};
use promptlab::runs::{read_run_log, scan_runs};
use support::{promptlab, run_command, write};

fn chat(runs: &Path, script: &Path) {
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .args([
                "chat",
                "--claim-id",
                "CLM-HH-0001",
                "--provider",
                "script",
                "--format",
                "ndjson",
                "--script",
            ])
            .arg(script)
            .arg("Excess?"),
    );
}

fn only_log(runs: &Path) -> PathBuf {
    let logs = support::run_logs_under(runs);
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// The state a whole log and a listing of it give.
fn states(path: &Path) -> (LogState, LogState) {
    let whole = read_run_log(path).unwrap().view().state();
    let (listed, _) = scan_runs(&[path.parent().unwrap().to_path_buf()]).unwrap();
    let listed = listed
        .iter()
        .find(|s| s.path == path)
        .expect("listed")
        .view()
        .state();
    (whole, listed)
}

#[test]
fn every_kind_of_log_reads_one_way() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is £350.\n",
    );
    let broken = write(dir.path(), "broken.yaml", "turns:\n  - error: overloaded\n");

    let done = dir.path().join("done");
    chat(&done, &ok);
    let path = only_log(&done);
    let done_state = LogState::Ended(RunStatus::Done);
    assert_eq!(states(&path), (done_state, done_state));
    let log = read_run_log(&path).unwrap();
    let view = log.view();
    assert!(view.verdict().is_none(), "a chat turn has no verdict");
    assert!(view.key().is_none(), "a chat turn has no eval key");
    let place = view.place();
    assert_eq!(
        (place.suite, place.case.as_str(), place.sample),
        (None, "“Excess?”", 0)
    );
    let numbers = view.numbers(None);
    assert!(!numbers.errored && numbers.outcome.is_none());
    assert_eq!(numbers.latency_ms, log.footer.as_ref().map(|f| f.total_ms));

    let errored = dir.path().join("error");
    chat(&errored, &broken);
    let path = only_log(&errored);
    let error_state = LogState::Ended(RunStatus::Error);
    assert_eq!(states(&path), (error_state, error_state));
    assert!(read_run_log(&path).unwrap().view().numbers(None).errored);

    // A log still named `.partial` is partial whatever its last line says.
    let partial = dir.path().join("partial");
    std::fs::create_dir_all(partial.join("default")).unwrap();
    let name = format!("{}.partial", path.file_name().unwrap().to_string_lossy());
    let partial_path = partial.join("default").join(name);
    std::fs::copy(&path, &partial_path).unwrap();
    assert_eq!(
        read_run_log(&partial_path).unwrap().view().state(),
        LogState::Partial
    );

    // The shipped example is of header schema 1: it reads as before.
    let example = only_log(&support::repo_root().join("runs/examples"));
    let log = read_run_log(&example).unwrap();
    assert_eq!(log.header.schema, 1);
    assert_eq!(log.view().state(), done_state);
}

#[test]
fn a_cancelled_turn_and_an_eval_turns_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let slow = write(
        dir.path(),
        "slow.yaml",
        "turns:\n  - chunks: [\"one \", \"two \", \"three \", \"four\"]\n    delayMs: 200\n",
    );
    let cancelled = dir.path().join("cancelled");
    let bin = env!("CARGO_BIN_EXE_promptlab");
    let status = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{bin} --runs-dir {} chat --claim-id CLM-HH-0001 --provider script --script {} --format ndjson Hi | head -1 >/dev/null",
            cancelled.display(),
            slow.display()
        ))
        .current_dir(support::repo_root())
        .status()
        .unwrap();
    assert!(status.success());
    let path = only_log(&cancelled);
    let state = LogState::Ended(RunStatus::Cancelled);
    assert_eq!(states(&path), (state, state));
    assert!(read_run_log(&path).unwrap().view().numbers(None).errored);

    let eval_runs = dir.path().join("eval");
    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: I could not find it.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: v\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - name: excess\n    message: Excess?\n    script: ok.yaml\n    expect: {answerContains: excess}\n",
    );
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &eval_runs)
            .args(["eval", "--provider", "script"])
            .arg(&suite),
    );
    let log = read_run_log(&only_log(&eval_runs)).unwrap();
    let verdict = log.view().verdict().expect("an eval turn's verdict");
    assert_eq!(verdict.outcome, Outcome::Fail);
    let key = log.view().key().expect("an eval turn's key");
    assert_eq!(key.version, "default");
    assert_eq!(
        (
            key.place.suite.as_deref(),
            key.place.claim.as_str(),
            key.place.case.as_str(),
            key.place.sample
        ),
        (Some("v"), "CLM-HH-0001", "excess", 1)
    );
    let numbers = log.view().numbers(Some(&verdict));
    assert_eq!(numbers.outcome, Some(Outcome::Fail));
    assert!(!numbers.errored, "a failed turn did not error");
}
