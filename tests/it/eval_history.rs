//! Eval history (#30): `evals list|show|trend` give the numbers eval's own
//! summary gave, from exact SQL over the index; `compare` names two eval
//! runs (`ev-…` prefixes, `last~N`) and pairs exactly their turns, by the
//! one precedence rule whose ambiguities are errors; `serve` answers
//! `GET /api/evals` and `/api/evals/{id}` without absolute paths.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::http_server::{Reply, Responder, TestServer};
use support::serve::Server;
use support::{index_rows, promptlab, repo_root, run_command, write};

fn suite(dir: &Path, wrong_answer: &str) -> PathBuf {
    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    write(
        dir,
        "wrong.yaml",
        &format!("turns:\n  - text: {wrong_answer}\n"),
    );
    write(
        dir,
        "suite.yaml",
        "name: ids\nrepeats: 2\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\n\
         cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: excess}\n\
         \x20 - name: amount\n    message: How much?\n    script: wrong.yaml\n    expect: {answerContains: £350}\n",
    )
}

fn in_runs(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

/// Runs the suite as eval run `id`; its NDJSON `summary` record.
fn eval(runs: &Path, suite: &Path, id: &str) -> Value {
    let out = run_command(
        in_runs(runs)
            .args([
                "eval",
                "--provider",
                "script",
                "--format",
                "ndjson",
                "--eval-run",
                id,
            ])
            .arg(suite),
    );
    assert!(out.code <= 1, "{}", out.stderr);
    let last = out.stdout.lines().last().unwrap();
    serde_json::from_str(last).unwrap()
}

fn json(command: &mut Command, args: &[&str]) -> Value {
    let out = run_command(command.args(args));
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Two eval runs of one suite: the first fails `amount` everywhere, the
/// second passes it (the wrong script fixed).
fn history(dir: &Path) -> (PathBuf, Value, Value) {
    let runs = dir.join("runs");
    std::fs::create_dir(&runs).unwrap();
    // An index from the start, so that each eval catches it up.
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let first = eval(&runs, &suite(dir, "I could not find it."), "ev-abcdef0001");
    let second = eval(
        &runs,
        &suite(dir, "The excess is £350, paid."),
        "ev-abcdef0002",
    );
    (runs, first, second)
}

#[test]
fn evals_give_the_numbers_of_eval_s_own_summary_and_the_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, first, second) = history(dir.path());
    let listed = json(&mut in_runs(&runs), &["evals", "list", "--json"]);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ev-abcdef0002", "ev-abcdef0001"], "newest first");
    assert_eq!(listed[0]["status"], "pass");
    assert_eq!(listed[1]["status"], "fail");
    for (id, summary) in [("ev-abcdef0001", &first), ("ev-abcdef0002", &second)] {
        let shown = json(&mut in_runs(&runs), &["evals", "show", id, "--json"]);
        assert_eq!(shown["run"]["numbersFrom"], "index");
        assert_eq!(
            shown["summaries"][0], *summary,
            "the record as eval printed it"
        );
        let indexed = &shown["run"]["variants"][0];
        let printed = &summary["variants"][0];
        for (ours, theirs) in [
            ("turns", "turns"),
            ("passed", "passed"),
            ("failed", "failed"),
            ("errors", "errors"),
            ("passRate", "passRate"),
            ("latencyP50Ms", "latencyP50Ms"),
            ("latencyP95Ms", "latencyP95Ms"),
        ] {
            assert_eq!(indexed[ours], printed[theirs], "{id} {ours}");
        }
    }
    let shown = json(
        &mut in_runs(&runs),
        &["evals", "show", "ev-abcdef0001", "--json"],
    );
    let failures = shown["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 4);
    assert!(
        failures
            .iter()
            .all(|f| f["case"] == "amount" && f["verdict"] == "fail")
    );
    assert!(
        failures[0]["failures"][0]
            .as_str()
            .unwrap()
            .contains("£350"),
        "{}",
        failures[0]
    );
    let text = run_command(in_runs(&runs).args(["evals", "show", "ev-abcdef0001"]));
    assert!(
        text.stdout.contains("Failures:") && text.stdout.contains("amount #2"),
        "{}",
        text.stdout
    );
    let trend = json(
        &mut in_runs(&runs),
        &["evals", "trend", "--suite", "ids", "--json"],
    );
    assert_eq!(
        trend["variants"][0]["passRates"],
        serde_json::json!([0.5, 1.0])
    );
    assert_eq!(trend["variants"][0]["sparkline"], "▅█");
    let text = run_command(in_runs(&runs).args(["evals", "trend", "--suite", "ids"]));
    assert!(
        text.stdout.contains("default  ▅█  50.0% → 100.0%"),
        "{}",
        text.stdout
    );
}

#[test]
fn bad_eval_run_names_are_precise_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, _, _) = history(dir.path());
    for (args, wanted) in [
        (
            &["evals", "show", "ev-abcdef"][..],
            "error: `ev-abcdef` matches 2 eval runs: ev-abcdef0001, ev-abcdef0002; give more of it\n",
        ),
        (
            &["evals", "show", "ev-ffff"],
            "starts with `ev-ffff` (see `promptlab evals list`)\n",
        ),
        (&["evals", "show", "nonsense\u{7}"], "starts with `nonsense"),
        (
            &["compare", "ev-abcdef", "ev-abcdef0002"],
            "error: `ev-abcdef` matches 2 eval runs: ev-abcdef0001, ev-abcdef0002; give more of it\n",
        ),
        (
            &["evals", "show", "last~2"],
            "error: `last~2`: suite ids has 2 eval runs recorded in",
        ),
        (
            &["compare", "last~5", "last", "--suite", "ids"],
            "error: `last~5`: suite ids has 2 eval runs recorded in",
        ),
        (
            &["evals", "trend", "--suite", "ids", "--last", "0"],
            "error: invalid value '0' for '--last <N>'",
        ),
    ] {
        let out = run_command(in_runs(&runs).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(wanted), "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains('\u{7}'),
            "control characters are kept from the terminal"
        );
    }
}

