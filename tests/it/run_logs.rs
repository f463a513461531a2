//! Run logs through the real binary: recording, `runs list|show`, replay and
//! divergence, cancelled / errored / killed turns, concurrency, and the key.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use promptlab::chat::ChatEvent;
use promptlab::runs::{RunStatus, read_run_log};
use serde_json::Value;
use support::http_server::{Reply, TestServer, fixture};
use support::{
    interrupt, minimal_claim_json, promptlab, run_command, slow_script, spawn_chat, write,
};

const SCRIPT: &str = "tests/data/scripts/excess.yaml";

/// `promptlab` recording into `runs`.
fn promptlab_in(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs);
    command
}

fn logs_in(runs: &Path) -> Vec<PathBuf> {
    let mut logs = Vec::new();
    // Fingerprint folders only: `prompts/` holds the stored prompts.
    for folder in std::fs::read_dir(runs).into_iter().flatten().flatten() {
        if folder.file_name() == "prompts" {
            continue;
        }
        for file in std::fs::read_dir(folder.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            logs.push(file.path());
        }
    }
    logs.sort();
    logs
}

fn only_log(runs: &Path) -> PathBuf {
    let logs = logs_in(runs);
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.into_iter().next().unwrap()
}

fn list_json(runs: &Path, extra: &[&str]) -> Vec<Value> {
    let out = run_command(
        promptlab_in(runs)
            .args(["runs", "list", "--json"])
            .args(extra),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// `events` with consecutive text deltas joined: what a run log keeps of
/// what the user saw (it holds deltas within 50 ms as one record).
fn joined(events: impl IntoIterator<Item = ChatEvent>) -> Vec<ChatEvent> {
    let mut out: Vec<ChatEvent> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (Some(ChatEvent::TextDelta { text }), ChatEvent::TextDelta { text: more }) => {
                text.push_str(&more);
            }
            (_, event) => out.push(event),
        }
    }
    out
}

fn chat(runs: &Path, args: &[&str]) -> support::Run {
    run_command(
        promptlab_in(runs)
            .args(["chat", "--provider", "script"])
            .args(args),
    )
}

