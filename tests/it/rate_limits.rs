//! Evals at a provider's limits (SPEC §14), through the binary against the
//! stand-in server (`support::quota_server`: a token bucket per second,
//! 429 with `Retry-After: 1` and the provider's own bodies, a per-day quota
//! mode). The controller's rules themselves are pinned with paused time in
//! `provider::transport::throttle`; the 250-case comparison is
//! `benches/quota.sh`'s.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::quota_server::{Limits, QuotaServer};
use support::{Run, promptlab, run_command, write};

fn suite(dir: &Path, cases: usize) -> PathBuf {
    let mut text = String::from(
        "name: quota\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\ncases:\n",
    );
    for case in 0..cases {
        text.push_str(&format!(
            "  - name: c{case:02}\n    message: What is the excess? ({case})\n    expect: {{answerContains: excess}}\n"
        ));
    }
    write(dir, "suite.yaml", &text)
}

fn eval(server: &QuotaServer, dir: &Path, suite: &Path, jobs: &str, extra: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env_remove("OPENAI_API_KEY")
        .arg("eval")
        .arg(suite)
        .args(["--provider", "openai", "--model", "stand-in", "-j", jobs])
        .args(["--format", "ndjson", "--no-cache"])
        .args(extra);
    run_command(&mut command)
}

fn summary(out: &Run) -> serde_json::Value {
    out.stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|record| record["kind"] == "summary")
        .unwrap_or_else(|| panic!("no summary:\n{}\n{}", out.stdout, out.stderr))
}

/// 30 one-call turns at `-j 30` against 5 requests a second: most first
/// tries are answered 429, and every turn still ends judged, none errored
/// (three tries without the rate rule left 15 of them errored).
#[test]
fn an_eval_past_the_servers_rate_judges_every_turn() {
    let server = QuotaServer::start(
        0,
        Limits {
            latency: Duration::from_millis(100),
            per_second: 5.0,
            per_minute: None,
            per_day: None,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), 30);
    let out = eval(&server, dir.path(), &suite, "30", &[]);
    assert!(
        server.rate_limited() > 0,
        "the rate was reached: the test tests something"
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let summary = summary(&out);
    let variant = &summary["variants"][0];
    assert_eq!(variant["passed"], 30, "{summary}");
    assert_eq!(variant["errors"], 0, "{summary}");
    assert_eq!(server.answered(), 30);
    // Recorded: what the limit did, in the summary and the eval run's record.
    let limits = &summary["rateLimits"][0];
    assert_eq!(limits["model"], "stand-in", "{summary}");
    assert_eq!(limits["ceiling"], 30);
    assert!(limits["rateLimited"].as_u64().unwrap() > 0, "{limits}");
    assert!(limits["episodes"].as_u64().unwrap() >= 1, "{limits}");
    assert!(limits["waitedMs"].as_u64().unwrap() > 0, "{limits}");
    assert_eq!(limits["history"][0]["reason"], "rate_limit", "{limits}");
    assert_eq!(limits["history"][0]["limit"], 24, "30 × 0.8: {limits}");
    // Said once per episode on stderr, not once per 429.
    let episodes = limits["episodes"].as_u64().unwrap() as usize;
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.contains("rate-limited"))
        .collect();
    assert_eq!(said.len(), episodes, "{}", out.stderr);
    assert!(
        said[0].starts_with("stand-in: rate-limited (429); 30 → 24 calls at once (of 30)"),
        "{said:?}"
    );
    let id = summary["evalRun"].as_str().unwrap();
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .args(["evals", "show", id]);
    let shown = run_command(&mut command);
    assert!(
        shown.stdout.contains("rate limits: stand-in: ")
            && shown.stdout.contains("calls at once 30 then 24 at "),
        "{}",
        shown.stdout
    );
}

/// A spent quota is never retried, and no turn starts after it: the turns
/// left are not run, the summary names the quota, the exit is 1, and
/// `--resume` completes the run once the quota is back.
#[test]
fn a_spent_quota_stops_new_turns_and_resume_completes_the_run() {
    let limits = |per_day| Limits {
        latency: Duration::from_millis(10),
        per_second: 1000.0,
        per_minute: None,
        per_day,
    };
    let server = QuotaServer::start(0, limits(Some(3)));
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), 6);
    let out = eval(&server, dir.path(), &suite, "1", &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.answered(), 3);
    assert_eq!(
        server.quota_refused(),
        1,
        "one request met the quota; it was not retried and no turn started after it"
    );
    let stopped = summary(&out);
    assert_eq!(stopped["notRun"], 2, "{stopped}");
    let quota = stopped["quotaSpent"].as_str().unwrap();
    assert!(
        quota.contains("the quota `insufficient_quota` is spent: not retried"),
        "{quota}"
    );
    assert_eq!(stopped["rateLimits"][0]["history"][0]["reason"], "quota");

    let renewed = QuotaServer::start(0, limits(None));
    let resumed = eval(&renewed, dir.path(), &suite, "1", &["--resume"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert_eq!(
        renewed.answered(),
        3,
        "the errored turn and the two not run"
    );
    assert_eq!(summary(&resumed)["variants"][0]["passed"], 6);
}

/// The pretty summary says which quota stopped the run and how to go on.
#[test]
fn a_spent_quota_is_said_with_the_way_on() {
    let server = QuotaServer::start(
        0,
        Limits {
            latency: Duration::from_millis(10),
            per_second: 1000.0,
            per_minute: None,
            per_day: Some(1),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), 4);
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .args(["eval"])
        .arg(&suite)
        .args([
            "--provider",
            "openai",
            "--model",
            "stand-in",
            "-j",
            "1",
            "--no-cache",
        ]);
    let out = run_command(&mut command);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("a quota is spent (")
            && out.stdout.contains(
                "2 of 4 turns not run; run the same command with --resume once it resets"
            ),
        "{}",
        out.stdout
    );
}
