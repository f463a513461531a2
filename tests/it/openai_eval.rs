//! OpenAI-compatible models in suites, judges and comparisons, through the
//! binary against real local servers: one suite on Gemini and a local model
//! side by side (run logs, the summary, the table and JUnit name the
//! provider), bad variant and judge sections refused by field, a rubric and
//! pairwise judge asked with a strict schema and its own key, and compare's
//! warning when the sides differ in provider.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::runs::read_run_log;
use serde_json::{Value, json};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer};
use support::openai_streams::{delta, finish, sse, text_reply, usage};
use support::reports::answer_script;
use support::{promptlab, run_command, write};

const CRITERION: &str = "does not promise payment before coverage is confirmed";

fn judged_suite(dir: &Path, judge: &str) -> PathBuf {
    write(
        dir,
        "answer.yaml",
        &answer_script("Coverage is not confirmed yet, so I cannot say it will be paid."),
    );
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: judged\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\n{judge}\
             cases:\n  - name: payment\n    message: Will this claim be paid?\n    script: answer.yaml\n    expect:\n      rubric: {CRITERION}\n"
        ),
    )
}

#[test]
fn an_openai_compatible_judge_grades_with_a_strict_schema_and_its_own_key() {
    let verdict =
        json!({"pass": true, "score": 0.9, "reason": "it waits for coverage"}).to_string();
    let body = sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": verdict})),
        finish("stop"),
        usage(900, 0, 30, 0),
    ]);
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
    let dir = tempfile::tempdir().unwrap();
    let suite = judged_suite(
        dir.path(),
        &format!(
            "judge: {{provider: openai, baseUrl: '{}/v1', model: judge-model}}\n",
            server.base_url
        ),
    );
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .env("PROMPTLAB_JUDGE_API_KEY", "judge-own-key-0123456789")
        .env("OPENAI_API_KEY", "chat-key-0123456789")
        .arg("eval")
        .arg(&suite)
        .args(["--provider", "script", "--format", "ndjson", "--cache-dir"])
        .arg(dir.path().join("cache"));
    let out = run_command(&mut command);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer judge-own-key-0123456789"),
        "PROMPTLAB_JUDGE_API_KEY wins over OPENAI_API_KEY"
    );
    let body = requests[0].json();
    assert_eq!(body["model"], "judge-model");
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["additionalProperties"],
        false
    );
    assert!(body.get("tools").is_none());
    let turn = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|record| record["kind"] == "turn")
        .expect("a turn record");
    assert_eq!(turn["rubric"][0]["pass"], true, "{turn}");
}

/// #68: a judge model the table caps (`maxOutputTokens`, a small local
/// model) is asked for at most its cap instead of a judge's 16,384, in the
/// field the table names.
#[test]
fn a_judge_models_max_output_tokens_caps_its_verdict_call() {
    let verdict = json!({"pass": true, "score": 1.0, "reason": "it waits"}).to_string();
    for (models, field, asked) in [
        (None, "max_completion_tokens", 16_384),
        (
            Some(
                "models:\n  judge-model:\n    source: s\n    date: d\n    maxTokensField: max_tokens\n    maxOutputTokens: 300\n",
            ),
            "max_tokens",
            300,
        ),
    ] {
        let body = sse(&[delta(json!({"content": verdict})), finish("stop")]);
        let server = TestServer::start(vec![Box::new(move |_| Reply::stream(body.clone()))]);
        let dir = tempfile::tempdir().unwrap();
        let suite = judged_suite(
            dir.path(),
            &format!(
                "judge: {{provider: openai, baseUrl: '{}/v1', model: judge-model}}\n",
                server.base_url
            ),
        );
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .env("OPENAI_API_KEY", "chat-key-0123456789")
            .args(["--cache-dir"])
            .arg(dir.path().join("cache"));
        if let Some(models) = models {
            command
                .arg("--models")
                .arg(write(dir.path(), "models.yaml", models));
        }
        command
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script", "--format", "ndjson"]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
        let body = server.requests()[0].json();
        assert_eq!(body[field], asked, "{body}");
    }
}

