//! The prompt stored once (`<runs dir>/prompts/<sha256>.json`, issue #31):
//! new logs name it instead of holding it, every reader resolves it, a log
//! copied without it still reads and says so, old logs with an inline
//! `prompt` record read byte for byte as before (a log recorded by the
//! previous version is kept in `tests/data/old-runlog/` with what `runs
//! show` and `replay` printed for it then), concurrent turns of one version
//! neither race nor tear the file, and scanners leave `prompts/` alone.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use promptlab::runs::prompt_store::{PromptParts, load_prompt, prompts_dir, store_prompt};
use promptlab::runs::read_run_log;
use proptest::prelude::*;
use serde_json::Value;
use support::{files_under, promptlab, run_command, run_logs_under};

const OLD: &str = "tests/data/old-runlog";
const OLD_LOG: &str =
    "tests/data/old-runlog/20261201T140313.494Z-37789fc2-67d8-4956-8785-e5b2234112a3.ndjson";

fn in_runs(runs: &Path, args: &[&str]) -> support::Run {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs).env("TZ", "UTC");
    run_command(command.args(args))
}

/// The old fixture's turn, recorded again by this version.
fn record_turn(runs: &Path) -> support::Run {
    in_runs(
        runs,
        &[
            "chat",
            "--provider",
            "script",
            "--script",
            "tests/data/scripts/excess.yaml",
            "--claim-id",
            "CLM-HH-0001",
            "--overrides",
            "overrides/plain-spoken.yaml",
            "--today",
            "2026-11-30",
            "What is the excess?",
        ],
    )
}

fn prompt_files(runs: &Path) -> Vec<PathBuf> {
    files_under(&prompts_dir(runs))
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(support::repo_root().join(path)).unwrap()
}

