//! The run index (`<runs dir>/index.sqlite`, #30) against real SQLite
//! files: it answers `runs list` exactly as a scan does, writers keep it
//! current (two evals at once into one folder), readers pick up a copied
//! shard folder, a read-only folder or a folder argument is scanned and said
//! once, and an index of another version or a damaged one is rebuilt, never
//! answered from. The history opens in `sqlite3`, SQLite's own shell.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{index_rows, promptlab, run_command, run_logs_under, write};

/// 2 claims × 2 cases: `excess` passes, `amount` fails.
fn suite(dir: &Path) -> PathBuf {
    suite_repeated(dir, 1)
}

fn suite_repeated(dir: &Path, repeats: u32) -> PathBuf {
    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    write(
        dir,
        "wrong.yaml",
        "turns:\n  - text: I could not find it.\n",
    );
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: ids\nrepeats: {repeats}\nclaims: {{ids: [CLM-HH-0001, CLM-MTR-0002]}}\ndefaults: {{today: 2026-11-30}}\n\
         cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {{answerContains: excess}}\n\
         \x20 - name: amount\n    message: How much?\n    script: wrong.yaml\n    expect: {{answerContains: £350}}\n"
        ),
    )
}

fn in_runs(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

fn eval_command(runs: &Path, suite: &Path, extra: &[&str]) -> Command {
    let mut command = in_runs(runs);
    command
        .args([
            "eval",
            "--provider",
            "script",
            "--format",
            "ndjson",
            "-j",
            "4",
        ])
        .arg(suite)
        .args(extra);
    command
}

fn eval(runs: &Path, suite: &Path, extra: &[&str]) {
    let out = run_command(&mut eval_command(runs, suite, extra));
    assert_eq!(out.code, 1, "one case fails by design: {}", out.stderr);
}

fn list(command: &mut Command, args: &[&str]) -> (Vec<Value>, String) {
    let out = run_command(
        command
            .args(["runs", "list", "--json", "--limit", "0"])
            .args(args),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    (serde_json::from_str(&out.stdout).unwrap(), out.stderr)
}

fn db(runs: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(runs.join("index.sqlite")).unwrap()
}

fn count(db: &rusqlite::Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn the_index_answers_runs_list_exactly_as_a_scan_and_opens_in_sqlite3() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &["--eval-run", "ev-0000000001"]);
    eval(&runs, &suite, &["--eval-run", "ev-0000000002"]);
    assert!(
        !runs.join("index.sqlite").exists(),
        "built by its first reader"
    );
    // Counted by hand: 2 runs × 2 claims × (excess passes, amount fails).
    for (filters, expected) in [
        (&[][..], 8),
        (&["--verdict", "fail"], 4),
        (&["--suite", "ids", "--case", "amount"], 4),
        (&["--case", "excess", "--claim", "CLM-HH-0001"], 2),
        (&["--status", "done", "--eval", "ev-0000000002"], 4),
        (&["--fingerprint", "default", "--since", "2h"], 8),
        (&["--since", "2999-01-01"], 0),
        (&["--suite", "other"], 0),
    ] {
        let (indexed, stderr) = list(&mut in_runs(&runs), filters);
        assert!(!stderr.contains("no index"), "{stderr}");
        assert_eq!(indexed.len(), expected, "{filters:?}");
        let (scanned, stderr) = list(in_runs(&runs).env("PROMPTLAB_INDEX", "off"), filters);
        assert_eq!(stderr, "", "off is quiet");
        assert_eq!(indexed, scanned, "{filters:?}");
    }
    let (all, _) = list(&mut in_runs(&runs), &[]);
    assert_eq!(all.len(), 8);
    let (page, _) = list(&mut in_runs(&runs), &["--eval", "ev-ffffffffff"]);
    assert!(page.is_empty(), "a whole id filters exactly");
    let out = run_command(in_runs(&runs).args(["runs", "list", "--eval", "ev-000000000"]));
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `ev-000000000` matches 2 eval runs: ev-0000000001, ev-0000000002; give more of it\n"
    );
    let db = db(&runs);
    assert_eq!(
        count(&db, "SELECT count(*) FROM turns") as usize,
        run_logs_under(&runs).len()
    );
    assert_eq!(count(&db, "SELECT count(*) FROM eval_runs"), 2);
    assert_eq!(count(&db, "SELECT version FROM schema_version"), 1);
    // SQLite's own shell reads the history: the reference nobody here wrote.
    let Ok(shell) = Command::new("sqlite3")
        .arg("-readonly")
        .arg(runs.join("index.sqlite"))
        .arg("SELECT eval_run, count(*) FROM turns WHERE verdict = 'fail' GROUP BY 1 ORDER BY 1;")
        .output()
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install sqlite3 (.ci/run)"
        );
        eprintln!("skipped the sqlite3 check: no sqlite3 (apt-get install sqlite3)");
        return;
    };
    assert!(
        shell.status.success(),
        "{}",
        String::from_utf8_lossy(&shell.stderr)
    );
    assert_eq!(
        String::from_utf8(shell.stdout).unwrap(),
        "ev-0000000001|2\nev-0000000002|2\n"
    );
}