#[test]
fn an_openai_judge_without_a_model_or_with_a_bad_suite_section_stops_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    for (judge, expected) in [
        (
            "judge: {provider: openai}\n",
            "--judge-provider openai needs a judge model",
        ),
        (
            "judge: {provider: script}\n",
            "a judge is gemini or openai, not script",
        ),
        (
            "judge: {baseUrl: 'http://127.0.0.1:9/v1'}\n",
            "is for an OpenAI-compatible judge",
        ),
    ] {
        let suite = judged_suite(dir.path(), judge);
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script"]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 2, "{judge}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{judge}: {}", out.stderr);
    }
}

#[test]
fn one_suite_runs_the_same_prompts_on_gemini_and_an_openai_compatible_model_side_by_side() {
    use support::http_server::fixture;
    let gemini = TestServer::start(vec![Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })]);
    let openai = TestServer::start(vec![Box::new(|_| Reply::stream(text_reply("Cheyenne.")))]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "suite.yaml",
        &format!(
            "name: side-by-side\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\n\
             variants:\n  - name: on-gemini\n  - name: on-local\n    provider: openai\n    model: llama3.1:8b\n    baseUrl: '{}/v1'\n\
             cases:\n  - name: capital\n    message: What is the capital of Wyoming?\n",
            openai.base_url
        ),
    );
    let runs = dir.path().join("runs");
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .env("GEMINI_API_KEY", "gemini-test-key-0123456789")
        .env("GEMINI_BASE_URL", &gemini.base_url)
        .arg("eval")
        .arg(&suite)
        .args(["--format", "ndjson", "--cache-dir"])
        .arg(dir.path().join("cache"));
    let out = run_command(&mut command);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(gemini.requests().len(), 1, "the plain variant asked Gemini");
    assert_eq!(
        openai.requests().len(),
        1,
        "the openai variant asked its own server"
    );
    assert_eq!(openai.requests()[0].json()["model"], "llama3.1:8b");
    let mut providers: Vec<String> = support::files_under(&runs)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson"))
        .map(|p| read_run_log(&p).unwrap().header.provider)
        .collect();
    providers.sort();
    assert_eq!(
        providers,
        ["gemini", "openai"],
        "each run log names who answered"
    );
    let summary = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|record| record["kind"] == "summary")
        .expect("a summary record");
    let variants = summary["variants"].as_array().unwrap();
    assert_eq!(variants[0].get("provider"), None, "the run's provider");
    assert_eq!(variants[1]["provider"], "openai", "{summary}");
    assert_eq!(variants[1]["model"], "llama3.1:8b");
    let junit = dir.path().join("junit.xml");
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .env("GEMINI_API_KEY", "gemini-test-key-0123456789")
        .env("GEMINI_BASE_URL", &gemini.base_url)
        .arg("eval")
        .arg(&suite)
        .arg("--resume")
        .arg("--junit")
        .arg(&junit)
        .args(["--cache-dir"])
        .arg(dir.path().join("cache"));
    let out = run_command(&mut command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("llama3.1:8b (openai)"),
        "the table names it: {}",
        out.stdout
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<property name="provider" value="openai"/>"#),
        "{xml}"
    );
    assert_eq!(
        openai.requests().len(),
        1,
        "--resume took the recorded turns"
    );
    // `runs list --provider` takes every provider a log can name.
    for (provider, listed) in [("openai", 1), ("gemini", 1), ("worker", 0)] {
        let mut command = promptlab();
        command.env("PROMPTLAB_RUNS_DIR", &runs).args([
            "runs",
            "list",
            "--json",
            "--provider",
            provider,
        ]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 0, "{provider}: {}", out.stderr);
        let rows: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), listed, "{provider}: {rows}");
    }
}

