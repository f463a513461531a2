//! The Prompt Lab page's newer endpoints over real HTTP, with bad input:
//! saving, listing and loading override files (`/api/overrides`,
//! `--overrides-dir`), the download YAML, the diff against the default
//! (`/api/diff`, the same JSON as `prompts diff default FILE --json`), the
//! word diff of two answers, one recorded turn (`/api/runs/{turnId}`), and
//! the page's own files with their Content-Security-Policy.

use crate::support;

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use support::serve::{Server, chat_body, sse_events};
use support::{promptlab, repo_root, run_command};

const WAIT: Duration = Duration::from_secs(30);

/// One blocking HTTP exchange: (status, headers, body text).
fn exchange(
    method: &str,
    url: String,
    content_type: &str,
    body: &str,
) -> (u16, reqwest::header::HeaderMap, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let request = match method {
            "GET" => client.get(url),
            _ => client
                .post(url)
                .header("content-type", content_type)
                .body(body.to_string()),
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    })
}

fn get(server: &Server, path: &str) -> (u16, Value) {
    let (status, _, text) = exchange("GET", server.at(path), "", "");
    let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("a JSON answer: {text}"));
    (status, value)
}

fn post(server: &Server, path: &str, body: &str) -> (u16, Value) {
    let (status, _, text) = exchange("POST", server.at(path), "application/json", body);
    let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("a JSON answer: {text}"));
    (status, value)
}

fn server_with_overrides(dir: &std::path::Path) -> Server {
    Server::start(
        &repo_root().join("tests/data/scripts/excess.yaml"),
        &["--overrides-dir", dir.to_str().unwrap()],
    )
}

#[test]
fn a_save_writes_exactly_the_usable_overrides_and_its_fingerprint_is_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let saved_dir = dir.path().join("lab");
    let server = server_with_overrides(&saved_dir);
    let text = "Be brief.\r\n  # a hash: and colon\n\u{feff}";
    let body = json!({"name": "crlf-v1", "overrides": {
        "system.base": text, "system.nope": "x", "system.safety": "   "}});
    let (status, saved) = post(&server, "/api/overrides", &body.to_string());
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["file"], "crlf-v1.yaml");
    assert_eq!(saved["saved"], json!(["system.base"]));
    let ignored: Vec<_> = saved["ignored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].clone())
        .collect();
    assert_eq!(ignored, vec![json!("system.nope"), json!("system.safety")]);
    let file = saved_dir.join("crlf-v1.yaml");
    let out =
        run_command(promptlab().args(["prompts", "fingerprint", "--json", file.to_str().unwrap()]));
    let reported: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(reported["fingerprint"], saved["fingerprint"]);
    let (_, live) = post(
        &server,
        "/api/fingerprint",
        &json!({"overrides": {"system.base": text}}).to_string(),
    );
    assert_eq!(
        live["fingerprint"], saved["fingerprint"],
        "the page's live fingerprint agrees"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        saved["yaml"].as_str().unwrap()
    );

    let (status, again) = post(&server, "/api/overrides", &body.to_string());
    assert_eq!(
        (status, again),
        (
            409,
            json!({"error": "`crlf-v1.yaml` exists; send `replace: true` to overwrite it"})
        )
    );

    let (status, list) = get(&server, "/api/overrides");
    assert_eq!(status, 200);
    assert_eq!(list["files"][0]["file"], "crlf-v1.yaml");
    assert_eq!(list["files"][0]["fingerprint"], saved["fingerprint"]);
    let (status, loaded) = get(&server, "/api/overrides/crlf-v1.yaml");
    assert_eq!(status, 200);
    assert_eq!(loaded["overrides"]["system.base"], text);

    let (status, yaml) = post(
        &server,
        "/api/overrides/yaml",
        &json!({"overrides": {"system.base": text}}).to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        yaml["yaml"], saved["yaml"],
        "the download is the file a save writes"
    );
    assert!(yaml["file"].is_null());
}

