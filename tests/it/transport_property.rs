//! Property tests of the shared transport's new input paths: the retry
//! policy's decision for any failure, any try count and any server delay
//! (never a panic, never more tries than allowed, never a wait past the
//! ceiling), and a reply schema of any shape converted to Gemini's dialect
//! (never a panic; every type upper-cased, every object's properties in
//! their order); and a server echoing the key split over two or three
//! streamed deltas at every offset, through Gemini and an OpenAI-compatible
//! server: no delta, no join of deltas and no assembled `providerState`
//! holds it.

use crate::support;

use std::time::Duration;

use promptlab::provider::gemini::schema::to_gemini;
use promptlab::provider::transport::{Decision, Failure, RetryPolicy, Tries};
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
        any::<bool>().prop_map(|retryable| ErrorKind::Status {
            code: 429,
            retryable
        }),
        any::<u16>().prop_map(|code| ErrorKind::Quota { code }),
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
        rate_waited_ms in 0u64..200_000,
        max_attempts in 1u32..6,
        delay_ms in prop::option::of(any::<u64>()),
        backoff_ms in 0u64..10_000,
    ) {
        let policy = RetryPolicy {
            max_attempts,
            backoff: Duration::from_millis(backoff_ms),
            max_retry_wait: Duration::from_secs(60),
            max_rate_wait: Duration::from_secs(120),
            count_tries: true,
        };
        let rate_waited = Duration::from_millis(rate_waited_ms);
        let tries = Tries { retries, rate_limited: retries, rate_waited, ..Tries::default() };
        let failure = Failure {
            error: ProviderError::of(kind, "failed"),
            retry_after: delay_ms.map(Duration::from_millis),
        };
        let rate_limited = matches!(kind, ErrorKind::Status { code: 429, retryable: true });
        match policy.decide("Gemini", tries, failure) {
            Decision::Retry { wait, notice } => {
                prop_assert!(kind.retryable());
                prop_assert_eq!(notice.rate_limited, rate_limited);
                prop_assert_eq!(notice.attempt, retries + 2);
                if rate_limited {
                    // Any number of tries, but never past the total wait.
                    prop_assert!(rate_waited + wait <= Duration::from_secs(120));
                } else {
                    prop_assert!(retries + 1 < max_attempts);
                    prop_assert!(notice.attempt <= notice.of);
                    if delay_ms.is_some() {
                        prop_assert!(wait <= Duration::from_secs(60));
                    }
                }
                let _ = notice.to_string();
            }
            Decision::GiveUp(error) => prop_assert!(error.message.starts_with("failed")),
        }
    }

    #[test]
    fn any_rate_limit_header_is_read_without_panicking(
        value in prop_oneof!["[0-9.hmsuµn]{0,80}", "\\PC{0,80}"],
        name in prop_oneof![
            Just("retry-after"),
            Just("x-ratelimit-reset-requests"),
            Just("x-ratelimit-reset-tokens"),
        ],
    ) {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(value) = reqwest::header::HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
        let _ = promptlab::provider::transport::retry_after(&headers);
        let _ = promptlab::provider::transport::retry::go_duration(&value);
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

/// Gemini's key, short enough that every offset is quick to try.
const GEMINI_KEY: &str = "AIza-split-0123";

/// Everything a call gave out: its deltas, and its summary as JSON.
async fn deltas_and_summary(
    provider: &dyn promptlab::provider::ModelProvider,
) -> (Vec<String>, String) {
    use futures_util::StreamExt;
    use promptlab::provider::ModelEvent;
    let request = support::openai_streams::request(support::openai_streams::ask());
    let mut stream = provider.stream_turn(request, tokio_util::sync::CancellationToken::new());
    let mut deltas = Vec::new();
    while let Some(item) = stream.next().await {
        match item.expect("the call succeeds") {
            ModelEvent::TextDelta(delta) => deltas.push(delta),
            ModelEvent::Done(summary) => return (deltas, serde_json::to_string(&summary).unwrap()),
            _ => {}
        }
    }
    panic!("the call ended without Done");
}

/// The key's text cut at every offset into two pieces, and into three
/// (the second cut halfway along the rest).
fn cuts(key: &str) -> Vec<Vec<String>> {
    let mut cuts = Vec::new();
    for at in 1..key.len() {
        let (head, tail) = key.split_at(at);
        cuts.push(vec![
            format!("Your key is {head}"),
            format!("{tail}, fine."),
        ]);
        let middle = at + (key.len() - at) / 2;
        if middle > at {
            cuts.push(vec![
                format!("Your key is {}", &key[..at]),
                key[at..middle].to_string(),
                format!("{}, fine.", &key[middle..]),
            ]);
        }
    }
    cuts
}

fn assert_no_key(key: &str, pieces: &[String], deltas: &[String], summary: &str) {
    for delta in deltas {
        assert!(!delta.contains(key), "{pieces:?} -> {deltas:?}");
    }
    assert_eq!(
        deltas.concat(),
        "Your key is [redacted], fine.",
        "{pieces:?} -> {deltas:?}"
    );
    assert!(!summary.contains(key), "{pieces:?}: {summary}");
}

/// Issue 61: a Gemini server echoing the key over two SSE deltas got each
/// redacted alone, neither holding the key; the assembled text kept it
/// whole (the run log's `model_call` record and `providerState`, the
/// cache, spans, `/api/runs`).
#[tokio::test]
async fn a_key_gemini_echoes_split_at_any_offset_is_never_given_out() {
    use promptlab::provider::gemini::{GeminiConfig, GeminiProvider};
    let chunk = |text: &str| {
        let chunk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]});
        format!("data: {chunk}\r\n\r\n")
    };
    for pieces in cuts(GEMINI_KEY) {
        let mut body: String = pieces.iter().map(|piece| chunk(piece)).collect();
        body.push_str(&format!(
            "data: {}\r\n\r\n",
            serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}})
        ));
        let server = support::http_server::TestServer::start(vec![Box::new(move |_| {
            support::http_server::Reply::stream(body.clone())
        })]);
        let provider = GeminiProvider::new(GeminiConfig {
            endpoint: promptlab::provider::endpoint::Endpoint::new(
                server.base_url.clone(),
                Some(GEMINI_KEY.into()),
            ),
            ..GeminiConfig::default()
        })
        .unwrap();
        let (deltas, summary) = deltas_and_summary(&provider).await;
        assert_no_key(GEMINI_KEY, &pieces, &deltas, &summary);
        assert!(
            summary.contains("[redacted]"),
            "the whole text, redacted: {summary}"
        );
    }
}

/// The same through an OpenAI-compatible server.
#[tokio::test]
async fn a_key_an_openai_server_echoes_split_at_any_offset_is_never_given_out() {
    use support::openai_streams::{KEY, delta, finish, provider, sse, usage};
    for pieces in cuts(KEY) {
        let mut chunks = vec![delta(
            serde_json::json!({"role": "assistant", "content": ""}),
        )];
        chunks.extend(
            pieces
                .iter()
                .map(|piece| delta(serde_json::json!({"content": piece}))),
        );
        chunks.push(finish("stop"));
        chunks.push(usage(10, 0, 3, 0));
        let body = sse(&chunks);
        let server = support::http_server::TestServer::start(vec![Box::new(move |_| {
            support::http_server::Reply::stream(body.clone())
        })]);
        let (deltas, summary) = deltas_and_summary(&provider(&server.base_url)).await;
        assert_no_key(KEY, &pieces, &deltas, &summary);
    }
}
