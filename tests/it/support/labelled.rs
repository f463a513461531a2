//! What the people-in-the-loop tests share (labels, calibration, review,
//! promotion): a runs folder of judged turns, and the labels written into
//! it, read as files — not through promptlab's own reader.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `promptlab` recording into (and reading) `runs`.
pub fn in_runs(runs: &Path) -> Command {
    let mut command = super::promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

/// `suites/rubric.yaml` run scripted on claim CLM-HH-0001 with the scripted
/// judge into `runs`: its run logs.
pub fn judged_runs(runs: &Path) -> Vec<PathBuf> {
    let out = super::run_command(in_runs(runs).args([
        "eval",
        "suites/rubric.yaml",
        "--provider",
        "script",
        "--claim",
        "CLM-HH-0001",
        "-q",
        "--judge-provider",
        "script",
        "--judge-script",
        "suites/scripts/judge.yaml",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    super::run_logs_under(runs)
}

/// A run log's header line.
pub fn header(log: &Path) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// Every label file under `runs` (`<stem>.labels/*.json`), oldest first.
pub fn labels_under(runs: &Path) -> Vec<Value> {
    let mut found: Vec<Value> = super::files_under(runs)
        .into_iter()
        .filter(|file| {
            file.parent()
                .is_some_and(|p| p.to_string_lossy().ends_with(".labels"))
                && file.extension().is_some_and(|e| e == "json")
        })
        .map(|file| serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap())
        .collect();
    found.sort_by_key(|label| label["at"].as_str().unwrap().to_string());
    found
}
