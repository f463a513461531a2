//! End to end against a real OTLP receiver nobody here wrote: Arize Phoenix
//! (`phoenix serve`, installed by `.ci/install-references` into
//! `.ci/phoenix`) takes a chat turn's trace over OTLP/HTTP, and its own REST
//! API (`GET /v1/projects/default/spans`) gives back the turn, its model
//! calls and its tool calls, parented as promptlab sent them. Phoenix
//! ingests asynchronously, so its API is polled under a deadline.

use crate::support;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::references::phoenix;
use support::{promptlab, run_command, write};

struct Phoenix {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn get(url: &str) -> Option<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::get(url).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        serde_json::from_str(&response.text().await.ok()?).ok()
    })
}

/// Polls `probe` until it answers, for at most `limit`.
fn within<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn start_phoenix(binary: &std::path::Path) -> Phoenix {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = Command::new(binary)
        .arg("serve")
        .env("PHOENIX_WORKING_DIR", dir.path())
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", free_port().to_string())
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let phoenix = Phoenix {
        child,
        url,
        _dir: dir,
    };
    within(
        Duration::from_secs(120),
        "phoenix serve to answer /healthz",
        || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(reqwest::get(format!("{}/healthz", phoenix.url)))
                .ok()
                .filter(|r| r.status().is_success())
        },
    );
    phoenix
}

#[test]
fn phoenix_receives_a_turn_as_one_trace_of_calls_and_tools() {
    let Some(binary) = phoenix() else { return };
    let phoenix = start_phoenix(&binary);
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "tools.yaml",
        "turns:\n  - text: \"Let me look.\"\n    calls:\n      - name: get_claim_section\n        args: {section: policy}\n      - name: get_weather\n        args: {city: Leeds}\n  - text: \"The excess is £350.\"\n",
    );
    let out = run_command(
        promptlab()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url)
            .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
            .args([
                "chat",
                "--claim-id",
                "CLM-HH-0001",
                "--provider",
                "script",
                "--no-record",
                "--format",
                "ndjson",
                "--script",
            ])
            .arg(&script)
            .arg("What is the excess?"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("not exported"), "{}", out.stderr);
    let spans_url = format!("{}/v1/projects/default/spans?limit=100", phoenix.url);
    let spans: Vec<Value> = within(
        Duration::from_secs(30),
        "Phoenix to list the turn's 5 spans",
        || {
            let spans = get(&spans_url)?["data"].as_array()?.clone();
            (spans.len() >= 5).then_some(spans)
        },
    );
    let names = |prefix: &str| {
        spans
            .iter()
            .filter(|s| s["name"].as_str().unwrap().starts_with(prefix))
            .count()
    };
    assert_eq!(names("invoke_agent claims-assistant"), 1, "{spans:#?}");
    assert_eq!(names("chat "), 2);
    assert_eq!(names("execute_tool "), 2);
    let root = spans
        .iter()
        .find(|s| s["name"] == "invoke_agent claims-assistant")
        .unwrap();
    assert!(root["parent_id"].is_null());
    assert_eq!(root["attributes"]["promptlab.claim"], "CLM-HH-0001");
    let root_id = root["context"]["span_id"].as_str().unwrap();
    for span in spans
        .iter()
        .filter(|s| s["name"] != "invoke_agent claims-assistant")
    {
        assert_eq!(
            span["parent_id"], root_id,
            "{} is the turn's child",
            span["name"]
        );
        assert_eq!(span["context"]["trace_id"], root["context"]["trace_id"]);
    }
    let unknown = spans
        .iter()
        .find(|s| s["name"] == "execute_tool get_weather")
        .unwrap();
    assert_eq!(unknown["status_code"], "ERROR");
    assert_eq!(unknown["status_message"], "unknown tool");

    // Issue 70: what the model was told, said and decided, as Phoenix shows
    // it — its own reading of the GenAI content (it drops what does not
    // match the conventions' schemas, and showed `{"model": "script"}`).
    let said = |span: &Value, key: &str| span["attributes"][key].as_str().map(str::to_string);
    assert_eq!(
        said(root, "llm.output_messages.0.message.content").as_deref(),
        Some("Let me look.The excess is £350."),
        "{root:#}"
    );
    let round = |n: i64| {
        spans
            .iter()
            .find(|s| s["attributes"]["promptlab.round"] == n)
            .unwrap_or_else(|| panic!("round {n} in {spans:#?}"))
    };
    let (first, second) = (round(1), round(2));
    assert_eq!(
        said(
            first,
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name"
        )
        .as_deref(),
        Some("get_claim_section"),
        "{first:#}"
    );
    assert_eq!(
        said(second, "llm.output_messages.0.message.content").as_deref(),
        Some("The excess is £350."),
        "{second:#}"
    );
    assert!(
        said(second, "llm.input_messages.3.message.content")
            .is_some_and(|result| result.contains("HMH-4471029")),
        "the second call was told the policy section: {second:#}"
    );
    assert!(
        said(second, "llm.input_messages.0.message.content")
            .is_some_and(|system| system.contains("claims handler")),
        "and its system instructions: {second:#}"
    );
}
