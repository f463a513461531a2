//! The run index (`<runs dir>/index.sqlite`, #30) against real SQLite
//! files: it answers `runs list` exactly as a scan does, evals catch it up
//! current (two evals at once into one folder), readers pick up a copied
//! shard folder, a read-only folder or a folder argument is scanned and said
//! once, and an index of another version or a damaged one is rebuilt, never
//! answered from. The history opens in `sqlite3`, SQLite's own shell.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{promptlab, run_command, run_logs_under, write};

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

/// Removes a runs folder's index and its companions.
fn remove_index(runs: &Path) {
    for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(runs.join(file));
    }
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
        runs.join("index.sqlite").exists(),
        "made by the eval, at its end"
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
    assert_eq!(count(&db, "PRAGMA user_version"), 4);
    assert_eq!(count(&db, "PRAGMA application_id"), 0x706c_6162);
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
    // Made by the eval at its end; a reader that cannot write makes none.
    remove_index(&runs);
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
    // The eval made the shard's index at its end; what is tested is that a
    // reader given the folder as an argument makes none.
    remove_index(&shard);
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

/// promptlab's own index, of another version (a newer promptlab's, #60:
/// emptied without a word before) or with tables it does not keep (an
/// `exit 1` on every listing before), is rebuilt with one line saying so.
#[test]
fn an_index_of_another_version_or_with_other_tables_is_rebuilt_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let (before, _) = list(&mut in_runs(&runs), &[]);
    let index = runs.join("index.sqlite");
    db(&runs)
        .execute_batch("PRAGMA user_version = 5; DELETE FROM turns WHERE verdict = 'fail';")
        .unwrap();
    let (after, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(after, before, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "`{}` was made by a newer promptlab (index schema 5; this one keeps 4): rebuilt from the run logs\n",
            index.display()
        )
    );
    assert_eq!(count(&db(&runs), "PRAGMA user_version"), 4);
    for damage in [
        "ALTER TABLE turns DROP COLUMN rescored",
        "CREATE TABLE extra (x INTEGER)",
        "DROP TABLE eval_run_turns",
        "DROP INDEX turns_by_verdict",
    ] {
        db(&runs).execute_batch(damage).unwrap();
        let out = run_command(in_runs(&runs).args(["evals", "list", "--json"]));
        assert_eq!(out.code, 0, "{damage}: {}", out.stderr);
        assert_eq!(
            out.stderr,
            format!(
                "`{}` does not hold the tables and columns this promptlab keeps: rebuilt from the run logs\n",
                index.display()
            ),
            "{damage}"
        );
        let (after, stderr) = list(&mut in_runs(&runs), &[]);
        assert_eq!((after, stderr.as_str()), (before.clone(), ""), "{damage}");
    }
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

/// An index of schema 1 (before the application id) is promptlab's: it is
/// rebuilt in place, not moved aside as a stranger.
#[test]
fn an_index_of_schema_1_is_rebuilt_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let (before, _) = list(&mut in_runs(&runs), &[]);
    let index = runs.join("index.sqlite");
    std::fs::remove_file(&index).unwrap();
    // Its tables as version 1 made them (names are what mark it).
    rusqlite::Connection::open(&index)
        .unwrap()
        .execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);
             CREATE TABLE turns (path TEXT PRIMARY KEY); CREATE TABLE unreadable (path TEXT);
             CREATE TABLE eval_runs (id TEXT); CREATE TABLE eval_summaries (file TEXT);
             CREATE TABLE eval_run_turns (eval_run TEXT); CREATE TABLE folders (name TEXT);",
        )
        .unwrap();
    let (after, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(after, before);
    assert_eq!(
        stderr,
        format!(
            "`{}` was made by an older promptlab (index schema 1): rebuilt from the run logs\n",
            index.display()
        )
    );
    assert!(foreign_files(&runs).is_empty());
}

/// Files moved aside in `runs`, by name.
fn foreign_files(runs: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(runs)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("index.sqlite.foreign-"))
        .collect();
    names.sort();
    names
}

/// Another application's database, with a table and rows of its own (and
/// a write-ahead log, as a live database has).
fn someones_database(path: &Path) -> Vec<(i64, String)> {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode = WAL; CREATE TABLE history (id INTEGER PRIMARY KEY, what TEXT);
         INSERT INTO history (what) VALUES ('bought a house'), ('sold the car');
         CREATE TABLE schema_version (version INTEGER); INSERT INTO schema_version VALUES (7);",
    )
    .unwrap();
    std::mem::forget(db); // keeps the `-wal` beside it, as a running program would
    history_of(path)
}

fn history_of(path: &Path) -> Vec<(i64, String)> {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut query = db
        .prepare("SELECT id, what FROM history ORDER BY id")
        .unwrap();
    let rows = query.query_map([], |row| Ok((row.get(0)?, row.get(1)?)));
    rows.unwrap().map(Result::unwrap).collect()
}

