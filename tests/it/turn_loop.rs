//! The turn loop (SPEC §1.5), driven through the script provider, checking
//! the exact event sequence of each case.

use crate::support;

use promptlab::chat::decide::LIMIT_MESSAGE;
use promptlab::chat::{ChatEvent, ChatMessage, ThinkingLevel};
use promptlab::provider::AiMessage;
use serde_json::json;
use support::engine::{request_for, request_for_id, run_turn, run_turn_with, script};
use tokio_util::sync::CancellationToken;

fn claim_with_documents(documents: serde_json::Value) -> String {
    json!({
        "id": "T-1", "lineOfBusiness": "Household", "status": "open", "country": "GB",
        "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31", "excess": "350"},
        "incident": {"date": "2024-03-02", "description": "Leak"},
        "coverage": {"position": "Confirmed"},
        "file": documents
    })
    .to_string()
}

fn claim() -> String {
    claim_with_documents(json!([{"id": "D-1", "title": "Report", "text": "The excess is £350."}]))
}

#[tokio::test]
async fn a_plain_answer_streams_text_then_done() {
    let turn = run_turn(script("turns:\n  - text: The excess is £350 on this policy.\n    usage: {inputTokens: 10, outputTokens: 5, cacheReadTokens: 2}\n"), request_for(&claim(), "Excess?")).await;
    assert_eq!(turn.shape(), ["text", "done"]);
    assert!(
        turn.events
            .iter()
            .filter(|e| matches!(e, ChatEvent::TextDelta { .. }))
            .count()
            >= 3,
        "text arrives in pieces"
    );
    assert_eq!(turn.text(), "The excess is £350 on this policy.");
    let ChatEvent::Done(done) = turn.events.last().unwrap() else {
        panic!()
    };
    assert_eq!(done.model, "gemini-3.1-flash-lite");
    assert_eq!(
        (
            done.usage.input_tokens,
            done.usage.output_tokens,
            done.usage.cache_read_tokens
        ),
        (Some(10), Some(5), Some(2))
    );
    let id = uuid::Uuid::parse_str(&done.turn_id).unwrap();
    assert_eq!(id.get_version_num(), 4);
    assert_eq!(done.prompts.fingerprint, "default");
    let request = &turn.requests[0];
    assert_eq!(request.max_output_tokens, 8000);
    assert_eq!(request.thinking_level, ThinkingLevel::Low);
    assert_eq!(
        request.messages,
        [AiMessage::User {
            text: "Excess?".into()
        }]
    );
}

#[tokio::test]
async fn one_tool_round_then_the_answer_with_usage_summed() {
    let yaml = "turns:
  - text: Let me check.
    calls: [{name: get_claim_section, args: {section: coverage}}]
    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 50}
  - text: Coverage is confirmed.
    usage: {inputTokens: 200, outputTokens: 20, cacheReadTokens: 150}
";
    let turn = run_turn(script(yaml), request_for(&claim(), "Covered?")).await;
    assert_eq!(
        turn.shape(),
        [
            "text",
            "activity get_claim_section: Reading the coverage section",
            "tool_result get_claim_section ok=true truncated=false",
            "text",
            "done"
        ]
    );
    let ChatEvent::Done(done) = turn.events.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            done.usage.input_tokens,
            done.usage.output_tokens,
            done.usage.cache_read_tokens
        ),
        (Some(300), Some(30), Some(200))
    );
    // The second call got the assistant turn with its provider_state, then the result.
    let second = &turn.requests[1].messages;
    assert!(
        matches!(&second[1], AiMessage::Assistant { provider_state: Some(state), tool_calls, .. } if state["script"]["turn"] == 1 && tool_calls.len() == 1)
    );
    let AiMessage::ToolResults { results } = &second[2] else {
        panic!("{second:?}")
    };
    assert!(results[0].ok && results[0].content.contains("\"position\": \"Confirmed\""));
}