#[test]
fn a_turn_is_recorded_with_header_prompt_events_calls_and_footer() {
    let runs = tempfile::tempdir().unwrap();
    let out = chat(
        runs.path(),
        &[
            "--claim-id",
            "CLM-HH-0001",
            "--script",
            SCRIPT,
            "--overrides",
            "overrides/plain-spoken.yaml",
            "--today",
            "2026-11-30",
            "What is the excess?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = only_log(runs.path());
    let fingerprint = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let printed =
        run_command(promptlab().args(["prompts", "fingerprint", "overrides/plain-spoken.yaml"]));
    assert_eq!(
        printed.stdout.lines().next().unwrap(),
        fingerprint,
        "logs are grouped by prompt fingerprint"
    );
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.header.request.claim_id.as_deref(), Some("CLM-HH-0001"));
    assert_eq!(log.header.claim.as_ref().unwrap().sha256.len(), 64);
    assert_eq!(log.header.request.today.to_string(), "2026-11-30");
    assert_eq!(log.header.system_sha256.as_ref().unwrap().len(), 64);
    assert_eq!(log.prompt.as_ref().unwrap().applied_overrides.len(), 2);
    assert_eq!(log.model_calls().count(), 2);
    let stdout_events: Vec<ChatEvent> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(joined(log.events().cloned()), joined(stdout_events));
    let footer = log.footer.unwrap();
    assert_eq!(footer.status, RunStatus::Done);
    assert_eq!(footer.usage.input_tokens, Some(2700));
    assert!(footer.time_to_first_token_ms.is_some());
    // `runs show` by turn-id prefix gives back the same events.
    let prefix = &log.header.turn_id[..8];
    let shown =
        run_command(promptlab_in(runs.path()).args(["runs", "show", prefix, "--format", "ndjson"]));
    let events = |text: &str| -> Vec<ChatEvent> {
        joined(text.lines().map(|l| serde_json::from_str(l).unwrap()))
    };
    assert_eq!(events(&shown.stdout), events(&out.stdout));
    let pretty = run_command(promptlab_in(runs.path()).args(["runs", "show", prefix]));
    assert!(
        pretty.stdout.contains("prompts ")
            && pretty
                .stdout
                .contains("overridden: capability.summarise, system.base"),
        "{}",
        pretty.stdout
    );
    assert!(
        pretty
            .stdout
            .contains("  ⟳ Reading the policy section\nThe excess is £350"),
        "{}",
        pretty.stdout
    );
}

#[test]
fn a_recorded_turn_replays_to_the_same_events() {
    let runs = tempfile::tempdir().unwrap();
    let out = chat(
        runs.path(),
        &[
            "--claim-id",
            "CLM-HH-0001",
            "--script",
            SCRIPT,
            "--screen-actions",
            "q",
        ],
    );
    assert_eq!(out.code, 0);
    let path = only_log(runs.path());
    let replayed = run_command(promptlab_in(runs.path()).args([
        "replay",
        path.to_str().unwrap(),
        "--no-record",
    ]));
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    // The recording's events: its 8, with text deltas held as the log holds them.
    let events = read_run_log(&path).unwrap().events().count();
    assert!(
        replayed.stderr.starts_with(&format!(
            "replay matches the recording: {events} events, 2 model calls"
        )),
        "{}",
        replayed.stderr
    );
    let strip_turn_id = |text: &str| {
        let events = text
            .lines()
            .filter(|l| !l.contains("\"type\":\"done\""))
            .map(|l| serde_json::from_str(l).unwrap());
        joined(events)
    };
    assert_eq!(strip_turn_id(&replayed.stdout), strip_turn_id(&out.stdout));
    // The same through chat's replay provider.
    let via_chat = run_command(promptlab_in(runs.path()).args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "replay",
        "--replay",
        path.to_str().unwrap(),
        "--no-record",
        "q",
    ]));
    assert_eq!(strip_turn_id(&via_chat.stdout), strip_turn_id(&out.stdout));
    assert!(via_chat.stderr.is_empty(), "{}", via_chat.stderr);
}

