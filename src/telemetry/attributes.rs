//! What spans carry besides their structure: an eval's verdict on the root
//! (attributes and one `gen_ai.evaluation.result` event per result).

use std::time::SystemTime;

use opentelemetry::trace::SpanRef;
use opentelemetry::{Array, KeyValue, StringValue, Value};

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
            attributes.push(KeyValue::new(
                "gen_ai.evaluation.explanation",
                super::content::text(reason),
            ));
        }
        span.add_event_with_timestamp("gen_ai.evaluation.result", at, attributes);
    }
}

pub(super) fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}
