//! `promptlab chat` through the real binary: formats, streaming, exit codes.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use promptlab::chat::ChatEvent;
use support::{interrupt, promptlab, run, run_command, slow_script, spawn_chat, write};

const SCRIPT: &str = "tests/data/scripts/excess.yaml";

/// `promptlab chat` on CLM-HH-0001 with the excess script, not recording.
const SCRIPTED_CHAT: [&str; 8] = [
    "chat",
    "--claim-id",
    "CLM-HH-0001",
    "--provider",
    "script",
    "--script",
    SCRIPT,
    "--no-record",
];

/// The scripted chat, plus `extra` arguments.
fn scripted_chat(extra: &[&str]) -> support::Run {
    run(&[&SCRIPTED_CHAT[..], extra].concat())
}

fn events(stdout: &str) -> Vec<ChatEvent> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

#[test]
fn piped_output_is_ndjson_ending_in_done() {
    let out = scripted_chat(&["What is the excess?"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = events(&out.stdout);
    assert!(matches!(events.last(), Some(ChatEvent::Done(_))));
    assert!(
        matches!(&events[2], ChatEvent::Activity { label, .. } if label == "Reading the policy section")
    );
}

#[test]
fn the_message_can_come_from_stdin() {
    let mut child = promptlab()
        .args(SCRIPTED_CHAT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"What is the excess?\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    assert!(
        String::from_utf8(output.stdout)
            .unwrap()
            .contains("\"type\":\"done\"")
    );
}

#[test]
fn sse_frames_are_data_lines_separated_by_blank_lines() {
    let out = scripted_chat(&["--format", "sse", "q"]);
    assert_eq!(out.code, 0);
    let frames: Vec<&str> = out.stdout.split("\n\n").filter(|f| !f.is_empty()).collect();
    assert!(frames.len() > 3);
    for frame in &frames {
        let json = frame
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("{frame:?}"));
        serde_json::from_str::<ChatEvent>(json).unwrap();
    }
    assert!(frames.last().unwrap().contains("\"type\":\"done\""));
}

#[test]
fn pretty_output_shows_chips_answer_lookups_and_footer() {
    let out = scripted_chat(&["--format", "pretty", "q"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("Let me check the policy.\n  ⟳ Reading the policy section\nThe excess is £350, as the policy section records.\n\nLookups:\n  ✓ Reading the policy section — {"), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "gemini-3.1-flash-lite · 2,700 in / 60 out / 2,000 cache-read · prompts default · turn "
        ),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains('\u{1b}'),
        "NO_COLOR and a pipe mean no colour"
    );
}

#[test]
fn an_unknown_claim_is_an_error_event_and_exit_1() {
    let out = run(&[
        "chat",
        "--claim-id",
        "../claims/CLM-HH-0001",
        "--provider",
        "script",
        "--script",
        SCRIPT,
        "--no-record",
        "q",
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        "{\"type\":\"error\",\"message\":\"Claim ../claims/CLM-HH-0001 not found.\"}\n"
    );
    let out = run(&[
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--capability",
        "nope",
        "--provider",
        "script",
        "--script",
        SCRIPT,
        "--no-record",
        "q",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            1,
            "{\"type\":\"error\",\"message\":\"Unknown capability \\\"nope\\\"\"}\n"
        )
    );
}

#[test]
fn invalid_requests_exit_2_before_any_event() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<serde_json::Value> = (0..60)
        .map(|i| serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "text": format!("m{i}")}))
        .collect();
    let history = write(dir.path(), "h.json", &serde_json::to_string(&many).unwrap());
    let long = "x".repeat(20_001);
    let bad_history = write(
        dir.path(),
        "bad.json",
        r#"[{"role": "system", "text": "hi"}]"#,
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--history", history.to_str().unwrap(), "q"],
            "messages: at most 60 messages are allowed, got 61",
        ),
        (
            vec![long.as_str()],
            "messages[0].text: at most 20000 characters are allowed, got 20001",
        ),
        (vec!["  "], "messages[0].text: the message is empty"),
        (
            vec!["--history", bad_history.to_str().unwrap(), "q"],
            "field `[0].role`",
        ),
    ];
    for (extra, message) in cases {
        let out = scripted_chat(&extra);
        assert_eq!(out.code, 2, "{message}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{message}");
        assert!(out.stderr.contains(message), "{message}: {}", out.stderr);
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "q",
        ][..],
        &["chat", "--claim-id", "CLM-HH-0001", "--format", "xml", "q"],
        &[
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--thinking-level",
            "max",
            "q",
        ],
        &[
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
            "missing.yaml",
            "q",
        ],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
}

