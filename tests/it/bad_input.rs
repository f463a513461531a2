//! Issue #12: the bad-input corpus (`tests/data/bad/`). Every file is fed to
//! the command that reads its kind, through the real binary, and must be
//! refused with exit 1 or 2 and a message naming the file — never a panic
//! (exit 101), never a hang. Big inputs (deep nesting, a 10 MB string,
//! `/dev/zero`) are made here at test time, not committed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{promptlab, write};

/// Far beyond any expected time: only a hang reaches it. Not a speed test.
const HANG: Duration = Duration::from_secs(60);

const SCRIPT: &str = "tests/data/scripts/excess.yaml";

struct Outcome {
    code: i32,
    stderr: String,
    stdout: String,
}

/// Runs `command` to its end, killing it (and failing) after `HANG`.
fn run_bounded(command: &mut Command, what: &str) -> Outcome {
    run_bounded_with(command, Stdio::null(), what)
}

fn run_bounded_with(command: &mut Command, stdin: Stdio, what: &str) -> Outcome {
    let runs = tempfile::tempdir().unwrap();
    let stdout_path = runs.path().join("stdout");
    let stderr_path = runs.path().join("stderr");
    let mut child = command
        .env("PROMPTLAB_RUNS_DIR", runs.path().join("runs"))
        .stdin(stdin)
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("promptlab starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |path: &Path| String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    Outcome {
        code: status.code().unwrap_or(-1),
        stderr: read(&stderr_path),
        stdout: read(&stdout_path),
    }
}

/// The command that reads a file of each corpus folder.
fn command_for(kind: &str, file: &Path) -> Command {
    let mut command = promptlab();
    let chat = [
        "chat",
        "--provider",
        "script",
        "--no-record",
        "--format",
        "ndjson",
    ];
    match kind {
        "claims" => command.args(chat).args(["--script", SCRIPT, "--claim"]),
        "overrides" => command.args([
            "prompts",
            "show",
            "--claim-id",
            "CLM-HH-0001",
            "--overrides",
        ]),
        "suites" => command.args(["eval", "--provider", "script", "--script", SCRIPT]),
        "scripts" => command
            .args(chat)
            .args(["--claim-id", "CLM-HH-0001", "--script"]),
        "histories" => {
            command
                .args(chat)
                .args(["--claim-id", "CLM-HH-0001", "--script", SCRIPT, "--history"])
        }
        "runlogs" => command.args(["runs", "show"]),
        other => panic!("no command for corpus folder {other}"),
    };
    command.arg(file);
    if matches!(kind, "claims" | "scripts" | "histories") {
        command.arg("a question");
    }
    command
}

/// Refused with 1 or 2, naming the file, quoting (not dumping) the input.
fn assert_refused(outcome: &Outcome, file: &Path, what: &str) {
    assert!(
        matches!(outcome.code, 1 | 2),
        "{what}: exit {} (101 is a panic)\nstdout: {}\nstderr: {}",
        outcome.code,
        support_cut(&outcome.stdout),
        support_cut(&outcome.stderr)
    );
    let name = file.file_name().unwrap().to_string_lossy();
    let said = format!("{}{}", outcome.stderr, outcome.stdout);
    assert!(
        said.contains(&*name),
        "{what}: the message does not name the file: {said}"
    );
    assert!(
        said.len() < 4_000,
        "{what}: {} bytes of messages: inputs are quoted, not dumped",
        said.len()
    );
}

fn support_cut(text: &str) -> String {
    text.chars().take(2_000).collect()
}

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = support::repo_root().join("tests/data/bad").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}", dir.display());
    files
}

#[test]
fn every_file_of_the_bad_input_corpus_is_refused_by_name() {
    for kind in [
        "claims",
        "overrides",
        "suites",
        "scripts",
        "histories",
        "runlogs",
    ] {
        for file in corpus(kind) {
            let what = format!("{kind}/{}", file.file_name().unwrap().to_string_lossy());
            let outcome = run_bounded(&mut command_for(kind, &file), &what);
            assert_refused(&outcome, &file, &what);
        }
    }
}

#[test]
fn run_logs_of_the_corpus_are_refused_by_replay_too() {
    for file in corpus("runlogs") {
        let what = format!("replay {}", file.display());
        let mut command = promptlab();
        command.args(["replay", "--no-record"]).arg(&file);
        assert_refused(&run_bounded(&mut command, &what), &file, &what);
    }
}

/// Big inputs, made at test time.
#[test]
fn generated_worst_cases_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let deep_yaml = write(dir.path(), "deep.yaml", &"[".repeat(100_000));
    let deep_block: String = (0..5_000)
        .map(|depth| format!("{}k:\n", " ".repeat(depth)))
        .collect();
    let deep_block = write(dir.path(), "deep-block.yaml", &deep_block);
    let deep_json = write(dir.path(), "deep.json", &"[".repeat(100_000));
    let one_string = write(
        dir.path(),
        "one-string.json",
        &format!("\"{}\"", "x".repeat(10_500_000)),
    );
    let mut cases = vec![
        ("claims", deep_yaml),
        ("claims", deep_block.clone()),
        ("claims", deep_json),
        ("claims", one_string),
        ("overrides", deep_block.clone()),
        ("suites", deep_block.clone()),
        ("scripts", deep_block),
    ];
    if cfg!(unix) {
        cases.push(("claims", PathBuf::from("/dev/zero")));
    }
    for (kind, file) in cases {
        let what = format!("{kind} {}", file.display());
        let outcome = run_bounded(&mut command_for(kind, &file), &what);
        assert_refused(&outcome, &file, &what);
    }
}

