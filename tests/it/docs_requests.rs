//! Requests as the docs show them and as production takes them: every
//! `/api/chat` example in docs/serve.md is sent to a real `promptlab serve`
//! and must stream to `done`; a message carrying a key production's schema
//! drops (`id`) is taken over HTTP and in a `--history` file alike.

use crate::support;

use support::repo_root;
use support::serve::{Server, sse_events};

/// Every fenced JSON block of `doc` that is a chat request.
fn chat_examples(doc: &str) -> Vec<String> {
    doc.split("```json\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("```").map(|(block, _)| block.to_string()))
        .filter(|block| block.contains("\"messages\""))
        .collect()
}

async fn post_chat(server: &Server, body: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(server.at("/api/chat"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn ends_in_done(stream: &str) -> bool {
    sse_events(stream)
        .last()
        .is_some_and(|event| event["type"] == "done")
}

#[tokio::test]
async fn every_chat_request_in_docs_serve_md_streams_to_done() {
    let doc = std::fs::read_to_string(repo_root().join("docs/serve.md")).unwrap();
    let examples = chat_examples(&doc);
    assert!(!examples.is_empty(), "docs/serve.md shows a chat request");
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    for example in examples {
        let (status, body) = post_chat(&server, &example).await;
        assert_eq!(status, 200, "{example}\n{body}");
        assert!(ends_in_done(&body), "{example}\n{body}");
    }
}

#[tokio::test]
async fn a_message_with_a_key_production_drops_is_taken_over_http() {
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    let body = r#"{"claimId": "CLM-HH-0001", "messages": [{"role": "user", "text": "What is the excess?", "id": "m1"}]}"#;
    let (status, stream) = post_chat(&server, body).await;
    assert_eq!(status, 200, "{stream}");
    assert!(ends_in_done(&stream), "{stream}");
}

#[test]
fn a_history_message_with_a_key_production_drops_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let history = support::write(
        dir.path(),
        "history.json",
        r#"[{"role": "user", "text": "Hello", "id": "m1"}, {"role": "assistant", "text": "Hi.", "createdAt": 1}]"#,
    );
    let run = support::scripted_chat(&[
        "--no-record",
        "--format",
        "ndjson",
        "--history",
        history.to_str().unwrap(),
        "What is the excess?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .lines()
            .last()
            .unwrap()
            .contains("\"type\":\"done\""),
        "{}",
        run.stdout
    );
}
