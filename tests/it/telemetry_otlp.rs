//! Turns as OTLP traces, read back with the official OTLP protobuf
//! definitions (PyPI `opentelemetry-proto`, via `.ci/references/otlp-decode.py`):
//! the exported requests a local receiver got are decoded — protobuf and
//! the OTLP/JSON mapping — and the span tree, names, attributes, statuses
//! and the parent from `TRACEPARENT` are checked; content only when asked;
//! the headers' token goes to the receiver and nowhere else; a receiver
//! that is down is one warning and the turn's exit code is unchanged;
//! SIGTERM still flushes the cancelled turn's trace.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::http_server::{RecordedRequest, Reply, Responder, TestServer};
use support::references::{phoenix_python, python_module, run_reference};
use support::{promptlab, run_command, write};

const TOKEN: &str = "otlp-secret-token-4321";

/// A receiver answering 200 to every export.
fn receiver() -> TestServer {
    let responders: Vec<Responder> = (0..32)
        .map(|_| Box::new(|_: &RecordedRequest| Reply::status(200, "")) as Responder)
        .collect();
    TestServer::start(responders)
}

/// Two known tools and one the assistant does not have, then the answer.
fn tools_script(dir: &Path) -> std::path::PathBuf {
    write(
        dir,
        "tools.yaml",
        "turns:\n  - text: \"Let me look.\"\n    calls:\n      - name: get_claim_section\n        args: {section: policy}\n      - name: get_weather\n        args: {city: Leeds}\n    usage: {inputTokens: 1200, outputTokens: 40, cacheReadTokens: 900}\n  - calls:\n      - name: get_claim_section\n        args: {section: parties}\n    usage: {inputTokens: 1300, outputTokens: 10}\n  - text: \"The excess is £350.\"\n    usage: {inputTokens: 1500, outputTokens: 20, cacheReadTokens: 1100}\n",
    )
}

fn chat(script: &Path, runs: &Path, endpoint: &str, extra_env: &[(&str, &str)]) -> Command {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", runs)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{TOKEN}"),
        )
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
        .args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
        ])
        .arg(script)
        .args(["--format", "ndjson", "What is the excess?"]);
    for (key, value) in extra_env {
        command.env(key, value);
    }
    command
}

/// The spans in the receiver's requests, decoded by the official definitions.
fn decoded(server: &TestServer, protocol: &str) -> Option<Value> {
    decoded_after(server, protocol, 0)
}

/// `decoded` of the requests after the first `skip`.
fn decoded_after(server: &TestServer, protocol: &str, skip: usize) -> Option<Value> {
    let (python, script) = python_module(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "opentelemetry-proto",
        "otlp-decode.py",
    )?;
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(python);
    command.arg(script).arg(protocol);
    for (index, request) in server.requests().iter().enumerate().skip(skip) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.target, "/v1/traces");
        let expected = if protocol == "json" {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        assert_eq!(request.header("content-type"), Some(expected));
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        let path = dir.path().join(format!("{index}.bin"));
        std::fs::write(&path, &request.body).unwrap();
        command.arg(path);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn spans(decoded: &Value) -> Vec<Value> {
    decoded["spans"].as_array().unwrap().clone()
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with(prefix))
        .collect()
}

const STATUS_OK: i64 = 1;
const STATUS_ERROR: i64 = 2;