#[tokio::test]
async fn two_calls_in_one_round_run_in_order() {
    let yaml = "turns:
  - calls:
      - {id: a1, name: get_claim_section, args: {section: policy}}
      - {id: a2, name: search_claim_file, args: {query: excess}}
  - text: Done.
";
    let turn = run_turn(script(yaml), request_for(&claim(), "q")).await;
    assert_eq!(
        turn.shape(),
        [
            "activity get_claim_section: Reading the policy section",
            "tool_result get_claim_section ok=true truncated=false",
            "activity search_claim_file: Searching the claim file",
            "tool_result search_claim_file ok=true truncated=false",
            "text",
            "done"
        ]
    );
    let ids: Vec<&str> = turn
        .events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Activity { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a1", "a2"]);
    let AiMessage::ToolResults { results } = &turn.requests[1].messages[2] else {
        panic!()
    };
    assert_eq!(
        results
            .iter()
            .map(|r| r.call_id.as_deref())
            .collect::<Vec<_>>(),
        [Some("a1"), Some("a2")]
    );
}

#[tokio::test]
async fn an_unknown_tool_gets_an_error_result_and_no_events() {
    let yaml = "turns:
  - calls: [{name: frobnicate, args: {}}, {name: get_claim_section, args: {section: policy}}]
  - text: Sorry.
";
    let turn = run_turn(script(yaml), request_for(&claim(), "q")).await;
    assert_eq!(
        turn.shape(),
        [
            "activity get_claim_section: Reading the policy section",
            "tool_result get_claim_section ok=true truncated=false",
            "text",
            "done"
        ]
    );
    let AiMessage::ToolResults { results } = &turn.requests[1].messages[2] else {
        panic!()
    };
    assert_eq!(
        (results[0].ok, results[0].content.as_str()),
        (false, "Unknown tool frobnicate")
    );
    // Call ids count every call, known or not.
    assert!(matches!(&turn.events[0], ChatEvent::Activity { id, .. } if id == "call_1_2"));
}

#[tokio::test]
async fn a_failing_tool_is_an_error_result_the_model_reads() {
    let yaml = "turns:
  - calls: [{name: read_document, args: {documentId: D-404}}]
  - text: That document is not on file.
";
    let turn = run_turn(script(yaml), request_for(&claim(), "q")).await;
    assert_eq!(
        turn.shape(),
        [
            "activity read_document: Reading document D-404",
            "tool_result read_document ok=false truncated=false",
            "text",
            "done"
        ]
    );
    let ChatEvent::ToolResult { result, .. } = &turn.events[1] else {
        panic!()
    };
    assert_eq!(
        result,
        "no document `D-404` on this claim; its documents are: D-1"
    );
}

fn eight_rounds_of_lookups(first_text: &str) -> String {
    let mut yaml = String::from("turns:\n");
    for round in 1..=8 {
        let text = if round == 1 { first_text } else { "" };
        yaml.push_str(&format!("  - text: \"{text}\"\n    calls: [{{name: get_claim_section, args: {{section: policy}}}}]\n"));
    }
    yaml
}

#[tokio::test]
async fn the_eighth_round_runs_its_tools_then_the_limit_text_then_done() {
    let turn = run_turn(
        script(&eight_rounds_of_lookups("")),
        request_for(&claim(), "q"),
    )
    .await;
    let mut expected = Vec::new();
    for _ in 0..8 {
        expected.push("activity get_claim_section: Reading the policy section".to_string());
        expected.push("tool_result get_claim_section ok=true truncated=false".to_string());
    }
    expected.push("text".into());
    expected.push("done".into());
    assert_eq!(turn.shape(), expected);
    assert_eq!(turn.requests.len(), 8, "no ninth model call");
    assert_eq!(turn.text(), LIMIT_MESSAGE);
    assert_eq!(
        turn.text(),
        "I\u{2019}ve reached my limit of lookups for this question \u{2014} ask me to continue if you need more."
    );
}

#[tokio::test]
async fn the_limit_text_follows_a_blank_line_after_streamed_text() {
    let turn = run_turn(
        script(&eight_rounds_of_lookups("Looking.")),
        request_for(&claim(), "q"),
    )
    .await;
    assert_eq!(turn.text(), format!("Looking.\n\n{LIMIT_MESSAGE}"));
    assert!(matches!(turn.events.last(), Some(ChatEvent::Done(_))));
}

#[tokio::test]
async fn screen_tools_are_not_offered_without_screen_actions() {
    let yaml = "turns:
  - calls: [{name: highlight_panel, args: {panel: coverage}}]
  - text: ok
";
    let turn = run_turn(script(yaml), request_for(&claim(), "q")).await;
    let offered: Vec<&str> = turn.requests[0]
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        offered,
        [
            "get_claim_section",
            "search_claim_file",
            "read_document",
            "get_schedule"
        ]
    );
    assert_eq!(
        turn.shape(),
        ["text", "done"],
        "the call is unknown: no activity"
    );
    let AiMessage::ToolResults { results } = &turn.requests[1].messages[2] else {
        panic!()
    };
    assert_eq!(results[0].content, "Unknown tool highlight_panel");
}

#[tokio::test]
async fn screen_actions_emit_client_actions() {
    let yaml = "turns:
  - calls:
      - {name: highlight_panel, args: {panel: coverage}}
      - {name: open_document, args: {documentId: D-1}}
  - text: Highlighted.
";
    let mut request = request_for(&claim(), "q");
    request.prompt.screen_actions = true;
    let turn = run_turn(script(yaml), request).await;
    assert_eq!(turn.requests[0].tools.len(), 6);
    assert_eq!(
        turn.shape(),
        [
            "activity highlight_panel: Highlighting the coverage panel",
            "tool_result highlight_panel ok=true truncated=false",
            r#"client_action {"action":"highlight_panel","panel":"coverage"}"#,
            "activity open_document: Opening document D-1",
            "tool_result open_document ok=true truncated=false",
            r#"client_action {"action":"navigate","to":"documents/D-1"}"#,
            "text",
            "done"
        ]
    );
    assert!(turn.requests[0].system.contains("Pointing at the screen"));
}