#[test]
fn ndjson_lines_arrive_while_the_turn_is_still_streaming() {
    let dir = tempfile::tempdir().unwrap();
    let script = slow_script(dir.path());
    let (mut child, mut lines) = spawn_chat(&script, None);
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, "{\"type\":\"text_delta\",\"text\":\"one \"}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first event was read while the process was still running"
    );
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(rest.last().unwrap().contains("\"type\":\"done\""));
    assert!(child.wait().unwrap().success());
}

#[test]
fn ctrl_c_stops_the_turn_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let script = slow_script(dir.path());
    let (mut child, mut lines) = spawn_chat(&script, None);
    lines.next().unwrap().unwrap();
    interrupt(&child);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(
        rest.iter().all(|line| !line.contains("\"type\":\"done\"")),
        "{rest:?}"
    );
    assert!(rest.len() < 5, "events stopped promptly: {rest:?}");
    assert_eq!(child.wait().unwrap().code(), Some(130));
}

#[test]
fn sigterm_stops_the_turn_like_ctrl_c_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let script = slow_script(dir.path());
    let runs = dir.path().join("runs");
    let (mut child, mut lines) = spawn_chat(&script, Some(&runs));
    lines.next().unwrap().unwrap();
    support::send_signal(&child, "TERM");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(rest.iter().all(|line| !line.contains("\"type\":\"done\"")));
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let logs = promptlab::runs::store::run_log_paths(&runs).unwrap();
    assert_eq!(logs.len(), 1);
    let log = promptlab::runs::read_run_log(&logs[0]).unwrap();
    assert_eq!(
        log.footer.map(|f| f.status),
        Some(promptlab::runs::RunStatus::Cancelled),
        "the run log is complete and says cancelled"
    );
}

#[test]
fn help_documents_the_flags_scripts_rely_on() {
    let out = run_command(promptlab().args(["chat", "--help"]));
    for flag in [
        "--claim",
        "--claim-id",
        "--capability",
        "--overrides",
        "--brand",
        "--locale",
        "--screen-actions",
        "--voice",
        "--history",
        "--model",
        "--thinking-level",
        "--provider",
        "--script",
        "--today",
        "--format",
        "--no-record",
        "--interactive",
    ] {
        assert!(out.stdout.contains(flag), "{flag}");
    }
}

/// `chat -i` on a script whose first answer streams slowly ("one ", "two
/// ", … 300 ms apart, then `then`), recording into `runs` (none: not
/// recorded), asked its first question and read up to its first chunk: the
/// session, its stdin and the rest of its stdout.
fn session_mid_answer(
    dir: &std::path::Path,
    runs: Option<&std::path::Path>,
    then: &str,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let script = write(
        dir,
        "slow.yaml",
        &format!(
            "turns:\n  - chunks: [\"one \", \"two \", \"three \", \"four \", \"five\"]\n    delayMs: 300\n{then}"
        ),
    );
    let mut command = promptlab();
    command.args([
        "chat",
        "-i",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "script",
    ]);
    match runs {
        Some(runs) => command.env("PROMPTLAB_RUNS_DIR", runs),
        None => command.arg("--no-record"),
    };
    let mut child = command
        .arg("--script")
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"First question\n").unwrap();
    stdin.flush().unwrap();
    assert!(lines.next().unwrap().unwrap().contains("\"text\":\"one \""));
    (child, stdin, lines)
}

