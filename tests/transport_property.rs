//! Property tests of the shared transport's new input paths: the retry
//! policy's decision for any failure, any try count and any server delay
//! (never a panic, never more tries than allowed, never a wait past the
//! ceiling), and a reply schema of any shape converted to Gemini's dialect
//! (never a panic; every type upper-cased, every object's properties in
//! their order).

use std::time::Duration;

use promptlab::provider::gemini::schema::to_gemini;
use promptlab::provider::transport::{Decision, Failure, RetryPolicy};
use promptlab::provider::{ErrorKind, ProviderError};
use proptest::prelude::*;
use serde_json::Value;

fn kind() -> impl Strategy<Value = ErrorKind> {
    prop_oneof![
        Just(ErrorKind::Unreachable),
        Just(ErrorKind::Stalled),
        Just(ErrorKind::Malformed),
        Just(ErrorKind::Dropped),
        (any::<u16>(), any::<bool>())
            .prop_map(|(code, retryable)| ErrorKind::Status { code, retryable }),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z]{0,8}".prop_map(Value::String),
        prop_oneof![Just("object"), Just("string"), Just("array"), Just("type")]
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("properties".to_string()),
                    Just("items".to_string()),
                    Just("enum".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Every `type` in a converted schema is upper case, recursively.
fn types_upper(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            map.get("type")
                .is_none_or(|t| t.as_str().is_none_or(|t| t == t.to_ascii_uppercase()))
                && map
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(|props| props.values().all(types_upper))
                && map.get("items").is_none_or(types_upper)
        }
        _ => true,
    }
}

proptest! {
    #[test]
    fn the_policy_decides_any_failure_without_panicking(
        kind in kind(),
        retries in 0u32..10,
        max_attempts in 1u32..6,
        delay_ms in prop::option::of(any::<u64>()),
        backoff_ms in 0u64..10_000,
    ) {
        let policy = RetryPolicy {
            max_attempts,
            backoff: Duration::from_millis(backoff_ms),
            max_retry_wait: Duration::from_secs(60),
            count_tries: true,
        };
        let failure = Failure {
            error: ProviderError::of(kind, "failed"),
            retry_after: delay_ms.map(Duration::from_millis),
        };
        match policy.decide("Gemini", retries, failure) {
            Decision::Retry { wait, notice } => {
                prop_assert!(kind.retryable());
                prop_assert!(retries + 1 < max_attempts);
                prop_assert_eq!(notice.attempt, retries + 2);
                prop_assert!(notice.attempt <= notice.of);
                if delay_ms.is_some() {
                    prop_assert!(wait <= Duration::from_secs(60));
                }
                let _ = notice.to_string();
            }
            Decision::GiveUp(error) => prop_assert!(error.message.starts_with("failed")),
        }
    }

    #[test]
    fn any_schema_converts_without_panicking(schema in json()) {
        let converted = to_gemini(&schema);
        prop_assert!(types_upper(&converted), "{converted}");
        if let (Some(props), Some(order)) = (
            converted.get("properties").and_then(Value::as_object),
            converted.get("propertyOrdering").and_then(Value::as_array),
        ) {
            let names: Vec<&str> = props.keys().map(String::as_str).collect();
            let order: Vec<&str> = order.iter().filter_map(Value::as_str).collect();
            prop_assert_eq!(names, order);
        }
    }
}
