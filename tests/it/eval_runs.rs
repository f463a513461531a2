//! Eval runs as things: one `ev-…` id per invocation (shared by shards with
//! `--eval-run`), in the NDJSON summary and turn records, every run log's
//! header, JUnit and the pretty summary; resume, merge and re-score get ids
//! of their own and say which runs' turns they read; `runs list` filters by
//! verdict, suite, case and eval run, and `runs show` names an eval turn's
//! place and verdict.

use crate::support;

use std::path::Path;

use promptlab::runs::read_run_log;
use serde_json::Value;
use support::{promptlab, run_command, write};

const OK: &str = "turns:\n  - text: The excess is £350.\n";
const WRONG: &str = "turns:\n  - text: I could not find it.\n";

fn suite(dir: &Path) -> std::path::PathBuf {
    write(dir, "ok.yaml", OK);
    write(dir, "wrong.yaml", WRONG);
    write(
        dir,
        "suite.yaml",
        "name: ids\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\n\
         cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: excess}\n\
         \x20 - name: amount\n    message: How much?\n    script: wrong.yaml\n    expect: {answerContains: £350}\n",
    )
}

fn eval(runs: &Path, suite: &Path, extra: &[&str]) -> support::Run {
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .args(["eval", "--provider", "script", "--format", "ndjson"])
            .arg(suite)
            .args(extra),
    )
}

fn records<'a>(stdout: &'a str, kind: &'a str) -> impl Iterator<Item = Value> + 'a {
    stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(move |record| record["kind"] == kind)
}

fn summary(stdout: &str) -> Value {
    records(stdout, "summary").next().expect("a summary record")
}