#[test]
fn ctrl_c_in_an_interactive_session_stops_the_answer_and_keeps_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut stdin, lines) =
        session_mid_answer(dir.path(), None, "  - text: Second answer.\n");
    interrupt(&child);
    stdin.write_all(b"Second question\n").unwrap();
    drop(stdin);
    let rest: Vec<ChatEvent> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let dones = rest
        .iter()
        .filter(|e| matches!(e, ChatEvent::Done(_)))
        .count();
    assert_eq!(
        dones, 1,
        "the first answer was stopped, the second ran: {rest:?}"
    );
    assert!(
        rest.iter()
            .any(|e| matches!(e, ChatEvent::TextDelta { text } if text.contains("Second")))
    );
    assert_eq!(
        child.wait().unwrap().code(),
        Some(0),
        "Ctrl-D (end of input) leaves normally"
    );
}

/// SIGTERM in a session is what it is to a one-shot chat: the answer in
/// hand is stopped, its log completed `cancelled` (not left `.partial`),
/// and the session exits 143.
#[test]
fn sigterm_in_an_interactive_session_records_the_turn_cancelled_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let (mut child, stdin, _lines) = session_mid_answer(dir.path(), Some(&runs), "");
    support::send_signal(&child, "TERM");
    let status = support::exit_within(&mut child, std::time::Duration::from_secs(20));
    assert_eq!(status.code(), Some(143));
    drop(stdin);
    let logs = support::run_logs_under(&runs);
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = promptlab::runs::read_run_log(&logs[0]).unwrap();
    let footer = log.footer.expect("a complete log");
    assert_eq!(footer.status, promptlab::runs::RunStatus::Cancelled);
}

/// SIGHUP (the terminal closed) stops a turn as SIGTERM does: a complete
/// `cancelled` log and 143, not a `.partial` one; where it is ignored (as
/// `nohup` starts a process), the turn goes on to its end. Each chat starts
/// with the disposition set, whatever this test inherited (a CI runner
/// under `nohup` ignores SIGHUP).
#[test]
fn sighup_stops_the_turn_as_sigterm_does_unless_it_is_ignored() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let script = slow_script(dir.path());
    for (name, disposition, code, status) in [
        (
            "hung-up",
            libc::SIG_DFL,
            143,
            promptlab::runs::RunStatus::Cancelled,
        ),
        ("nohup", libc::SIG_IGN, 0, promptlab::runs::RunStatus::Done),
    ] {
        let runs = dir.path().join(name);
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args([
                "chat",
                "--claim-id",
                "CLM-HH-0001",
                "--provider",
                "script",
                "--script",
            ])
            .arg(&script)
            .arg("Is it covered?")
            .stdout(std::process::Stdio::piped());
        // SAFETY: signal() is async-signal-safe, as pre_exec requires.
        unsafe {
            command.pre_exec(move || {
                libc::signal(libc::SIGHUP, disposition);
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next().unwrap().unwrap();
        support::send_signal(&child, "HUP");
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        let exit = support::exit_within(&mut child, std::time::Duration::from_secs(20));
        assert_eq!(exit.code(), Some(code), "{name}: {rest:?}");
        let logs = promptlab::runs::store::run_log_paths(&runs).unwrap();
        assert_eq!(logs.len(), 1, "{name}: {logs:?}");
        let log = promptlab::runs::read_run_log(&logs[0]).unwrap();
        assert_eq!(log.footer.expect("a complete log").status, status, "{name}");
    }
}

/// A folder of alternatives (what serve saves) passed as `--overrides DIR`
/// is layered in name order: a prompt a later file gives again replaces the
/// earlier one's, and chat says so; distinct prompts layer silently.
#[test]
fn a_later_override_file_replacing_an_earlier_ones_prompt_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("overrides");
    std::fs::create_dir_all(&folder).unwrap();
    write(
        &folder,
        "a-plain.yaml",
        "prompts:\n  system.base: Be plain.\n",
    );
    write(
        &folder,
        "b-terse.yaml",
        "prompts:\n  system.base: Be terse.\n  system.voice: Speak slowly.\n",
    );
    let path = folder.display().to_string();
    let out = scripted_chat(&["--overrides", &path, "What is the excess?"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("replaces"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].starts_with("warning: override `system.base` from `")
            && warnings[0].contains("b-terse.yaml` replaces the one from `")
            && warnings[0].contains("a-plain.yaml`"),
        "{}",
        warnings[0]
    );
}
