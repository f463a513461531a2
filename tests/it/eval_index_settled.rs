//! The run index has a row for every log an eval wrote, and the eval run's
//! own, by the time `eval` exits: the eval catches the index up once at its
//! end (SPEC §9). Read straight from the SQLite file, no reader having
//! caught up since.

use crate::support;

use support::{index_rows, promptlab, run_command, write};

/// Into a runs folder whose index a reader built, or into a fresh one
/// (#65: where the eval made none, and its first reader read every log).
fn every_log_has_its_row_when_the_eval_exits(read_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    if read_first {
        let built = run_command(
            promptlab()
                .arg("--runs-dir")
                .arg(&runs)
                .args(["runs", "list"]),
        );
        assert_eq!(built.code, 0, "{}", built.stderr);
    }
    write(
        dir.path(),
        "answer.yaml",
        "turns:\n  - text: The excess is 250.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: settled\nrepeats: 150\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\n\
         cases:\n  - name: a\n    message: What is the excess?\n    script: answer.yaml\n",
    );
    let ran = run_command(
        promptlab()
            .arg("--runs-dir")
            .arg(&runs)
            .args(["eval", "--provider", "script", "-q", "-j", "16"])
            .args(["--eval-run", "ev-0000000abc"])
            .arg(&suite),
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let logs = support::run_logs_under(&runs).len();
    let rows = index_rows(&runs, "SELECT path FROM turns WHERE status = 'done'");
    let eval_runs = index_rows(&runs, "SELECT id FROM eval_runs");
    assert_eq!(logs, 300);
    assert_eq!(rows.len(), 300, "every log's row, none left to a reader");
    assert_eq!(eval_runs.len(), 1, "and the eval run's");
    let numbers = index_rows(&runs, "SELECT turns FROM eval_run_variants");
    assert_eq!(
        numbers,
        [[rusqlite::types::Value::Integer(300)]],
        "and its numbers"
    );
}

#[test]
fn every_log_has_its_row_when_an_eval_into_an_indexed_folder_exits() {
    every_log_has_its_row_when_the_eval_exits(true);
}

#[test]
fn an_eval_into_a_fresh_folder_makes_its_index_with_every_row() {
    every_log_has_its_row_when_the_eval_exits(false);
}