#[tokio::test]
async fn a_result_is_cut_at_400_characters_never_inside_one() {
    let text = "€".repeat(1000);
    let claim = claim_with_documents(json!([{"id": "D-1", "title": "Euros", "text": text}]));
    let yaml = "turns:
  - calls: [{name: read_document, args: {documentId: D-1}}]
  - text: ok
";
    let turn = run_turn(script(yaml), request_for(&claim, "q")).await;
    let ChatEvent::ToolResult {
        result, truncated, ..
    } = &turn.events[1]
    else {
        panic!("{:?}", turn.events)
    };
    assert!(*truncated);
    assert_eq!(result.chars().count(), 400);
    assert!(result.ends_with('€'));
    let AiMessage::ToolResults { results } = &turn.requests[1].messages[2] else {
        panic!()
    };
    assert!(
        results[0].content.chars().count() > 400,
        "the model reads the whole result"
    );
}

#[tokio::test]
async fn leading_assistant_history_is_dropped() {
    let mut request = request_for(&claim(), "And the limit?");
    request.messages = vec![
        ChatMessage::assistant("Hi! Ask me anything."),
        ChatMessage::user("Excess?"),
        ChatMessage::assistant("£350."),
        ChatMessage::user("And the limit?"),
    ];
    let turn = run_turn(script("turns:\n  - text: Not recorded.\n"), request).await;
    let messages = &turn.requests[0].messages;
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[0],
        AiMessage::User {
            text: "Excess?".into()
        }
    );
}

#[tokio::test]
async fn an_unknown_capability_and_an_unknown_claim_are_error_events() {
    let mut request = request_for(&claim(), "q");
    request.prompt.capability = Some("make_tea".into());
    let turn = run_turn(script("turns: []\n"), request).await;
    assert_eq!(
        turn.events,
        [ChatEvent::Error {
            message: "Unknown capability \"make_tea\"".into()
        }]
    );
    assert!(turn.requests.is_empty());

    for id in ["NOPE-1", "../claims/CLM-HH-0001", "/etc/passwd"] {
        let turn = run_turn(script("turns: []\n"), request_for_id(id, "q")).await;
        assert_eq!(
            turn.events,
            [ChatEvent::Error {
                message: format!("Claim {id} not found.")
            }]
        );
    }
}

#[tokio::test]
async fn a_capability_sets_its_own_thinking_level() {
    let mut request = request_for_id("CLM-HH-0001", "Check cover");
    request.prompt.capability = Some("coverage_check".into());
    let turn = run_turn(script("turns:\n  - text: ok\n"), request).await;
    assert_eq!(turn.requests[0].thinking_level, ThinkingLevel::High);
    assert!(turn.requests[0].system.contains("## Task: Check coverage"));
    assert_eq!(turn.prepared.unwrap().thinking_level, ThinkingLevel::High);
}

#[tokio::test]
async fn a_provider_error_ends_the_turn_with_its_message() {
    let yaml = "turns:\n  - text: Partial\n    error: the model is overloaded\n";
    let turn = run_turn(script(yaml), request_for(&claim(), "q")).await;
    assert_eq!(turn.shape(), ["text", "error the model is overloaded"]);
    let beyond = run_turn(
        script("turns:\n  - calls: [{name: get_schedule}]\n"),
        request_for(&claim(), "q"),
    )
    .await;
    let Some(ChatEvent::Error { message }) = beyond.events.last() else {
        panic!()
    };
    assert_eq!(
        message,
        "script `test script` has no turn 2: the model was called 2 times but the script has 1 turns"
    );
}

#[tokio::test]
async fn cancelling_stops_the_stream_with_no_more_events() {
    let yaml = "turns:\n  - chunks: [one, two, three, four, five]\n    delayMs: 50\n";
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut seen = 0;
    let turn = run_turn_with(script(yaml), request_for(&claim(), "q"), cancel, |_| {
        seen += 1;
        if seen == 2 {
            trigger.cancel();
        }
    })
    .await;
    assert!(turn.cancelled);
    assert_eq!(turn.events.len(), 2, "{:?}", turn.events);
    assert!(!turn.events.iter().any(ChatEvent::is_terminal));
}

#[tokio::test]
async fn overrides_are_fingerprinted_in_done() {
    let mut request = request_for(&claim(), "q");
    request.prompt.overrides.insert(
        "system.base".into(),
        "You are {{assistant}}, the claims assistant in {{product}}.\n".into(),
    );
    request
        .prompt
        .overrides
        .insert("system.bogus".into(), "ignored".into());
    let turn = run_turn(script("turns:\n  - text: ok\n"), request).await;
    let ChatEvent::Done(done) = turn.events.last().unwrap() else {
        panic!()
    };
    assert_eq!(done.prompts.fingerprint, "f088156511bf");
    assert_eq!(done.prompts.overridden, ["system.base"]);
    assert!(
        turn.requests[0]
            .system
            .starts_with("You are Clara, the claims assistant in Harbour Claims.")
    );
}