#[test]
fn bad_saves_are_refused_with_the_field_named_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    let cases = [
        (
            json!({"name": "../escape", "overrides": {"system.base": "x"}}),
            400,
            "name: `/` is not allowed",
        ),
        (
            json!({"name": ".hidden", "overrides": {"system.base": "x"}}),
            400,
            "name: must not start with a dot",
        ),
        (
            json!({"name": "", "overrides": {"system.base": "x"}}),
            400,
            "name: give a file name",
        ),
        // Issue 61: saved as `CON.yaml`, `NUL.yaml`, `-rf.yaml`.
        (
            json!({"name": "CON", "overrides": {"system.base": "x"}}),
            400,
            "name: `CON` names a device on Windows",
        ),
        (
            json!({"name": "nul.v2", "overrides": {"system.base": "x"}}),
            400,
            "name: `nul.v2` names a device on Windows",
        ),
        (
            json!({"name": "lpt9", "overrides": {"system.base": "x"}}),
            400,
            "name: `lpt9` names a device on Windows",
        ),
        (
            json!({"name": "-rf", "overrides": {"system.base": "x"}}),
            400,
            "name: must not start with `-`",
        ),
        (
            json!({"name": "x".repeat(65), "overrides": {"system.base": "x"}}),
            400,
            "name: at most 64 characters, got 65",
        ),
        (
            json!({"name": "ok", "overrides": {"system.nope": "x"}}),
            400,
            "overrides: nothing to save (no usable override): override `system.nope` ignored: not a known prompt id",
        ),
        (
            json!({"name": "ok", "overrides": {}}),
            400,
            "overrides: nothing to save",
        ),
        (json!({"name": "ok"}), 400, "overrides"),
        (
            json!({"name": "ok", "overrides": {"system.base": 42}}),
            400,
            "overrides",
        ),
        (
            json!({"name": "ok", "overrides": {"system.base": "x"}, "extra": 1}),
            400,
            "unknown field",
        ),
    ];
    for (body, status, message) in cases {
        let (got, answer) = post(&server, "/api/overrides", &body.to_string());
        assert_eq!(got, status, "{body} → {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(message),
            "{body} → {answer}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was written"
    );
    let (status, answer) = get(&server, "/api/overrides/nope.yaml");
    assert_eq!(status, 404, "{answer}");
    let (status, _) = get(&server, "/api/overrides/..%2F..%2Fetc%2Fpasswd");
    assert_eq!(status, 404);
    // Only JSON is taken (serve's trust rules).
    let (status, _, _) = exchange("POST", server.at("/api/overrides"), "text/plain", "{}");
    assert_eq!(status, 415);
}

