//! The accumulator's unit tests: chunks to events, endings, usage kept
//! or refused, parts skipped.

use super::*;

fn data(json: &str) -> SseItem {
    SseItem::Data(json.to_string())
}

proptest::proptest! {
    /// Frames from the wire: whatever a frame holds, the accumulator
    /// answers with events or a fault, never a panic.
    #[test]
    fn no_frame_makes_it_panic(
        frames in proptest::collection::vec(
            "[{}\\[\\]:,\"a-zA-Z0-9 .-]{0,120}|\\{\"candidates\":\\[\\{\"content\":\\{\"parts\":\\[\\{\"(text|thoughtSignature|functionCall)\":[^}]{0,40}\\}\\]\\}(,\"finishReason\":\"[A-Z]{0,8}\")?\\}\\](,\"usageMetadata\":\\{\"(promptTokenCount|candidatesTokenCount|thoughtsTokenCount)\":(-?[0-9]{1,25}(\\.[0-9]{0,3})?(e[0-9]{1,3})?|\"-?[0-9a-z]{0,25}\"|true|null|\\[\\])\\})?\\}",
            0..6,
        )
    ) {
        let mut acc = CallAccumulator::new();
        for frame in frames {
            if acc.accept(data(&frame)).is_err() {
                return Ok(());
            }
        }
        let _ = acc.finish(0);
    }
}

#[test]
fn text_is_forwarded_and_merged_but_signed_parts_stay_apart() {
    let mut acc = CallAccumulator::new();
    let a = acc
        .accept(data(
            r#"{"candidates":[{"content":{"parts":[{"text":"Hello "}]}}]}"#,
        ))
        .unwrap();
    assert_eq!(a, [ModelEvent::TextDelta("Hello ".into())]);
    acc.accept(data(
        r#"{"candidates":[{"content":{"parts":[{"text":"there"}]}}]}"#,
    ))
    .unwrap();
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":7,"cachedContentTokenCount":4}}"#)).unwrap();
    let summary = acc.finish(0).unwrap();
    assert_eq!(
        summary.provider_state.unwrap(),
        json!({"gemini": {"parts": [{"text": "Hello there"}, {"text": "", "thoughtSignature": "c2ln"}]}})
    );
    assert_eq!(
        (
            summary.usage.input_tokens,
            summary.usage.output_tokens,
            summary.usage.cache_read_tokens
        ),
        (Some(10), Some(10), Some(4))
    );
}

#[test]
fn thoughts_are_kept_but_never_forwarded() {
    let mut acc = CallAccumulator::new();
    let events = acc
        .accept(data(
            r#"{"candidates":[{"content":{"parts":[{"text":"**Thinking**","thought":true}]}}]}"#,
        ))
        .unwrap();
    assert!(events.is_empty());
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"Answer","thoughtSignature":"AAA="}]},"finishReason":"STOP"}]}"#)).unwrap();
    let state = acc.finish(0).unwrap().provider_state.unwrap();
    assert_eq!(state["gemini"]["parts"][0]["thought"], true);
    assert_eq!(state["gemini"]["parts"][1]["thoughtSignature"], "AAA=");
}

#[test]
fn abnormal_endings_are_clear_messages() {
    let mut acc = CallAccumulator::new();
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"Partial"}]},"finishReason":"MAX_TOKENS"}]}"#)).unwrap();
    assert_eq!(
        acc.finish(0).unwrap_err().message,
        "Gemini stopped: the answer reached the output limit before it finished (finish reason MAX_TOKENS)"
    );
    let mut acc = CallAccumulator::new();
    acc.accept(data(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#))
        .unwrap();
    assert_eq!(
        acc.finish(0).unwrap_err().message,
        "Gemini blocked the prompt (block reason SAFETY)"
    );
    assert!(
        CallAccumulator::new()
            .finish(0)
            .unwrap_err()
            .message
            .contains("no finish reason")
    );
    let mut acc = CallAccumulator::new();
    let fault = acc.accept(data("{not json")).unwrap_err();
    assert!(
        fault
            .message
            .starts_with("Gemini sent a malformed stream event"),
        "{}",
        fault.message
    );
}

#[test]
fn an_error_event_mid_stream_is_a_fault() {
    let mut acc = CallAccumulator::new();
    let fault = acc.accept(SseItem::Other("{\n  \"error\": {\"code\": 499, \"message\": \"The operation was cancelled.\", \"status\": \"CANCELLED\"}\n}".into())).unwrap_err();
    assert_eq!(
        fault.message,
        "Gemini API error 499 CANCELLED: The operation was cancelled."
    );
    let fault = acc
        .accept(data(
            r#"{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}"#,
        ))
        .unwrap_err();
    assert!(fault.retryable());
}

#[test]
fn an_early_stop_keeps_its_usage_and_ends_in_its_error() {
    let mut acc = CallAccumulator::new();
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"Partial"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":900,"candidatesTokenCount":8000,"thoughtsTokenCount":50}}"#)).unwrap();
    let fault = acc.finish(0).unwrap_err();
    assert!(
        fault.message.contains("finish reason MAX_TOKENS"),
        "{}",
        fault.message
    );
    let summary = fault.summary.expect("a billed call keeps its usage");
    assert_eq!(
        (summary.usage.input_tokens, summary.usage.output_tokens),
        (Some(900), Some(8050))
    );
    assert_eq!(summary.thinking_tokens, 50);
    let error = ProviderError::from(EndFault {
        message: "m".into(),
        summary: Some(summary),
    });
    assert_eq!(error.summary.unwrap().usage.input_tokens, Some(900));
}

#[test]
fn an_impossible_count_fails_the_call_and_a_bad_field_is_a_warning() {
    let mut acc = CallAccumulator::new();
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1e30}}"#)).unwrap();
    let fault = acc.finish(0).unwrap_err();
    assert_eq!(
        fault.message,
        "Gemini reported an impossible token count: candidatesTokenCount 1e30"
    );
    assert!(fault.summary.is_none(), "no count is invented");
    let mut acc = CallAccumulator::new();
    acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":"12","candidatesTokenCount":{"n":1},"thoughtsTokenCount":4}}"#)).unwrap();
    let summary = acc.finish(0).unwrap();
    assert_eq!(
        (summary.usage.input_tokens, summary.usage.output_tokens),
        (Some(12), None),
        "a count that is no count is unknown, and so is the output it is part of"
    );
    assert_eq!(summary.usage.usage_unreported, 1);
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].starts_with("usageMetadata.candidatesTokenCount is not a token count")
    );
}

#[test]
fn a_nameless_streamed_arguments_part_is_skipped_but_other_nameless_calls_fail() {
    let mut acc = CallAccumulator::new();
    let events = acc.accept(data(r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a","stringValue":"x"}],"willContinue":true}},{"functionCall":{"name":"get_claim_section","args":{"section":"policy"}}}]},"finishReason":"STOP"}]}"#)).unwrap();
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], ModelEvent::ToolCall(call) if call.name == "get_claim_section"));
    let summary = acc.finish(0).unwrap();
    assert_eq!(
        summary.warnings,
        [
            "skipped a functionCall part without a name (streamed arguments: partialArgs/willContinue)"
        ]
    );
    assert_eq!(
        summary.provider_state.unwrap()["gemini"]["parts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let mut acc = CallAccumulator::new();
    let fault = acc
        .accept(data(
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}"#,
        ))
        .unwrap_err();
    assert_eq!(
        fault.message,
        "Gemini sent a malformed part (a functionCall without a name)"
    );
}
