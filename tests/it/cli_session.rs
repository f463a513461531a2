//! `promptlab chat -i` sessions through the real binary: the session's
//! commands with piped stdin (`//text`, `/overrides FILE` and its errors),
//! and the line editor on a real terminal under tmux (history recalled with
//! ↑ and kept in a file, Ctrl-C at the prompt, Ctrl-D to leave).

use crate::support;
use support::tmux::{Tmux, exit_code, have_tmux};

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use support::{promptlab, write};

/// Three scripted answers, one per turn.
const THREE_ANSWERS: &str =
    "turns:\n  - text: First answer.\n  - text: Second answer.\n  - text: Third answer.\n";

struct Session {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `chat -i` on CLM-HH-0001 with `input` piped to it, recording into `runs`.
fn session(dir: &Path, runs: &Path, input: &str) -> Session {
    let script = write(dir, "three.yaml", THREE_ANSWERS);
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", runs)
        .args([
            "chat",
            "-i",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
        ])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    Session {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The recorded turns in `runs`, oldest first, as `runs list --json` rows.
fn recorded(runs: &Path) -> Vec<Value> {
    let out = support::run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .args(["runs", "list", "--json"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    rows.reverse();
    rows
}

fn answers(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.contains("\"type\":\"done\""))
        .count()
}

#[test]
fn a_double_slash_sends_a_message_that_starts_with_a_slash() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let out = session(
        dir.path(),
        &runs,
        "//etc/fstab: is that a document?\n/help\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(answers(&out.stdout), 1, "/help is not sent: {}", out.stdout);
    assert!(
        out.stderr.contains("//text"),
        "/help says how: {}",
        out.stderr
    );
    let rows = recorded(&runs);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["messagePreview"], "/etc/fstab: is that a document?");
}

#[test]
fn overrides_reload_from_the_next_turn_and_none_goes_back_to_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let input =
        "First?\n/overrides overrides/plain-spoken.yaml\nSecond?\n/overrides none\nThird?\n";
    let out = session(dir.path(), &runs, input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("(fingerprint 6ebc72c8dd76 · overridden: capability.summarise, system.base)"),
        "{}",
        out.stderr
    );
    let fingerprints: Vec<Value> = recorded(&runs)
        .iter()
        .map(|row| row["fingerprint"].clone())
        .collect();
    assert_eq!(fingerprints, ["default", "6ebc72c8dd76", "default"]);
}

/// Bad input to `/overrides` and unknown commands are reported; the
/// session, its history and its overrides go on unchanged.
#[test]
fn a_bad_overrides_file_or_command_is_reported_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let broken = write(
        dir.path(),
        "broken.yaml",
        "prompts:\n  system.base: [not, text]\n",
    );
    let input = format!(
        "/overrides overrides/plain-spoken.yaml\n/overrides {}\n/overrides no-such-file.yaml\n/frobnicate now\nStill there?\n",
        broken.display()
    );
    let out = session(dir.path(), &runs, &input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("broken.yaml")
            && out.stderr.contains("the overrides in use are unchanged"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("no-such-file.yaml"), "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown command /frobnicate:"),
        "{}",
        out.stderr
    );
    let rows = recorded(&runs);
    assert_eq!(rows.len(), 1, "one message was sent");
    assert_eq!(
        rows[0]["fingerprint"], "6ebc72c8dd76",
        "the last good overrides stay"
    );
    assert_eq!(rows[0]["messagePreview"], "Still there?");
}

/// `chat -i` in a tmux terminal with `history` as its history file; the
/// exit code is written to `done` when it ends.
fn terminal_session(dir: &Path, history: &Path, done: &Path) -> Tmux {
    let script = write(dir, "three.yaml", THREE_ANSWERS);
    let command = format!(
        "cd {root} && NO_COLOR=1 PROMPTLAB_HISTORY_FILE={history} {bin} chat -i --no-record --claim-id CLM-HH-0001 --provider script --script {script}; echo $? > {done}",
        root = support::repo_root().display(),
        history = history.display(),
        bin = env!("CARGO_BIN_EXE_promptlab"),
        script = script.display(),
        done = done.display(),
    );
    let tmux = Tmux {
        socket: format!(
            "promptlab-test-{}-{}",
            std::process::id(),
            done.file_name().unwrap().to_string_lossy()
        ),
        session: "chat".into(),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "chat",
        "-x",
        "200",
        "-y",
        "30",
        &command,
    ]);
    tmux.wait_for("/help for commands");
    tmux.wait_for_prompt();
    tmux
}

/// On a terminal the line editor reads the lines: ↑ recalls the last one,
/// Ctrl-C at the prompt only says how to leave, Ctrl-D leaves, and the
/// typed lines are kept in the history file for the next session.
/// Needs tmux (`.ci/run` installs it).
#[test]
fn on_a_terminal_lines_are_edited_and_kept_in_the_history_file() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("state/chat-history");
    let done = dir.path().join("edited");
    let tmux = terminal_session(dir.path(), &history, &done);
    tmux.keys(&["What is the excess?", "Enter"]);
    tmux.wait_for("First answer.");
    tmux.wait_for_prompt();
    // ↑ recalls the line: the editor shows it after the new prompt, unsent.
    tmux.keys(&["Up"]);
    let screen = tmux.wait_until("the line recalled", |screen| {
        screen.matches("› What is the excess?").count() == 2
    });
    assert!(!screen.contains("Second answer."), "{screen}");
    tmux.keys(&["C-u", "C-c"]);
    tmux.wait_for("(Ctrl-D to leave)");
    tmux.wait_for_prompt();
    tmux.keys(&["//etc", "Enter"]);
    tmux.wait_for("Second answer.");
    tmux.wait_for_prompt();
    tmux.keys(&["C-d"]);
    assert_eq!(exit_code(&tmux, &done), "0");
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(
        kept.contains("What is the excess?") && kept.contains("//etc"),
        "{kept}"
    );
}

