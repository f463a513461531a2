//! `--provider worker` through the real binary: against `promptlab serve`
//! itself (a deployed turn must look exactly like the local one, and an
//! eval through the deployment must reach the same verdicts), against a
//! local test server for what only a deployment can do (another
//! fingerprint, an error status), and the usage errors before any request.

use crate::support;

use std::path::Path;
use std::process::Command;

use promptlab::runs::read_run_log;
use serde_json::Value;
use support::http_server::{Reply, TestServer};
use support::serve::Server;
use support::{promptlab, run_command, write};

const TOKEN: &str = "tok-never-shown-4e1f";
const SCRIPT: &str = "tests/data/scripts/excess.yaml";

fn chat(runs: &Path, endpoint: &str) -> Command {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", runs)
        .env("PROMPTLAB_ENDPOINT_TOKEN", TOKEN)
        .args(["chat", "--provider", "worker", "--endpoint", endpoint])
        .args(["--claim-id", "CLM-HH-0001", "--format", "ndjson"]);
    command
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// Events without what differs between any two turns (ids).
fn comparable(mut events: Vec<Value>) -> Vec<Value> {
    for event in &mut events {
        if let Some(done) = event.as_object_mut().filter(|e| e["type"] == "done") {
            done.remove("turnId");
        }
    }
    events
}

/// Every file under `dir`, read as text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&all_text(&path));
        } else {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

fn only_log(dir: &Path) -> promptlab::runs::RunLog {
    let (summaries, _) = promptlab::runs::scan_runs(&[dir.to_path_buf()]).unwrap();
    assert_eq!(summaries.len(), 1, "one run log in {}", dir.display());
    read_run_log(&summaries[0].path).unwrap()
}

#[test]
fn a_deployed_turn_streams_and_records_like_a_local_one() {
    let server = Server::start(Path::new(SCRIPT), &["--no-record"]);
    let runs = tempfile::tempdir().unwrap();
    // Credentials in the URL are used, never shown or recorded.
    let endpoint = server.url.replace("http://", "http://ops:pw-sentinel@") + "?key=q-sentinel";
    let deployed = run_command(chat(runs.path(), &endpoint).arg("What is the excess?"));
    assert_eq!(deployed.code, 0, "{}", deployed.stderr);

    let local = run_command(
        promptlab()
            .args([
                "chat",
                "--provider",
                "script",
                "--script",
                SCRIPT,
                "--no-record",
            ])
            .args([
                "--claim-id",
                "CLM-HH-0001",
                "--format",
                "ndjson",
                "--today",
                "2025-01-01",
            ])
            .arg("What is the excess?"),
    );
    assert_eq!(
        comparable(lines(&deployed.stdout)),
        comparable(lines(&local.stdout))
    );

    let log = only_log(runs.path());
    assert_eq!(log.header.provider, "worker");
    let remote = log.header.remote.as_ref().expect("a remote record");
    assert_eq!(remote.endpoint, format!("{}/api/chat", server.url));
    assert!(!remote.claim_sent);
    let footer = log.footer.as_ref().unwrap();
    assert_eq!(footer.server_fingerprint.as_deref(), Some("default"));
    let done = lines(&deployed.stdout).pop().unwrap();
    assert_eq!(footer.server_turn_id.as_deref(), done["turnId"].as_str());
    assert_eq!(log.header.fingerprint, "default");
    // Every event, its text deltas held as the log holds them (issue #66).
    let shown = lines(&deployed.stdout);
    let kept: Vec<Value> = log
        .events()
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    let text = |events: &[Value]| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "text_delta")
            .filter_map(|e| e["text"].as_str())
            .collect()
    };
    let others = |events: &[Value]| events.iter().filter(|e| e["type"] != "text_delta").count();
    assert_eq!((text(&kept), others(&kept)), (text(&shown), others(&shown)));

    let everything = format!(
        "{}{}{}",
        deployed.stdout,
        deployed.stderr,
        all_text(runs.path())
    );
    for secret in [TOKEN, "pw-sentinel", "q-sentinel"] {
        assert!(!everything.contains(secret), "{secret} leaked");
    }
}

