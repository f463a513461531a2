//! The decoder on hand-made chunks: parallel calls by index, usage with
//! cached and reasoning tokens, `length` keeping its usage, a stream cut
//! before its finish reason or its `[DONE]`.

use super::*;

fn data(json: Value) -> SseItem {
    SseItem::Data(json.to_string())
}

fn feed(items: Vec<SseItem>) -> (Vec<ModelEvent>, Result<CallSummary, ProviderError>) {
    let mut decoder = ChunkDecoder::new();
    let mut events = Vec::new();
    for item in items {
        events.extend(decoder.accept(item).unwrap());
    }
    (events, decoder.finish(0))
}

fn usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 30}})
}

#[test]
fn parallel_calls_are_assembled_by_index_and_replayed_as_sent() {
    let (events, summary) = feed(vec![
        data(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_claim_section", "arguments": ""}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "search_claim_file", "arguments": "{\"qu"}}]}}]}),
        ),
        data(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"section\":\"policy\"}"}}]}}]}),
        ),
        data(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "ery\":\"excess\"}"}}]}}]}),
        ),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        data(json!({"choices": [], "usage": usage()})),
        SseItem::Data("[DONE]".into()),
    ]);
    let summary = summary.unwrap();
    assert_eq!(
        events,
        vec![
            ModelEvent::ToolCall(ToolCall {
                id: Some("call_a".into()),
                name: "get_claim_section".into(),
                args: json!({"section": "policy"})
            }),
            ModelEvent::ToolCall(ToolCall {
                id: Some("call_b".into()),
                name: "search_claim_file".into(),
                args: json!({"query": "excess"})
            }),
        ]
    );
    assert_eq!(summary.usage, Usage::known(100, 40, 64));
    assert_eq!(summary.thinking_tokens, 30);
    assert_eq!(summary.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        summary.provider_state.unwrap()["openai"]["message"]["tool_calls"][1]["function"]["arguments"],
        "{\"query\":\"excess\"}"
    );
}

#[test]
fn length_keeps_its_usage_and_a_cut_stream_is_an_error() {
    let text = |t: &str| data(json!({"choices": [{"index": 0, "delta": {"content": t}}]}));
    let (_, ended) = feed(vec![
        text("Hi"),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})),
        data(json!({"choices": [], "usage": usage()})),
        SseItem::Data("[DONE]".into()),
    ]);
    let error = ended.unwrap_err();
    assert!(error.message.contains("output limit"), "{}", error.message);
    assert_eq!(error.summary.unwrap().usage.input_tokens, Some(100));
    // Cut without usage (llama-cpp-python's server sends none): the call
    // reached the model, so its usage is not reported — not absent, as
    // for a call that reached none.
    let (_, no_usage) = feed(vec![
        text("Hi"),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})),
        SseItem::Data("[DONE]".into()),
    ]);
    let summary = no_usage.unwrap_err().summary.expect("the call's summary");
    assert_eq!(summary.usage, Usage::UNREPORTED);
    let (_, no_reason) = feed(vec![text("Hi")]);
    assert_eq!(no_reason.unwrap_err().kind, ErrorKind::Dropped);
    let (_, no_done) = feed(vec![
        text("Hi"),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
    ]);
    let error = no_done.unwrap_err();
    assert!(error.message.contains("[DONE]"), "{}", error.message);
}

/// #62: a server that sends no usage (llama-cpp-python's, even asked
/// with `include_usage`) or only some of it: the counts it left out are
/// unknown, never 0.
#[test]
fn usage_a_server_did_not_send_is_unknown_never_zero() {
    let stream = |usage: Option<Value>| {
        let mut items = vec![
            data(json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        ];
        items.extend(usage.map(|usage| data(json!({"choices": [], "usage": usage}))));
        items.push(SseItem::Data("[DONE]".into()));
        feed(items).1.unwrap().usage
    };
    assert_eq!(stream(None), Usage::UNREPORTED);
    assert_eq!(stream(Some(Value::Null)), Usage::UNREPORTED);
    assert_eq!(
        stream(Some(json!({"prompt_tokens": 12, "completion_tokens": 3}))),
        Usage::reported(Some(12), Some(3), None)
    );
    assert_eq!(
        stream(Some(json!({"prompt_tokens": 12}))),
        Usage::reported(Some(12), None, None)
    );
    assert_eq!(
        stream(Some(json!({"prompt_tokens": 12}))).usage_unreported,
        1
    );
}

#[test]
fn impossible_counts_and_in_stream_errors_fail_the_call() {
    let mut warnings = Vec::new();
    assert!(
        read_usage(
            Some(&json!({"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": 5}})),
            &mut warnings
        )
        .is_err()
    );
    assert!(read_usage(Some(&json!({"prompt_tokens": -1})), &mut warnings).is_err());
    assert!(read_usage(Some(&json!({"prompt_tokens": "7"})), &mut warnings).is_ok());
    assert_eq!(warnings.len(), 1);
    let mut decoder = ChunkDecoder::new();
    let error = decoder
        .accept(data(
            json!({"error": {"message": "overloaded", "type": "server_error", "code": 503}}),
        ))
        .unwrap_err();
    assert_eq!(
        error.kind,
        ErrorKind::Status {
            code: 503,
            retryable: true
        }
    );
    assert_eq!(
        error.message,
        "OpenAI API error 503 (server_error): overloaded"
    );
}