#[test]
fn hostile_but_valid_input_runs_without_a_panic() {
    // Amounts at the edge of a decimal (outstanding and schedule totals
    // would overflow), and a get_schedule offset of u64::MAX.
    let mut command = promptlab();
    command.args([
        "chat",
        "--provider",
        "script",
        "--no-record",
        "--format",
        "ndjson",
        "--claim",
        "tests/data/hostile/amount-extremes.json",
        "--script",
        "tests/data/hostile/tools.yaml",
        "q",
    ]);
    let outcome = run_bounded(&mut command, "hostile claim");
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stdout.contains("too large to total"),
        "{}",
        outcome.stdout
    );
    assert!(!outcome.stdout.contains("call again"), "{}", outcome.stdout);
}

#[test]
fn a_claim_store_symlink_out_of_the_store_is_refused_and_not_quoted() {
    if !cfg!(unix) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("claims");
    std::fs::create_dir(&store).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", store.join("PASSWD.yaml")).unwrap();
    let mut command = promptlab();
    command.arg("--claims-dir").arg(&store).args([
        "chat",
        "--provider",
        "script",
        "--script",
        SCRIPT,
        "--claim-id",
        "PASSWD",
        "q",
    ]);
    let outcome = run_bounded(&mut command, "symlinked claim");
    assert!(matches!(outcome.code, 1 | 2), "{}", outcome.stderr);
    let said = format!("{}{}", outcome.stderr, outcome.stdout);
    assert!(said.contains("outside the claim store"), "{said}");
    assert!(!said.contains("root:"), "{said}");
}

#[test]
fn an_interactive_session_fed_dev_zero_ends_with_an_error() {
    if !cfg!(unix) {
        return;
    }
    let mut command = promptlab();
    command
        .args(["chat", "-i", "--provider", "script", "--script", SCRIPT])
        .args(["--claim-id", "CLM-HH-0001", "--no-record"]);
    let zero = Stdio::from(std::fs::File::open("/dev/zero").unwrap());
    let outcome = run_bounded_with(&mut command, zero, "chat -i < /dev/zero");
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("line of stdin is longer"),
        "{}",
        outcome.stderr
    );
}

/// What the user named is not a file of text within the bound: a folder, a
/// file over 256 MiB (sparse here: refused by its size, before a byte is
/// read), a stream that never ends, bytes that are not UTF-8 — invalid
/// input (exit 2), as a path that is not there is.
#[test]
fn a_folder_an_oversized_file_an_endless_stream_or_non_utf8_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 * 1024 * 1024)
        .unwrap();
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"prompts:\n  system.base: caf\xe9\n").unwrap();
    let mut cases = vec![
        ("suites", dir.path().to_path_buf(), "a folder, not a file"),
        (
            "suites",
            big,
            "larger than the 256 MiB limit for input files (314572800 bytes)",
        ),
        (
            "overrides",
            latin1,
            "not UTF-8 text (invalid byte at offset 27)",
        ),
    ];
    if cfg!(unix) {
        cases.push((
            "suites",
            PathBuf::from("/dev/zero"),
            "it is a device, not a regular file",
        ));
    }
    for (kind, file, reason) in cases {
        let what = format!("{kind} {}", file.display());
        let outcome = run_bounded(&mut command_for(kind, &file), &what);
        assert_eq!(outcome.code, 2, "{what}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(reason),
            "{what}: {}",
            outcome.stderr
        );
        assert_refused(&outcome, &file, &what);
    }
}

/// Issue 61: an input naming a FIFO hung until killed (its open waits
/// for a writer; `casesFrom` too), and a device was read to the cap. Each
/// kind of input refuses one before a byte is read, exit 2.
#[test]
fn a_fifo_or_a_device_named_as_any_input_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.yaml");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let banks = dir.path().join("banks.yaml");
    std::fs::write(
        &banks,
        "claims: {ids: [CLM-HH-0001]}\ncasesFrom: input.yaml\n",
    )
    .unwrap();
    let mut cases: Vec<(&str, &Path, &str)> =
        ["claims", "overrides", "suites", "scripts", "histories"]
            .into_iter()
            .map(|kind| (kind, fifo.as_path(), "it is a FIFO, not a regular file"))
            .collect();
    cases.push((
        "suites",
        banks.as_path(),
        "it is a FIFO, not a regular file",
    ));
    cases.push((
        "claims",
        Path::new("/dev/zero"),
        "it is a device, not a regular file",
    ));
    for (kind, file, reason) in cases {
        let what = format!("{kind} {}", file.display());
        let outcome = run_bounded(&mut command_for(kind, file), &what);
        assert_eq!(outcome.code, 2, "{what}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(reason),
            "{what}: {}",
            outcome.stderr
        );
    }
}
