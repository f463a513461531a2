//! `eval --watch` (docs/cache.md): driven by the test — it edits the files
//! and waits, with a deadline, for the lines saying what changed.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use support::reports::answer_script;
use support::{promptlab, write};

const DEADLINE: Duration = Duration::from_secs(60);

fn suite(dir: &Path, expected: &str) {
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: watched\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: answer.yaml\n    expect: {{answerContains: {expected}}}\n"
        ),
    );
}

/// Lines of the child's stdout until one contains `needle`; panics past the deadline.
fn wait_for(lines: &Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
            let found = line.contains(needle);
            seen.push(line);
            if found {
                return;
            }
        }
    }
    panic!(
        "no line with {needle:?} within {DEADLINE:?}; saw:\n{}",
        seen.join("\n")
    );
}

#[test]
fn watch_runs_again_on_each_edit_and_says_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "answer.yaml",
        &answer_script("The excess is £350."),
    );
    suite(dir.path(), "excess");
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["eval", "--watch", "--cache", "--provider", "script", "-q"])
        .arg(dir.path().join("suite.yaml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, lines) = channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut seen = Vec::new();
    wait_for(&lines, "watch: first run", &mut seen);
    wait_for(&lines, "watch: watching", &mut seen);

    suite(dir.path(), "deductible");
    wait_for(&lines, "suite.yaml changed; running again", &mut seen);
    wait_for(
        &lines,
        "watch: 1 newly failing, 0 newly passing, 0 unchanged",
        &mut seen,
    );
    wait_for(
        &lines,
        "newly failing: default · CLM-HH-0001 · excess #1",
        &mut seen,
    );

    // An invalid edit is said, and watching goes on.
    write(dir.path(), "suite.yaml", "name: [broken\n");
    wait_for(&lines, "the run could not start", &mut seen);
    wait_for(&lines, "watch: watching", &mut seen);

    // A script the suite names is watched too.
    suite(dir.path(), "deductible");
    wait_for(&lines, "watch: watching", &mut seen);
    write(
        dir.path(),
        "answer.yaml",
        &answer_script("The excess (deductible) is £350."),
    );
    wait_for(&lines, "answer.yaml changed", &mut seen);
    wait_for(&lines, "watch: 0 newly failing, 1 newly passing", &mut seen);
    wait_for(&lines, "watch: watching", &mut seen);

    support::interrupt(&child);
    wait_for(
        &lines,
        "watch: stopped; last run: 1 passed, 0 failed, 0 errored",
        &mut seen,
    );
    let status = support::exit_within(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
}

#[test]
fn a_cases_from_bank_is_watched() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "answer.yaml",
        &answer_script("The excess is £350."),
    );
    let bank = |expected: &str| {
        write(
            dir.path(),
            "bank.csv",
            &format!(
                "name,message,script,expect.answerContains\nexcess,What is the excess?,answer.yaml,{expected}\n"
            ),
        )
    };
    bank("excess");
    write(
        dir.path(),
        "suite.yaml",
        "name: watched\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\ncasesFrom: bank.csv\n",
    );
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["eval", "--watch", "--cache", "--provider", "script", "-q"])
        .arg(dir.path().join("suite.yaml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, lines) = channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut seen = Vec::new();
    wait_for(&lines, "watch: first run", &mut seen);
    wait_for(&lines, "watch: watching", &mut seen);
    bank("deductible");
    wait_for(&lines, "bank.csv changed; running again", &mut seen);
    wait_for(&lines, "watch: 1 newly failing, 0 newly passing", &mut seen);
    wait_for(&lines, "watch: watching", &mut seen);
    support::interrupt(&child);
    let status = support::exit_within(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
}
