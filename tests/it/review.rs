//! `promptlab review` on a real terminal (tmux): single keys label the
//! turns, the judge's verdict stays hidden until the reviewer decides, and
//! a queue quit half-way resumes without asking about a labelled turn again.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;

use support::labelled;
use support::tmux::{Tmux, exit_code, have_tmux};
use support::{promptlab, run_command};

/// `review` in a tmux terminal; its exit code goes to `done`, and the
/// terminal's settings after it to `done.stty`.
fn review(runs: &Path, done: &Path, name: &str) -> Tmux {
    let command = format!(
        "cd {root} && NO_COLOR=1 PROMPTLAB_RUNS_DIR={runs} {bin} review --reviewer ann --limit 4; code=$?; stty -a > {done}.stty; echo $code > {done}",
        root = support::repo_root().display(),
        runs = runs.display(),
        bin = env!("CARGO_BIN_EXE_promptlab"),
        done = done.display(),
    );
    let tmux = Tmux {
        socket: format!("promptlab-review-{}-{name}", std::process::id()),
        session: "review".into(),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "review",
        "-x",
        "160",
        "-y",
        "50",
        &command,
    ]);
    tmux
}

/// Every label under `runs`, all by ann: (turn id, verdict).
fn labels(runs: &Path) -> Vec<(String, String)> {
    let labels = labelled::labels_under(runs);
    assert!(labels.iter().all(|label| label["reviewer"] == "ann"));
    let pair = |label: &serde_json::Value| {
        let text = |field: &str| label[field].as_str().unwrap().to_string();
        (text("turnId"), text("verdict"))
    };
    labels.iter().map(pair).collect()
}

#[test]
fn keys_label_blind_to_the_judge_and_a_second_session_resumes() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    labelled::judged_runs(&runs);
    let done = dir.path().join("first");
    let tmux = review(&runs, &done, "first");
    let first = tmux.wait_for("1 of 4");
    assert!(
        first.contains("question: ") && first.contains("answer:"),
        "{first}"
    );
    assert!(first.contains("criteria:"), "{first}");
    let said = ["judge:", "judge pass", "judge fail"];
    assert!(
        said.iter().all(|verdict| !first.contains(verdict)),
        "blind until decided:\n{first}"
    );
    tmux.keys(&["f"]);
    let second = tmux.wait_for("2 of 4");
    assert!(
        second.contains("previous: you fail · judge pass"),
        "{second}"
    );
    tmux.keys(&["s"]);
    tmux.wait_for("3 of 4");
    tmux.keys(&["p"]);
    tmux.wait_for("4 of 4");
    tmux.keys(&["q"]);
    assert_eq!(exit_code(&tmux, &done), "0");
    drop(tmux);
    let after_first = labels(&runs);
    assert_eq!(after_first.len(), 2);
    let verdicts: Vec<&str> = after_first.iter().map(|(_, v)| v.as_str()).collect();
    assert!(verdicts.contains(&"fail") && verdicts.contains(&"pass"));

    // Again: the same seed, the labelled turns left out — nothing is asked
    // twice.
    let done = dir.path().join("second");
    let tmux = review(&runs, &done, "second");
    tmux.wait_for("1 of 4");
    tmux.keys(&["p"]);
    tmux.wait_for("2 of 4");
    tmux.keys(&["p"]);
    tmux.wait_for("3 of 4");
    tmux.keys(&["q"]);
    assert_eq!(exit_code(&tmux, &done), "0");
    let all = labels(&runs);
    let turns: BTreeSet<&String> = all.iter().map(|(turn, _)| turn).collect();
    assert_eq!((all.len(), turns.len()), (4, 4), "{all:?}");
}

#[test]
fn escape_sequences_are_not_keys_and_ctrl_c_puts_the_terminal_back() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    labelled::judged_runs(&runs);
    let done = dir.path().join("keys");
    let tmux = review(&runs, &done, "keys");
    tmux.wait_for("1 of 4");
    // F5 is ESC [ 1 5 ~, Home ESC [ 1 ~, Up ESC [ A: none is a key of its
    // own (the 1 inside is no criterion, the A nothing).
    tmux.keys(&["F5", "Home", "Up"]);
    tmux.keys(&["n", "a", "b", "BSpace", "c", "Escape"]);
    // Keys are taken in order: once this note shows, the ones before it
    // have been read.
    tmux.keys(&["n", "z", "z", "Enter"]);
    let screen = tmux.wait_for("note: zz");
    assert!(screen.contains("1 [    ]"), "{screen}");
    assert!(
        !screen.contains("note: ac"),
        "Escape left the note as it was:\n{screen}"
    );
    tmux.keys(&["C-c"]);
    assert_eq!(exit_code(&tmux, &done), "130");
    let stty = std::fs::read_to_string(format!("{}.stty", done.display())).unwrap();
    let flags: Vec<&str> = stty.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig"] {
        assert!(flags.contains(&flag), "{flag} not restored: {stty}");
    }
    assert!(labelled::labels_under(&runs).is_empty());
}

#[test]
fn review_without_a_terminal_says_to_use_label() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path())
            .args(["review", "--reviewer", "ann"])
            .stdin(std::process::Stdio::null()),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("promptlab label TURN"),
        "{}",
        out.stderr
    );
}