#[test]
fn a_variant_provider_that_cannot_apply_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (variant, expected) in [
        ("provider: openai", "variants[0].model"),
        (
            "provider: script\n    model: m",
            "a variant's provider is gemini or openai, not script",
        ),
        (
            "baseUrl: 'http://127.0.0.1:9/v1'",
            "is for an OpenAI-compatible variant",
        ),
        (
            "provider: openai\n    model: m\n    baseUrl: 'ftp://x'",
            "is not an http(s) URL",
        ),
    ] {
        let suite = write(
            dir.path(),
            "suite.yaml",
            &format!(
                "name: bad\nclaims: {{ids: [CLM-HH-0001]}}\nvariants:\n  - name: v\n    {variant}\ncases:\n  - name: c\n    message: Hi\n"
            ),
        );
        let mut command = promptlab();
        command
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script"]);
        let out = run_command(&mut command);
        assert_eq!(out.code, 2, "{variant}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{variant}: {}", out.stderr);
    }
}

#[test]
fn compare_warns_when_the_sides_differ_in_provider() {
    use support::http_server::fixture;
    let dir = tempfile::tempdir().unwrap();
    let gemini = TestServer::start(vec![Box::new(|_| {
        Reply::stream(fixture("streaming-success-basic-reply-short.txt"))
    })]);
    let mut command = promptlab();
    let out = run_command(
        command
            .env("GEMINI_API_KEY", "gemini-test-key-0123456789")
            .env("GEMINI_BASE_URL", &gemini.base_url)
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("a"))
            .args([
                "chat",
                "--model",
                "gemma-3-27b",
                "--claim-id",
                "CLM-HH-0001",
                "--format",
                "ndjson",
                "Is it covered?",
            ]),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let openai = TestServer::start(vec![Box::new(|_| Reply::stream(text_reply("Yes.")))]);
    let mut command = promptlab();
    let out = run_command(
        command
            .env("OPENAI_BASE_URL", format!("{}/v1", openai.base_url))
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("b"))
            .args([
                "chat",
                "--provider",
                "openai",
                "--model",
                "gemma-3-27b",
                "--claim-id",
                "CLM-HH-0001",
                "--format",
                "ndjson",
                "Is it covered?",
            ]),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let mut command = promptlab();
    let out = run_command(
        command
            .arg("compare")
            .arg(dir.path().join("a"))
            .arg(dir.path().join("b")),
    );
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains(
            "the sides differ in provider: A `default` ran gemini, B `default` ran openai"
        ),
        "{all}"
    );
    assert!(
        !all.contains("the sides differ in model"),
        "the same model name: {all}"
    );
}

#[test]
fn compare_judges_pairs_with_an_openai_compatible_judge() {
    let dir = tempfile::tempdir().unwrap();
    let mut folders = Vec::new();
    for (name, answer) in [
        ("a", "The excess is in the policy."),
        ("b", "The excess is £350."),
    ] {
        write(dir.path(), &format!("{name}.yaml"), &answer_script(answer));
        let suite = write(
            dir.path(),
            &format!("suite-{name}.yaml"),
            &format!(
                "name: pw\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: {name}.yaml\n"
            ),
        );
        let runs = dir.path().join(format!("runs-{name}"));
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script", "-q"]);
        assert_eq!(run_command(&mut command).code, 0);
        folders.push(runs);
    }
    let tie = json!({"winner": "tie", "reason": "both name it"}).to_string();
    let reply = move || {
        let body = sse(&[
            delta(json!({"content": tie})),
            finish("stop"),
            usage(500, 0, 12, 0),
        ]);
        Box::new(move |_: &RecordedRequest| Reply::stream(body.clone())) as Responder
    };
    let judge = TestServer::start(vec![reply(), reply()]);
    let mut command = promptlab();
    let out = run_command(
        command
            .env("OPENAI_BASE_URL", format!("{}/v1", judge.base_url))
            .arg("compare")
            .arg(&folders[0])
            .arg(&folders[1])
            .args([
                "--judge",
                "states the excess amount",
                "--judge-provider",
                "openai",
            ])
            .args([
                "--judge-model",
                "judge-model",
                "--format",
                "json",
                "--cache-dir",
            ])
            .arg(dir.path().join("cache")),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["pairwise"]["judgeCalls"], 2, "both orders: {report}");
    let requests = judge.requests();
    assert_eq!(requests.len(), 2);
    let schema = &requests[0].json()["response_format"]["json_schema"];
    assert_eq!(schema["strict"], true);
    assert_eq!(
        schema["schema"]["properties"]["winner"]["enum"],
        json!(["first", "second", "tie"])
    );
    assert_eq!(schema["schema"]["required"], json!(["reason", "winner"]));
}

