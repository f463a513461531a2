//! The script provider through the real binary (docs/scripts.md): a partial
//! `usage`, a script that runs out of turns in `chat -i`, and the warning that
//! a fully scripted eval cannot detect a prompt regression; `--history` ending
//! with the user's message; replay against another claim on purpose.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use support::{promptlab, run};

fn write_script(dir: &std::path::Path, text: &str) -> String {
    let path = dir.join("s.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn chat(script: &str) -> Vec<String> {
    [
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--no-record",
        "--provider",
        "script",
        "--script",
        script,
        "--format",
        "ndjson",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn a_partial_usage_counts_the_rest_as_zero_in_the_done_event() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "turns:\n  - text: Hi.\n    usage: {outputTokens: 7}\n",
    );
    let mut args = chat(&script);
    args.push("Hello?".into());
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(r#""usage":{"inputTokens":0,"outputTokens":7,"cacheReadTokens":0}"#),
        "{}",
        out.stdout
    );
}

#[test]
fn a_misspelt_usage_count_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "turns:\n  - text: Hi.\n    usage: {outputTokenz: 7}\n",
    );
    let mut args = chat(&script);
    args.push("Hello?".into());
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("outputTokenz"), "{}", out.stderr);
}

#[test]
fn in_a_session_a_script_out_of_turns_ends_that_turn_in_an_error_and_the_session_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "turns:\n  - text: First answer.\n");
    let mut args = chat(&script);
    args.push("-i".into());
    let mut child = promptlab()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"One?\nTwo?\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let kinds: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split('"').nth(3))
        .collect();
    assert_eq!(kinds.first(), Some(&"text_delta"), "{stdout}");
    assert!(kinds.contains(&"done"), "{stdout}");
    assert_eq!(kinds.last(), Some(&"error"), "{stdout}");
    assert!(stdout.contains("has no turn 2"), "{stdout}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_fully_scripted_eval_says_it_cannot_detect_a_prompt_regression() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let out = run(&[
        "--runs-dir",
        runs.to_str().unwrap(),
        "eval",
        "suites/smoke.yaml",
        "--provider",
        "script",
        "--format",
        "ndjson",
        "--case",
        "excess",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot detect a prompt regression"),
        "{}",
        out.stderr
    );
}

fn chat_with_history(history: &str, stdin: &[u8]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.json");
    std::fs::write(&path, history).unwrap();
    let mut args = chat("tests/data/scripts/excess.yaml");
    args.extend(["--history".to_string(), path.to_str().unwrap().to_string()]);
    let mut child = promptlab()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_history_ending_with_the_users_message_is_answered_when_no_new_one_is_given() {
    let history = r#"[{"role":"user","text":"What is the excess?"}]"#;
    let (code, stdout, stderr) = chat_with_history(history, b"");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(r#""type":"done""#), "{stdout}");
}

#[test]
fn a_history_ending_with_the_assistant_still_needs_a_message() {
    let history = r#"[{"role":"user","text":"Hi"},{"role":"assistant","text":"Hello."}]"#;
    let (code, stdout, stderr) = chat_with_history(history, b"");
    assert_eq!(code, Some(2), "{stdout}");
    assert!(stderr.contains("the message is empty"), "{stderr}");
}

#[test]
fn replay_against_another_claim_on_purpose_does_not_say_the_claim_changed() {
    let out = support::run_command(promptlab().args([
        "--runs-dir",
        "runs/examples",
        "replay",
        "64011163",
        "--claim-id",
        "CLM-HH-0011",
        "--no-record",
        "--format",
        "ndjson",
    ]));
    assert!(out.stderr.contains("replay diverges"), "{}", out.stderr);
    assert!(!out.stderr.contains("has changed since"), "{}", out.stderr);
}

/// `chat -i` recording into `runs`, fed `input`; returns (exit code, stderr).
fn session(runs: &std::path::Path, script: &str, input: &[u8]) -> (Option<i32>, String) {
    let mut child = promptlab()
        .args(["--runs-dir", runs.to_str().unwrap()])
        .args([
            "chat",
            "-i",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
            script,
            "--format",
            "ndjson",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn session_help_and_unknown_commands_are_answered_without_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "turns: []\n");
    let runs = dir.path().join("runs");
    let (code, stderr) = session(&runs, &script, b"/help\n/nonsense\n");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("/reset            forget the history"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown command /nonsense"), "{stderr}");
    assert!(!runs.exists(), "a command ran a turn");
}

#[test]
fn session_reset_forgets_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "turns:\n  - text: A.\n  - text: B.\n  - text: C.\n",
    );
    let runs = dir.path().join("runs");
    let (code, stderr) = session(&runs, &script, b"One?\nTwo?\n/reset\nThree?\n");
    assert_eq!(code, Some(0), "{stderr}");
    let mut counts: Vec<(String, usize)> = promptlab::runs::store::run_log_paths(&runs)
        .unwrap()
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let header: serde_json::Value =
                serde_json::from_str(text.lines().next().unwrap()).unwrap();
            let messages = header["request"]["messages"].as_array().unwrap();
            let last = messages.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string();
            (last, messages.len())
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("One?".to_string(), 1),
            ("Three?".to_string(), 1),
            ("Two?".to_string(), 3)
        ]
    );
}

#[test]
fn a_session_on_a_terminal_opens_with_a_banner() {
    // util-linux script(1) gives the session a terminal; skip without it.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_promptlab");
    let command = format!(
        "{bin} chat -i --no-record --claim-id CLM-HH-0001 --provider script --script tests/data/scripts/excess.yaml --overrides overrides/plain-spoken.yaml"
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(support::repo_root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (sender, chunks) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = std::io::Read::read(&mut stdout, &mut buffer) {
            if sender.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    // Ctrl-D only once the line editor shows its prompt: one typed before
    // it takes the terminal could be lost in the switch to raw mode.
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !String::from_utf8_lossy(&seen).contains("› ") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match chunks.recv_timeout(left) {
            Ok(chunk) => seen.extend(chunk),
            Err(_) => {
                let _ = child.kill();
                panic!("no prompt: {}", String::from_utf8_lossy(&seen));
            }
        }
    }
    child.stdin.as_mut().unwrap().write_all(b"\x04").unwrap();
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(
        text.contains(
            "claim CLM-HH-0001 · capability free chat · fingerprint 6ebc72c8dd76 · model gemini-3.1-flash-lite (script)"
        ),
        "{text}"
    );
    assert!(status.success(), "Ctrl-D leaves: {status}");
}
