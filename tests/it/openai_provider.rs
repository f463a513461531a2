//! The OpenAI-compatible provider against a real HTTP server on 127.0.0.1
//! playing an OpenAI-compatible server: a tool round (the request's system
//! prompt, tools, replayed assistant turn and tool results by id), parallel
//! calls, usage with cached and reasoning tokens, the model table's cap
//! field and reasoning effort, deltas split anywhere (a property). Faults:
//! tests/it/openai_faults.rs.

use crate::support;

use std::time::Duration;

use promptlab::chat::ThinkingLevel;
use promptlab::provider::openai::{OpenAiConfig, OpenAiProvider};
use promptlab::provider::{AiMessage, ToolCall, ToolResultMessage};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::http_server::{Reply, TestServer};
use support::openai_streams::{
    KEY, ask, call, config, delta, finish, parallel_calls, provider, request, sse, text_reply,
    usage,
};

#[tokio::test]
async fn a_tool_round_sends_the_conversation_as_chat_completions_and_replays_the_turn() {
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(parallel_calls())),
        Box::new(|_| Reply::stream(text_reply("The excess is £250."))),
    ]);
    let provider = provider(&server.base_url);
    let first = call(&provider, request(ask())).await;
    let summary = first.end.unwrap();
    assert_eq!(
        first.calls,
        vec![
            ToolCall {
                id: Some("call_a".into()),
                name: "get_claim_section".into(),
                args: json!({"section": "policy"})
            },
            ToolCall {
                id: Some("call_b".into()),
                name: "search_claim_file".into(),
                args: json!({"query": "excess £250"})
            },
        ]
    );
    assert_eq!(
        (
            summary.usage.input_tokens,
            summary.usage.cache_read_tokens,
            summary.usage.output_tokens,
            summary.thinking_tokens
        ),
        (Some(1200), Some(1024), Some(80), 64)
    );
    assert_eq!(summary.model_version.as_deref(), Some("gpt-test-2026"));
    let mut messages = ask();
    messages.push(AiMessage::Assistant {
        text: String::new(),
        tool_calls: first.calls.clone(),
        provider_state: summary.provider_state.clone(),
    });
    messages.push(AiMessage::ToolResults {
        results: vec![
            ToolResultMessage {
                call_id: Some("call_a".into()),
                name: "get_claim_section".into(),
                ok: true,
                content: "{\"excess\": \"£250\"}".into(),
            },
            ToolResultMessage {
                call_id: Some("call_b".into()),
                name: "search_claim_file".into(),
                ok: false,
                content: "no match".into(),
            },
        ],
    });
    let second = call(&provider, request(messages)).await;
    assert_eq!(second.text, "The excess is £250.");
    second.end.unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].target, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = requests[1].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 4096);
    assert!(body.get("max_tokens").is_none() && body.get("reasoning_effort").is_none());
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are the claims assistant."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "What is the excess?"})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_claim_section", "arguments": "{\"section\": \"policy\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "search_claim_file", "arguments": "{\"query\": \"excess £250\"}"}}]}),
        "the assistant turn goes back exactly as it was streamed"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"excess\": \"£250\"}"})
    );
    assert_eq!(
        body["messages"][4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"error\":\"no match\"}"})
    );
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), promptlab::tools::all_tools(true).len());
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(
        tools[0]["function"]["name"],
        promptlab::tools::all_tools(true)[0].declaration().name
    );
    assert!(tools[0]["function"]["parameters"].is_object());
}

#[tokio::test]
async fn the_model_table_chooses_max_tokens_and_reasoning_effort() {
    let dir = tempfile::tempdir().unwrap();
    let file = support::write(
        dir.path(),
        "models.yaml",
        "models:\n  old-vllm:\n    source: s\n    date: d\n    maxTokensField: max_tokens\n  o-think:\n    source: s\n    date: d\n    reasoningEffort: [low, high]\n",
    );
    let table = promptlab::models::ModelTable::embedded()
        .with_file(&file)
        .unwrap();
    let server = TestServer::start(vec![
        Box::new(|_| Reply::stream(text_reply("a"))),
        Box::new(|_| Reply::stream(text_reply("b"))),
    ]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        models: std::sync::Arc::new(table),
        ..config(&server.base_url)
    })
    .unwrap();
    let mut old = request(ask());
    old.model = "old-vllm".into();
    call(&provider, old).await.end.unwrap();
    let mut thinking = request(ask());
    thinking.model = "o-think".into();
    thinking.thinking_level = ThinkingLevel::Medium;
    call(&provider, thinking).await.end.unwrap();
    let requests = server.requests();
    let (old, thinking) = (requests[0].json(), requests[1].json());
    assert_eq!(old["max_tokens"], 4096);
    assert!(old.get("max_completion_tokens").is_none() && old.get("reasoning_effort").is_none());
    assert_eq!(
        thinking["reasoning_effort"], "high",
        "medium fitted to the next level up"
    );
    assert_eq!(thinking["max_completion_tokens"], 4096);
}

/// `body` in chunks at the given cut points.
fn pieces(body: &str, piece: usize) -> Reply {
    Reply::Stream {
        body: body.as_bytes().to_vec(),
        piece,
        pause: Duration::ZERO,
    }
}

/// `text` cut into deltas at `cuts` (character positions).
fn split_at(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.push(0);
    points.push(chars.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// However the text and the arguments are cut into deltas, and however
    /// the bytes are cut into reads, the same answer and calls come out.
    #[test]
    fn deltas_split_anywhere_read_the_same(
        text_cuts in proptest::collection::vec(0usize..64, 0..8),
        arg_cuts in proptest::collection::vec(0usize..64, 0..8),
        piece in 1usize..97,
    ) {
        let text = "Die Selbstbeteiligung beträgt £250 — «Zürich» ✓";
        let args = json!({"query": "excess £250 \"quoted\" \\ ✓"}).to_string();
        let mut chunks = vec![delta(json!({"role": "assistant", "content": ""}))];
        chunks.extend(split_at(text, &text_cuts).into_iter().map(|t| delta(json!({"content": t}))));
        chunks.push(delta(json!({"tool_calls": [{"index": 0, "id": "call_q", "type": "function", "function": {"name": "search_claim_file", "arguments": ""}}]})));
        chunks.extend(split_at(&args, &arg_cuts).into_iter().map(|a| delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}))));
        chunks.push(finish("tool_calls"));
        chunks.push(usage(50, 0, 20, 0));
        let body = sse(&chunks);
        let server = TestServer::start(vec![Box::new(move |_| pieces(&body, piece))]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = runtime.block_on(call(&provider(&server.base_url), request(ask())));
        prop_assert_eq!(outcome.text, text);
        prop_assert_eq!(outcome.calls.len(), 1);
        prop_assert_eq!(&outcome.calls[0].args, &serde_json::from_str::<Value>(&args).unwrap());
        let summary = outcome.end.unwrap();
        prop_assert_eq!(
            &summary.provider_state.unwrap()["openai"]["message"]["tool_calls"][0]["function"]["arguments"],
            &json!(args)
        );
    }
}
