//! `eval --format ndjson` whose reader stops reading for longer than
//! `--max-call-time` (a pager, a stuck pipe), through the real binary and a
//! real local stand-in for Gemini. The reader holds the run back, and no
//! verdict or recorded time may change for it: a model call parked on the
//! full feed would run out its time and be failed. And progress that cannot be written
//! (stderr full) neither stops the run nor hangs it.

use crate::support;

use std::io::Read;
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::http_server::{Reply, Responder, TestServer};
use support::promptlab;

/// Turns in the suite, and the text pieces each one's answer streams in:
/// enough events to fill the pipe and the feed many times over while the
/// reader is away.
const TURNS: usize = 240;
const PIECES: usize = 30;

/// One answer: `PIECES` pieces of text, then the end with its usage.
fn answer() -> Vec<u8> {
    let mut body = String::new();
    for piece in 0..PIECES {
        let chunk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": format!("excess {piece} ")}]}}]});
        body.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    let end = serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 31, "totalTokenCount": 40}
    });
    body.push_str(&format!("data: {end}\r\n\r\n"));
    body.into_bytes()
}

fn gemini() -> TestServer {
    let responders: Vec<Responder> = (0..TURNS)
        .map(|_| {
            let body = answer();
            Box::new(move |_: &_| Reply::Stream {
                body: body.clone(),
                piece: 4096,
                pause: Duration::ZERO,
            }) as Responder
        })
        .collect();
    TestServer::start(responders)
}

/// A suite of `TURNS` one-call turns against the stand-in.
fn suite(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("suite.yaml");
    std::fs::write(
        &path,
        format!(
            "name: stalled\nclaims: {{ids: [CLM-HH-0001]}}\nrepeats: {TURNS}\ndefaults: {{expect: {{noError: true}}}}\ncases:\n  - name: excess\n    message: What is the excess?\n"
        ),
    )
    .unwrap();
    path
}

fn eval(
    server: &TestServer,
    dir: &std::path::Path,
    suite: &std::path::Path,
) -> std::process::Command {
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "stalled-test-key-0123")
        .env("GEMINI_BASE_URL", &server.base_url)
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .arg("eval")
        .arg(suite)
        .args(["-j", "8", "--max-call-time", "1s"]);
    command
}

/// The child's stdout to its end and its exit; a run that has not ended
/// within a bound no working run comes near is killed and fails the test.
fn output_within_two_minutes(mut child: Child) -> (String, ExitStatus) {
    let (done, ended) = std::sync::mpsc::channel();
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = done.send(out);
    });
    match ended.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => (out, child.wait().unwrap()),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not end within two minutes");
        }
    }
}

#[test]
fn a_reader_away_longer_than_the_call_time_changes_no_verdict() {
    let server = gemini();
    let dir = tempfile::tempdir().unwrap();
    let child = eval(&server, dir.path(), &suite(dir.path()))
        .args(["--format", "ndjson"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The reader is away: three times `--max-call-time`, long enough for
    // the turns to fill the pipe and the feed (7,440 events) many times.
    std::thread::sleep(Duration::from_secs(3));
    let (out, status) = output_within_two_minutes(child);
    let turns: Vec<Value> = out
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == "turn")
        .collect();
    let failed: Vec<&Value> = turns
        .iter()
        .filter(|turn| turn["verdict"] != "pass")
        .collect();
    assert!(
        failed.is_empty(),
        "verdicts changed by the stall: {failed:?}"
    );
    // Nor their times: waiting for the reader is not the turn's.
    let slow: Vec<&Value> = turns
        .iter()
        .filter(|turn| turn["latencyMs"].as_u64().is_none_or(|ms| ms >= 1_000))
        .collect();
    assert!(slow.is_empty(), "times that count the stall: {slow:?}");
    assert_eq!(turns.len(), TURNS, "every turn reported");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn progress_that_cannot_be_written_does_not_stop_or_hang_the_run() {
    let server = gemini();
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let child = eval(&server, dir.path(), &suite(dir.path()))
        .stdout(Stdio::piped())
        .stderr(full)
        .spawn()
        .unwrap();
    let (out, status) = output_within_two_minutes(child);
    assert!(
        out.contains(&format!("{TURNS} turns: {TURNS} passed")),
        "the summary on stdout: {out}"
    );
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_second_ctrl_c_ends_a_run_whose_reader_never_comes_back() {
    // Thirty turns: their 990 records fill the pipe and wait in the feed, so
    // the turns all end and the process is left writing to the pipe.
    let server = gemini();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("ten.yaml");
    std::fs::write(
        &suite,
        "name: thirty\nclaims: {ids: [CLM-HH-0001]}\nrepeats: 30\ncases:\n  - {name: excess, message: What is the excess?}\n",
    )
    .unwrap();
    let mut child = eval(&server, dir.path(), &suite)
        .args(["--format", "ndjson"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let logs = dir.path().join("runs").join("default");
    let complete = || {
        std::fs::read_dir(&logs).map_or(0, |entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().extension().is_some_and(|e| e == "ndjson"))
                .count()
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while complete() < 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "the thirty turns never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let interrupt = || {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    interrupt();
    // Past the grace in which a repeat counts as the same Ctrl-C.
    std::thread::sleep(Duration::from_millis(1_500));
    interrupt();
    let status = support::exit_within(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
}