#[test]
fn a_chat_turn_is_one_trace_of_model_calls_and_tool_calls() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let out = run_command(&mut chat(
        &tools_script(dir.path()),
        &dir.path().join("runs"),
        &server.base_url,
        &[],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN),
        "the token is never shown"
    );
    let Some(decoded) = decoded(&server, "protobuf") else {
        return;
    };
    let spans = spans(&decoded);
    let roots = named(&spans, "invoke_agent");
    assert_eq!(roots.len(), 1, "{spans:#?}");
    let root = roots[0];
    assert_eq!(root["name"], "invoke_agent claims-assistant");
    assert_eq!(root["parentSpanId"], "", "a root without TRACEPARENT");
    let attributes = &root["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attributes["gen_ai.provider.name"], "promptlab.script");
    assert_eq!(attributes["promptlab.claim"], "CLM-HH-0001");
    let log_path = attributes["promptlab.run_log"].as_str().unwrap();
    let log = promptlab::runs::read_run_log(Path::new(log_path)).unwrap();
    assert_eq!(attributes["promptlab.turn_id"], log.header.turn_id.as_str());
    assert_eq!(
        attributes["gen_ai.conversation.id"],
        log.header.turn_id.as_str(),
        "a single turn is its own conversation"
    );
    assert_eq!(attributes["promptlab.fingerprint"], "default");
    assert!(
        attributes.get("gen_ai.input.messages").is_none(),
        "no content unless asked"
    );
    assert!(attributes.get("gen_ai.system_instructions").is_none());
    assert_eq!(
        attributes["gen_ai.request.model"], "promptlab.script",
        "no viewer prices a scripted turn as the model it stood in for"
    );
    assert_eq!(
        attributes["promptlab.requested_model"],
        "gemini-3.1-flash-lite"
    );
    assert_eq!(decoded["resources"][0]["service.name"], "promptlab");
    assert_eq!(decoded["resources"][0]["deployment.environment"], "ci");

    let calls = named(&spans, "chat ");
    assert_eq!(calls.len(), 3, "one span per model call");
    let first = calls
        .iter()
        .find(|c| c["attributes"]["promptlab.round"] == 1)
        .unwrap();
    assert_eq!(first["attributes"]["gen_ai.usage.input_tokens"], 1200);
    assert_eq!(first["attributes"]["gen_ai.usage.output_tokens"], 40);
    assert_eq!(
        first["attributes"]["gen_ai.usage.cache_read.input_tokens"],
        900
    );
    assert_eq!(first["kind"], 3, "a model call is a CLIENT span");

    let tools = named(&spans, "execute_tool");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "execute_tool get_claim_section",
            "execute_tool get_claim_section",
            "execute_tool get_weather"
        ]
    );
    let unknown = tools
        .iter()
        .find(|t| t["name"] == "execute_tool get_weather")
        .unwrap();
    assert_eq!(unknown["status"]["code"], STATUS_ERROR);
    assert_eq!(unknown["status"]["message"], "unknown tool");
    let mut known: Vec<_> = tools
        .iter()
        .filter(|t| t["name"] == "execute_tool get_claim_section")
        .collect();
    known.sort_by_key(|t| t["start"].as_u64());
    assert_eq!(
        known[0]["status"]["code"], STATUS_OK,
        "the policy section was read"
    );
    assert_eq!(
        known[0]["attributes"]["gen_ai.tool.name"],
        "get_claim_section"
    );
    assert!(
        known[0]["attributes"]
            .get("gen_ai.tool.call.arguments")
            .is_none(),
        "no tool content unless asked"
    );
    assert_eq!(
        known[1]["status"]["code"], STATUS_ERROR,
        "no parties section"
    );
    let message = known[1]["status"]["message"].as_str().unwrap();
    assert!(message.contains("no section `parties`"), "{message}");
    for child in calls.iter().chain(tools.iter()) {
        assert_eq!(child["traceId"], root["traceId"], "one trace");
        assert_eq!(
            child["parentSpanId"], root["spanId"],
            "{} is the turn's child",
            child["name"]
        );
        assert!(
            child["start"].as_u64() >= root["start"].as_u64()
                && child["end"].as_u64() <= root["end"].as_u64()
        );
    }
}

