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

    /// The http crate is the oracle: every header taken is one it lets a
    /// request carry, so none is left out on the way (traces sent without
    /// their credentials); what it would refuse is refused here.
    #[test]
    fn headers_are_taken_only_when_a_request_can_carry_them(
        headers in "([a-zA-Z-]{0,8}|a b)=(%0a|%0d|%00|%09|%7f|%20|%2F|[a-z]){0,6}(,[a-z]{1,4}=(%0a|[a-z]){0,3})?",
    ) {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str())];
        let read = TraceConfig::from_env(&|name| env.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()), None);
        let carried = |key: &str, value: &str| {
            reqwest::header::HeaderName::from_bytes(key.trim().as_bytes()).is_ok()
                && reqwest::header::HeaderValue::from_str(value).is_ok()
        };
        let decoded: Vec<(String, String)> = headers.split(',').map(|pair| {
            let (key, value) = pair.split_once('=').unwrap();
            (key.to_string(), percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy().into_owned())
        }).collect();
        let all_carried = decoded.iter().all(|(key, value)| carried(key, value));
        match read {
            Ok(Some(config)) => {
                prop_assert!(all_carried, "{:?} taken", headers);
                let keys: std::collections::BTreeSet<&str> = decoded.iter().map(|(key, _)| key.trim()).collect();
                prop_assert_eq!(config.headers.len(), keys.len());
            }
            Ok(None) => prop_assert!(false, "an endpoint was set"),
            Err(_) => prop_assert!(!all_carried, "{:?} refused", headers),
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