#[test]
fn compare_pairs_exactly_the_turns_of_two_eval_runs_named_by_id_or_last() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, _, _) = history(dir.path());
    for sides in [
        &["ev-abcdef0001", "ev-abcdef0002"][..],
        &["ev-abcdef0001", "ev-abcdef0002", "--suite", "ids"],
        &["last~1", "last", "--suite", "ids"],
    ] {
        let report = json(
            &mut in_runs(&runs),
            &[&["compare"][..], sides, &["--format", "json"]].concat(),
        );
        let pairs = report["pairs"].as_array().unwrap();
        assert_eq!(
            pairs.len(),
            8,
            "{sides:?}: both runs' 8 turns, not the folder's 16"
        );
        let fixed = pairs
            .iter()
            .filter(|p| p["change"] == "fail_to_pass")
            .count();
        assert_eq!(fixed, 4, "{sides:?}");
        assert!(pairs.iter().all(|p| p["a"]["path"] != p["b"]["path"]));
        let a = report["a"]["source"].as_str().unwrap();
        assert!(a.starts_with("eval run ev-abcdef0001 in "), "{a}");
    }
    // A path of the same name wins nothing: the argument is ambiguous.
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("last"), "").unwrap();
    let out = run_command(in_runs(&runs).current_dir(cwd.path()).args([
        "compare",
        "last",
        "ev-abcdef0002",
        "--suite",
        "ids",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "error: `last` could name an existing path or `last~N` (an eval run of --suite); write `./last` for the path\n"
    );
}

#[test]
fn last_and_trend_take_the_newest_run_s_suite_when_no_suite_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, _, _) = history(dir.path());
    let said = "suite ids: the newest eval run's (--suite NAME for another)\n";
    for (spec, wanted) in [("last", "ev-abcdef0002"), ("last~1", "ev-abcdef0001")] {
        let out = run_command(in_runs(&runs).args(["evals", "show", spec, "--json"]));
        assert_eq!(out.code, 0, "{spec}: {}", out.stderr);
        let shown: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(shown["run"]["id"], wanted, "{spec}");
        assert_eq!(out.stderr, said, "{spec}: the suite is named");
    }
    let out = run_command(in_runs(&runs).args(["evals", "trend", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trend: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(trend["suite"], "ids");
    assert_eq!(trend["runs"].as_array().unwrap().len(), 2);
    assert_eq!(out.stderr, said);

    let out = run_command(in_runs(&runs).args(["compare", "last~1", "last", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["pairs"].as_array().unwrap().len(), 8);
    assert_eq!(
        report["a"]["source"]
            .as_str()
            .map(|a| a.starts_with("eval run ev-abcdef0001 ")),
        Some(true)
    );
    assert_eq!(
        out.stderr.matches("suite ids: the newest").count(),
        1,
        "said once: {}",
        out.stderr
    );

    // An explicit --suite is taken as given, and not said.
    let out = run_command(in_runs(&runs).args(["evals", "show", "last", "--suite", "other"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("suite other has 0 eval runs"),
        "{}",
        out.stderr
    );
    // A folder without eval runs has no `last`.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run_command(in_runs(&empty).args(["evals", "show", "last"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no eval run is recorded"),
        "{}",
        out.stderr
    );
}

async fn get(server: &Server, path: &str) -> (u16, String) {
    let response = reqwest::get(server.at(path)).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn serve_answers_the_history_without_absolute_paths() {
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    let dir = tempfile::tempdir().unwrap();
    eval(
        &server.runs,
        &suite(dir.path(), "I could not find it."),
        "ev-abcdef0001",
    );
    let (status, body) = get(&server, "/api/evals").await;
    assert_eq!(status, 200, "{body}");
    let runs: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(runs[0]["id"], "ev-abcdef0001");
    assert_eq!(runs[0]["turns"], 8);
    let (status, body) = get(&server, "/api/evals/ev-abcdef0001").await;
    assert_eq!(status, 200, "{body}");
    let shown: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(shown["failures"].as_array().unwrap().len(), 4);
    let path = shown["failures"][0]["path"].as_str().unwrap();
    assert!(
        path.starts_with("default/") && path.ends_with(".ndjson"),
        "{path}"
    );
    let root = server.runs.canonicalize().unwrap();
    for absolute in [
        server.runs.display().to_string(),
        root.display().to_string(),
    ] {
        assert!(!body.contains(&absolute), "{body}");
    }
    for bad in [
        "ev-abcdef000",
        "ev-ffffffffff",
        "..%2f..%2fetc",
        "ev-abcdef0001%00",
    ] {
        let (status, body) = get(&server, &format!("/api/evals/{bad}")).await;
        assert_eq!(status, 404, "{bad}: {body}");
        assert!(body.starts_with("{\"error\":\"Eval run "), "{body}");
    }
    let (status, _) = get(&server, "/api/evals?limit=nope").await;
    assert_eq!(status, 400);
}

#[test]
fn a_merge_counts_the_turns_it_read_from_other_runs_logs() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let suite = suite(dir.path(), "I could not find it.");
    let ran = eval(&runs, &suite, "ev-abcdef0001");
    let out = run_command(
        in_runs(&runs)
            .args([
                "eval",
                "--format",
                "ndjson",
                "--eval-run",
                "ev-abcdef0003",
                "--report",
            ])
            .arg(&runs)
            .arg(&suite),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let shown = json(
        &mut in_runs(&runs),
        &["evals", "show", "ev-abcdef0003", "--json"],
    );
    assert_eq!(shown["run"]["kind"], "merge");
    assert_eq!(shown["run"]["turns"], 8);
    assert_eq!(shown["run"]["numbersFrom"], "index");
    assert_eq!(
        shown["run"]["variants"][0]["passRate"],
        ran["variants"][0]["passRate"]
    );
    assert_eq!(shown["failures"].as_array().unwrap().len(), 4);
    // The run that recorded them still counts only its own.
    let first = json(
        &mut in_runs(&runs),
        &["evals", "show", "ev-abcdef0001", "--json"],
    );
    assert_eq!(first["run"]["turns"], 8);
    // Each summary file lists the turn ids of the logs in the folder, the
    // merge's all as taken from logs; the run's own, none.
    let logged: std::collections::BTreeSet<String> = (walkdir_logs(&runs).iter())
        .map(|name| name.rsplit_once('Z').unwrap().1[1..37].to_string())
        .collect();
    assert_eq!(logged.len(), 8, "{logged:?}");
    let file = |id: &str| -> Value {
        let text = std::fs::read_to_string(runs.join("evals").join(format!("{id}.json")));
        serde_json::from_str(&text.unwrap()).unwrap()
    };
    let ids = |list: &Value| -> std::collections::BTreeSet<String> {
        let list = list.as_array().expect("a list of turn ids");
        list.iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect()
    };
    let (merge, own) = (file("ev-abcdef0003"), file("ev-abcdef0001"));
    assert_eq!(ids(&merge["turnIds"]), logged);
    assert_eq!(ids(&merge["fromLogs"]), logged);
    assert_eq!(ids(&own["turnIds"]), logged);
    assert!(own.get("fromLogs").is_none(), "{own}");
}

/// Turns whose logs are gone — lost to a full disk during the run, or
/// removed since — are still counted: the index lacks them, so the numbers
/// come from the run's summary file, not from the logs that are left (the
/// passing ones here, which alone would read 100%).
#[test]
fn an_eval_run_whose_logs_are_gone_keeps_its_summary_s_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let ran = eval(
        &runs,
        &suite(dir.path(), "I could not find it."),
        "ev-abcdef0001",
    );
    assert_eq!(ran["variants"][0]["passRate"], 0.5);
    let kept = json(&mut in_runs(&runs), &["evals", "list", "--json"]);
    assert_eq!(kept[0]["numbersFrom"], "index");
    for log in support::run_logs_under(&runs) {
        let read = promptlab::runs::read_run_log(&log).unwrap();
        if read.view().verdict().unwrap().outcome == promptlab::runs::record::Outcome::Fail {
            std::fs::remove_file(&log).unwrap();
        }
    }
    let out = run_command(in_runs(&runs).args(["runs", "reindex"]));
    assert_eq!(out.code, 0, "{}", out.stderr);

    let listed = json(&mut in_runs(&runs), &["evals", "list", "--json"]);
    let run = &listed[0];
    assert_eq!(run["numbersFrom"], "summary", "{run}");
    assert_eq!(run["turns"], 8);
    let (ours, theirs) = (&run["variants"][0], &ran["variants"][0]);
    for key in ["turns", "passed", "failed", "errors", "passRate"] {
        assert_eq!(ours[key], theirs[key], "{key}");
    }
    assert_eq!(run["costUsd"], theirs["costUsd"]);
    let trend = json(
        &mut in_runs(&runs),
        &["evals", "trend", "--suite", "ids", "--json"],
    );
    assert_eq!(trend["variants"][0]["passRates"][0], 0.5, "{trend}");
    let shown = run_command(in_runs(&runs).args(["evals", "show", "ev-abcdef0001"]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("numbers from its summary file"),
        "{}",
        shown.stdout
    );
}

/// The names of the run logs under `runs`' prompt-version folders.
fn walkdir_logs(runs: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for folder in std::fs::read_dir(runs).unwrap().flatten() {
        let name = folder.file_name().to_string_lossy().to_string();
        if !folder.path().is_dir() || ["evals", "prompts"].contains(&name.as_str()) {
            continue;
        }
        for log in std::fs::read_dir(folder.path()).unwrap().flatten() {
            let log = log.file_name().to_string_lossy().to_string();
            if log.ends_with(".ndjson") {
                names.push(log);
            }
        }
    }
    names
}

#[test]
fn a_rescore_beside_the_logs_is_the_standing_verdict_the_index_answers_with() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let judged = ["--judge-provider", "script", "--judge-script"];
    let out = run_command(
        in_runs(&runs)
            .args([
                "eval",
                "suites/rubric.yaml",
                "--provider",
                "script",
                "--eval-run",
                "ev-abcdef0001",
            ])
            .args(judged)
            .arg("suites/scripts/judge.yaml"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let failing = |runs: &Path| {
        json(
            &mut in_runs(runs),
            &["runs", "list", "--verdict", "fail", "--json"],
        )
    };
    assert_eq!(failing(&runs).as_array().unwrap().len(), 0);
    let strict = write(
        dir.path(),
        "strict.yaml",
        "rubric:\n  - reply: {pass: false, score: 0.0, reason: strict}\n",
    );
    let out = run_command(
        in_runs(&runs)
            .args([
                "eval",
                "suites/rubric.yaml",
                "--rescore",
                "--eval-run",
                "ev-abcdef0002",
            ])
            .args(judged)
            .arg(&strict),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let turns = run_command(in_runs(&runs).args(["runs", "list", "--limit", "0", "--json"]));
    let turns = serde_json::from_str::<Value>(&turns.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        failing(&runs).as_array().unwrap().len(),
        turns,
        "re-scores picked up"
    );
    let shown = json(
        &mut in_runs(&runs),
        &["evals", "show", "ev-abcdef0002", "--json"],
    );
    assert_eq!(shown["run"]["kind"], "rescore");
    assert_eq!(shown["run"]["turns"], turns);
    assert_eq!(shown["run"]["variants"][0]["passRate"], 0.0);
}

/// `evals list|show` read each eval run's numbers as the index stores them
/// (#65), never folding its turns per query; a re-score of a run's turns
/// folds that run's numbers again.
#[test]
fn evals_read_stored_numbers_which_a_rescore_folds_again() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let judged = ["--judge-provider", "script", "--judge-script"];
    let out = run_command(
        in_runs(&runs)
            .args(["eval", "suites/rubric.yaml", "--provider", "script"])
            .args(["--eval-run", "ev-abcdef0001"])
            .args(judged)
            .arg("suites/scripts/judge.yaml"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rate = |runs: &Path| {
        let shown = json(
            &mut in_runs(runs),
            &["evals", "show", "ev-abcdef0001", "--json"],
        );
        shown["run"]["variants"][0]["passRate"].clone()
    };
    assert_eq!(rate(&runs), 1.0);
    let stored = index_rows(
        &runs,
        "SELECT pass_rate FROM eval_run_variants WHERE eval_run = 'ev-abcdef0001'",
    );
    assert_eq!(stored, [[rusqlite::types::Value::Real(1.0)]]);
    // What is stored is what is shown: changed behind promptlab's back, it
    // is read as it stands, not folded again from the turns.
    rusqlite::Connection::open(runs.join("index.sqlite"))
        .unwrap()
        .execute("UPDATE eval_run_variants SET pass_rate = 0.25", [])
        .unwrap();
    assert_eq!(rate(&runs), 0.25);
    let listed = json(&mut in_runs(&runs), &["evals", "list", "--json"]);
    assert_eq!(listed[0]["variants"][0]["passRate"], 0.25);
    let strict = write(
        dir.path(),
        "strict.yaml",
        "rubric:\n  - reply: {pass: false, score: 0.0, reason: strict}\n",
    );
    let out = run_command(
        in_runs(&runs)
            .args(["eval", "suites/rubric.yaml", "--rescore"])
            .args(["--eval-run", "ev-abcdef0002"])
            .args(judged)
            .arg(&strict),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(rate(&runs), 0.0, "the re-scored run's numbers folded again");
}

/// Every row of the index's `turns` table, in path order.
fn turns_table(runs: &Path) -> Vec<Vec<rusqlite::types::Value>> {
    index_rows(runs, "SELECT * FROM turns ORDER BY path")
}

/// The eval runs' rows — their spans, summaries and turns — in key order.
fn eval_tables(runs: &Path) -> Vec<Vec<rusqlite::types::Value>> {
    let mut rows = index_rows(runs, "SELECT * FROM eval_runs ORDER BY id");
    rows.extend(index_rows(
        runs,
        "SELECT * FROM eval_summaries ORDER BY file",
    ));
    rows.extend(index_rows(
        runs,
        "SELECT * FROM eval_run_turns ORDER BY eval_run, turn_id",
    ));
    rows
}

/// The rows each eval's catch-up adds at its end (its logs committed
/// alone, as for `--format ndjson`, or in groups) are the very rows a scan
/// of the logs makes when the index is built afresh from the files.
#[test]
fn the_rows_an_eval_catches_up_are_those_a_scan_of_the_files_makes() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, _, _) = history(dir.path());
    let grouped = run_command(
        in_runs(&runs)
            .args(["eval", "--provider", "script", "-q"])
            .args(["--eval-run", "ev-abcdef0004"])
            .arg(dir.path().join("suite.yaml")),
    );
    assert_eq!(
        grouped.code, 0,
        "the script fixed by `history`: {}",
        grouped.stderr
    );
    let noted = turns_table(&runs);
    assert_eq!(noted.len(), 24, "three runs of eight turns");
    let runs_noted = eval_tables(&runs);
    assert_eq!(runs_noted.len(), 3 + 3 + 24, "{runs_noted:?}");
    for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(runs.join(file));
    }
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    assert_eq!(turns_table(&runs), noted);
    // The eval runs' rows too: as their summary files and logs say.
    assert_eq!(eval_tables(&runs), runs_noted);
}

/// A one-call Gemini answer: `prompt` tokens in, `output` out.
fn gemini_answer(prompt: u64, output: u64) -> Responder {
    Box::new(move |_| {
        let chunk = serde_json::json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "The excess is £350."}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output,
                "cachedContentTokenCount": 3, "totalTokenCount": prompt + output},
            "modelVersion": "test"
        });
        Reply::stream(format!("data: {chunk}\r\n\r\n"))
    })
}

/// The same for turns over HTTP with a priced model, each with its cost (a
/// sum of decimal rates: not exact in binary), tokens and latency: the rows
/// caught up at the eval's end are those a scan of the files makes.
#[test]
fn the_rows_of_priced_turns_over_http_are_those_a_scan_makes_too() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let prices = write(
        dir.path(),
        "prices.yaml",
        "currency: USD\nmodels:\n  priced-model:\n    source: the test\n    date: 2026-11-30\n    \
         input: 0.7\n    cachedInput: 0.1\n    output: 2.9\n",
    );
    // Seven answers, and a refusal (400: not retried) for the last turn.
    let mut replies: Vec<Responder> = (0..7)
        .map(|n| gemini_answer(1_000 + n, 17 * n + 1))
        .collect();
    replies.push(Box::new(|_| Reply::Status {
        code: 400,
        headers: vec![("content-type".into(), "application/json".into())],
        body: r#"{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}"#.into(),
    }));
    let server = TestServer::start(replies);
    let out = run_command(
        in_runs(&runs)
            .env("GEMINI_API_KEY", "rows-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .arg("--prices")
            .arg(prices)
            .args(["eval", "--model", "priced-model", "-j", "2", "-q"])
            .arg(suite(dir.path(), "I could not find it.")),
    );
    assert_eq!(out.code, 1, "the `amount` case fails: {}", out.stderr);
    let noted = turns_table(&runs);
    assert_eq!(noted.len(), 8, "{noted:?}");
    let costs: Vec<f64> = (noted.iter())
        .filter_map(|row| match row[22] {
            rusqlite::types::Value::Real(cost) => Some(cost),
            _ => None,
        })
        .collect();
    assert_eq!(costs.len(), 7, "every answered turn priced: {noted:?}");
    for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(runs.join(file));
    }
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    assert_eq!(turns_table(&runs), noted);
}

/// An id used again (`--eval-run` kept across a CI re-run) labels both
/// attempts' logs, and the later summary file replaces the earlier: the
/// history counts the turns the summary lists, the later run's, not both
/// runs' mixed into a pass rate neither had.
#[test]
fn an_eval_run_id_used_again_counts_the_later_run_alone() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    json(&mut in_runs(&runs), &["runs", "list", "--json"]);
    let id = "ev-abcdef00aa";
    eval(&runs, &suite(dir.path(), "I could not find it."), id);
    let second = eval(&runs, &suite(dir.path(), "The excess is £350, paid."), id);
    let shown = json(&mut in_runs(&runs), &["evals", "show", id, "--json"]);
    let indexed = &shown["run"]["variants"][0];
    let printed = &second["variants"][0];
    for field in ["turns", "passed", "failed", "errors", "passRate"] {
        assert_eq!(indexed[field], printed[field], "{field}: {shown}");
    }
    assert_eq!(shown["failures"].as_array().unwrap().len(), 0, "{shown}");
}

/// What a folder says about eval run `id` of the `first` suite `init` sets
/// up: the report's per-variant numbers and turns, the compare gate's exit
/// and report, the turns `runs list --eval` lists, and `evals show`.
fn first_suite_figures(lab: &Path, id: &str) -> Vec<Value> {
    let in_lab = || {
        let mut command = promptlab();
        command
            .current_dir(lab)
            .env("PROMPTLAB_RUNS_DIR", lab.join("runs"));
        command
    };
    let page = lab.join("report.html");
    let out = run_command(
        in_lab()
            .args(["report", "--suite", "first", "-o"])
            .arg(&page),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let data = support::reports::embedded(&std::fs::read_to_string(&page).unwrap());
    let turns: Vec<Value> = data["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    let gate = run_command(in_lab().args([
        "compare",
        "default",
        "overrides/plain-spoken.yaml",
        "--suite",
        "first",
        "--fail-on-regression",
        "--format",
        "json",
    ]));
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    let listed = json(&mut in_lab(), &["runs", "list", "--eval", id, "--json"]);
    let mut listed: Vec<Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["turnId"].clone())
        .collect();
    listed.sort_by_key(Value::to_string);
    vec![
        data["variants"].clone(),
        Value::Array(turns),
        serde_json::from_str(&gate.stdout).unwrap(),
        Value::Array(listed),
        json(&mut in_lab(), &["evals", "show", id, "--json"]),
    ]
}