/// Issue 61: a prompt id given twice in an `overrides` object was
/// accepted, the last one winning; every endpoint that takes one refuses
/// it, naming the id.
#[test]
fn a_prompt_id_given_twice_in_overrides_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    let twice = r#"{"system.base": "first", "system.base": "second"}"#;
    let chat = chat_body("What is the excess?");
    let chat = chat.to_string();
    let chat = format!("{}, \"overrides\": {twice}}}", &chat[..chat.len() - 1]);
    for (path, body) in [
        (
            "/api/overrides",
            format!(r#"{{"name": "twice", "overrides": {twice}}}"#),
        ),
        (
            "/api/overrides/yaml",
            format!(r#"{{"overrides": {twice}}}"#),
        ),
        ("/api/fingerprint", format!(r#"{{"overrides": {twice}}}"#)),
        (
            "/api/diff",
            format!(r#"{{"claimId": "CLM-HH-0001", "overrides": {twice}}}"#),
        ),
        ("/api/chat", chat),
    ] {
        let (status, answer) = post(&server, path, &body);
        assert_eq!(status, 400, "{path}: {answer}");
        assert_eq!(
            answer["error"], "overrides: duplicate mapping key: system.base",
            "{path}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(server.logs().is_empty(), "no turn ran");
}

#[test]
fn the_diff_is_prompts_diffs_and_names_what_brings_a_block_in() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    let overrides = json!({"system.base": "Be brief.", "system.voice": "Speak slowly.", "capability.timeline": "Dates only."});
    let body = json!({"claimId": "CLM-HH-0001", "overrides": overrides});
    let (status, diff) = post(&server, "/api/diff", &body.to_string());
    assert_eq!(status, 200, "{diff}");

    // The oracle: `prompts diff default FILE --json` on the same overrides.
    let file = dir.path().join("same.yaml");
    std::fs::write(&file, format!("prompts: {overrides}\n")).unwrap();
    let out = run_command(promptlab().args([
        "prompts",
        "diff",
        "default",
        file.to_str().unwrap(),
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2025-01-01",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cli: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(diff["blocks"], cli["blocks"], "the same blocks and diffs");
    assert_eq!(diff["b"]["fingerprint"], cli["b"]["fingerprint"]);
    assert_eq!(diff["b"]["systemSha256"], cli["b"]["systemSha256"]);
    let placed = |side: &Value, id: &str| {
        side["overrides"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        placed(&diff["b"], "system.voice")["bringIn"],
        "tick “voice”"
    );
    assert_eq!(placed(&cli["b"], "system.voice")["bringIn"], "add --voice");
    assert_eq!(
        placed(&diff["b"], "capability.timeline")["bringIn"],
        "choose the quick action “timeline”"
    );
    assert_eq!(placed(&diff["b"], "system.base")["status"], "inContext");

    for (body, status, message) in [
        (json!({"claimId": "CLM-NOPE-0001"}), 404, "CLM-NOPE-0001"),
        (
            json!({"claimId": "CLM-HH-0001", "capability": "nope"}),
            400,
            "nope",
        ),
        (
            json!({"claimId": "CLM-HH-0001", "locale": "fr"}),
            400,
            "locale",
        ),
        (json!({}), 400, "claim, claimId"),
        (json!([1]), 400, "body: expected a JSON object"),
    ] {
        let (got, answer) = post(&server, "/api/diff", &body.to_string());
        assert_eq!(got, status, "{body} → {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(message),
            "{body} → {answer}"
        );
    }
}

#[test]
fn the_word_diff_is_bounded_and_a_recorded_turn_opens_by_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    let (status, diff) = post(
        &server,
        "/api/word-diff",
        &json!({"a": "the excess is 350", "b": "the excess is £350"}).to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        diff["segments"],
        json!([[0, "the excess is "], [-1, "350"], [1, "£350"]])
    );
    let huge = "word ".repeat(50_000);
    let (status, answer) = post(
        &server,
        "/api/word-diff",
        &json!({"a": huge, "b": "x"}).to_string(),
    );
    assert_eq!(status, 413, "{answer}");
    assert_eq!(
        answer["error"],
        "a: at most 200000 characters are compared, got 250000"
    );

    let body = chat_body("What is the excess?").to_string();
    let (_, _, stream) = exchange("POST", server.at("/api/chat"), "application/json", &body);
    let events = sse_events(&stream);
    let turn_id = events.last().unwrap()["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    server.wait_for_logs(1, WAIT);
    let (status, turn) = get(&server, &format!("/api/runs/{turn_id}"));
    assert_eq!(status, 200, "{turn}");
    assert_eq!(
        turn["answer"],
        "Let me check the policy.The excess is £350, as the policy section records."
    );
    assert_eq!(turn["chips"], json!(["Reading the policy section"]));
    assert_eq!(turn["lookups"][0]["tool"], "get_claim_section");
    assert_eq!(turn["messages"][0]["text"], "What is the excess?");
    assert_eq!(turn["status"], "done");
    let path = turn["path"].as_str().unwrap();
    assert!(
        !path.starts_with('/') && path.ends_with(".ndjson"),
        "relative to the runs folder: {path}"
    );
    for bad in [
        "nope",
        "..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "00000000-0000-0000-0000-000000000000",
    ] {
        let (status, answer) = get(&server, &format!("/api/runs/{bad}"));
        assert_eq!(status, 404, "{bad} → {answer}");
    }
}

#[test]
fn the_page_and_its_files_carry_a_content_security_policy() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    for path in ["/", "/assets/lab.js", "/assets/lab.css", "/assets/boot.js"] {
        let (status, headers, _) = exchange("GET", server.at(path), "", "");
        assert_eq!(status, 200, "{path}");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("script-src 'self'") && policy.contains("default-src 'none'"),
            "{policy}"
        );
    }
    let (_, _, page) = exchange("GET", server.at("/"), "", "");
    assert!(
        !page.contains("<script>") && !page.contains("<style>"),
        "no inline script or style"
    );
    let (status, _) = get(&server, "/assets/../Cargo.toml");
    assert_eq!(status, 404);
}

/// Whatever the body, the save, download and diff endpoints answer with
/// JSON and a 2xx or 4xx — never a 5xx or a dropped connection — and the
/// server keeps serving. One server for all the cases, owned by the test
/// (a `static` one is never dropped, so never killed: it outlived the test
/// binary).
#[test]
fn any_body_gets_a_json_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_overrides(dir.path());
    let bodies = prop_oneof![
        any::<String>(),
        "\\{\"name\": \"[a-z./]{0,8}\", \"overrides\": \\{\"system.base\": \"[a-z\\\\]{0,6}\"\\}\\}",
        Just(
            "{\"name\": \"ok\", \"overrides\": {\"system.base\": \"x\"}, \"replace\": \"yes\"}"
                .to_string()
        ),
    ];
    let config = ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&bodies, |body| {
        for path in [
            "/api/overrides",
            "/api/overrides/yaml",
            "/api/diff",
            "/api/word-diff",
        ] {
            let (status, _, text) = exchange("POST", server.at(path), "application/json", &body);
            prop_assert!(status < 500, "{} {}", path, status);
            prop_assert!(
                serde_json::from_str::<Value>(&text).is_ok(),
                "{} answered {}",
                path,
                text
            );
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
