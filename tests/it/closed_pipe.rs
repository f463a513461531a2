//! A closed stdout under `set -o pipefail`, as a CI step sees it: a chat turn
//! or an eval cut short by `| head` exits 141 (the shell's SIGPIPE status)
//! with one stderr line and `cancelled` run logs; a listing cut short by
//! `| head` stays a quiet 0.

use crate::support;

use std::path::Path;
use std::process::Command;

use promptlab::runs::{RunStatus, read_run_log};
use support::write;

/// Runs `pipeline` under bash with pipefail and the built binary on PATH;
/// returns promptlab's own exit status, stdout and stderr.
fn pipeline(pipeline: &str, runs: &Path) -> (i32, String, String) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_promptlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -o pipefail; {pipeline}; echo \"status ${{PIPESTATUS[0]}}\" >&2");
    let mut command = Command::new("bash");
    command
        .args(["-c", &script])
        .current_dir(support::repo_root())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("PROMPTLAB_RUNS_DIR", runs);
    for (key, _) in std::env::vars() {
        if key.starts_with("GEMINI_") || key == "PROMPTLAB_PROVIDER" {
            command.env_remove(key);
        }
    }
    let run = support::run_command(&mut command);
    let (stderr, status) = run
        .stderr
        .trim_end()
        .rsplit_once("status ")
        .expect("the pipeline reports promptlab's status");
    (status.parse().unwrap(), run.stdout, stderr.to_string())
}

fn statuses(runs: &Path) -> Vec<RunStatus> {
    support::run_logs_under(runs)
        .iter()
        .map(|path| {
            read_run_log(path)
                .unwrap()
                .footer
                .expect("a completed log")
                .status
        })
        .collect()
}

/// A model that streams six pieces a fifth of a second apart: `head -1`
/// closes the pipe long before the answer ends.
fn slow_script(dir: &Path) -> std::path::PathBuf {
    write(
        dir,
        "slow.yaml",
        "turns:\n  - chunks: [\"one \", \"two \", \"three \", \"four \", \"five \", \"six\"]\n    delayMs: 200\n",
    )
}

#[test]
fn a_chat_turn_cut_short_by_head_exits_141_and_is_recorded_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let script = slow_script(dir.path());
    let (status, stdout, stderr) = pipeline(
        &format!(
            "promptlab chat --claim-id CLM-HH-0001 --provider script --script {} --format ndjson 'Hi?' | head -1",
            script.display()
        ),
        &runs,
    );
    assert_eq!(status, 141, "stderr: {stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert_eq!(stderr.trim(), "stdout closed: 1 turn cancelled");
    assert_eq!(statuses(&runs), vec![RunStatus::Cancelled]);
}

#[test]
fn an_eval_cut_short_by_head_exits_141_naming_the_turns_it_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    slow_script(dir.path());
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: slow\nclaims:\n  ids: [CLM-HH-0001, CLM-MTR-0002]\ncases:\n  - name: a\n    message: Hi?\n    script: slow.yaml\n  - name: b\n    message: Hello?\n    script: slow.yaml\n",
    );
    let (status, stdout, stderr) = pipeline(
        &format!(
            "promptlab eval {} --provider script -j 1 --format ndjson | head -2",
            suite.display()
        ),
        &runs,
    );
    assert_eq!(status, 141, "stderr: {stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert_eq!(
        stderr.trim(),
        "stdout closed: 4 turns cancelled",
        "-j 1: the first turn was cut short, the other three never ran"
    );
    let statuses = statuses(&runs);
    assert!(
        !statuses.is_empty() && statuses.iter().all(|s| *s == RunStatus::Cancelled),
        "{statuses:?}"
    );
}

#[test]
fn a_listing_cut_short_by_head_stays_a_quiet_zero() {
    let (status, stdout, stderr) = pipeline(
        "promptlab claims show CLM-HO-0013 | head -c 10",
        Path::new("runs"),
    );
    assert_eq!(status, 0, "stderr: {stderr}");
    assert_eq!(stdout.len(), 10);
    assert_eq!(stderr.trim(), "");
}

/// `/dev/full` as a stream: every write fails with "No space left on
/// device", which `eprintln!`/`println!` turn into a panic (exit 101).
#[cfg(target_os = "linux")]
fn dev_full() -> std::process::Stdio {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
        .into()
}