/// #62: a turn that plays back a recording (`chat --provider replay`)
/// names it (`replayOf`), and `report` leaves it out, counted, instead of
/// taking it for another run of the recorded turn.
#[test]
fn a_replay_through_chat_names_the_turn_it_replays_and_no_report_counts_it() {
    let runs = tempfile::tempdir().unwrap();
    let args = ["--claim-id", "CLM-HH-0001", "--script", SCRIPT, "q"];
    assert_eq!(chat(runs.path(), &args).code, 0);
    let recorded = only_log(runs.path());
    let original = read_run_log(&recorded).unwrap();
    let via_chat = run_command(promptlab_in(runs.path()).args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "replay",
        "--replay",
        recorded.to_str().unwrap(),
        "q",
    ]));
    assert_eq!(via_chat.code, 0, "{}", via_chat.stderr);
    let logs = logs_in(runs.path());
    let replay = logs
        .iter()
        .map(|path| read_run_log(path).unwrap())
        .find(|log| log.path != recorded)
        .expect("the replay is recorded");
    assert_eq!(
        replay.header.replay_of.as_deref(),
        Some(original.header.turn_id.as_str())
    );
    assert_eq!(original.header.replay_of, None);
    let page = runs.path().join("report.html");
    let out = run_command(
        promptlab_in(runs.path())
            .arg("report")
            .arg(runs.path())
            .arg("-o")
            .arg(&page),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let data = support::reports::embedded(&std::fs::read_to_string(&page).unwrap());
    assert_eq!(data["replays"], 1);
    let ids: Vec<&str> = data["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [original.header.turn_id.as_str()]);
}

#[test]
fn a_changed_tool_result_is_reported_as_a_divergence() {
    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let claim_json = minimal_claim_json("D-1", "Leak").replace(
        "\"status\":\"open\"",
        "\"status\":\"open\",\"coverage\":{\"position\":\"Confirmed\"}",
    );
    let claim = write(dir.path(), "claim.json", &claim_json);
    let script = write(
        dir.path(),
        "s.yaml",
        "turns:\n  - calls: [{name: get_claim_section, args: {section: coverage}}]\n  - text: Covered.\n",
    );
    assert_eq!(
        chat(
            runs.path(),
            &[
                "--claim",
                claim.to_str().unwrap(),
                "--script",
                script.to_str().unwrap(),
                "q"
            ]
        )
        .code,
        0
    );
    std::fs::write(&claim, claim_json.replace("Confirmed", "Declined")).unwrap();
    let path = only_log(runs.path());
    let replayed = run_command(promptlab_in(runs.path()).args([
        "replay",
        path.to_str().unwrap(),
        "--no-record",
    ]));
    assert_eq!(replayed.code, 1, "{}", replayed.stderr);
    let report = replayed.stderr;
    assert!(
        report.contains("warning: claim D-1 has changed since the recording"),
        "{report}"
    );
    assert!(
        report.contains("replay diverges from the recording"),
        "{report}"
    );
    assert!(
        report.contains("model call 2: the result of get_claim_section changed"),
        "{report}"
    );
    assert!(
        report.contains("event 2: tool_result of get_claim_section differs"),
        "{report}"
    );
    assert!(
        report.contains("Confirmed") && report.contains("Declined"),
        "{report}"
    );
}

#[test]
fn a_call_the_recording_does_not_have_is_a_divergence() {
    let runs = tempfile::tempdir().unwrap();
    assert_eq!(
        chat(
            runs.path(),
            &["--claim-id", "CLM-HH-0001", "--script", SCRIPT, "q"]
        )
        .code,
        0
    );
    let path = only_log(runs.path());
    // Drop the recording's second model call, as if an older loop had stopped sooner.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut seen = 0;
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            !(line.starts_with("{\"record\":\"model_call\"") && {
                seen += 1;
                seen == 2
            })
        })
        .collect();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let replayed = run_command(promptlab_in(runs.path()).args([
        "replay",
        path.to_str().unwrap(),
        "--no-record",
    ]));
    assert_eq!(replayed.code, 1);
    assert!(
        replayed
            .stderr
            .contains("model call 2: the new run made model call 2, but the recording"),
        "{}",
        replayed.stderr
    );
}

#[test]
fn errored_and_cancelled_turns_are_recorded_as_such() {
    let runs = tempfile::tempdir().unwrap();
    let out = chat(
        runs.path(),
        &["--claim-id", "NOPE-404", "--script", SCRIPT, "q"],
    );
    assert_eq!(out.code, 1);
    let errored = read_run_log(&only_log(runs.path())).unwrap();
    let footer = errored.footer.unwrap();
    assert_eq!(footer.status, RunStatus::Error);
    assert_eq!(footer.error.as_deref(), Some("Claim NOPE-404 not found."));
    assert!(errored.header.claim.is_none());

    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut lines) = spawn_chat(&slow_script(dir.path()), Some(runs.path()));
    lines.next().unwrap().unwrap();
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let cancelled = list_json(runs.path(), &["--status", "cancelled"]);
    assert_eq!(cancelled.len(), 1);
    assert_eq!(list_json(runs.path(), &["--status", "error"]).len(), 1);
    assert_eq!(list_json(runs.path(), &[]).len(), 2);
}

#[test]
fn a_killed_writer_leaves_only_a_partial_file() {
    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut lines) = spawn_chat(&slow_script(dir.path()), Some(runs.path()));
    // The first delta is held until the second comes 250 ms later (a log
    // may lack the last 50 ms of an answer), and written before it is shown.
    lines.next().unwrap().unwrap();
    lines.next().unwrap().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let path = only_log(runs.path());
    assert!(
        path.to_str().unwrap().ends_with(".ndjson.partial"),
        "{path:?}"
    );
    let listed = list_json(runs.path(), &[]);
    assert_eq!(listed[0]["status"], "partial");
    let log = read_run_log(&path).unwrap();
    assert!(log.footer.is_none());
    assert!(
        matches!(log.events().next(), Some(ChatEvent::TextDelta { text }) if text == "one "),
        "what happened before the kill is kept"
    );
}