#[test]
fn another_fingerprint_on_the_deployment_is_a_warning_and_recorded() {
    let done = r#"data: {"type":"done","model":"m","usage":{"inputTokens":1,"outputTokens":1,"cacheReadTokens":0},"turnId":"t","prompts":{"fingerprint":"abcdefabcdef","overridden":["system.base"]}}"#;
    let body = format!("data: {{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n{done}\n\n");
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let runs = tempfile::tempdir().unwrap();
    let out = run_command(chat(runs.path(), &server.base_url).args(["--send-claim", "q"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "reported prompt fingerprint `abcdefabcdef` where this checkout computes `default`"
        ),
        "{}",
        out.stderr
    );
    let log = only_log(runs.path());
    assert_eq!(
        log.footer.unwrap().server_fingerprint.as_deref(),
        Some("abcdefabcdef")
    );
    assert!(log.header.remote.unwrap().claim_sent);
    // --send-claim: the document travels, not the id.
    let sent = server.requests()[0].json();
    assert_eq!(sent["claim"]["id"], "CLM-HH-0001");
    assert!(sent.get("claimId").is_none());
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert!(!out.stderr.contains(TOKEN) && !out.stdout.contains(TOKEN));
}

#[test]
fn a_deployment_that_fails_ends_the_turn_in_an_error_with_exit_1() {
    let server = TestServer::start(vec![Box::new(|_| {
        Reply::status(400, r#"{"error":"brand: unknown brand `x`"}"#)
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = run_command(chat(runs.path(), &server.base_url).arg("q"));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let events = lines(&out.stdout);
    let message = events.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("HTTP 400") && message.contains("unknown brand"),
        "{message}"
    );
    let log = only_log(runs.path());
    assert_eq!(
        log.footer.unwrap().status,
        promptlab::runs::RunStatus::Error
    );
}

#[test]
fn usage_errors_come_before_any_request() {
    let runs = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "chat",
                "--provider",
                "worker",
                "--claim-id",
                "CLM-HH-0001",
                "q",
            ],
            "--endpoint URL (or PROMPTLAB_ENDPOINT)",
        ),
        (
            &["eval", "suites/smoke.yaml", "--provider", "worker"],
            "--endpoint URL (or PROMPTLAB_ENDPOINT)",
        ),
        (
            &[
                "chat",
                "--provider",
                "worker",
                "--endpoint",
                "ftp://host/x",
                "--claim-id",
                "CLM-HH-0001",
                "q",
            ],
            "scheme must be http or https",
        ),
        (
            &[
                "chat",
                "--provider",
                "worker",
                "--endpoint",
                "not a url pw-sentinel",
                "--claim-id",
                "CLM-HH-0001",
                "q",
            ],
            "--endpoint: not a URL",
        ),
        (
            &[
                "chat",
                "--provider",
                "script",
                "--script",
                SCRIPT,
                "--send-claim",
                "--claim-id",
                "CLM-HH-0001",
                "q",
            ],
            "--send-claim is for --provider worker",
        ),
        (
            &["serve", "--provider", "worker", "--port", "0"],
            "--provider worker",
        ),
    ];
    for (args, expected) in cases {
        let out = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", runs.path())
                .args(*args),
        );
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("pw-sentinel"), "{}", out.stderr);
    }
    assert!(all_text(runs.path()).is_empty(), "nothing recorded");
}

#[test]
fn a_token_that_cannot_be_a_header_is_a_usage_error_that_does_not_echo_it() {
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_ENDPOINT_TOKEN", "bad\ntoken-sentinel")
            .args([
                "chat",
                "--provider",
                "worker",
                "--endpoint",
                "http://127.0.0.1:9",
            ])
            .args(["--claim-id", "CLM-HH-0001", "q"]),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("PROMPTLAB_ENDPOINT_TOKEN"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("token-sentinel"));
}

/// A suite whose verdicts are passes and failures, over two claims and two
/// variants, all answered by one script (as `serve` answers every turn with
/// one). Turns that end in errors are covered by the tests above.
fn parity_suite(dir: &Path) -> std::path::PathBuf {
    let script = support::repo_root().join(SCRIPT);
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: parity\nclaims:\n  ids: [CLM-HH-0001, CLM-MTR-0002]\ndefaults:\n  today: 2025-01-01\n\
             variants:\n  - name: default\n  - name: terse\n    prompts: {{system.base: 'Be terse, {{{{assistant}}}}.'}}\n\
             cases:\n\
             \x20 - name: excess\n    message: What is the excess?\n    script: {script}\n    expect:\n      answerContains: excess\n      toolCalled: [{{name: get_claim_section, args: {{section: policy}}}}]\n\
             \x20 - name: wrong\n    message: What is the excess?\n    script: {script}\n    expect: {{answerContains: deductible}}\n",
            script = script.display()
        ),
    )
}