/// A file at the index's name that promptlab did not make (#60: another
/// database was emptied in place, without a word; a file of text deleted)
/// is moved aside whole, and a new index built.
#[test]
fn a_foreign_file_at_the_index_name_is_moved_aside_never_emptied() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &[]);
    let (before, _) = list(&mut in_runs(&runs), &[]);
    let index = runs.join("index.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    let history = someones_database(&index);
    assert!(std::fs::metadata(format!("{}-wal", index.display())).is_ok());
    let (after, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(after, before, "{stderr}");
    let aside = foreign_files(&runs);
    let moved = runs.join(&aside[0]);
    let companions = ["-shm", "-wal"].map(|suffix| format!("{}{suffix}", aside[0]));
    assert_eq!(
        aside[1..],
        companions,
        "the database with its -wal and -shm"
    );
    let stamp = aside[0].strip_prefix("index.sqlite.foreign-").unwrap();
    assert!(
        stamp.len() == 16 && stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T',
        "yyyymmddThhmmssZ: {stamp}"
    );
    assert_eq!(
        stderr,
        format!(
            "`{}` is not a run index promptlab made: moved aside to `{}`; a new index is built from the run logs\n",
            index.display(),
            moved.display()
        )
    );
    assert_eq!(history_of(&moved), history, "its rows, where it was moved");
    assert_eq!(count(&db(&runs), "PRAGMA application_id"), 0x706c_6162);
    let (_, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(stderr, "", "said once");

    // A file of text: moved aside as it was, never deleted.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    let text = "not a database, just text\n".repeat(200);
    std::fs::write(&index, &text).unwrap();
    let (after, stderr) = list(&mut in_runs(&runs), &["--verdict", "fail"]);
    assert_eq!(after.len(), 2);
    assert!(
        stderr.contains("is not a run index promptlab made: moved aside to"),
        "{stderr}"
    );
    let texts: Vec<String> = foreign_files(&runs)
        .iter()
        .filter_map(|name| std::fs::read_to_string(runs.join(name)).ok())
        .filter(|held| held == &text)
        .collect();
    assert_eq!(texts.len(), 1);
}

/// The database a link points to, with a table of its own; its bytes.
fn linked_database(runs: &Path, target: &Path) -> (Vec<(i64, String)>, Vec<u8>) {
    let history = someones_database(target);
    let bytes = std::fs::read(target).unwrap();
    std::fs::create_dir_all(runs).unwrap();
    std::os::unix::fs::symlink(target, runs.join("index.sqlite")).unwrap();
    (history, bytes)
}

/// #60, the severe one: a link at the index's name was followed, and the
/// database it pointed to emptied. Now it is never opened: readers that can
/// do without the index scan, after one line naming the link and its
/// target; history commands and `runs reindex` refuse with those words.
#[test]
fn a_link_at_the_index_name_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path());
    eval(&runs, &suite, &["--eval-run", "ev-0000000001"]);
    let (before, _) = list(&mut in_runs(&runs), &[]);
    std::fs::remove_file(runs.join("index.sqlite")).unwrap();
    let target = dir.path().join("home").join("history.db");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let (history, bytes) = linked_database(&runs, &target);
    let words = format!(
        "`{}` is a link to `{}`: promptlab never opens its run index through a link \
         (remove the link, and promptlab keeps its own index there)",
        runs.join("index.sqlite").display(),
        target.display()
    );
    let (after, stderr) = list(&mut in_runs(&runs), &[]);
    assert_eq!(after, before);
    assert_eq!(stderr, format!("{words}\nno index: scanning 4 logs\n"));
    for args in [
        &["evals", "list"][..],
        &["evals", "show", "last"],
        &["runs", "reindex"],
    ] {
        let out = run_command(in_runs(&runs).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr, format!("error: {words}\n"), "{args:?}");
    }
    let out = run_command(in_runs(&runs).args([
        "compare",
        "ev-0000000001",
        "ev-0000000001",
        "--format",
        "json",
    ]));
    assert!(
        out.stderr
            .starts_with(&format!("{words}\nno index: scanning 4 logs\n")),
        "{}",
        out.stderr
    );
    // A writer leaves it alone too.
    eval(&runs, &suite, &[]);
    assert_eq!(std::fs::read(&target).unwrap(), bytes, "not a byte changed");
    assert_eq!(history_of(&target), history);
    assert!(runs.join("index.sqlite").is_symlink());
}

/// The clone scenario of #60: a repository that commits a link at
/// `runs/index.sqlite`, pointing into the home folder, cloned and run.
#[test]
fn a_committed_link_in_a_cloned_repository_changes_nothing_it_points_to() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let target = home.join(".local/share/app/history.db");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let history = someones_database(&target);
    let bytes = std::fs::read(&target).unwrap();
    let upstream = dir.path().join("upstream");
    std::fs::create_dir_all(upstream.join("runs")).unwrap();
    std::os::unix::fs::symlink(
        "../../home/.local/share/app/history.db",
        upstream.join("runs/index.sqlite"),
    )
    .unwrap();
    let git = |cwd: &Path, args: &[&str]| {
        let out = Command::new("git")
            .current_dir(cwd)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&upstream, &["init", "-q"]);
    git(&upstream, &["add", "-f", "runs/index.sqlite"]);
    git(&upstream, &["commit", "-q", "-m", "history"]);
    let clone = dir.path().join("clone");
    git(dir.path(), &["clone", "-q", "upstream", "clone"]);
    assert!(clone.join("runs/index.sqlite").is_symlink());
    let out =
        run_command(
            promptlab()
                .current_dir(&clone)
                .args(["--runs-dir", "runs", "runs", "list"]),
        );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            "`runs/index.sqlite` is a link to `../../home/.local/share/app/history.db`: \
             promptlab never opens its run index through a link"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
    assert_eq!(history_of(&target), history);
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

