//! Google's error bodies (`google.rpc.Status`) turned into readable
//! messages, and the retry delay they ask for.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::text::one_line;

/// The most of Google's error message an error quotes.
const MAX_MESSAGE_CHARS: usize = 500;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct GoogleError {
    #[serde(default)]
    pub code: Option<i64>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub details: Vec<Value>,
}

#[derive(Deserialize)]
struct Wrapped {
    error: GoogleError,
}

/// Reads an error body: `{"error": …}`, or the array-wrapped `[{"error": …}]`.
pub fn parse_error_body(body: &str) -> Option<GoogleError> {
    let body = body.trim();
    // Checked first: serde would also read a struct from a JSON array.
    let error = if body.starts_with('[') {
        serde_json::from_str::<Vec<Wrapped>>(body)
            .ok()?
            .into_iter()
            .next()?
            .error
    } else {
        serde_json::from_str::<Wrapped>(body).ok()?.error
    };
    let said_something = error.code.is_some() || error.message.is_some() || error.status.is_some();
    said_something.then_some(error)
}

/// Reads an `error` value found inside a stream event.
pub fn from_value(value: &Value) -> GoogleError {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

impl GoogleError {
    /// `Gemini API error 429 RESOURCE_EXHAUSTED: You exceeded your quota…`
    /// `Gemini API error 429 RESOURCE_EXHAUSTED: <Google's message>`.
    pub fn describe(&self, http_status: Option<u16>) -> String {
        let code = self
            .code
            .map(|c| c.to_string())
            .or(http_status.map(|s| s.to_string()));
        let mut head = "Gemini API error".to_string();
        for part in [code, self.status.clone()].into_iter().flatten() {
            head.push(' ');
            head.push_str(&part);
        }
        // Google's own message is the diagnostic a user needs (quota
        // messages with their help links run to a few hundred characters),
        // so it is kept whole up to a bound, on one line.
        match &self.message {
            Some(message) if !message.trim().is_empty() => {
                format!("{head}: {}", one_line(message, MAX_MESSAGE_CHARS))
            }
            _ => head,
        }
    }

    /// The spent quota this error names, when it is a daily or billing
    /// one rather than a rate: a `google.rpc.QuotaFailure` violation whose
    /// `quotaId` or `quotaMetric` is per day (Google's
    /// `GenerateRequestsPerDayPerProjectPerModel-FreeTier`) or billing.
    /// Per-minute violations are rates, and none is returned.
    pub fn spent_quota(&self) -> Option<String> {
        self.details_of("google.rpc.QuotaFailure")
            .filter_map(|detail| detail.get("violations").and_then(Value::as_array))
            .flatten()
            .find_map(|violation| {
                let field = |name| violation.get(name).and_then(Value::as_str).unwrap_or("");
                let (id, metric) = (field("quotaId"), field("quotaMetric"));
                let named = format!("{id} {metric}").to_ascii_lowercase();
                let spent = ["perday", "per_day", "daily", "billing"]
                    .iter()
                    .any(|word| named.contains(word));
                spent.then(|| one_line(if id.is_empty() { metric } else { id }, 120))
            })
    }

    /// `RetryInfo.retryDelay` (a protobuf Duration such as `"34.4s"`).
    pub fn retry_delay(&self) -> Option<Duration> {
        self.details_of("google.rpc.RetryInfo")
            .find_map(|detail| detail.get("retryDelay").and_then(Value::as_str))
            .and_then(parse_duration)
    }

    /// The details of one `google.rpc` type (`@type` ends with it).
    fn details_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.details.iter().filter(move |detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(kind))
        })
    }
}

/// `"34.4s"` → 34.4 seconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    seconds_to_duration(seconds)
}

/// A delay in seconds from a server, as a `Duration`. The number comes from
/// outside: negative or NaN is no delay given; one too large for a
/// `Duration` (`1e20`) saturates, so that it is "longer than the cap, not
/// retried" rather than a panic in `Duration::from_secs_f64`.
pub fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// Whether a status is worth another try: rate limits and transient
/// server trouble. A 400 (including signature errors) never is.
pub fn is_retryable(code: i64) -> bool {
    matches!(code, 429 | 500 | 503)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_delays_saturate_instead_of_panicking() {
        assert_eq!(parse_duration("1e20s"), Some(Duration::MAX));
        assert_eq!(parse_duration("infs"), Some(Duration::MAX));
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("NaNs"), None);
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn a_quota_error_reads_well_and_gives_its_delay() {
        let body = r#"{"error": {"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.Help"}, {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}]}}"#;
        let error = parse_error_body(body).unwrap();
        assert_eq!(
            error.describe(Some(429)),
            "Gemini API error 429 RESOURCE_EXHAUSTED: You exceeded your current quota."
        );
        assert_eq!(error.retry_delay(), Some(Duration::from_millis(34_400)));
    }

    #[test]
    fn array_wrapped_bodies_are_read_too() {
        let error = parse_error_body(r#"[{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}]"#).unwrap();
        assert_eq!(
            error.describe(None),
            "Gemini API error 503 UNAVAILABLE: The model is overloaded."
        );
        assert!(parse_error_body("<html>oops</html>").is_none());
    }
}

#[cfg(test)]
mod quoting {
    use super::*;

    #[test]
    fn a_huge_error_message_is_quoted_not_dumped() {
        let error = GoogleError {
            message: Some(format!("quota\n{}", "x".repeat(70_000))),
            ..GoogleError::default()
        };
        let text = error.describe(Some(429));
        assert!(text.starts_with("Gemini API error 429: quota x"), "{text}");
        assert!(text.chars().count() < 600, "{}", text.chars().count());
    }
}
