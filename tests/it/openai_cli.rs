//! `--provider openai` through the binary, against a real local
//! OpenAI-compatible server: a chat turn with a tool round (the run log
//! names the provider; cost unknown until a price file names the model,
//! `openai/<model>` keyed, 0 meaning free; the unknown model warned about
//! once), bad base URLs and a missing key refused precisely, and `serve`'s
//! chat through such a server. Eval, judges, compare: tests/it/openai_eval.rs.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::runs::read_run_log;
use serde_json::{Value, json};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer};
use support::openai_streams::{delta, finish, sse, text_reply, usage};
use support::{Run, promptlab, run_command, write};

fn tool_round() -> Vec<Responder> {
    let call = sse(&[
        delta(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_claim_section", "arguments": "{\"section\":\"coverage\"}"}}]})),
        finish("tool_calls"),
        usage(2000, 0, 20, 0),
    ]);
    vec![
        Box::new(move |_: &RecordedRequest| Reply::stream(call.clone())),
        Box::new(|_: &RecordedRequest| Reply::stream(text_reply("Covered."))),
    ]
}

fn chat(server: &TestServer, runs: &Path, extra: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("PROMPTLAB_RUNS_DIR", runs)
        .args(extra)
        .args([
            "chat",
            "--provider",
            "openai",
            "--model",
            "llama3.1:8b",
            "--claim-id",
            "CLM-HH-0001",
            "--format",
            "ndjson",
            "Is it covered?",
        ]);
    run_command(&mut command)
}