#[test]
fn two_evals_at_once_into_one_folder_both_land_in_the_index_as_they_record() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let suite = suite_repeated(dir.path(), 3);
    list(&mut in_runs(&runs), &[]);
    let mut children: Vec<_> = ["ev-aaaaaaaaaa", "ev-bbbbbbbbbb"]
        .iter()
        .map(|id| {
            eval_command(&runs, &suite, &["--eval-run", id])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in &mut children {
        assert_eq!(child.wait().unwrap().code(), Some(1));
    }
    // Read straight from the file, no reader having caught up: the writers'
    // own rows, every one of both runs.
    let db = db(&runs);
    for id in ["ev-aaaaaaaaaa", "ev-bbbbbbbbbb"] {
        let turns = format!("SELECT count(*) FROM turns WHERE eval_run = '{id}'");
        assert_eq!(count(&db, &turns), 12, "{id}");
        let members = format!("SELECT count(*) FROM eval_run_turns WHERE eval_run = '{id}'");
        assert_eq!(count(&db, &members), 12, "{id}");
    }
    assert_eq!(count(&db, "SELECT count(*) FROM eval_summaries"), 2);
    assert_eq!(
        count(&db, "SELECT count(*) FROM turns WHERE status != 'done'"),
        0
    );
}

#[test]
fn a_copied_shard_folder_is_picked_up_by_the_next_reader() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, shard) = (dir.path().join("runs"), dir.path().join("shard"));
    let suite = suite(dir.path());
    eval(
        &runs,
        &suite,
        &["--shard", "1/2", "--eval-run", "ev-5555555555"],
    );
    assert_eq!(list(&mut in_runs(&runs), &[]).0.len(), 2);
    eval(
        &shard,
        &suite,
        &["--shard", "2/2", "--eval-run", "ev-5555555555"],
    );
    // `cp -a` keeps the folders' modification times; their change times move.
    let copied = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", shard.display()))
        .arg(&runs)
        .status()
        .unwrap();
    assert!(copied.success());
    let (all, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(all.len(), 4, "{stderr}");
    let out = run_command(in_runs(&runs).args(["evals", "show", "ev-5555", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(shown["run"]["shard"], "1/2, 2/2");
    assert_eq!(shown["run"]["turns"], 4);
    assert_eq!(shown["summaries"].as_array().unwrap().len(), 2);
    // A removed log's row goes.
    std::fs::remove_file(&run_logs_under(&runs)[0]).unwrap();
    assert_eq!(list(&mut in_runs(&runs), &[]).0.len(), 3);
}

/// `promptlab` as a user who cannot write `runs` (root may write anything:
/// it runs as `nobody` then, via util-linux's `setpriv`).
fn read_only(runs: &Path) -> Command {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        for path in std::iter::once(runs.to_path_buf()).chain(run_logs_under(runs)) {
            let parent = path.parent().unwrap().to_path_buf();
            for folder in [parent, runs.to_path_buf()] {
                let mode = std::os::unix::fs::PermissionsExt::from_mode(0o555);
                std::fs::set_permissions(folder, mode).unwrap();
            }
        }
        return in_runs(runs);
    }
    let readable = |path: &Path, mode| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap()
    };
    let mut up = runs.to_path_buf();
    while up.pop() && up != Path::new("/") {
        if up.starts_with(std::env::temp_dir()) && up != std::env::temp_dir() {
            readable(&up, 0o755);
        }
    }
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_promptlab"))
        .current_dir(support::repo_root())
        .env("NO_COLOR", "1")
        .env("PROMPTLAB_RUNS_DIR", runs);
    command
}

#[test]
fn a_read_only_runs_folder_is_scanned_and_said_once() {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    if root && Command::new("setpriv").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install setpriv (.ci/run)"
        );
        eprintln!("skipped: running as root without setpriv (util-linux) to drop to nobody");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let (found, stderr) = list(&mut read_only(&runs), &["--verdict", "fail"]);
    assert_eq!(found.len(), 2);
    assert_eq!(stderr, "no index: scanning 4 logs\n");
    assert!(!runs.join("index.sqlite").exists());
    let out = run_command(read_only(&runs).args(["evals", "list", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "no index: scanning 4 logs\n");
    assert_eq!(
        serde_json::from_str::<Value>(&out.stdout).unwrap()[0]["turns"],
        4
    );
}

/// A folder that takes files but not its index (a full disk; here, a
/// folder under the index's name, which SQLite cannot open) is read by a
/// scan, said once, rather than not read at all.
#[test]
fn a_runs_folder_that_cannot_keep_its_index_is_scanned_and_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    std::fs::remove_file(runs.join("index.sqlite")).ok();
    std::fs::create_dir(runs.join("index.sqlite")).unwrap();
    let (found, stderr) = list(&mut in_runs(&runs), &["--verdict", "fail"]);
    assert_eq!(found.len(), 2);
    let cannot = format!("the run index cannot be kept in {} (", runs.display());
    assert!(stderr.starts_with(&cannot), "{stderr}");
    assert!(
        stderr.ends_with("\nno index: scanning 4 logs\n"),
        "{stderr}"
    );
    let out = run_command(in_runs(&runs).args(["evals", "list", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&out.stdout).unwrap()[0]["turns"],
        4
    );
}

#[test]
fn a_folder_argument_is_scanned_and_said_once_leaving_it_without_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("shard");
    let suite = suite(dir.path());
    eval(&shard, &suite, &[]);
    let page = dir.path().join("page.html");
    let other = dir.path().join("elsewhere");
    let out = run_command(
        in_runs(&other)
            .arg("report")
            .arg(&shard)
            .arg("-o")
            .arg(&page),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("no index: scanning 4 logs\n"),
        "{}",
        out.stderr
    );
    let both = [shard.as_os_str(), shard.as_os_str()];
    let out = run_command(
        in_runs(&other)
            .arg("compare")
            .args(both)
            .args(["--format", "json"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("no index: scanning 4 logs").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(!shard.join("index.sqlite").exists() && !other.exists());
}

#[test]
fn an_index_of_another_version_or_a_damaged_one_is_rebuilt_never_answered_from() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let (before, _) = list(&mut in_runs(&runs), &[]);
    {
        let db = db(&runs);
        db.execute_batch(
            "UPDATE schema_version SET version = 999; DELETE FROM turns WHERE verdict = 'fail';",
        )
        .unwrap();
    }
    let (after, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(after, before, "{stderr}");
    assert_eq!(count(&db(&runs), "SELECT version FROM schema_version"), 1);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", runs.join("index.sqlite").display()));
    }
    std::fs::write(
        runs.join("index.sqlite"),
        "not a database, just text\n".repeat(200),
    )
    .unwrap();
    let (after, stderr) = list(&mut in_runs(&runs), &["--verdict", "fail"]);
    assert_eq!(after.len(), 2);
    assert!(
        stderr.contains("index.sqlite is not a readable index (")
            && stderr.contains("): rebuilt from the run logs"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = run_command(in_runs(&runs).args(["runs", "reindex"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("indexed 4 run logs in "),
        "{}",
        out.stdout
    );
    let out = run_command(
        in_runs(&runs)
            .env("PROMPTLAB_INDEX", "off")
            .args(["runs", "reindex"]),
    );
    assert_eq!(out.code, 2);
}

#[test]
fn an_unreadable_log_is_named_on_every_listing_not_only_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let bad = runs
        .join("default")
        .join("20261130T000000.000Z-0000.ndjson");
    std::fs::write(&bad, "{not json\n").unwrap();
    for _ in 0..2 {
        let (found, stderr) = list(&mut in_runs(&runs), &[]);
        assert_eq!(found.len(), 4);
        assert!(
            stderr.starts_with("warning: skipped invalid run log `")
                && stderr.contains("0000.ndjson"),
            "{stderr}"
        );
    }
}

/// A log committed in a group whose eval started before the folder had an
/// index (its recorder kept no records for the row) is read back for its
/// row: the row a scan of the folder makes.
#[test]
fn a_log_noted_by_its_path_gets_the_row_a_scan_makes() {
    use promptlab::index::{CommittedLog, note_logs};
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(runs.join("default")).unwrap();
    list(&mut in_runs(&runs), &[]);
    let name = "20261201T140313.494Z-37789fc2-67d8-4956-8785-e5b2234112a3.ndjson";
    let log = runs.join("default").join(name);
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/old-runlog");
    std::fs::copy(old.join(name), &log).unwrap();
    let rows = |runs: &Path| index_rows(runs, "SELECT * FROM turns");
    note_logs(&runs, &[CommittedLog::At(log)]);
    let noted = rows(&runs);
    assert_eq!(noted.len(), 1, "{noted:?}");
    for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(runs.join(file));
    }
    list(&mut in_runs(&runs), &[]);
    assert_eq!(rows(&runs), noted);
}