#[test]
fn content_is_exported_only_when_asked_and_json_follows_the_otlp_mapping() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let out = run_command(&mut chat(
        &tools_script(dir.path()),
        &dir.path().join("runs"),
        &server.base_url,
        &[
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("TRACEPARENT", parent),
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let Some(decoded) = decoded(&server, "json") else {
        return;
    };
    let spans = spans(&decoded);
    let root = named(&spans, "invoke_agent")[0];
    assert_eq!(
        root["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736",
        "joined the given trace"
    );
    assert_eq!(root["parentSpanId"], "00f067aa0ba902b7");
    let input: Value = serde_json::from_str(
        root["attributes"]["gen_ai.input.messages"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(input[0]["parts"][0]["content"], "What is the excess?");
    let output: Value = serde_json::from_str(
        root["attributes"]["gen_ai.output.messages"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        output[0]["parts"][0]["content"],
        "Let me look.The excess is £350."
    );
    assert!(
        root["attributes"]["gen_ai.system_instructions"]
            .as_str()
            .unwrap()
            .contains("claims handler")
    );
}

/// The parsed JSON of a span's attribute.
fn json_attribute(span: &Value, key: &str) -> Value {
    let text = span["attributes"][key].as_str();
    serde_json::from_str(text.unwrap_or_else(|| panic!("{key} in {span:#}"))).unwrap()
}

/// The `chat` spans in the order of their rounds.
fn rounds(spans: &[Value]) -> Vec<&Value> {
    let mut calls = named(spans, "chat ");
    calls.sort_by_key(|c| c["attributes"]["promptlab.round"].as_i64());
    calls
}

/// Issue 70: with content captured, every span's content is in the GenAI
/// conventions' shapes — checked by the models Phoenix generates from the
/// conventions' JSON schemas (the ones it drops non-matching spans by) —
/// and each `chat` span says what that round was told and what it said or
/// decided: before, the output messages had no `finish_reason` and no
/// `tool_call` parts, the system instructions were a plain string, and
/// Phoenix showed `{"model": "script"}` for every call.
#[test]
fn captured_content_follows_the_genai_schemas_round_by_round() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let out = run_command(&mut chat(
        &tools_script(dir.path()),
        &dir.path().join("runs"),
        &server.base_url,
        &[
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let Some(decoded) = decoded(&server, "json") else {
        return;
    };
    let spans = spans(&decoded);
    let mut documents =
        json!({"system_instructions": [], "input_messages": [], "output_messages": []});
    for span in &spans {
        for (key, kind) in [
            ("gen_ai.system_instructions", "system_instructions"),
            ("gen_ai.input.messages", "input_messages"),
            ("gen_ai.output.messages", "output_messages"),
        ] {
            if let Some(text) = span["attributes"][key].as_str() {
                documents[kind].as_array_mut().unwrap().push(json!(text));
            }
        }
    }
    // The root and three calls: each with its instructions, input, output.
    for kind in ["system_instructions", "input_messages", "output_messages"] {
        assert_eq!(documents[kind].as_array().unwrap().len(), 4, "{kind}");
    }
    if let Some((python, script)) = phoenix_python("genai-content-check.py") {
        let said = run_reference(
            &python,
            &[script.as_os_str()],
            documents.to_string().as_bytes(),
        );
        assert!(said.ok, "{}{}", said.stdout, said.stderr);
        assert_eq!(said.stdout.lines().count(), 12, "{}", said.stdout);
    }

    let root = named(&spans, "invoke_agent")[0];
    let system = json_attribute(root, "gen_ai.system_instructions");
    assert_eq!(system[0]["type"], "text");
    assert!(
        system[0]["content"]
            .as_str()
            .unwrap()
            .contains("claims handler")
    );
    let answer = json_attribute(root, "gen_ai.output.messages");
    assert_eq!(
        answer,
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Let me look.The excess is £350."}], "finish_reason": "stop"}])
    );

    let calls = rounds(&spans);
    let said = |index: usize| json_attribute(calls[index], "gen_ai.output.messages");
    let told = |index: usize| json_attribute(calls[index], "gen_ai.input.messages");
    assert_eq!(
        said(0),
        json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "text", "content": "Let me look."},
            {"type": "tool_call", "id": "call_1_1", "name": "get_claim_section", "arguments": {"section": "policy"}},
            {"type": "tool_call", "id": "call_1_2", "name": "get_weather", "arguments": {"city": "Leeds"}},
        ]}])
    );
    assert_eq!(
        said(1)[0]["parts"],
        json!([{"type": "tool_call", "id": "call_2_1", "name": "get_claim_section", "arguments": {"section": "parties"}}]),
        "a round that only called a tool says no empty text"
    );
    assert_eq!(said(2)[0]["finish_reason"], "stop");
    assert_eq!(
        told(0),
        json!([{"role": "user", "parts": [{"type": "text", "content": "What is the excess?"}]}])
    );
    // The second call was told the first round and its tools' results, one
    // `tool` message a result, answering the calls by their ids.
    let second = told(1);
    let second = second.as_array().unwrap();
    assert_eq!(second.len(), 4, "{second:#?}");
    assert_eq!(
        second[1],
        json!({"role": "assistant", "parts": said(0)[0]["parts"]}),
        "what the first round said, without its finish reason"
    );
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["parts"][0]["type"], "tool_call_response");
    assert_eq!(second[2]["parts"][0]["id"], "call_1_1");
    assert!(
        second[2]["parts"][0]["response"]
            .as_str()
            .unwrap()
            .contains("HMH-4471029"),
        "the policy section as the model read it"
    );
    assert_eq!(
        second[3]["parts"][0],
        json!({"type": "tool_call_response", "id": "call_1_2", "response": "Unknown tool get_weather"})
    );
    let third = told(2);
    assert_eq!(third.as_array().unwrap().len(), 6, "{third:#}");
    assert_eq!(third[5]["parts"][0]["id"], "call_2_1");

    let tools = named(&spans, "execute_tool");
    let policy = tools
        .iter()
        .find(|t| t["attributes"]["gen_ai.tool.call.id"] == "call_1_1")
        .unwrap();
    assert_eq!(
        json_attribute(policy, "gen_ai.tool.call.arguments"),
        json!({"section": "policy"})
    );
    assert!(
        policy["attributes"]["gen_ai.tool.call.result"]
            .as_str()
            .unwrap()
            .contains("HMH-4471029")
    );
    let weather = tools
        .iter()
        .find(|t| t["name"] == "execute_tool get_weather")
        .unwrap();
    assert_eq!(
        weather["attributes"]["gen_ai.tool.call.result"],
        "Unknown tool get_weather"
    );
}

/// Content over 64 KiB is cut inside its parts, so the attribute stays JSON
/// of the same shape, ending in the documented marker (before, the
/// serialised JSON was cut, which every consumer drops).
#[test]
fn content_past_64_kib_is_cut_inside_its_parts_and_stays_json() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let long = "The excess is £350 — ".repeat(5_000);
    let script = write(
        dir.path(),
        "long.yaml",
        &format!(
            "turns:\n  - text: {}\n",
            serde_json::to_string(&long).unwrap()
        ),
    );
    let out = run_command(&mut chat(
        &script,
        &dir.path().join("runs"),
        &server.base_url,
        &[
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let Some(decoded) = decoded(&server, "json") else {
        return;
    };
    let spans = spans(&decoded);
    let root = named(&spans, "invoke_agent")[0];
    let text = root["attributes"]["gen_ai.output.messages"]
        .as_str()
        .unwrap();
    assert!(
        text.len() <= promptlab::telemetry::turn::MAX_CONTENT_BYTES,
        "{}",
        text.len()
    );
    let answer: Value = serde_json::from_str(text).unwrap();
    assert_eq!(answer[0]["finish_reason"], "stop");
    let content = answer[0]["parts"][0]["content"].as_str().unwrap();
    assert!(
        content.ends_with("…truncated"),
        "{}",
        &content[content.len() - 40..]
    );
    assert!(long.starts_with(content.strip_suffix("…truncated").unwrap()));
    assert!(content.len() > 60_000, "cut by what it was over, not more");
}

#[test]
fn a_receiver_that_is_down_is_one_warning_and_the_turn_still_succeeds() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://user:pw@{}/", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let out = run_command(&mut chat(
        &tools_script(dir.path()),
        &dir.path().join("runs"),
        &endpoint,
        &[],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("\"type\":\"done\""),
        "the answer is unaffected"
    );
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("traces not exported"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].starts_with("warning: traces not exported: http://127.0.0.1:"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].ends_with("/v1/traces: connection refused"),
        "{}",
        warnings[0]
    );
    assert!(
        !out.stderr.contains("pw@") && !out.stderr.contains(TOKEN),
        "{}",
        out.stderr
    );
}

/// `command` run to its end, and its own peak resident memory in bytes.
/// It is started by a small Python process that reports its children's
/// peak (`RUSAGE_CHILDREN`): a child spawned straight from this test
/// binary inherits the binary's own peak across `exec` (Linux keeps
/// `ru_maxrss` through it), and the binary runs every test at once.
fn run_measured(command: &Command) -> (support::Run, u64) {
    const MEASURE: &str = "import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], 'w').write(str(peak))
sys.exit(code if code >= 0 else 128 - code)";
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut measured = Command::new("python3");
    measured
        .args(["-c", MEASURE])
        .arg(report.path())
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        measured.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => measured.env(key, value),
            None => measured.env_remove(key),
        };
    }
    let run = support::run_command(measured.stdin(std::process::Stdio::null()));
    let kib: u64 = std::fs::read_to_string(report.path())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Linux gives `ru_maxrss` in KiB.
    (run, kib * 1024)
}

