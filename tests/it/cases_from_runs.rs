//! `promptlab cases from-runs` (SPEC §15): recorded turns that people
//! failed (or voted down, or named) appended as regression cases to a JSONL
//! dataset; promoted again, nothing is added; run, a promoted case asks the
//! same question of the same claim.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::labelled::{self, header, in_runs};
use support::{run_command, write};

fn rows(dataset: &Path) -> Vec<Value> {
    std::fs::read_to_string(dataset)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn the_turns_people_failed_become_cases_asking_the_same_question_of_the_same_claim() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let logs = labelled::judged_runs(&runs);
    let failed: Vec<&PathBuf> = logs.iter().take(2).collect();
    for log in &failed {
        let out = run_command(in_runs(&runs).arg("label").arg(log).args([
            "--verdict",
            "fail",
            "--reviewer",
            "ann",
            "--note",
            "names the excess from the policy",
            "--correction",
            "£250",
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    // A turn labelled pass is not promoted.
    let out = run_command(in_runs(&runs).arg("label").arg(&logs[2]).args([
        "--verdict",
        "pass",
        "--reviewer",
        "ann",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dataset = dir.path().join("regressions.jsonl");
    let promote = || {
        run_command(
            in_runs(&runs)
                .args(["cases", "from-runs", "--labelled", "fail", "--to"])
                .arg(&dataset)
                .arg("--expect-correction"),
        )
    };
    let out = promote();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("appended 2 cases"), "{}", out.stdout);
    let promoted = rows(&dataset);
    assert_eq!(promoted.len(), 2);
    let mut froms: Vec<String> = promoted
        .iter()
        .map(|r| r["from"].as_str().unwrap().to_string())
        .collect();
    let mut expected: Vec<String> = failed
        .iter()
        .map(|log| header(log)["turnId"].as_str().unwrap().to_string())
        .collect();
    froms.sort();
    expected.sort();
    assert_eq!(froms, expected);
    for row in &promoted {
        assert_eq!(row["tags"], serde_json::json!(["from-review"]));
        assert_eq!(row["claims"]["ids"], serde_json::json!(["CLM-HH-0001"]));
        assert_eq!(
            row["expect"]["rubric"],
            serde_json::json!(["names the excess from the policy"])
        );
        assert_eq!(row["expect"]["answerContains"], serde_json::json!(["£250"]));
    }
    // Again: nothing new, the file byte for byte the same.
    let before = std::fs::read(&dataset).unwrap();
    let out = promote();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("appended 0 cases") && out.stdout.contains("2 already there"));
    assert_eq!(std::fs::read(&dataset).unwrap(), before);

    // Run: each promoted case asks what its turn asked, of the same claim.
    write(
        dir.path(),
        "answer.yaml",
        &support::reports::answer_script("The excess is £250."),
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: regressions\ncasesFrom: regressions.jsonl\ncases: []\n",
    );
    let replayed = dir.path().join("replayed");
    let out = run_command(
        in_runs(&replayed)
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script", "--script"])
            .arg(dir.path().join("answer.yaml"))
            .args([
                "--judge-provider",
                "script",
                "--judge-script",
                "suites/scripts/judge.yaml",
                "-q",
            ]),
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let mut asked: Vec<(Value, Value)> = support::run_logs_under(&replayed)
        .iter()
        .map(|log| {
            let request = &header(log)["request"];
            (request["claimId"].clone(), request["messages"].clone())
        })
        .collect();
    let mut original: Vec<(Value, Value)> = failed
        .iter()
        .map(|log| {
            let request = &header(log)["request"];
            (request["claimId"].clone(), request["messages"].clone())
        })
        .collect();
    asked.sort_by_key(|pair| pair.1.to_string());
    original.sort_by_key(|pair| pair.1.to_string());
    assert_eq!(asked, original);
}

#[test]
fn a_vote_down_promotes_and_bad_input_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let logs = labelled::judged_runs(&runs);
    let turn = header(&logs[0])["turnId"].as_str().unwrap().to_string();
    // A vote as the page records it (runs::feedback's record, one a line).
    let name = logs[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace(".ndjson", ".feedback.jsonl");
    std::fs::write(
        logs[0].with_file_name(name),
        format!("{{\"turnId\":\"{turn}\",\"vote\":\"down\",\"at\":\"2026-12-06T09:00:00Z\"}}\n"),
    )
    .unwrap();
    let dataset = dir.path().join("voted.jsonl");
    std::fs::write(
        &dataset,
        "{\"name\":\"kept\",\"message\":\"Is it covered?\"}",
    )
    .unwrap();
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", "--voted", "down", "--to"])
            .arg(&dataset),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let promoted = rows(&dataset);
    assert_eq!(
        promoted.len(),
        2,
        "the existing row kept, one appended after a newline"
    );
    assert_eq!(promoted[0]["name"], "kept");
    assert_eq!(promoted[1]["from"], turn.as_str());
    assert!(
        promoted[1].get("expect").is_none(),
        "no label: no expectation seeded"
    );

    // A turn named twice is one case.
    let twice = dir.path().join("twice.jsonl");
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", &turn, &turn[..13], "--to"])
            .arg(&twice),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(rows(&twice).len(), 1);
    // A file casesFrom could not read is not appended to.
    let foreign = dir.path().join("foreign.jsonl");
    std::fs::write(&foreign, "not json\n").unwrap();
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", &turn, "--to"])
            .arg(&foreign),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nothing appended"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "not json\n");

    // An unknown turn, a partial log, a read-only dataset: clear errors,
    // nothing written.
    let before = std::fs::read(&dataset).unwrap();
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", "0badc0de", "--to"])
            .arg(&dataset),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no run log matches"), "{}", out.stderr);
    let partial = PathBuf::from(format!("{}.partial", logs[1].display()));
    std::fs::rename(&logs[1], &partial).unwrap();
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs"])
            .arg(&partial)
            .arg("--to")
            .arg(&dataset),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("still being recorded"),
        "{}",
        out.stderr
    );
    std::fs::rename(&partial, &logs[1]).unwrap();
    let mut permissions = std::fs::metadata(&dataset).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&dataset, permissions).unwrap();
    let second = header(&logs[1])["turnId"].as_str().unwrap().to_string();
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", &second, "--to"])
            .arg(&dataset),
    );
    if nix_root() {
        return; // root writes through a read-only mode
    }
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("cannot append to"), "{}", out.stderr);
    assert_eq!(std::fs::read(&dataset).unwrap(), before);
    let out = run_command(
        in_runs(&runs)
            .args(["cases", "from-runs", "--labelled", "fail", "--to"])
            .arg(dir.path().join("none.jsonl")),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no turn here is labelled fail"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join("none.jsonl").exists());
}

fn nix_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