#[test]
fn turns_at_once_never_write_the_same_file() {
    let runs = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..8)
        .map(|_| {
            promptlab_in(runs.path())
                .args([
                    "chat",
                    "--provider",
                    "script",
                    "--claim-id",
                    "CLM-HH-0001",
                    "--script",
                    SCRIPT,
                    "q",
                ])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let logs = logs_in(runs.path());
    assert_eq!(logs.len(), 8);
    for log in logs {
        let log = read_run_log(&log).unwrap();
        assert_eq!(joined(log.events().cloned()).len(), 5);
        assert_eq!(log.footer.unwrap().status, RunStatus::Done);
    }
}

#[test]
fn list_filters_by_claim_fingerprint_and_time() {
    let runs = tempfile::tempdir().unwrap();
    assert_eq!(
        chat(
            runs.path(),
            &["--claim-id", "CLM-HH-0001", "--script", SCRIPT, "q"]
        )
        .code,
        0
    );
    assert_eq!(
        chat(
            runs.path(),
            &[
                "--claim-id",
                "CLM-MTR-0002",
                "--script",
                SCRIPT,
                "--overrides",
                "overrides/strict-sources.json",
                "q"
            ]
        )
        .code,
        0
    );
    assert_eq!(
        list_json(runs.path(), &["--claim", "CLM-MTR-0002"]).len(),
        1
    );
    assert_eq!(
        list_json(runs.path(), &["--fingerprint", "default"]).len(),
        1
    );
    assert_eq!(list_json(runs.path(), &["--since", "1h"]).len(), 2);
    assert_eq!(list_json(runs.path(), &["--since", "2999-01-01"]).len(), 0);
    let table = run_command(promptlab_in(runs.path()).args(["runs", "list"]));
    assert!(
        table.stdout.contains("CLM-MTR-0002") && table.stdout.contains("2 runs in"),
        "{}",
        table.stdout
    );
}

#[test]
fn an_interactive_session_sends_the_text_history() {
    let runs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "two.yaml",
        "turns:\n  - text: First answer.\n  - text: Second answer.\n",
    );
    let mut child = promptlab_in(runs.path())
        .args([
            "chat",
            "-i",
            "--provider",
            "script",
            "--claim-id",
            "CLM-HH-0001",
            "--script",
            script.to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // A blank line in between is skipped, not sent as an empty message.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"First question\n\nSecond question\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout.matches("\"type\":\"done\"").count(),
        2,
        "two turns, one done each"
    );
    let logs: Vec<_> = logs_in(runs.path())
        .iter()
        .map(|p| read_run_log(p).unwrap())
        .collect();
    let second = logs
        .iter()
        .find(|log| log.header.request.messages.len() == 3)
        .expect("the second turn carries the history");
    let texts: Vec<&str> = second
        .header
        .request
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(
        texts,
        ["First question", "First answer.", "Second question"]
    );
}

#[test]
fn the_key_appears_nowhere_under_the_runs_folder() {
    const SENTINEL: &str = "sk-SENTINEL-7e57-runlogs";
    let runs = tempfile::tempdir().unwrap();
    let bad_key = String::from_utf8(fixture("unary-failure-api-key.json")).unwrap();
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(fixture("streaming-success-basic-reply-short.txt"))),
        Box::new(move |_| Reply::status(400, bad_key.clone())),
    ]);
    for _ in 0..2 {
        run_command(
            promptlab_in(runs.path())
                .env("GEMINI_API_KEY", SENTINEL)
                .env("GEMINI_BASE_URL", &server.base_url)
                .args(["chat", "--claim-id", "CLM-HH-0001", "q"]),
        );
    }
    let logs = logs_in(runs.path());
    assert_eq!(logs.len(), 2);
    for log in logs {
        let bytes = std::fs::read(&log).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SENTINEL) && !text.contains("7e57-runlogs"),
            "{log:?}"
        );
    }
}