/// Issue 61: a receiver that answers 200 and then streams without end
/// drove a 16 s eval to 1.4 GB — the exporter read the whole answer, for
/// up to its timeout, on each export. At most 64 KiB of an answer is read,
/// the connection dropped and the warning says so in a sentence.
#[test]
fn a_receiver_streaming_an_endless_answer_is_read_64_kib_at_most() {
    let chunk = vec![b'x'; 1024 * 1024];
    let responders: Vec<Responder> = (0..8)
        .map(|_| {
            let chunk = chunk.clone();
            Box::new(move |_: &RecordedRequest| Reply::Endless {
                head: Vec::new(),
                chunk: chunk.clone(),
                pause: std::time::Duration::ZERO,
            }) as Responder
        })
        .collect();
    let server = TestServer::start(responders);
    let dir = tempfile::tempdir().unwrap();
    let (out, peak) = run_measured(&chat(
        &tools_script(dir.path()),
        &dir.path().join("runs"),
        &server.base_url,
        &[],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("\"type\":\"done\""), "{}", out.stdout);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.contains("traces not exported"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].ends_with(
            "/v1/traces: the receiver's answer ran past 64 KiB; it was not read further and the connection was dropped"
        ),
        "{}",
        warnings[0]
    );
    // A turn of the script provider peaks near 20 MB; reading the answer
    // for the export's 5 s took hundreds. The bound is generous.
    assert!(peak < 200 * 1024 * 1024, "peak RSS {peak} bytes");
}