#[test]
fn an_old_log_with_an_inline_prompt_shows_and_replays_byte_for_byte_as_before() {
    let runs = tempfile::tempdir().unwrap();
    let shown = in_runs(runs.path(), &["runs", "show", OLD_LOG]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.stdout, read(&format!("{OLD}/show.txt")));
    let events = in_runs(
        runs.path(),
        &["runs", "show", OLD_LOG, "--format", "ndjson"],
    );
    assert_eq!(events.stdout, read(&format!("{OLD}/show.ndjson")));
    let replayed = in_runs(runs.path(), &["replay", OLD_LOG, "--no-record"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stderr, read(&format!("{OLD}/replay.stderr")));
    // The replay's `done` has a fresh turn id; all else is as it was.
    let fresh = |text: &str| {
        let at = text.find("\"turnId\":\"").unwrap() + 10;
        format!("{}{}", &text[..at], &text[at + 36..])
    };
    assert_eq!(
        fresh(&replayed.stdout),
        fresh(&read(&format!("{OLD}/replay.txt")))
    );
    let log = read_run_log(&support::repo_root().join(OLD_LOG)).unwrap();
    assert_eq!(log.header.schema, 2);
    assert!(log.header.prompt_sha256.is_none() && log.prompt_missing.is_none());
    assert_eq!(log.prompt.unwrap().blocks.len(), 5);
}

#[test]
fn a_new_log_names_its_prompt_which_is_the_old_inline_record_stored_once() {
    let runs = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        let out = record_turn(runs.path());
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let logs = run_logs_under(runs.path());
    assert_eq!(logs.len(), 3, "{logs:?}");
    let stored = prompt_files(runs.path());
    assert_eq!(
        stored.len(),
        1,
        "three turns of one prompt, one file: {stored:?}"
    );
    let bytes = std::fs::read(&stored[0]).unwrap();
    let key = promptlab::digest::sha256_hex(&bytes);
    assert_eq!(stored[0].file_name().unwrap(), &*format!("{key}.json"));
    // The same prompt the previous version wrote inline, byte for byte.
    let old_prompt = std::fs::read_to_string(support::repo_root().join(OLD_LOG)).unwrap();
    let old_prompt = old_prompt.lines().nth(1).unwrap();
    let untagged = old_prompt.replacen("\"record\":\"prompt\",", "", 1);
    assert_eq!(String::from_utf8(bytes).unwrap(), untagged);
    for log in &logs {
        let records = lines(log);
        assert!(records.iter().all(|r| r["record"] != "prompt"), "{log:?}");
        assert_eq!(records[0]["promptSha256"], key.as_str());
        assert_eq!(records[0]["schema"], 5);
        let size = std::fs::metadata(log).unwrap().len();
        assert!(size < 5 * 1024, "a one-call turn under 5 KB: {size} bytes");
        let read = read_run_log(log).unwrap();
        let prompt = read.prompt.expect("resolved");
        assert_eq!(prompt.applied_overrides.len(), 2);
        assert_eq!(prompt.blocks.len(), 5);
    }
    // `replay` re-applies the stored overrides: it matches the recording.
    let replayed = in_runs(
        runs.path(),
        &["replay", logs[0].to_str().unwrap(), "--no-record"],
    );
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert!(
        replayed.stderr.starts_with("replay matches the recording"),
        "{}",
        replayed.stderr
    );
    // `report` shows the blocks read from the stored file.
    let page = runs.path().join("report.html");
    let out = in_runs(
        runs.path(),
        &[
            "report",
            runs.path().to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("capability.summarise") && !html.contains("not at hand"));
}

#[test]
fn a_log_copied_without_its_prompt_reads_and_says_the_prompt_text_is_not_at_hand() {
    let runs = tempfile::tempdir().unwrap();
    assert_eq!(record_turn(runs.path()).code, 0);
    let log = run_logs_under(runs.path()).remove(0);
    let copy = tempfile::tempdir().unwrap();
    let folder = copy.path().join(log.parent().unwrap().file_name().unwrap());
    std::fs::create_dir_all(&folder).unwrap();
    let copied = folder.join(log.file_name().unwrap());
    std::fs::copy(&log, &copied).unwrap();
    let shown = in_runs(copy.path(), &["runs", "show", copied.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let key = read_run_log(&log).unwrap().header.prompt_sha256.unwrap();
    let expected = format!(
        "the prompt text is not at hand: prompts/{key}.json is not in the log's runs folder (copied without it?)\n"
    );
    assert!(shown.stdout.contains(&expected), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("The excess is £350"),
        "the turn still shows"
    );
    let replayed = in_runs(
        copy.path(),
        &["replay", copied.to_str().unwrap(), "--no-record"],
    );
    assert!(
        replayed.stderr.contains("not at hand") && replayed.stderr.contains("cannot be re-applied"),
        "{}",
        replayed.stderr
    );
    let page = copy.path().join("r.html");
    let out = in_runs(
        copy.path(),
        &[
            "report",
            copy.path().to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("not at hand")
    );
    // A damaged prompt file is refused by its digest, not shown as the prompt.
    let damaged = prompts_dir(copy.path()).join(format!("{key}.json"));
    std::fs::create_dir_all(damaged.parent().unwrap()).unwrap();
    std::fs::write(
        &damaged,
        b"{\"appliedOverrides\":{},\"blocks\":[],\"tools\":[]}",
    )
    .unwrap();
    let shown = in_runs(copy.path(), &["runs", "show", copied.to_str().unwrap()]);
    assert!(
        shown
            .stdout
            .contains("is not the prompt it is named after (its SHA-256 is "),
        "{}",
        shown.stdout
    );
}

#[test]
fn scanners_leave_the_stored_prompts_alone() {
    let runs = tempfile::tempdir().unwrap();
    let out = in_runs(
        runs.path(),
        &["eval", "suites/smoke.yaml", "--provider", "script", "-q"],
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let logs = run_logs_under(runs.path()).len();
    assert!(logs > 0 && !prompt_files(runs.path()).is_empty());
    // A stray non-log beside the prompts would be reported if listed.
    let listed = in_runs(runs.path(), &["runs", "list", "--json", "--limit", "0"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), logs);
    assert!(!listed.stderr.contains("prompts"), "{}", listed.stderr);
    let reindexed = in_runs(runs.path(), &["runs", "reindex"]);
    assert_eq!(reindexed.code, 0, "{}", reindexed.stderr);
    assert!(
        !reindexed.stderr.contains("prompts"),
        "{}",
        reindexed.stderr
    );
    let index = rusqlite::Connection::open(runs.path().join("index.sqlite")).unwrap();
    let prompt_rows: i64 = index
        .query_row(
            "SELECT (SELECT count(*) FROM folders WHERE name = 'prompts') + \
             (SELECT count(*) FROM unreadable) + \
             (SELECT count(*) FROM turns WHERE path LIKE 'prompts/%')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(prompt_rows, 0);
    // A folder given as an argument is scanned the same way.
    let merged = in_runs(
        runs.path(),
        &[
            "eval",
            "suites/smoke.yaml",
            "--report",
            runs.path().to_str().unwrap(),
            "-q",
        ],
    );
    assert!(!merged.stderr.contains("prompts/"), "{}", merged.stderr);
}

fn sample_prompt(text: &str) -> promptlab::runs::record::PromptRecord {
    serde_json::from_value(serde_json::json!({
        "appliedOverrides": {"system.base": text},
        "blocks": [{"id": "system.base", "source": "override", "text": text}],
        "tools": []
    }))
    .unwrap()
}

fn parts(record: &promptlab::runs::record::PromptRecord) -> PromptParts<'_> {
    PromptParts::new(&record.applied_overrides, &record.blocks, &record.tools)
}

#[test]
fn turns_racing_to_store_one_prompt_never_tear_it_and_readers_see_all_or_nothing() {
    let runs = tempfile::tempdir().unwrap();
    // Large enough that a torn write would be seen half written.
    let record = Arc::new(sample_prompt(&"Be brief. ".repeat(50_000)));
    let key = promptlab::digest::sha256_hex(serde_json::to_vec(&*record).unwrap());
    let log = runs.path().join("default").join("x.ndjson");
    let writers = 12;
    let barrier = Arc::new(Barrier::new(writers + 2));
    let mut handles = Vec::new();
    for _ in 0..writers {
        let (record, barrier, dir) = (record.clone(), barrier.clone(), runs.path().to_path_buf());
        handles.push(std::thread::spawn(move || {
            barrier.wait();
            store_prompt(&dir, &parts(&record)).unwrap()
        }));
    }
    for _ in 0..2 {
        let (barrier, log, key) = (barrier.clone(), log.clone(), key.clone());
        handles.push(std::thread::spawn(move || {
            barrier.wait();
            for _ in 0..2_000 {
                match load_prompt(&log, &key) {
                    Ok(prompt) => assert_eq!(prompt.blocks.len(), 1),
                    Err(why) => assert!(
                        why.to_string().contains("is not in the log's runs folder"),
                        "{why}"
                    ),
                }
            }
            key
        }));
    }
    for handle in handles {
        assert_eq!(handle.join().unwrap(), key);
    }
    let files = prompt_files(runs.path());
    assert_eq!(files.len(), 1, "one file, no temporaries: {files:?}");
    assert_eq!(
        promptlab::digest::sha256_hex(std::fs::read(&files[0]).unwrap()),
        key
    );
}

#[test]
fn concurrent_eval_turns_of_one_version_store_each_prompt_once() {
    let runs = tempfile::tempdir().unwrap();
    let out = in_runs(
        runs.path(),
        &[
            "eval",
            "benches/eval-1000.yaml",
            "--provider",
            "script",
            "--case",
            "excess*",
            "-j",
            "8",
            "-q",
        ],
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let logs = run_logs_under(runs.path());
    let mut named = std::collections::BTreeSet::new();
    for log in &logs {
        let read = read_run_log(log).unwrap();
        assert!(
            read.prompt.is_some(),
            "{:?}: {:?}",
            log,
            read.prompt_missing
        );
        named.insert(read.header.prompt_sha256.unwrap());
    }
    let stored: std::collections::BTreeSet<String> = prompt_files(runs.path())
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    assert!(
        logs.len() > stored.len(),
        "{} logs, {} prompts",
        logs.len(),
        stored.len()
    );
    assert_eq!(
        named, stored,
        "every stored prompt is named, and nothing else is there"
    );
}

/// An eval's prompt files are synced with its logs' group, not each on
/// its own: a power loss before that sync can leave one torn under its
/// name (only `.partial` logs name it then). The next run must not take it
/// for stored: it finds the bytes differ and writes the prompt again.
#[test]
fn a_torn_prompt_file_left_by_an_earlier_run_is_written_again_by_the_next() {
    let runs = tempfile::tempdir().unwrap();
    let eval = || {
        let args = ["eval", "benches/eval-1000.yaml", "--provider", "script"];
        let out = in_runs(
            runs.path(),
            &[&args[..], &["--case", "excess*", "-q"]].concat(),
        );
        assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    };
    eval();
    let whole: Vec<(PathBuf, Vec<u8>)> = prompt_files(runs.path())
        .into_iter()
        .map(|path| (path.clone(), std::fs::read(&path).unwrap()))
        .collect();
    assert!(!whole.is_empty());
    for (path, bytes) in &whole {
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    }
    let first_run = run_logs_under(runs.path());
    eval();
    for (path, bytes) in &whole {
        assert!(
            std::fs::read(path).unwrap() == *bytes,
            "{path:?} is whole again"
        );
    }
    let second_run: Vec<_> = run_logs_under(runs.path())
        .into_iter()
        .filter(|log| !first_run.contains(log))
        .collect();
    assert_eq!(second_run.len(), first_run.len());
    for log in second_run.iter().chain(&first_run) {
        let read = read_run_log(log).unwrap();
        assert!(read.prompt.is_some(), "{log:?}: {:?}", read.prompt_missing);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever a header names and whatever a prompt file holds, reading
    /// never panics: the prompt is read, or said not to be at hand.
    #[test]
    fn a_named_prompt_never_panics_whatever_the_name_or_the_bytes(
        key in prop_oneof![Just("a".repeat(64)), "[0-9a-f]{64}", ".{0,80}"],
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let runs = tempfile::tempdir().unwrap();
        let named = key.bytes().all(|b| b.is_ascii_hexdigit()) && key.len() == 64;
        if named {
            std::fs::create_dir_all(prompts_dir(runs.path())).unwrap();
            std::fs::write(prompts_dir(runs.path()).join(format!("{key}.json")), &bytes).unwrap();
        }
        let log = runs.path().join("default").join("x.ndjson");
        match load_prompt(&log, &key) {
            Ok(_) => prop_assert_eq!(promptlab::digest::sha256_hex(&bytes), key),
            Err(why) => prop_assert!(why.to_string().starts_with("the prompt text is not at hand")),
        }
    }
}

#[test]
fn a_header_naming_its_prompt_badly_still_shows_and_quotes_little_of_it() {
    let runs = tempfile::tempdir().unwrap();
    assert_eq!(record_turn(runs.path()).code, 0);
    let log = run_logs_under(runs.path()).remove(0);
    let original = std::fs::read_to_string(&log).unwrap();
    let key = read_run_log(&log).unwrap().header.prompt_sha256.unwrap();
    let long = "a".repeat(100_000);
    for bad in ["../../../../etc/passwd", "A".repeat(64).as_str(), &long, ""] {
        let named = original.replacen(&key, &bad.replace('"', ""), 1);
        std::fs::write(&log, named).unwrap();
        let shown = in_runs(runs.path(), &["runs", "show", log.to_str().unwrap()]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        let said = shown
            .stdout
            .lines()
            .find(|line| line.starts_with("the prompt text is not at hand"))
            .unwrap_or_else(|| panic!("{bad:.40}: {}", shown.stdout));
        assert!(said.contains("is not a SHA-256"), "{said:.300}");
        assert!(
            said.len() < 400,
            "at most a little of the input: {} bytes",
            said.len()
        );
        assert!(
            !shown.stdout.contains("root:"),
            "nothing read outside the runs folder"
        );
    }
}

/// A prompt that cannot be stored loses its turn's log (the log would name
/// a prompt that is not there); the error names the prompt's file, not
/// only the log's. (`eval` finds such a folder before any turn; `chat`
/// checks the runs folder alone, and a disk can fill mid-run.)
#[test]
fn a_prompt_that_cannot_be_stored_is_named_in_the_lost_log_s_error() {
    let runs = tempfile::tempdir().unwrap();
    // A file where the prompts' folder should be (run as root in CI, so
    // not a folder without write permission).
    std::fs::write(prompts_dir(runs.path()), "not a folder").unwrap();
    let out = record_turn(runs.path());
    let named = format!("storing its prompt `{}", prompts_dir(runs.path()).display());
    assert!(out.stderr.contains(&named), "{}", out.stderr);
    assert!(
        run_logs_under(runs.path()).is_empty(),
        "no log names a missing prompt"
    );
}
