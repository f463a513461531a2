//! Helpers shared by the CLI tests: run the real binary from the repository
//! root with a clean environment.

#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod browser;
pub mod engine;
pub mod http_server;
pub mod labelled;
pub mod openai_streams;
pub mod plans;
pub mod quota_server;
pub mod references;
pub mod reports;
pub mod serve;
pub mod tmux;
pub mod wire_compare;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A runs folder private to this test process, so that tests never write
/// run logs into the repository.
pub fn scratch_runs_dir() -> PathBuf {
    std::env::temp_dir().join(format!("promptlab-test-runs-{}", std::process::id()))
}

/// `promptlab` with no colours, no inherited settings, run from the repo root,
/// recording (when it records) into a scratch folder.
pub fn promptlab() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_promptlab"));
    command.current_dir(repo_root()).env("NO_COLOR", "1");
    for (key, _) in std::env::vars() {
        if key.starts_with("PROMPTLAB_") || key.starts_with("GEMINI_") || key.starts_with("OPENAI_")
        {
            command.env_remove(key);
        }
    }
    command.env("PROMPTLAB_RUNS_DIR", scratch_runs_dir());
    command
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(args: &[&str]) -> Run {
    run_command(promptlab().args(args))
}

pub fn run_command(command: &mut Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the promptlab binary runs");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(stderr).expect("stderr is UTF-8"),
    }
}

/// A minimal valid claim as JSON, with `description` as the incident text.
pub fn minimal_claim_json(id: &str, description: &str) -> String {
    serde_json::json!({
        "id": id,
        "lineOfBusiness": "Household",
        "status": "open",
        "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
        "incident": {"date": "2024-03-02", "description": description}
    })
    .to_string()
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the temp dir is writable");
    path
}

/// A scripted model that streams six pieces a quarter of a second apart.
pub fn slow_script(dir: &Path) -> PathBuf {
    write(
        dir,
        "slow.yaml",
        "turns:\n  - chunks: [\"one \", \"two \", \"three \", \"four \", \"five \", \"six\"]\n    delayMs: 250\n",
    )
}

/// A running `promptlab chat` against CLM-HH-0001 with `script`, its
/// stdout read line by line. `runs`: where it records (`None`: it does not).
pub fn spawn_chat(
    script: &Path,
    runs: Option<&Path>,
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let mut command = promptlab();
    command
        .args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
        ])
        .arg(script);
    match runs {
        Some(dir) => command.env("PROMPTLAB_RUNS_DIR", dir),
        None => command.arg("--no-record"),
    };
    let mut child = command
        .arg("q")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("promptlab starts");
    let lines = std::io::BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    (child, lines)
}

/// Sends SIGINT, as Ctrl-C would.
pub fn interrupt(child: &std::process::Child) {
    send_signal(child, "INT");
}

/// Sends the signal `name` (`TERM`, `HUP`, …) to `child`.
pub fn send_signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// The child's exit, waited for until `deadline` has passed; past it the
/// child is killed and the test fails (a process that ignores a signal
/// would otherwise hang the whole test run).
pub fn exit_within(
    child: &mut std::process::Child,
    deadline: std::time::Duration,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process did not exit within {deadline:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every file below `dir`, at any depth (none when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Every run log (`*.ndjson`, sidecars aside) under a runs folder, sorted.
pub fn run_logs_under(runs: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![runs.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "ndjson") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `chat` on CLM-HH-0001 answered by the scripted excess model, as
/// arguments; a test adds its own flags and message after them.
pub const SCRIPTED_CHAT: [&str; 7] = [
    "chat",
    "--claim-id",
    "CLM-HH-0001",
    "--provider",
    "script",
    "--script",
    "tests/data/scripts/excess.yaml",
];

/// Runs `SCRIPTED_CHAT` followed by `extra`.
pub fn scripted_chat(extra: &[&str]) -> Run {
    run(&[&SCRIPTED_CHAT[..], extra].concat())
}

/// Every row `sql` selects from `runs`' index, each as its columns' values:
/// for comparing what an eval caught up with what a scan of the files builds.
pub fn index_rows(runs: &Path, sql: &str) -> Vec<Vec<rusqlite::types::Value>> {
    let db = rusqlite::Connection::open_with_flags(
        runs.join("index.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut query = db.prepare(sql).unwrap();
    let columns = query.column_count();
    let rows = query.query_map([], |row| (0..columns).map(|c| row.get(c)).collect());
    rows.unwrap().map(Result::unwrap).collect()
}