#[test]
fn bad_settings_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value, message) in [
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
            "OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported",
        ),
        ("TRACEPARENT", "nope", "TRACEPARENT: not a W3C traceparent"),
    ] {
        let out = run_command(&mut chat(
            &tools_script(dir.path()),
            &dir.path().join("runs"),
            "http://127.0.0.1:9",
            &[(key, value)],
        ));
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(message), "{}", out.stderr);
    }
}

#[test]
fn sigterm_still_flushes_the_cancelled_turns_trace() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let script = support::slow_script(dir.path());
    let mut child = chat(&script, &dir.path().join("runs"), &server.base_url, &[])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    // The first streamed piece: the turn is under way.
    while let Some(Ok(line)) = lines.next() {
        if line.contains("text_delta") {
            break;
        }
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    // Exported before the process exited: nothing to wait for.
    assert!(
        !server.requests().is_empty(),
        "the trace was flushed before exit"
    );
    let Some(decoded) = decoded(&server, "protobuf") else {
        return;
    };
    let root = named(&spans(&decoded), "invoke_agent")[0].clone();
    assert_eq!(root["status"]["code"], STATUS_ERROR);
    assert_eq!(root["status"]["message"], "cancelled");
}

/// An eval of one case with a tool expectation and a rubric criterion,
/// judged by a scripted judge.
fn rubric_eval(
    dir: &Path,
    endpoint: &str,
    criterion: &str,
    reply: &str,
    extra: &[&str],
) -> support::Run {
    write(
        dir,
        "answer.yaml",
        "turns:\n  - calls:\n      - name: get_claim_section\n        args: {section: policy}\n  - text: \"The excess is £350, from the policy section.\"\n",
    );
    let suite = write(
        dir,
        "suite.yaml",
        &format!(
            "name: traced\nclaims: {{ids: [CLM-HH-0001]}}\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    tags: [grounding]\n    message: What is the excess?\n    script: answer.yaml\n    expect:\n      toolCalled: [{{name: get_claim_section}}]\n      rubric: {criterion}\n"
        ),
    );
    let judge = write(dir, "judge.yaml", &format!("rubric:\n  - reply: {reply}\n"));
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{TOKEN}"),
        )
        .arg("eval")
        .arg(&suite)
        .args([
            "--provider",
            "script",
            "--judge-provider",
            "script",
            "--judge-script",
        ])
        .arg(&judge)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(extra);
    run_command(&mut command)
}