fn verdicts(stdout: &str) -> std::collections::BTreeSet<String> {
    lines(stdout)
        .iter()
        .filter(|line| line["kind"] == "turn")
        .map(|line| {
            format!(
                "{} {} {} {} {}",
                line["variant"], line["claim"], line["case"], line["verdict"], line["failures"]
            )
        })
        .collect()
}

#[test]
fn a_suite_through_serve_reaches_the_verdicts_of_the_local_run_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let suite = parity_suite(dir.path());
    let (local_runs, deployed_runs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let local = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", local_runs.path())
            .args(["eval", "--provider", "script", "--format", "ndjson"])
            .arg(&suite),
    );
    let server = Server::start(Path::new(SCRIPT), &["--no-record"]);
    let deployed = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", deployed_runs.path())
            .env("PROMPTLAB_ENDPOINT", &server.url)
            .args([
                "eval",
                "--provider",
                "worker",
                "--format",
                "ndjson",
                "-j",
                "4",
            ])
            .args(["--max-concurrent", "2"])
            .arg(&suite),
    );
    assert_eq!(local.code, 1, "{}", local.stderr);
    assert_eq!(deployed.code, 1, "{}", deployed.stderr);
    let expected = verdicts(&local.stdout);
    assert_eq!(expected.len(), 8);
    for outcome in ["\"pass\"", "\"fail\""] {
        assert!(
            expected.iter().any(|v| v.contains(outcome)),
            "{outcome} in {expected:?}"
        );
    }
    assert_eq!(verdicts(&deployed.stdout), expected);
    assert!(
        deployed.stderr.contains("matched by name alone in: excess"),
        "{}",
        deployed.stderr
    );

    // "Does the deployment answer like the harness?"
    let compared = run_command(
        promptlab()
            .arg("compare")
            .arg(local_runs.path())
            .arg(deployed_runs.path())
            .args(["--format", "json"]),
    );
    let report: Value = serde_json::from_str(&compared.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", compared.stdout, compared.stderr));
    assert_eq!(
        report["pairs"].as_array().map(Vec::len),
        Some(8),
        "{}",
        compared.stdout
    );
    assert_eq!(report["onlyInA"].as_array().map(Vec::len), Some(0));
    assert_eq!(report["passToFail"], 0);
    // The deployment's tools are in its activity events, not in model-call
    // records: the same tools are no change.
    for pair in report["pairs"].as_array().unwrap() {
        assert_eq!(pair["toolsChanged"], false, "{pair}");
    }

    // A deployed run cannot be replayed: its model calls are not here.
    let log = promptlab::runs::scan_runs(&[deployed_runs.path().to_path_buf()])
        .unwrap()
        .0;
    assert_eq!(log.len(), 8);
    assert!(
        log.iter()
            .all(|run| run.header.provider == "worker" && run.header.remote.is_some())
    );
    let replayed = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", deployed_runs.path())
            .arg("replay")
            .arg(&log[0].path),
    );
    assert_eq!(replayed.code, 2, "{}", replayed.stderr);
    assert!(
        replayed.stderr.contains("ran on a deployment"),
        "{}",
        replayed.stderr
    );
}

#[test]
fn a_hostile_deployment_ends_the_turn_in_an_error_never_a_panic() {
    let bodies: Vec<Vec<u8>> = vec![
        b"data: \xff\xfe\n\n".to_vec(),
        b"data: {\"type\":\"text_delta\"}\n\n".to_vec(),
        b"\x00\x01\x02 garbage without end".to_vec(),
        vec![b':'; 3 * 1024 * 1024],
    ];
    for body in bodies {
        let responder = body.clone();
        let server = TestServer::start(vec![Box::new(move |_| Reply::Stream {
            body: responder.clone(),
            piece: 4096,
            pause: std::time::Duration::ZERO,
        })]);
        let runs = tempfile::tempdir().unwrap();
        let out = run_command(chat(runs.path(), &server.base_url).arg("q"));
        assert_eq!(out.code, 1, "{}", out.stderr);
        let last = lines(&out.stdout).pop().expect("an error event");
        assert_eq!(last["type"], "error", "{last}");
        assert!(last["message"].as_str().unwrap().len() < 1000, "{last}");
    }
}
