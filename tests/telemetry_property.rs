//! Never-panics properties for tracing's outside inputs: the `OTEL_*`
//! variables and a `traceparent` (the environment, `--trace-parent`, and
//! serve's request header). The oracle for `traceparent` is the W3C
//! grammar as a regex, not the parser.

use std::collections::BTreeMap;

use promptlab::telemetry::TraceConfig;
use promptlab::telemetry::config::parse_trace_parent;
use proptest::prelude::*;

const NAMES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "TRACEPARENT",
];

fn w3c(text: &str) -> bool {
    let pattern =
        regex::Regex::new(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$").unwrap();
    let text = text.trim();
    pattern.is_match(text)
        && !text.starts_with("ff")
        && text[3..35] != "0".repeat(32)
        && text[36..52] != "0".repeat(16)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn any_environment_is_read_or_refused_without_panicking(
        values in prop::collection::vec(prop_oneof![any::<String>(), "[a-z/:=,%0-9 .-]{0,40}", Just("http://127.0.0.1:4318".to_string())], NAMES.len()),
        flag in proptest::option::of(any::<String>()),
    ) {
        let env: BTreeMap<&str, String> = NAMES.iter().copied().zip(values).collect();
        let read = TraceConfig::from_env(&|name| env.get(name).cloned(), flag.as_deref());
        if let Err(error) = read {
            // A refusal never quotes a header's value.
            let headers = &env["OTEL_EXPORTER_OTLP_HEADERS"];
            for secret in headers.split(',').filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.trim()) {
                if secret.len() >= 8 {
                    prop_assert!(!error.to_string().contains(secret), "{}", error);
                }
            }
        }
    }

    #[test]
    fn a_traceparent_is_taken_exactly_when_the_w3c_grammar_says(
        text in prop_oneof![
            any::<String>(),
            "[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}",
            "[0-9a-fA-F]{2}-[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}",
        ]
    ) {
        prop_assert_eq!(parse_trace_parent(&text).is_some(), w3c(&text), "{:?}", text);
    }
}
