//! Issue #12: promptlab's own run logs stay readable by promptlab, whatever
//! their size, and a turn that errors keeps what it cost.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use promptlab::runs::store::summarize;
use promptlab::runs::{RunStatus, read_run_log, read_run_log_checked};
use serde_json::Value;
use support::{promptlab, run_command, write};

fn promptlab_in(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

fn logs_in(runs: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .flatten()
        // Fingerprint folders only: `prompts/` holds the stored prompts.
        .filter(|folder| folder.file_name() != "prompts")
        .flat_map(|folder| {
            std::fs::read_dir(folder.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|file| file.path())
        .collect();
    logs.sort();
    logs
}

fn listed(runs: &Path) -> (Vec<Value>, String) {
    let out = run_command(promptlab_in(runs).args(["runs", "list", "--json", "--limit", "0"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    (serde_json::from_str(&out.stdout).unwrap(), out.stderr)
}

/// One recorded turn with `script`, `args` added; returns its log.
fn record(runs: &Path, script: &Path, args: &[&str]) -> (support::Run, PathBuf) {
    let out = run_command(
        promptlab_in(runs)
            .args(["chat", "--provider", "script", "--format", "ndjson"])
            .args(["--claim-id", "CLM-HH-0001", "--script"])
            .arg(script)
            .args(args),
    );
    let logs = logs_in(runs);
    assert_eq!(logs.len(), 1, "{logs:?} {}", out.stderr);
    (out, logs[0].clone())
}

#[test]
fn a_header_over_one_mebibyte_is_listed() {
    // Regression: 59 × 20,000-character messages made a 1.18 MB header that
    // `runs list` skipped as invalid (it read at most 1 MiB of a line).
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let history: Vec<Value> = (0..59)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "text": "x".repeat(20_000)})
        })
        .collect();
    let history = write(
        dir.path(),
        "history.json",
        &Value::from(history).to_string(),
    );
    let script = write(dir.path(), "s.yaml", "turns:\n  - text: ok\n");
    let (out, log) = record(
        runs.path(),
        &script,
        &["--history", history.to_str().unwrap(), "and?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first_line = std::fs::read_to_string(&log).unwrap();
    assert!(first_line.lines().next().unwrap().len() > 1024 * 1024);
    let (runs_listed, stderr) = listed(runs.path());
    assert_eq!(runs_listed.len(), 1, "{stderr}");
    assert_eq!(runs_listed[0]["status"], "done");
}

#[test]
fn an_errored_turn_with_a_long_error_reads_as_finished_and_keeps_its_usage() {
    // Regressions: a footer over 16 KiB (a long provider error) read as
    // `partial`; an errored turn's footer said 0 tokens although one model
    // call had completed.
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let long_error = "e".repeat(40_000);
    let script = write(
        dir.path(),
        "s.yaml",
        &format!(
            "turns:\n  - text: looking\n    calls: [{{name: get_claim_section, args: {{section: policy}}}}]\n    usage: {{inputTokens: 1200, outputTokens: 40, cacheReadTokens: 900}}\n  - error: \"{long_error}\"\n"
        ),
    );
    let (out, log) = record(runs.path(), &script, &["q"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let (runs_listed, stderr) = listed(runs.path());
    assert_eq!(runs_listed.len(), 1, "{stderr}");
    assert_eq!(runs_listed[0]["status"], "error");
    let footer = read_run_log(&log).unwrap().footer.unwrap();
    assert_eq!(footer.status, RunStatus::Error);
    assert_eq!(footer.usage.input_tokens, Some(1200));
    assert_eq!(footer.usage.output_tokens, Some(40));
    assert_eq!(footer.usage.cache_read_tokens, Some(900));
}

/// A finished log from the excess script, for the tests that damage it.
fn finished_log(runs: &Path) -> PathBuf {
    let script = support::repo_root().join("tests/data/scripts/excess.yaml");
    let (out, log) = record(runs, &script, &["q"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    log
}

#[test]
fn the_checked_reader_refuses_any_unreadable_line() {
    let runs = tempfile::tempdir().unwrap();
    let log = finished_log(runs.path());
    assert!(read_run_log_checked(&log).is_ok());
    let text = std::fs::read(&log).unwrap();
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let damaged = |replacement: &[u8]| {
        let mut out = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            out.extend_from_slice(if index == 2 { replacement } else { line });
            if index + 1 < lines.len() {
                out.push(b'\n');
            }
        }
        out
    };
    for bad in [
        &b"{\"record\": \"event\", oops"[..],
        &[0xff, 0xfe, b'{'][..],
    ] {
        std::fs::write(&log, damaged(bad)).unwrap();
        let error = read_run_log_checked(&log).unwrap_err().to_string();
        assert!(error.contains("line 3"), "{error}");
    }
    // A partial log cut mid-line: the lenient reader reads up to the cut,
    // the checked one refuses it.
    let partial = PathBuf::from(format!("{}.partial", log.display()));
    let cut = &text[..text.len() - 40];
    std::fs::write(&partial, cut).unwrap();
    assert!(read_run_log(&partial).is_ok());
    assert!(read_run_log_checked(&partial).is_err());
}

#[test]
fn a_partial_renamed_while_listing_is_read_under_its_final_name() {
    let runs = tempfile::tempdir().unwrap();
    let log = finished_log(runs.path());
    // As listed a moment before the writer renamed it.
    let listed_as = PathBuf::from(format!("{}.partial", log.display()));
    let summary = summarize(&listed_as).unwrap();
    assert_eq!(summary.path, log);
    assert!(!summary.partial);
    assert_eq!(summary.footer.unwrap().status, RunStatus::Done);
}

#[test]
fn a_failed_log_write_removes_its_partial_file() {
    use promptlab::chat::{TurnOutput, TurnStart};
    use promptlab::sink::run_log::RunRecorder;

    let runs = tempfile::tempdir().unwrap();
    let request = support::engine::request_for_id("CLM-HH-0001", "q");
    let mut recorder = RunRecorder::new(runs.path(), &request, "script", None);
    recorder
        .record(&TurnOutput::Started(Box::new(TurnStart {
            turn_id: "00000000-0000-4000-8000-000000000000".into(),
            started_at: chrono::Utc::now(),
            fingerprint: "default".into(),
            applied_overrides: Default::default(),
            ignored_overrides: Vec::new(),
            unknown_placeholders: Vec::new(),
            remote: None,
        })))
        .unwrap();
    let partial = recorder.path().unwrap().to_path_buf();
    assert!(partial.exists());
    // Something already holds the final name: the rename must fail.
    let final_path = PathBuf::from(partial.to_string_lossy().trim_end_matches(".partial"));
    std::fs::create_dir(&final_path).unwrap();
    write(&final_path, "occupied", "x");
    let error = recorder.finish(RunStatus::Done).unwrap_err().to_string();
    assert!(!partial.exists(), "the .partial was left behind");
    assert!(error.contains(&*partial.to_string_lossy()), "{error}");
}
