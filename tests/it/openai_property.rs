//! Never-panics properties for what an OpenAI-compatible server sends: any
//! SSE item (text, JSON of any shape, chunks with counts and deltas of any
//! type) is taken or refused with an error, and the call's end is a summary
//! or an error — never a panic; any error body reads to a bounded message.

use promptlab::provider::openai::decode::{ChunkDecoder, read_usage};
use promptlab::provider::openai::errors::parse_error_body;
use promptlab::provider::sse::SseItem;
use promptlab::provider::transport::call::Decoder;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A chunk of the right shape with fields of any type.
fn chunkish() -> impl Strategy<Value = Value> {
    (any_json(), any_json(), any_json(), any_json(), any_json()).prop_map(
        |(content, calls, reason, usage, index)| {
            json!({"choices": [{"index": index, "delta": {"content": content, "tool_calls": calls}, "finish_reason": reason}], "usage": usage})
        },
    )
}

fn item() -> impl Strategy<Value = SseItem> {
    prop_oneof![
        "\\PC{0,40}".prop_map(SseItem::Data),
        "\\PC{0,40}".prop_map(SseItem::Other),
        any_json().prop_map(|v| SseItem::Data(v.to_string())),
        chunkish().prop_map(|v| SseItem::Data(v.to_string())),
        Just(SseItem::Data("[DONE]".into())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_stream_is_decoded_or_refused_never_a_panic(items in proptest::collection::vec(item(), 0..12)) {
        let mut decoder = ChunkDecoder::new();
        for item in items {
            if decoder.accept(item).is_err() {
                break;
            }
        }
        let _ = decoder.finish(0);
    }

    #[test]
    fn any_usage_is_read_or_refused(usage in any_json()) {
        let mut warnings = Vec::new();
        if let Ok(counts) = read_usage(Some(&usage), &mut warnings) {
            prop_assert!(counts.cached <= counts.prompt);
            prop_assert!(counts.reasoning <= counts.completion);
        }
    }

    #[test]
    fn any_error_body_reads_to_a_bounded_message(body in "\\PC{0,2000}", value in any_json()) {
        for text in [body, json!({"error": value}).to_string()] {
            if let Some(error) = parse_error_body(&text) {
                prop_assert!(error.describe(Some(500)).chars().count() < 700);
            }
        }
    }
}