/// A server that answers `calls` chat calls with the capital of Wyoming
/// and never a usage chunk (llama-cpp-python's server sends none, even
/// asked with `include_usage`).
fn server_without_usage(calls: usize) -> TestServer {
    let body = sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": "Cheyenne."})),
        finish("stop"),
    ]);
    let responders: Vec<Responder> = (0..calls)
        .map(|_| {
            let body = body.clone();
            Box::new(move |_: &RecordedRequest| Reply::stream(body.clone())) as Responder
        })
        .collect();
    TestServer::start(responders)
}

/// #62: an eval against a server that reports no usage: its tokens are
/// unknown, never 0, and its cost unknown, never $0 (the model is priced
/// here) — in the pretty summary, `--markdown-summary`, the NDJSON summary
/// and turn records, the index's rows, `evals show` and `compare`, each
/// saying "usage not reported by the server (2 calls)"; and `--max-cost`
/// warns before the run that it cannot count such calls, then says for how
/// many it could not, instead of stopping at the first.
#[test]
fn an_eval_on_a_server_that_reports_no_usage_says_so_everywhere_and_keeps_no_budget_by_guessing() {
    let server = server_without_usage(4);
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: unreported\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\nrepeats: 2\n\
         cases:\n  - name: capital\n    message: What is the capital of Wyoming?\n    expect: {answerContains: Cheyenne}\n",
    );
    let prices = write(
        dir.path(),
        "prices.yaml",
        "currency: USD\nmodels:\n  openai/llama3.1:8b:\n    source: a hosted box\n    date: 2026-12-01\n    input: 0.1\n    cachedInput: 0.01\n    output: 0.4\n",
    );
    let runs = dir.path().join("runs");
    let markdown = dir.path().join("summary.md");
    let eval = |id: &str, extra: &[&str]| {
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
            .env("COLUMNS", "200")
            .arg("eval")
            .arg(&suite)
            .args([
                "--provider",
                "openai",
                "--model",
                "llama3.1:8b",
                "--eval-run",
                id,
            ])
            .arg("--prices")
            .arg(&prices)
            .args(extra);
        run_command(&mut command)
    };
    // An index from the start, so that the eval keeps it.
    std::fs::create_dir(&runs).unwrap();
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["runs", "list"]),
    );

    let md = markdown.to_str().unwrap();
    let pretty = eval(
        "ev-0000000001",
        &["--max-cost", "5", "--markdown-summary", md],
    );
    assert_eq!(pretty.code, 0, "{}\n{}", pretty.stderr, pretty.stdout);
    let warning = format!(
        "warning: --max-cost: the OpenAI-compatible server at {}/v1 need not report usage",
        server.base_url
    );
    assert!(pretty.stderr.contains(&warning), "{}", pretty.stderr);
    let note = "usage not reported by the server (2 calls)";
    assert!(pretty.stdout.contains(note), "{}", pretty.stdout);
    assert!(pretty.stdout.contains("cost unknown"), "{}", pretty.stdout);
    assert!(pretty.stdout.contains("–/–"), "{}", pretty.stdout);
    assert!(
        pretty
            .stdout
            .contains("the budget cannot be enforced for 2 calls"),
        "{}",
        pretty.stdout
    );
    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(md.contains(note), "{md}");
    assert!(md.contains("| –/– |"), "{md}");

    let ndjson = eval("ev-0000000002", &["--format", "ndjson", "--max-cost", "5"]);
    assert_eq!(ndjson.code, 0, "{}", ndjson.stderr);
    let records: Vec<Value> = ndjson
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for turn in records.iter().filter(|r| r["kind"] == "turn") {
        assert_eq!(
            turn["usage"],
            json!({"inputTokens": null, "outputTokens": null, "cacheReadTokens": null, "usageUnreported": 1}),
            "{turn}"
        );
        assert_eq!(turn["costUsd"], Value::Null);
    }
    let summary = records.last().unwrap();
    let variant = &summary["variants"][0];
    for (field, value) in [
        ("inputTokens", Value::Null),
        ("outputTokens", Value::Null),
        ("cacheReadTokens", Value::Null),
        ("cacheReadShare", Value::Null),
        ("usageUnreported", json!(2)),
        ("costUsd", Value::Null),
    ] {
        assert_eq!(variant[field], value, "{field}: {variant}");
    }
    assert_eq!(summary["budgetUnenforcedCalls"], 2, "{summary}");
    assert!(summary.get("budgetReached").is_none(), "{summary}");
    assert_eq!(
        server.requests().len(),
        4,
        "no run stopped at its first turn"
    );

    // The index keeps unknown as NULL, and the history says so.
    let rows = support::index_rows(
        &runs,
        "SELECT input_tokens, output_tokens, cache_read_tokens, usage_unreported, cost_usd FROM turns",
    );
    assert_eq!(rows.len(), 4);
    use rusqlite::types::Value as Sql;
    for row in rows {
        assert_eq!(
            row,
            [Sql::Null, Sql::Null, Sql::Null, Sql::Integer(1), Sql::Null]
        );
    }
    let in_runs = || {
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .env("COLUMNS", "200");
        command
    };
    let shown = run_command(in_runs().args(["evals", "show", "ev-0000000001"]));
    assert!(shown.stdout.contains(note), "{}", shown.stdout);
    let listed = run_command(in_runs().args(["evals", "list", "--json"]));
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    for run in listed.as_array().unwrap() {
        assert_eq!(run["usageUnreported"], 2, "{run}");
        assert_eq!(run["variants"][0]["usageUnreported"], 2, "{run}");
        assert_eq!(run["costUsd"], Value::Null, "{run}");
    }
    let compared = run_command(in_runs().args(["compare", "ev-0000000001", "ev-0000000002"]));
    assert_eq!(compared.code, 0, "{}", compared.stderr);
    for side in ["A", "B"] {
        assert!(
            compared.stdout.contains(&format!("{side}: {note}")),
            "{}",
            compared.stdout
        );
    }
}

