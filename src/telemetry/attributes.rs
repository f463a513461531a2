//! What spans carry besides their structure: an eval's verdict on the root
//! (attributes and one `gen_ai.evaluation.result` event per result), and
//! the captured content — the conventions' message JSON, cut at 64 KB.

use std::time::SystemTime;

use opentelemetry::trace::SpanRef;
use opentelemetry::{Array, KeyValue, StringValue, Value};

/// The longest captured content attribute, in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// An eval's verdict on the turn, added to its root span.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub attributes: Vec<(String, String)>,
    /// `pass`, `fail` or `error`.
    pub outcome: String,
    pub failures: Vec<String>,
    /// One `gen_ai.evaluation.result` event per expectation: (name, pass,
    /// score, reason).
    pub results: Vec<(String, bool, Option<f64>, Option<String>)>,
}

pub(super) fn add_verdict(span: &SpanRef<'_>, verdict: &Verdict, at: SystemTime) {
    span.set_attributes(
        verdict
            .attributes
            .iter()
            .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
    );
    span.set_attribute(KeyValue::new("promptlab.verdict", verdict.outcome.clone()));
    if !verdict.failures.is_empty() {
        let failures = verdict
            .failures
            .iter()
            .map(|f| StringValue::from(f.clone()))
            .collect();
        span.set_attribute(KeyValue::new(
            "promptlab.failures",
            Value::Array(Array::String(failures)),
        ));
    }
    for (name, pass, score, reason) in &verdict.results {
        let mut attributes = vec![
            KeyValue::new("gen_ai.evaluation.name", name.clone()),
            KeyValue::new(
                "gen_ai.evaluation.score.label",
                if *pass { "pass" } else { "fail" },
            ),
        ];
        if let Some(score) = score {
            attributes.push(KeyValue::new("gen_ai.evaluation.score.value", *score));
        }
        if let Some(reason) = reason {
            attributes.push(KeyValue::new("gen_ai.evaluation.explanation", cut(reason)));
        }
        span.add_event_with_timestamp("gen_ai.evaluation.result", at, attributes);
    }
}

pub(super) fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

/// `text` cut at `MAX_CONTENT_BYTES`, on a character boundary.
pub(super) fn cut(text: &str) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_CONTENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The conventions' message JSON: `[{"role", "parts": [{"type": "text", "content"}]}]`, cut.
pub(super) fn messages_json(messages: &[(String, String)]) -> String {
    let value: Vec<serde_json::Value> = messages
        .iter()
        .map(|(role, text)| serde_json::json!({"role": role, "parts": [{"type": "text", "content": text}]}))
        .collect();
    cut(&serde_json::Value::Array(value).to_string())
}