/// `sqlite3 -readonly -json` over the runs folder's index: the rows `sql`
/// gives, or `None` (skipped) without SQLite's shell outside CI.
fn sqlite3_json(runs: &Path, sql: &str) -> Option<Vec<Value>> {
    let Ok(shell) = Command::new("sqlite3")
        .args(["-readonly", "-json"])
        .arg(runs.join("index.sqlite"))
        .arg(sql)
        .output()
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install sqlite3 (.ci/run)"
        );
        eprintln!("skipped the sqlite3 check: no sqlite3 (apt-get install sqlite3)");
        return None;
    };
    assert!(
        shell.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&shell.stderr)
    );
    let text = String::from_utf8(shell.stdout).unwrap();
    // The shell prints nothing at all for no rows.
    Some(if text.trim().is_empty() {
        Vec::new()
    } else {
        serde_json::from_str(&text).unwrap()
    })
}

#[test]
fn the_views_give_eval_runs_and_turns_with_iso_times_verdicts_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is £350.\n",
    );
    write(
        dir.path(),
        "wrong.yaml",
        "turns:\n  - text: I could not find it.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: ids\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\ncases:\n\
         \x20 - {name: excess, tags: [grounding], message: What is the excess?, script: ok.yaml, expect: {answerContains: excess}}\n\
         \x20 - {name: amount, tags: [grounding, money], message: How much?, script: wrong.yaml, expect: {answerContains: £350}}\n",
    );
    eval(&runs, &suite, &["--eval-run", "ev-0000000001"]);
    list(&mut in_runs(&runs), &[]);

    let Some(runs_view) = sqlite3_json(&runs, "SELECT * FROM eval_run_overview") else {
        return;
    };
    assert_eq!(runs_view.len(), 1, "{runs_view:?}");
    let run = &runs_view[0];
    for (column, wanted) in [
        ("eval_run", serde_json::json!("ev-0000000001")),
        ("suite", serde_json::json!("ids")),
        ("turns", serde_json::json!(4)),
        ("passed", serde_json::json!(2)),
        ("failed", serde_json::json!(2)),
        ("errored", serde_json::json!(0)),
        ("pass_rate", serde_json::json!(0.5)),
        ("known_cost_usd", serde_json::json!(0.0)),
        ("turns_cost_unknown", serde_json::json!(0)),
    ] {
        assert_eq!(run[column], wanted, "{column}: {run}");
    }
    let iso = |text: &Value| {
        let text = text.as_str().unwrap_or_default();
        chrono::DateTime::parse_from_rfc3339(text).is_ok()
            && text.len() == 24
            && text.ends_with('Z')
    };
    assert!(iso(&run["started_at"]) && iso(&run["ended_at"]), "{run}");

    let turns = sqlite3_json(
        &runs,
        "SELECT path, started_at, verdict, tags, \"case\" FROM turn_overview ORDER BY path",
    )
    .unwrap();
    assert_eq!(turns.len(), 4);
    for turn in &turns {
        let log =
            promptlab::runs::read_run_log(&runs.join(turn["path"].as_str().unwrap())).unwrap();
        let started = log
            .header
            .started_at
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        assert_eq!(
            turn["started_at"],
            started.as_str(),
            "the log's time to the millisecond"
        );
        let (verdict, tags) = match turn["case"].as_str().unwrap() {
            "excess" => ("pass", r#"["grounding"]"#),
            _ => ("fail", r#"["grounding","money"]"#),
        };
        assert_eq!(turn["verdict"], verdict, "{turn}");
        assert_eq!(turn["tags"], tags, "{turn}");
    }

    let keys = sqlite3_json(
        &runs,
        "SELECT t.name AS child, k.\"from\" AS column_name, k.\"table\" AS parent, k.\"to\" AS key \
         FROM sqlite_master t, pragma_foreign_key_list(t.name) k WHERE t.type = 'table' ORDER BY 1, 2",
    )
    .unwrap();
    let keys: Vec<String> = keys
        .iter()
        .map(|k| {
            format!(
                "{}.{} → {}.{}",
                k["child"], k["column_name"], k["parent"], k["key"]
            )
            .replace('"', "")
        })
        .collect();
    assert_eq!(
        keys,
        [
            "eval_run_turns.eval_run → eval_runs.id",
            "eval_run_variants.eval_run → eval_runs.id",
            "eval_summaries.eval_run → eval_runs.id",
            "turns.eval_run → eval_runs.id",
        ]
    );
    let broken = sqlite3_json(&runs, "PRAGMA foreign_key_check").unwrap();
    assert!(broken.is_empty(), "every declared key holds: {broken:?}");
}
