//! An eval turn nobody watches live is written out whenever it waits (for
//! the model's next chunk, a judge, a reader), not after every record (issue #31): killed
//! mid-turn, it still leaves a clearly partial log, as far as its last
//! wait, which `runs list` shows as `partial` and `--resume` runs again.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use promptlab::event::ChatEvent;
use promptlab::runs::read_run_log;
use support::{promptlab, run_command, run_logs_under, write};

/// A tool call, then an answer that streams one chunk every `delay_ms`.
fn slow_suite(dir: &Path, delay_ms: u64) -> PathBuf {
    write(
        dir,
        "slow.yaml",
        &format!(
            "turns:\n  - calls:\n      - {{name: get_claim_section, args: {{section: policy}}}}\n  - chunks: [\"one \", \"two \", \"three \", \"four \", \"five\"]\n    delayMs: {delay_ms}\n"
        ),
    );
    write(
        dir,
        "suite.yaml",
        "name: killed\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - {name: excess, message: What is the excess?, script: slow.yaml}\n",
    )
}

/// Runs `suite` and kills it once a `.partial` log holds `written` (or
/// fails at a generous deadline); that log.
fn killed_once_written(runs: &Path, suite: &Path, written: &str) -> PathBuf {
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", runs)
        .args(["eval", "--provider", "script", "-q"])
        .arg(suite)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let partial = loop {
        let found = support::files_under(runs).into_iter().find(|path| {
            path.to_string_lossy().ends_with(".ndjson.partial")
                && std::fs::read_to_string(path).is_ok_and(|text| text.contains(written))
        });
        if let Some(log) = found {
            break log;
        }
        assert!(Instant::now() < deadline, "`{written}` never written out");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    partial
}

#[test]
fn a_killed_eval_leaves_a_partial_log_as_far_as_its_last_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = slow_suite(dir.path(), 2000);
    let partial = killed_once_written(&runs, &suite, "\"record\":\"model_call\"");
    let log = read_run_log(&partial).unwrap();
    assert!(log.footer.is_none());
    assert_eq!(
        log.model_calls().count(),
        1,
        "as far as its last model call"
    );
    assert!(log.prompt.is_some(), "its stored prompt is there");
    let listed = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["runs", "list", "--json"]),
    );
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "partial");
}

/// Written out at each wait, not only at model calls: the text a call has
/// streamed so far is on disk while it waits for more.
#[test]
fn a_killed_eval_leaves_the_text_streamed_before_its_turn_last_waited() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = slow_suite(dir.path(), 1500);
    let partial = killed_once_written(&runs, &suite, "\"text\":\"one \"");
    let log = read_run_log(&partial).unwrap();
    assert!(log.footer.is_none(), "killed mid-turn");
    assert_eq!(log.model_calls().count(), 1, "the first call, whole");
    let streamed: Vec<&str> = log
        .events()
        .filter_map(|event| match event {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.first(), Some(&"one "), "{streamed:?}");
}

/// Finished logs are synced and renamed in groups (`eval::log_commit`):
/// killed at any moment, a run leaves complete names only on logs with
/// their footer, every other log `.partial` (some complete but not yet
/// committed), and `--resume` runs exactly the turns without a complete
/// log again.
#[test]
fn a_killed_eval_leaves_complete_names_only_on_committed_logs() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    write(
        dir.path(),
        "quick.yaml",
        "turns:\n  - chunks: [\"The excess is £250.\"]\n    delayMs: 40\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: killed\nclaims: {ids: [CLM-HH-0001]}\nrepeats: 300\ncases:\n  - {name: excess, message: What is the excess?, script: quick.yaml}\n",
    );
    let eval = |resume: bool| {
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["eval", "--provider", "script", "-q", "-j", "4"])
            .arg(&suite);
        if resume {
            command.arg("--resume");
        }
        command
    };
    let mut child = eval(false)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while run_logs_under(&runs).len() < 20 {
        assert!(Instant::now() < deadline, "no logs committed");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let complete = run_logs_under(&runs);
    assert!(complete.len() < 300, "killed before the end");
    for log in &complete {
        let read = read_run_log(log).unwrap();
        assert!(read.footer.is_some(), "{log:?} has a complete name");
    }
    let partial = support::files_under(&runs)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".ndjson.partial"))
        .count();
    let resumed = run_command(&mut eval(true));
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let after = run_logs_under(&runs);
    assert_eq!(after.len(), 300, "each turn once: {} were partial", partial);
}
