//! The Prompt Lab endpoints of `promptlab serve` over real HTTP: claims,
//! one claim, the prompt catalog, fingerprints, recent runs, and thumbs
//! votes recorded beside the turn's run log.

use crate::support;

use std::time::Duration;

use promptlab::runs::feedback::{Vote, read_feedback};
use serde_json::{Value, json};
use support::repo_root;
use support::serve::{Server, chat_body, sse_events};

async fn get(server: &Server, path: &str) -> (u16, Value) {
    let response = reqwest::get(server.at(path)).await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.text().await.unwrap()).unwrap(),
    )
}

async fn post(server: &Server, path: &str, body: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(server.at(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn server() -> Server {
    Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[])
}

#[tokio::test]
async fn claims_and_one_claim() {
    let server = server();
    let (status, list) = get(&server, "/api/claims").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"CLM-HH-0001"), "{ids:?}");
    let (status, claim) = get(&server, "/api/claims/CLM-HH-0001").await;
    assert_eq!(status, 200);
    assert_eq!(claim["id"], "CLM-HH-0001");
    for bad in ["CLM-NOPE", "..%2Fsecrets", "%2Fetc%2Fpasswd"] {
        let (status, error) = get(&server, &format!("/api/claims/{bad}")).await;
        assert_eq!(status, 404, "{bad}");
        assert!(error["error"].as_str().unwrap().ends_with("not found."));
    }
}

#[tokio::test]
async fn the_prompt_catalog_and_a_fingerprint() {
    let server = server();
    let (status, catalog) = get(&server, "/api/prompts").await;
    assert_eq!(status, 200);
    let prompts = catalog["prompts"].as_array().unwrap();
    assert!(
        prompts
            .iter()
            .all(|p| p["text"].as_str().is_some_and(|t| !t.is_empty()))
    );
    let capability = &catalog["capabilities"][0];
    assert!(capability["id"].is_string() && capability["label"].is_string());
    assert!(catalog["brands"][catalog["defaultBrand"].as_str().unwrap()].is_object());

    let id = prompts[0]["id"].as_str().unwrap();
    let (status, body) = post(
        &server,
        "/api/fingerprint",
        &json!({"overrides": {}}).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let default: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(default["fingerprint"], "default");
    let overrides = json!({"overrides": {id: "Be brief.", "no.such.prompt": "x"}});
    let (_, body) = post(&server, "/api/fingerprint", &overrides.to_string()).await;
    let changed: Value = serde_json::from_str(&body).unwrap();
    assert_ne!(changed["fingerprint"], "default");
    assert_eq!(changed["applied"], json!([id]));
    assert_eq!(changed["ignored"].as_array().unwrap().len(), 1);
    let (status, body) = post(&server, "/api/fingerprint", r#"{"overrides":[1]}"#).await;
    assert_eq!(status, 400);
    assert!(body.contains("overrides"), "{body}");
}

#[tokio::test]
async fn a_turn_shows_in_runs_and_takes_a_vote() {
    let server = server();
    let (status, body) = post(
        &server,
        "/api/chat",
        &chat_body("What is the excess?").to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let turn_id = sse_events(&body).last().unwrap()["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let logs = server.wait_for_logs(1, Duration::from_secs(20));

    let (status, runs) = get(&server, "/api/runs").await;
    assert_eq!(status, 200);
    assert_eq!(runs[0]["turnId"], turn_id.as_str());
    assert_eq!(runs[0]["status"], "done");

    let vote = json!({"turnId": turn_id, "vote": "down", "comment": "wrong amount"});
    let (status, _) = post(&server, "/api/feedback", &vote.to_string()).await;
    assert_eq!(status, 201);
    let votes = read_feedback(&logs[0].path).unwrap();
    assert_eq!(votes.len(), 1);
    assert_eq!(votes[0].vote, Vote::Down);
    assert_eq!(votes[0].comment.as_deref(), Some("wrong amount"));
    assert_eq!(
        server.logs().len(),
        1,
        "the votes file is not read as a run log"
    );

    let cases = [
        (json!({"turnId": "nope", "vote": "up"}), 404, "turnId:"),
        (json!({"turnId": turn_id, "vote": "sideways"}), 400, "vote:"),
        (json!({"vote": "up"}), 400, "body:"),
        (
            json!({"turnId": turn_id, "vote": "up", "comment": "x".repeat(4_001)}),
            400,
            "comment:",
        ),
    ];
    for (body, code, field) in cases {
        let (status, text) = post(&server, "/api/feedback", &body.to_string()).await;
        assert_eq!(status, code, "{body}: {text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert!(
            error["error"].as_str().unwrap().starts_with(field),
            "{text}"
        );
    }
    assert_eq!(read_feedback(&logs[0].path).unwrap().len(), 1);

    let shown = support::run_command(
        support::promptlab()
            .env("PROMPTLAB_RUNS_DIR", &server.runs)
            .args(["runs", "show", &turn_id]),
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("vote: down · "), "{}", shown.stdout);
    assert!(shown.stdout.contains("wrong amount"), "{}", shown.stdout);
}

/// #62: a turn `serve --provider replay` answers from a recording is
/// recorded as a replay of the recorded turn (`replayOf`), and the page's
/// list of runs (`GET /api/runs`) says so.
#[tokio::test]
async fn a_turn_played_back_from_a_recording_is_recorded_and_listed_as_a_replay() {
    let recorded = tempfile::tempdir().unwrap();
    let script = repo_root().join("tests/data/scripts/excess.yaml");
    let chat = support::run_command(
        support::promptlab()
            .env("PROMPTLAB_RUNS_DIR", recorded.path())
            .args(["chat", "--provider", "script", "--claim-id", "CLM-HH-0001"])
            .arg("--script")
            .arg(&script)
            .arg("What is the excess?"),
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let log = support::run_logs_under(recorded.path());
    assert_eq!(log.len(), 1, "{log:?}");
    let original = promptlab::runs::read_run_log(&log[0]).unwrap();
    let server = Server::start_with(
        support::promptlab(),
        &["--provider", "replay", "--replay", log[0].to_str().unwrap()],
    );
    let (status, _) = post(
        &server,
        "/api/chat",
        &chat_body("What is the excess?").to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let logs = server.wait_for_logs(1, Duration::from_secs(20));
    assert_eq!(
        logs[0].header.replay_of.as_deref(),
        Some(original.header.turn_id.as_str())
    );
    let (_, runs) = get(&server, "/api/runs").await;
    assert_eq!(runs[0]["replayOf"], original.header.turn_id.as_str());
}
