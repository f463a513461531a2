//! `promptlab label` (SPEC §15): a person's verdict on a recorded turn,
//! one immutable file per label beside the run log, and the bad input it
//! refuses without writing anything.

use crate::support;

use std::path::{Path, PathBuf};

use support::labelled::{self, in_runs};
use support::run_command;

fn turn_id(log: &Path) -> String {
    labelled::header(log)["turnId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn labels_beside(log: &Path) -> Vec<serde_json::Value> {
    let name = log.file_name().unwrap().to_str().unwrap();
    let dir = log.with_file_name(name.replace(".ndjson", ".labels"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut labels: Vec<serde_json::Value> = entries
        .map(|entry| {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    labels.sort_by_key(|label| label["at"].as_str().unwrap().to_string());
    labels
}

#[test]
fn two_reviewers_labelling_one_turn_at_once_both_keep_their_label() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let log = labelled::judged_runs(&runs)[0].clone();
    let id = turn_id(&log);
    let label = |reviewer: &str, verdict: &str| {
        in_runs(&runs)
            .args([
                "label",
                &id[..8],
                "--verdict",
                verdict,
                "--reviewer",
                reviewer,
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut ann, mut bob) = (label("ann", "pass"), label("bob", "fail"));
    assert!(ann.wait().unwrap().success() && bob.wait().unwrap().success());
    // A later label by the same reviewer is a new file too.
    let out = run_command(in_runs(&runs).args([
        "label",
        &id,
        "--verdict",
        "fail",
        "--reviewer",
        "ann",
        "--note",
        "quotes no excess",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(&format!("labelled turn {id} fail by ann"))
    );
    let labels = labels_beside(&log);
    let who: Vec<(&str, &str)> = labels
        .iter()
        .map(|l| {
            (
                l["reviewer"].as_str().unwrap(),
                l["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert!(who.contains(&("ann", "pass")) && who.contains(&("bob", "fail")));
    assert_eq!(who[2], ("ann", "fail"));
    assert_eq!(labels[2]["note"], "quotes no excess");
    assert!(labels.iter().all(|l| l["turnId"] == id.as_str()));
}

#[test]
fn the_reviewer_defaults_to_promptlab_reviewer_and_a_criterion_must_be_judged() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let logs = labelled::judged_runs(&runs);
    // The payment case's turns are judged on one criterion.
    let log = logs
        .iter()
        .find(|log| {
            std::fs::read_to_string(log)
                .unwrap()
                .contains("\"case\":\"payment\"")
        })
        .unwrap();
    let id = turn_id(log);
    let criterion = "does not promise payment before coverage is confirmed";
    let out = run_command(
        in_runs(&runs)
            .env("PROMPTLAB_REVIEWER", "cy")
            .args(["label", &id, "--verdict", "pass", "--criterion"])
            .arg(format!("{criterion}=pass")),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let labels = labels_beside(log);
    assert_eq!(labels[0]["reviewer"], "cy");
    assert_eq!(labels[0]["criteria"][criterion], "pass");

    let out = run_command(in_runs(&runs).args([
        "label",
        &id,
        "--verdict",
        "pass",
        "--reviewer",
        "cy",
        "--criterion",
        "is polite=fail",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--criterion `is polite`: turn")
            && out.stderr.contains(&format!("`{criterion}`")),
        "{}",
        out.stderr
    );
    assert_eq!(labels_beside(log).len(), 1, "nothing more written");
    // A name that cannot be one: a control character, or set but empty.
    let out = run_command(in_runs(&runs).args([
        "label",
        &id,
        "--verdict",
        "pass",
        "--reviewer",
        "ann\nbob",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("control character"), "{}", out.stderr);
    let out = run_command(in_runs(&runs).env("PROMPTLAB_REVIEWER", " ").args([
        "label",
        &id,
        "--verdict",
        "pass",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("PROMPTLAB_REVIEWER: the reviewer's name is empty"),
        "{}",
        out.stderr
    );
    assert_eq!(labels_beside(log).len(), 1, "nothing more written");
}

#[test]
fn an_unknown_turn_or_a_partial_log_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let log = labelled::judged_runs(&runs)[0].clone();
    let id = turn_id(&log);
    let before = support::files_under(&runs);
    let out = run_command(in_runs(&runs).args(["label", "0123abcd", "--verdict", "pass"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no run log matches `0123abcd`"),
        "{}",
        out.stderr
    );
    let out = run_command(in_runs(&runs).args(["label", &id, "--verdict", "maybe"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("`maybe` is not a verdict"),
        "{}",
        out.stderr
    );
    // A log still being recorded (or cut short) takes no label.
    let partial = PathBuf::from(format!("{}.partial", log.display()));
    std::fs::rename(&log, &partial).unwrap();
    let out =
        run_command(in_runs(&runs).args(["label", &id, "--verdict", "pass", "--reviewer", "x"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("still being recorded"),
        "{}",
        out.stderr
    );
    std::fs::rename(&partial, &log).unwrap();
    assert_eq!(support::files_under(&runs), before);
}

#[test]
fn a_link_at_the_labels_folder_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let log = labelled::judged_runs(&runs)[0].clone();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let name = log
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace(".ndjson", ".labels");
    std::os::unix::fs::symlink(&elsewhere, log.with_file_name(name)).unwrap();
    let out = run_command(in_runs(&runs).args([
        "label",
        &turn_id(&log),
        "--verdict",
        "pass",
        "--reviewer",
        "x",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("never written through"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