#[test]
fn an_eval_turn_carries_its_verdict_and_a_rescore_its_new_one() {
    let server = receiver();
    let dir = tempfile::tempdir().unwrap();
    let pass = "{pass: true, score: 0.9, reason: \"It quotes the policy's excess.\"}";
    let out = rubric_eval(
        dir.path(),
        &server.base_url,
        "states the excess from the policy",
        pass,
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let Some(decoded) = decoded(&server, "protobuf") else {
        return;
    };
    let turn_spans = spans(&decoded);
    let spans = turn_spans;
    let roots = named(&spans, "invoke_agent");
    assert_eq!(roots.len(), 1, "the turn; the judge's call is not a turn");
    let root = roots[0];
    let attributes = &root["attributes"];
    assert_eq!(attributes["promptlab.suite"], "traced");
    assert_eq!(attributes["promptlab.case"], "excess");
    assert_eq!(attributes["promptlab.variant"], "default");
    assert_eq!(attributes["promptlab.sample"], "1");
    assert_eq!(attributes["promptlab.tags"], "grounding");
    assert!(
        attributes["promptlab.eval_run"]
            .as_str()
            .unwrap()
            .starts_with("ev-")
    );
    assert_eq!(attributes["promptlab.verdict"], "pass");
    let events: Vec<&Value> = root["events"].as_array().unwrap().iter().collect();
    assert!(
        events
            .iter()
            .all(|e| e["name"] == "gen_ai.evaluation.result")
    );
    let rubric = events
        .iter()
        .find(|e| e["attributes"]["gen_ai.evaluation.name"] == "states the excess from the policy")
        .expect("an event for the rubric criterion");
    assert_eq!(
        rubric["attributes"]["gen_ai.evaluation.score.label"],
        "pass"
    );
    assert_eq!(rubric["attributes"]["gen_ai.evaluation.score.value"], 0.9);
    assert_eq!(
        rubric["attributes"]["gen_ai.evaluation.explanation"],
        "It quotes the policy's excess."
    );
    let others = events
        .iter()
        .find(|e| e["attributes"]["gen_ai.evaluation.name"] == "expectations")
        .unwrap();
    assert_eq!(
        others["attributes"]["gen_ai.evaluation.score.label"],
        "pass"
    );
    assert_eq!(named(&spans, "execute_tool get_claim_section").len(), 1);
    // The run log names the trace its turn was exported as.
    let log_path = attributes["promptlab.run_log"].as_str().unwrap();
    let log = promptlab::runs::read_run_log(Path::new(log_path)).unwrap();
    let recorded = log.header.trace.expect("the header names the trace");
    assert_eq!(recorded.trace_id, root["traceId"].as_str().unwrap());
    assert_eq!(recorded.span_id, root["spanId"].as_str().unwrap());

    // The criterion changes and fails: a re-score exports the new verdict.
    let before = server.requests().len();
    let fail = "{pass: false, score: 0.1, reason: \"No currency.\"}";
    let criterion = "states the excess with its currency";
    let out = rubric_eval(
        dir.path(),
        &server.base_url,
        criterion,
        fail,
        &["--rescore"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let all = self::spans(&decoded_after(&server, "protobuf", before).unwrap());
    let rescored = named(&all, "evaluate excess");
    assert_eq!(rescored.len(), 1, "{all:#?}");
    assert_eq!(rescored[0]["attributes"]["promptlab.verdict"], "fail");
    assert_eq!(rescored[0]["attributes"]["promptlab.rescore"], true);
    assert_eq!(
        rescored[0]["links"],
        json!([recorded.span_id]),
        "linked to the turn's own trace"
    );
}

#[test]
fn serve_makes_each_turn_a_child_of_the_requests_traceparent() {
    let receiver = receiver();
    let mut command = promptlab();
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{TOKEN}"),
        );
    let mut server = support::serve::Server::start_with(
        command,
        &[
            "--provider",
            "script",
            "--script",
            support::repo_root()
                .join("tests/data/scripts/excess.yaml")
                .to_str()
                .unwrap(),
        ],
    );
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let body = support::serve::chat_body("What is the excess?").to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(server.at("/api/chat"))
            .header("content-type", "application/json")
            .header("traceparent", parent)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.text().await.unwrap();
    });
    server.wait_for_logs(1, std::time::Duration::from_secs(30));
    let (code, _) = server.stop("TERM", std::time::Duration::from_secs(30));
    assert_eq!(code, 0);
    let Some(decoded) = decoded(&receiver, "protobuf") else {
        return;
    };
    let spans = spans(&decoded);
    let root = named(&spans, "invoke_agent")[0];
    assert_eq!(root["traceId"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(root["parentSpanId"], "b7ad6b7169203331");
    assert!(root["attributes"]["promptlab.run_log"].as_str().is_some());
}

#[test]
fn a_worker_turn_is_a_root_with_one_child_for_the_deployments_turn() {
    let deployment = support::serve::Server::start(
        &support::repo_root().join("tests/data/scripts/excess.yaml"),
        &[],
    );
    let receiver = receiver();
    let dir = tempfile::tempdir().unwrap();
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .env("PROMPTLAB_ENDPOINT_TOKEN", "worker-token-never-shown")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url)
            .env(
                "OTEL_EXPORTER_OTLP_HEADERS",
                format!("authorization=Bearer%20{TOKEN}"),
            )
            .args([
                "chat",
                "--provider",
                "worker",
                "--endpoint",
                &deployment.url,
            ])
            .args([
                "--claim-id",
                "CLM-HH-0001",
                "--format",
                "ndjson",
                "What is the excess?",
            ]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let Some(decoded) = decoded(&receiver, "protobuf") else {
        return;
    };
    let spans = spans(&decoded);
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let root = named(&spans, "invoke_agent claims-assistant")
        .into_iter()
        .find(|s| s["parentSpanId"] == "")
        .unwrap();
    assert_eq!(
        root["attributes"]["gen_ai.provider.name"],
        "promptlab.worker"
    );
    let remote = named(&spans, "invoke_agent claims-assistant (deployment)")[0];
    assert_eq!(remote["parentSpanId"], root["spanId"]);
    assert_eq!(remote["kind"], 3, "a CLIENT span");
    let endpoint = format!("{}/api/chat", deployment.url);
    assert_eq!(
        remote["attributes"]["promptlab.endpoint"],
        endpoint.as_str()
    );
}