/// #62: `replay` of an eval turn, to debug it, is recorded as a replay of
/// it (`replayOf`, no eval labels), never as a newer run of the judged
/// turn: the report, the compare gate, `runs list --eval` and `evals show`
/// say after it exactly what they said before. Before the fix the report
/// showed the variant at "–", the gate failed ("no paired turn has a
/// verdict on both sides"), the listing had 3 turns and the eval run's end
/// moved to the replay's.
#[test]
fn a_replay_of_an_eval_turn_changes_none_of_the_eval_s_figures() {
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab");
    let init = run_command(promptlab().arg("init").arg(&lab));
    assert_eq!(init.code, 0, "{}", init.stderr);
    let in_lab = || {
        let mut command = promptlab();
        command
            .current_dir(&lab)
            .env("PROMPTLAB_RUNS_DIR", lab.join("runs"));
        command
    };
    let id = "ev-6262626262";
    let eval = run_command(in_lab().args([
        "eval",
        "suites/first.yaml",
        "--provider",
        "script",
        "--eval-run",
        id,
    ]));
    assert_eq!(eval.code, 0, "{}", eval.stderr);
    let before = first_suite_figures(&lab, id);
    let judged = json(&mut in_lab(), &["runs", "list", "--eval", id, "--json"]);
    let judged = judged
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["labels"]["variant"] == "default")
        .unwrap()["turnId"]
        .as_str()
        .unwrap()
        .to_string();

    let replay = run_command(in_lab().args(["replay", &judged]));
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("replay matches"),
        "{}",
        replay.stderr
    );

    assert_eq!(first_suite_figures(&lab, id), before);
    // The replay is listed, as a replay of the judged turn.
    let all = json(&mut in_lab(), &["runs", "list", "--json"]);
    let replays: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| !row["replayOf"].is_null())
        .collect();
    assert_eq!(replays.len(), 1, "{all}");
    assert_eq!(replays[0]["replayOf"], judged.as_str());
    assert_eq!(replays[0]["labels"], Value::Null);
    assert_eq!(replays[0]["verdict"], Value::Null);
    let replay_id = replays[0]["turnId"].as_str().unwrap();
    let table = run_command(in_lab().args(["runs", "list"]));
    assert!(
        table
            .stdout
            .contains(&format!("replay of {}", &judged[..8])),
        "{}",
        table.stdout
    );
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(replays[0]["path"].as_str().unwrap())
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["schema"], 5);
    assert_eq!(header["replayOf"], judged.as_str());
    assert!(header.get("labels").is_none(), "{header}");
    // `runs show` names what it replayed, and where the eval put it.
    let shown = run_command(in_lab().args(["runs", "show", replay_id]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains(&format!(
            "replay of turn {judged} · eval suite first · case excess · variant default · sample 1 · eval run {id}"
        )),
        "{}",
        shown.stdout
    );
}