/// A variant's row names the thinking level only where one was sent: an
/// OpenAI-compatible model the model table gives no reasoning levels is
/// sent none (`stand-in`), one that takes them is sent its level
/// (`gpt-5-mini · low`), in the pretty summary and the Markdown summary.
#[test]
fn a_variant_row_names_a_level_only_where_one_was_sent() {
    use support::quota_server::{Limits, QuotaServer};
    let server = QuotaServer::start(
        0,
        Limits {
            latency: std::time::Duration::from_millis(1),
            per_second: 1000.0,
            per_minute: None,
            per_day: None,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: levels\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\n\
         variants:\n  - name: plain\n  - name: reasoning\n    model: gpt-5-mini\n    prompts: {system.base: 'Be brief, {{assistant}}.'}\n\
         cases:\n  - {name: excess, message: What is the excess?, expect: {answerContains: excess}}\n",
    );
    let markdown = dir.path().join("summary.md");
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("COLUMNS", "200")
        .arg("eval")
        .arg(&suite)
        .args(["--provider", "openai", "--model", "stand-in", "--no-cache"])
        .arg("--markdown-summary")
        .arg(&markdown);
    let out = run_command(&mut command);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    for text in [&out.stdout, &markdown] {
        assert!(text.contains("gpt-5-mini · low"), "{text}");
        assert!(text.contains("stand-in"), "{text}");
        assert!(
            !text.contains("stand-in · low"),
            "no level was sent to it: {text}"
        );
    }
}
