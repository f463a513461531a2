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
}

/// A spent quota is never retried: each turn that meets it errors at once,
/// naming the quota, after one request.
#[test]
fn a_spent_quota_is_named_and_never_retried() {
    let server = QuotaServer::start(
        0,
        Limits {
            latency: Duration::from_millis(10),
            per_second: 1000.0,
            per_minute: None,
            per_day: Some(3),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), 6);
    let out = eval(&server, dir.path(), &suite, "1", &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.answered(), 3);
    let refused = server.quota_refused();
    assert!(
        (1..=3).contains(&refused),
        "one request per turn at most, never retried: {refused}"
    );
    assert!(
        out.stdout
            .contains("the quota `insufficient_quota` is spent: not retried"),
        "{}",
        out.stdout
    );
}