/// A stderr that takes nothing (`2>/dev/full`) loses the messages, never
/// the exit code: a bad suite is still a usage error (2), a turn still
/// passes (0).
#[cfg(target_os = "linux")]
#[test]
fn a_full_stderr_keeps_each_exit_code() {
    let runs = tempfile::tempdir().unwrap();
    let status = |args: &[&str]| {
        support::promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs.path())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(dev_full())
            .status()
            .unwrap()
            .code()
    };
    assert_eq!(status(&["eval", "no-such-suite.yaml"]), Some(2));
    let turn = [&support::SCRIPTED_CHAT[..], &["What is the excess?"]].concat();
    assert_eq!(status(&turn), Some(0));
}

/// A stdout that takes nothing (`>/dev/full`) is an error said on stderr
/// with exit 1, not a panic.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let cache = tempfile::tempdir().unwrap();
    let run = support::promptlab()
        .args(["--cache-dir"])
        .arg(cache.path())
        .args(["cache", "stats"])
        .stdout(dev_full())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// promptlab with `args` and a stdout whose reader is already gone, so that
/// every write to it fails (`EPIPE`), however fast the process is: its
/// exit status and stderr.
fn with_stdout_closed(args: &[String], runs: &Path) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = support::promptlab()
        .env("PROMPTLAB_RUNS_DIR", runs)
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().expect("an exit, not a signal"), stderr)
}

/// A verdict's output nobody reads (stdout closed before the first write)
/// ends the output, not the verdict: a failing eval — live, from its logs,
/// re-scored — a failing claims check and a failed compare gate each still
/// exit 1, and a passing eval 0; live NDJSON, the turns' own output, is cut
/// short (141).
#[test]
fn a_failing_verdict_nobody_reads_still_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = write(
        dir.path(),
        "d.yaml",
        "name: d\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - {name: a, message: hi, expect: {answerContains: excess}}\n",
    );
    let pass = write(
        dir.path(),
        "pass.yaml",
        "turns: [{text: \"The excess is 350.\"}]\n",
    );
    let fail = write(
        dir.path(),
        "fail.yaml",
        "turns: [{text: \"I do not know.\"}]\n",
    );
    let passed = dir.path().join("passed");
    let path = |p: &Path| p.display().to_string();
    let words = |text: &str| -> Vec<String> { text.split(' ').map(str::to_string).collect() };
    let eval = |script: &Path, extra: &str| {
        let mut args = words("eval");
        args.push(path(&suite));
        args.extend(words("--provider script --script"));
        args.push(path(script));
        args.extend(words(extra).into_iter().filter(|w| !w.is_empty()));
        args
    };
    let (status, stderr) = with_stdout_closed(&eval(&pass, "-q"), &passed);
    assert_eq!(status, 0, "{stderr}");
    for (args, expected) in [
        (eval(&pass, ""), 0),
        (eval(&fail, ""), 1),
        (eval(&fail, "-q --format ndjson"), 141),
        (
            [
                words("eval"),
                vec![path(&suite), "--report".into(), path(&runs)],
            ]
            .concat(),
            1,
        ),
        (
            [
                words("eval"),
                vec![path(&suite), "--report".into(), path(&runs)],
                words("--format ndjson"),
            ]
            .concat(),
            1,
        ),
        (
            [words("eval"), vec![path(&suite)], words("--rescore")].concat(),
            1,
        ),
        (
            [
                words("compare"),
                vec![path(&passed), path(&runs)],
                words("--fail-on-regression"),
            ]
            .concat(),
            1,
        ),
    ] {
        let (status, stderr) = with_stdout_closed(&args, &runs);
        assert_eq!(status, expected, "{args:?}\n{stderr}");
    }
    let claims = dir.path().join("claims");
    std::fs::create_dir(&claims).unwrap();
    write(&claims, "CLM-BAD-0001.json", "{\"id\": 3}\n");
    let args = [
        words("--claims-dir"),
        vec![path(&claims)],
        words("claims validate"),
    ]
    .concat();
    let (status, stderr) = with_stdout_closed(&args, &runs);
    assert_eq!(status, 1, "{stderr}");
}