fn only_log(runs: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = support::files_under(runs)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

#[test]
fn a_chat_turn_runs_a_tool_round_on_a_local_server_and_names_its_provider() {
    let server = TestServer::start(tool_round());
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server, runs.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let done: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(done["type"], "done", "{}", out.stdout);
    assert!(out.stdout.contains("Covered."), "{}", out.stdout);
    assert_eq!(
        out.stderr
            .matches("model `llama3.1:8b` is not in the model table")
            .count(),
        1,
        "the unknown model is warned about once: {}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "no key, no header"
    );
    let second = requests[1].json();
    assert_eq!(second["messages"][3]["role"], "tool");
    assert_eq!(second["messages"][3]["tool_call_id"], "call_1");
    assert!(second.get("reasoning_effort").is_none());
    let log = read_run_log(&only_log(runs.path())).unwrap();
    assert_eq!(log.header.provider, "openai");
    assert_eq!(
        log.header.thinking_sent,
        Some(promptlab::models::ThinkingControl::None),
        "an unlisted model was sent no effort, and the log says so"
    );
    let footer = log.footer.expect("a complete log");
    assert_eq!(
        footer.cost_usd, None,
        "a local model without a price costs unknown"
    );
}

#[test]
fn a_price_file_keyed_by_provider_prices_the_local_model_at_zero() {
    let server = TestServer::start(tool_round());
    let dir = tempfile::tempdir().unwrap();
    let prices = write(
        dir.path(),
        "prices.yaml",
        "currency: USD\nmodels:\n  openai/llama3.1:8b:\n    source: our box\n    date: 2026-12-01\n    input: 0\n    cachedInput: 0\n    output: 0\n",
    );
    let runs = dir.path().join("runs");
    let prices = prices.to_string_lossy().into_owned();
    let out = chat(&server, &runs, &["--prices", &prices]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let footer = read_run_log(&only_log(&runs)).unwrap().footer.unwrap();
    assert_eq!(footer.cost_usd, Some(0.0), "priced at 0: free");
}

#[test]
fn a_bad_base_url_is_refused_naming_the_variable() {
    let mut command = promptlab();
    let out = run_command(
        command
            .env("OPENAI_BASE_URL", "ftp://example.invalid/v1")
            .args([
                "chat",
                "--provider",
                "openai",
                "--model",
                "gpt-5-mini",
                "--claim-id",
                "CLM-HH-0001",
                "--no-record",
                "--format",
                "ndjson",
                "Hi",
            ]),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let last: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(
        last["message"],
        "OPENAI_BASE_URL must be http or https, not `ftp`"
    );
}

#[test]
fn openai_itself_needs_a_key() {
    let mut command = promptlab();
    let out = run_command(command.args([
        "chat",
        "--provider",
        "openai",
        "--model",
        "gpt-5-mini",
        "--claim-id",
        "CLM-HH-0001",
        "--no-record",
        "--format",
        "ndjson",
        "Hi",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("OPENAI_API_KEY is not set: api.openai.com needs it"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn serve_answers_the_prompt_lab_from_an_openai_compatible_server() {
    use support::serve::{Server, chat_body, sse_events};
    let key = "sk-serve-test-ne7er-leak-0123";
    let openai = TestServer::start(tool_round());
    let mut command = promptlab();
    command
        .env("OPENAI_BASE_URL", format!("{}/v1", openai.base_url))
        .env("OPENAI_API_KEY", key);
    let mut server =
        Server::start_with(command, &["--provider", "openai", "--model", "gpt-5-mini"]);
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(chat_body("Is it covered?").to_string())
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let events = sse_events(&body);
    assert_eq!(events.last().unwrap()["type"], "done", "{body}");
    assert!(body.contains("Covered."), "{body}");
    assert!(!body.contains(key));
    let requests = openai.requests();
    assert_eq!(requests.len(), 2, "a tool round");
    assert_eq!(
        requests[0].json()["reasoning_effort"],
        "low",
        "gpt-5-mini is in the table"
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    let (code, _) = server.stop("INT", std::time::Duration::from_secs(10));
    assert_eq!(code, 0);
    let logs = server.logs();
    assert_eq!(
        logs[0].header.thinking_sent,
        Some(promptlab::models::ThinkingControl::ReasoningEffort(
            promptlab::chat::ThinkingLevel::Low
        )),
        "the log records the effort sent"
    );
}

#[test]
fn a_models_file_tells_an_older_server_max_tokens_and_silences_the_warning() {
    let server = TestServer::start(tool_round());
    let dir = tempfile::tempdir().unwrap();
    let models = write(
        dir.path(),
        "models.yaml",
        "models:\n  llama3.1:8b:\n    source: our Ollama box\n    date: 2026-12-01\n    maxTokensField: max_tokens\n",
    );
    let models = models.to_string_lossy().into_owned();
    let out = chat(&server, &dir.path().join("runs"), &["--models", &models]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("not in the model table"),
        "{}",
        out.stderr
    );
    let body = server.requests()[0].json();
    assert!(body["max_tokens"].is_u64(), "{body}");
    assert!(body.get("max_completion_tokens").is_none(), "{body}");
    assert!(body.get("reasoning_effort").is_none(), "{body}");
}

/// #68: a small local model runs on to 8,000 tokens (3,206 in two minutes
/// from SmolLM2-135M on 2 cores); its `maxOutputTokens` caps every call
/// of the turn, in the field the table names.
#[test]
fn a_models_file_caps_a_small_models_output_on_every_call() {
    let server = TestServer::start(tool_round());
    let dir = tempfile::tempdir().unwrap();
    let models = write(
        dir.path(),
        "models.yaml",
        "models:\n  llama3.1:8b:\n    source: a 135M model\n    date: 2026-12-01\n    maxTokensField: max_tokens\n    maxOutputTokens: 300\n",
    );
    let models = models.to_string_lossy().into_owned();
    let out = chat(&server, &dir.path().join("runs"), &["--models", &models]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a tool round and the answer");
    for request in requests {
        let body = request.json();
        assert_eq!(body["max_tokens"], 300, "{body}");
    }
    // Without it, the turn's own 8,000.
    let server = TestServer::start(tool_round());
    let out = chat(&server, &dir.path().join("runs"), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[0].json()["max_completion_tokens"], 8000);
}

/// A tool round (the call, then the answer) from a server that sends
/// `usage` (`None`: no usage chunk at all, as llama-cpp-python's server
/// never does even asked) with each reply.
fn tool_round_with(usage: Option<Value>) -> Vec<Responder> {
    let chunk = |usage: &Option<Value>| {
        usage
            .clone()
            .map(|usage| json!({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    };
    let mut call = vec![
        delta(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_claim_section", "arguments": "{\"section\":\"coverage\"}"}}]})),
        finish("tool_calls"),
    ];
    call.extend(chunk(&usage));
    let mut answer = vec![delta(json!({"content": "Covered."})), finish("stop")];
    answer.extend(chunk(&usage));
    let (call, answer) = (sse(&call), sse(&answer));
    vec![
        Box::new(move |_: &RecordedRequest| Reply::stream(call.clone())),
        Box::new(move |_: &RecordedRequest| Reply::stream(answer.clone())),
    ]
}

/// #62: usage a server did not report is recorded as not reported — `null`
/// in each model call, in `done` and in the footer, with `usageUnreported`
/// — never as 0; the turn's cost is unknown, not $0 (the model is priced
/// here, so 0 tokens would have cost $0); and `runs show`'s footer and
/// `runs list` say so. Once for a server that sends no usage, once for one
/// that sends only `prompt_tokens` and `completion_tokens`.
#[test]
fn usage_a_server_left_out_is_null_with_the_note_and_its_cost_unknown() {
    let partial = json!({"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912});
    for (usage, done_usage, call_usage) in [
        (
            None,
            json!({"inputTokens": null, "outputTokens": null, "cacheReadTokens": null, "usageUnreported": 2}),
            Value::Null,
        ),
        (
            Some(partial),
            json!({"inputTokens": 1800, "outputTokens": 24, "cacheReadTokens": null, "usageUnreported": 2}),
            json!({"inputTokens": 900, "outputTokens": 12, "cacheReadTokens": null, "usageUnreported": 1}),
        ),
    ] {
        let server = TestServer::start(tool_round_with(usage));
        let dir = tempfile::tempdir().unwrap();
        let prices = write(
            dir.path(),
            "prices.yaml",
            "currency: USD\nmodels:\n  openai/llama3.1:8b:\n    source: our box\n    date: 2026-12-01\n    input: 0.1\n    cachedInput: 0.01\n    output: 0.4\n",
        );
        let runs = dir.path().join("runs");
        let prices = prices.to_string_lossy().into_owned();
        let out = chat(&server, &runs, &["--prices", &prices]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let done: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
        assert_eq!(done["usage"], done_usage, "{}", out.stdout);

        let path = only_log(&runs);
        let records: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let calls: Vec<&Value> = records
            .iter()
            .filter(|r| r["record"] == "model_call")
            .collect();
        assert_eq!(calls.len(), 2);
        for call in calls {
            assert_eq!(call["call"]["summary"]["usage"], call_usage, "{call}");
        }
        let footer = records.last().unwrap();
        assert_eq!(footer["record"], "footer");
        assert_eq!(footer["usage"], done_usage);
        assert!(footer.get("costUsd").is_none(), "unknown, not $0: {footer}");

        let shown = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .env("COLUMNS", "400")
                .args(["runs", "show"])
                .arg(&path),
        );
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        assert!(
            shown
                .stdout
                .contains("cache-read (usage not reported by the server (2 calls))"),
            "{}",
            shown.stdout
        );
        let listed = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .env("COLUMNS", "400")
                .args(["runs", "list"]),
        );
        assert!(listed.stdout.contains("unknown"), "{}", listed.stdout);
    }
}

/// #68: an answer cut at its output limit by a server that sends no usage
/// (llama-cpp-python's, under a small model's `maxOutputTokens`) was
/// generated, and billed where billing applies: its usage is not reported
/// — `null`, the call counted in `usageUnreported`, the cost unknown —
/// never the 0 tokens of a call that reached no model.
#[test]
fn an_answer_cut_at_its_limit_without_usage_is_unreported_not_zero() {
    let cut = sse(&[delta(json!({"content": "The excess is"})), finish("length")]);
    let server = TestServer::start(vec![Box::new(move |_: &RecordedRequest| {
        Reply::stream(cut.clone())
    })]);
    let dir = tempfile::tempdir().unwrap();
    let prices = write(
        dir.path(),
        "prices.yaml",
        "currency: USD\nmodels:\n  openai/llama3.1:8b:\n    source: our box\n    date: 2026-12-01\n    input: 0.1\n    cachedInput: 0.01\n    output: 0.4\n",
    );
    let runs = dir.path().join("runs");
    let prices = prices.to_string_lossy().into_owned();
    let out = chat(&server, &runs, &["--prices", &prices]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("output limit"), "{}", out.stdout);
    let records: Vec<Value> = std::fs::read_to_string(only_log(&runs))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let call = records
        .iter()
        .find(|r| r["record"] == "model_call")
        .unwrap();
    assert_eq!(call["call"]["summary"]["finishReason"], "length", "{call}");
    let footer = records.last().unwrap();
    assert_eq!(footer["status"], "error", "{footer}");
    assert_eq!(
        footer["usage"],
        json!({"inputTokens": null, "outputTokens": null, "cacheReadTokens": null, "usageUnreported": 1}),
        "{footer}"
    );
    assert!(footer.get("costUsd").is_none(), "unknown, not $0: {footer}");
}

/// `chat --provider openai` without `--model`, its environment set by `envs`.
fn chat_without_model(server: &TestServer, runs: &Path, envs: &[(&str, &str)]) -> Run {
    let mut command = promptlab();
    command
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("PROMPTLAB_RUNS_DIR", runs)
        .envs(envs.iter().copied())
        .args(["chat", "--provider", "openai", "--claim-id", "CLM-HH-0001"])
        .args(["--format", "ndjson", "Is it covered?"]);
    run_command(&mut command)
}

#[test]
fn openai_without_a_model_takes_openai_model_else_exits_2_naming_the_flag() {
    let server = TestServer::start(vec![Box::new(|_: &RecordedRequest| {
        Reply::stream(text_reply("Covered."))
    })]);
    let runs = tempfile::tempdir().unwrap();
    let out = chat_without_model(&server, runs.path(), &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--model") && out.stderr.contains("OPENAI_MODEL"),
        "names the flag and the variable: {}",
        out.stderr
    );
    assert!(
        server.requests().is_empty(),
        "nothing is sent without a model"
    );

    let out = chat_without_model(&server, runs.path(), &[("OPENAI_MODEL", "qwen3:8b")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].json()["model"],
        "qwen3:8b",
        "OPENAI_MODEL is sent"
    );
}

#[test]
fn a_replay_of_an_openai_turn_fits_its_level_by_the_openai_rules() {
    let server = TestServer::start(tool_round());
    let runs = tempfile::tempdir().unwrap();
    let out = chat(&server, runs.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = only_log(runs.path());
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs.path())
            .arg("replay")
            .arg(&recorded),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("models/gemini.yaml") && !out.stderr.contains("thinkingLevel"),
        "an OpenAI turn is not looked up in the Gemini table: {}",
        out.stderr
    );
    let replays: Vec<_> = support::files_under(runs.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson") && *p != recorded)
        .collect();
    assert_eq!(replays.len(), 1, "{replays:?}");
    let replay = read_run_log(&replays[0]).unwrap();
    assert_eq!(
        replay.header.thinking_sent,
        Some(promptlab::models::ThinkingControl::None),
        "no effort was sent to the recorded model, and the replay says so"
    );
}