fn is_id(value: &Value) -> bool {
    value
        .as_str()
        .and_then(|id| id.strip_prefix("ev-"))
        .is_some_and(|hex| hex.len() == 10 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn header_runs(runs: &Path) -> Vec<Option<String>> {
    support::run_logs_under(runs)
        .iter()
        .map(|path| {
            let header = read_run_log(path).unwrap().header;
            assert_eq!(header.schema, promptlab::runs::record::SCHEMA_VERSION);
            header.labels.and_then(|labels| labels.eval_run)
        })
        .collect()
}

#[test]
fn one_id_per_run_in_the_summary_the_turn_records_the_logs_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let junit = dir.path().join("j.xml");
    let out = eval(
        &runs,
        &suite(dir.path()),
        &["--junit", junit.to_str().unwrap()],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let summary = summary(&out.stdout);
    assert!(is_id(&summary["evalRun"]), "{summary}");
    assert_eq!(summary["runKind"], "run");
    let id = summary["evalRun"].as_str().unwrap().to_string();
    let turns: Vec<Value> = records(&out.stdout, "turn").collect();
    assert_eq!(turns.len(), 4);
    for turn in &turns {
        assert_eq!(turn["evalRun"], id.as_str(), "{turn}");
        assert_eq!(turn["model"], "gemini-3.1-flash-lite");
        assert_eq!(turn["costUsd"], 0.0);
        let log = read_run_log(Path::new(turn["runLog"].as_str().unwrap())).unwrap();
        assert_eq!(turn["turnId"], log.header.turn_id.as_str());
    }
    assert_eq!(header_runs(&runs), vec![Some(id.clone()); 4]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!(r#"<property name="eval-run" value="{id}"/>"#)),
        "{xml}"
    );
    // A second run of the same suite is another eval run.
    let again = eval(&runs, &dir.path().join("suite.yaml"), &[]);
    assert_ne!(summary_id(&again.stdout), id);
}

fn summary_id(stdout: &str) -> String {
    summary(stdout)["evalRun"].as_str().unwrap().to_string()
}

#[test]
fn shards_share_an_id_given_and_a_merge_is_its_own_run_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let shared = "ev-00000000c1";
    let (one, two) = (dir.path().join("s1"), dir.path().join("s2"));
    for (runs, shard) in [(&one, "1/2"), (&two, "2/2")] {
        let out = eval(runs, &suite, &["--shard", shard, "--eval-run", shared]);
        assert_eq!(summary_id(&out.stdout), shared, "{}", out.stderr);
    }
    let mut headers = header_runs(&one);
    headers.extend(header_runs(&two));
    assert_eq!(headers, vec![Some(shared.to_string()); 4]);
    let merged = run_command(
        promptlab()
            .args(["eval", "--format", "ndjson"])
            .arg(&suite)
            .arg("--report")
            .arg(&one)
            .arg("--report")
            .arg(&two),
    );
    let merge = summary(&merged.stdout);
    assert_eq!(merge["runKind"], "merge");
    assert!(
        is_id(&merge["evalRun"]) && merge["evalRun"] != shared,
        "{merge}"
    );
    assert_eq!(
        merge["fromRuns"],
        serde_json::json!([{"evalRun": shared, "turns": 4}])
    );
    for turn in records(&merged.stdout, "turn") {
        assert_eq!(
            turn["evalRun"], shared,
            "a merged turn names the run that made it"
        );
    }
    let bad = eval(&one, &suite, &["--eval-run", "6ebc72c8dd76"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("--eval-run: `6ebc72c8dd76` is not an eval run id"),
        "{}",
        bad.stderr
    );
}

#[test]
fn resume_starts_a_new_run_and_says_which_turns_it_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    let first = eval(&runs, &suite, &["--case", "excess"]);
    let first_id = summary_id(&first.stdout);
    let resumed = eval(&runs, &suite, &["--resume"]);
    let summary = summary(&resumed.stdout);
    assert_ne!(summary["evalRun"], first_id.as_str());
    assert_eq!(
        summary["fromRuns"],
        serde_json::json!([{"evalRun": first_id, "turns": 2}]),
        "{summary}"
    );
    let mut ids = header_runs(&runs);
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        2,
        "the new turns carry the new run's id: {ids:?}"
    );
}

#[test]
fn runs_list_filters_by_verdict_suite_case_and_eval_run_and_show_names_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let out = eval(&runs, &suite(dir.path()), &[]);
    let id = summary_id(&out.stdout);
    let list = |args: &[&str]| {
        let run = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args(["runs", "list", "--json"])
                .args(args),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        serde_json::from_str::<Vec<Value>>(&run.stdout).unwrap()
    };
    let failing = list(&["--verdict", "fail"]);
    assert_eq!(failing.len(), 2);
    for row in &failing {
        assert_eq!(row["labels"]["case"], "amount");
        assert_eq!(row["verdict"], "fail");
        assert!(
            row["failures"][0].as_str().unwrap().contains("£350"),
            "{row}"
        );
    }
    assert_eq!(list(&["--verdict", "pass", "--case", "excess"]).len(), 2);
    assert_eq!(list(&["--eval", &id, "--suite", "ids"]).len(), 4);
    assert_eq!(list(&["--eval", "ev-ffffffffff"]).len(), 0);
    assert_eq!(list(&["--suite", "other"]).len(), 0);
    let table = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .env("COLUMNS", "200")
            .args(["runs", "list", "--verdict", "fail"]),
    );
    assert!(
        table.stdout.contains("verdict") && table.stdout.contains("fail"),
        "{}",
        table.stdout
    );
    let turn = failing[0]["turnId"].as_str().unwrap();
    let shown = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &runs).args([
        "runs",
        "show",
        &turn[..8],
    ]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains(&format!(
            "eval suite ids · case amount · variant default · sample 1 · eval run {id}"
        )),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("verdict fail"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("  - answer does not contain"),
        "{}",
        shown.stdout
    );
}

#[test]
fn a_log_of_schema_1_reads_as_before_without_an_eval_run() {
    let runs = support::repo_root().join("runs/examples");
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["runs", "list", "--json"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["verdict"], Value::Null);
}
