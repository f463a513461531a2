//! `compare` of two eval runs streams its pairs from the index (#65): the
//! same figures as the same runs read into memory from folders of logs,
//! every pair counted but only the worst `--worst N` listed (pass→fail
//! first, then errors, then the largest latency increases), and the runs
//! only in one side counted with the first N listed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{promptlab, run_command, write};

/// A suite of four cases on two claims; `candidate` breaks `regress`
/// (pass → fail) and `breaks` (an error), slows `slow` down, and drops
/// `dropped`.
fn suite(dir: &Path, candidate: bool) -> PathBuf {
    let dir = dir.join(if candidate { "candidate" } else { "base" });
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    let (regress, breaks, slow) = if candidate {
        (
            "turns:\n  - text: I could not find it.\n",
            "turns:\n  - error: upstream unavailable\n",
            "turns:\n  - text: The excess is £350.\n    delayMs: 400\n",
        )
    } else {
        (
            "turns:\n  - text: The excess is £350.\n",
            "turns:\n  - text: The excess is £350.\n",
            "turns:\n  - text: The excess is £350.\n",
        )
    };
    write(&dir, "regress.yaml", regress);
    write(&dir, "breaks.yaml", breaks);
    write(&dir, "slow.yaml", slow);
    let mut cases = String::new();
    for (name, script) in [
        ("regress", "regress.yaml"),
        ("breaks", "breaks.yaml"),
        ("slow", "slow.yaml"),
        ("same", "ok.yaml"),
    ] {
        cases.push_str(&format!(
            "  - name: {name}\n    message: What is the excess?\n    script: {script}\n    expect: {{answerContains: £350}}\n"
        ));
    }
    if !candidate {
        cases.push_str("  - name: dropped\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: £350}\n");
    }
    write(
        &dir,
        "suite.yaml",
        &format!(
            "name: streamed\nclaims: {{ids: [CLM-HH-0001, CLM-MTR-0002]}}\ndefaults: {{today: 2026-11-30}}\ncases:\n{cases}"
        ),
    )
}

fn in_runs(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

fn eval(runs: &Path, suite: &Path, id: &str) {
    let out = run_command(
        in_runs(runs)
            .args(["eval", "--provider", "script", "--quiet", "--eval-run", id])
            .arg(suite),
    );
    assert!(out.code <= 1, "{}", out.stderr);
}

fn compare(runs: &Path, args: &[&str]) -> (Value, String) {
    let out = run_command(
        in_runs(runs)
            .args(["compare", "--format", "json"])
            .args(args),
    );
    assert!(out.code <= 1, "{args:?}: {}", out.stderr);
    (serde_json::from_str(&out.stdout).unwrap(), out.stderr)
}

/// Base and candidate each in a folder of their own, and both in one runs
/// folder (with its index) as eval runs ev-…01 and ev-…02.
fn runs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (base, candidate, both) = (dir.join("a"), dir.join("b"), dir.join("both"));
    eval(&base, &suite(dir, false), "ev-5eed000001");
    eval(&candidate, &suite(dir, true), "ev-5eed000002");
    for from in [&base, &candidate] {
        let copied = Command::new("cp")
            .args(["-r", "--"])
            .arg(from.join("."))
            .arg(&both)
            .status()
            .unwrap();
        assert!(copied.success());
    }
    for leftover in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(both.join(leftover));
    }
    (base, candidate, both)
}

/// `value` with every absolute path of `roots` made `<runs>`, and each
/// side's label and source (which name how it was given) left out.
fn comparable(value: &Value, roots: &[&Path]) -> Value {
    let mut text = value.to_string();
    for root in roots {
        text = text.replace(&root.display().to_string(), "<runs>");
    }
    let mut value: Value = serde_json::from_str(&text).unwrap();
    for side in ["a", "b"] {
        value[side]["label"] = Value::Null;
        value[side]["source"] = Value::Null;
    }
    value
}

#[test]
fn two_eval_runs_streamed_give_the_figures_of_their_logs_read_into_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (base, candidate, both) = runs(dir.path());
    let in_memory = compare(
        dir.path(),
        &[base.to_str().unwrap(), candidate.to_str().unwrap()],
    )
    .0;
    let (streamed, stderr) = compare(&both, &["ev-5eed000001", "ev-5eed000002"]);
    assert!(!stderr.contains("scanning"), "{stderr}");
    assert_eq!(streamed["paired"], 8);
    assert_eq!(streamed["passToFail"], 2);
    assert_eq!(streamed["errored"], 2);
    assert_eq!(streamed["onlyInATotal"], 2);
    assert_eq!(
        comparable(&streamed, &[&both]),
        comparable(&in_memory, &[&base, &candidate]),
        "the streamed comparison is the one read from the logs"
    );
}

#[test]
fn only_the_worst_pairs_and_the_first_unpaired_runs_are_listed_all_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, both) = runs(dir.path());
    let listed = |worst: &str| {
        let (report, _) = compare(&both, &["ev-5eed000001", "ev-5eed000002", "--worst", worst]);
        let cases: Vec<String> = report["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["case"].as_str().unwrap().to_string())
            .collect();
        (report, cases)
    };
    let (report, cases) = listed("2");
    assert_eq!(cases, ["regress", "regress"], "pass→fail first");
    assert_eq!(report["paired"], 8, "every pair counted");
    assert_eq!(report["changedPairs"], 4);
    assert_eq!(report["onlyInA"].as_array().unwrap().len(), 2);
    let (_, cases) = listed("4");
    assert_eq!(
        cases,
        ["regress", "regress", "breaks", "breaks"],
        "then errors"
    );
    let (_, cases) = listed("6");
    assert_eq!(
        &cases[4..],
        ["slow", "slow"],
        "then the largest latency increases"
    );
    let (report, _) = listed("1");
    assert_eq!(report["onlyInA"].as_array().unwrap().len(), 1);
    assert_eq!(report["onlyInATotal"], 2);
    assert_eq!(report["onlyInA"][0]["case"], "dropped");

    let out = run_command(in_runs(&both).args([
        "compare",
        "ev-5eed000001",
        "ev-5eed000002",
        "--worst",
        "1",
    ]));
    assert_eq!(out.code, 0, "no gate asked for: {}", out.stderr);
    assert!(
        out.stdout
            .contains("Only in A (2 unpaired):\n  default · CLM-HH-0001 · dropped #1"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  … and 1 more (--worst N lists more)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Listed: the worst 1 of 8 pairs"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_bad_worst_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["x", "", "1.5", "99999999999999999999999"] {
        let out = run_command(in_runs(dir.path()).args([
            "compare",
            "ev-5eed000001",
            "ev-5eed000002",
            "--worst",
            bad,
        ]));
        assert_eq!(out.code, 2, "{bad:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("invalid value") && out.stderr.contains("--worst"),
            "{bad:?}: {}",
            out.stderr
        );
    }
}