/// A history file that is not a regular file (a folder; `/dev/zero`, which
/// the editor would read without end) is warned about once and not used;
/// the session goes on and exits 0.
#[test]
fn an_unusable_history_file_is_warned_about_and_the_session_goes_on() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, history) in [("folder", dir.path()), ("zero", Path::new("/dev/zero"))] {
        let done = dir.path().join(name);
        let tmux = terminal_session(dir.path(), history, &done);
        tmux.keys(&["What is the excess?", "Enter"]);
        tmux.wait_for("First answer.");
        tmux.keys(&["And then?", "Enter"]);
        let screen = tmux.wait_for("Second answer.");
        assert_eq!(screen.matches("history file").count(), 1, "{screen}");
        assert!(
            screen.contains("is not used: it is not a regular file"),
            "{screen}"
        );
        tmux.keys(&["C-d"]);
        assert_eq!(exit_code(&tmux, &done), "0");
    }
}

/// `/capability`, `/claim` and `/save`, piped: the turns after each command
/// run with it (as their run logs record), a bad id changes nothing, and
/// the transcript goes to a new file only — never over a file or a link.
#[test]
fn claim_capability_and_save_commands_apply_from_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let saved = dir.path().join("session.md");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "untouched\n").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let input = format!(
        "First <b>question</b>?\n/capability summarise\nSecond?\n/capability nosuch\n/claim CLM-NOPE-1\n/claim CLM-MTR-0002\n/capability none\nThird?\n/save {saved}\n/save {saved}\n/save {link}\n",
        saved = saved.display(),
        link = link.display()
    );
    let out = session(dir.path(), &runs, &input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for said in [
        "(capability summarise)",
        "error: unknown capability `nosuch`",
        "error: no claim `CLM-NOPE-1` in the store",
        "(claim CLM-MTR-0002; history cleared: a new claim starts a new conversation)",
        "(capability none: free chat)",
        "(saved 3 turns to ",
        "already exists (a file or a link): /save writes a new file only",
    ] {
        assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
    }
    let rows = recorded(&runs);
    let seen: Vec<(String, String)> = rows
        .iter()
        .map(|row| {
            (
                row["claim"].as_str().unwrap_or_default().to_string(),
                row["capability"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("CLM-HH-0001".to_string(), "-".to_string()),
            ("CLM-HH-0001".to_string(), "summarise".to_string()),
            ("CLM-MTR-0002".to_string(), "-".to_string()),
        ],
        "{rows:?}"
    );
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.starts_with("# promptlab chat session\n"), "{text}");
    assert!(text.contains("## Turn 3 · CLM-MTR-0002"), "{text}");
    assert!(text.contains("Third answer."), "{text}");
    assert!(
        text.contains("&lt;b&gt;question&lt;/b&gt;"),
        "HTML escaped: {text}"
    );
    assert!(text.contains("fingerprint default · turn "), "{text}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
}

/// On a terminal, /help lists the session's commands and /capability
/// answers at the prompt. Needs tmux (`.ci/run` installs it).
#[test]
fn on_a_terminal_help_lists_the_session_commands() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("commands");
    let tmux = terminal_session(dir.path(), &dir.path().join("history"), &done);
    tmux.keys(&["/help", "Enter"]);
    for command in ["/claim ID", "/capability ID", "/save FILE"] {
        tmux.wait_for(command);
    }
    tmux.wait_for_prompt();
    tmux.keys(&["/capability summarise", "Enter"]);
    tmux.wait_for("(capability summarise)");
    tmux.wait_for_prompt();
    tmux.keys(&["C-d"]);
    assert_eq!(exit_code(&tmux, &done), "0");
}

/// A session's history holds at most 60 messages: the 31st question is
/// refused with what to do (`/reset`), and a session that left a line
/// unanswered ends with exit 1, since piped nobody sees it go by; after
/// `/reset` the conversation goes on and the session exits 0.
#[test]
fn a_full_history_says_reset_and_an_unanswered_line_fails_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let answers: String = (0..40)
        .map(|i| format!("  - text: Answer {i}.\n"))
        .collect();
    let script = write(dir.path(), "many.yaml", &format!("turns:\n{answers}"));
    let run = |input: String| {
        let mut child = promptlab()
            .args(["chat", "-i", "--no-record", "--claim-id", "CLM-HH-0001"])
            .args(["--provider", "script", "--script"])
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let questions = |n: usize| -> String { (1..=n).map(|i| format!("Question {i}?\n")).collect() };
    let (code, stderr) = run(questions(31));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: messages: at most 60 messages are allowed, got 61; the history is full: \
             /reset starts a new conversation"
        ),
        "{stderr}"
    );
    let (code, stderr) = run(format!("{}/reset\n{}", questions(30), questions(5)));
    assert_eq!(code, Some(0), "{stderr}");
}
