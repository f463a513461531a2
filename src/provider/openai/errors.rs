//! OpenAI's error bodies (`{"error": {"message", "type", "param", "code"}}`,
//! as OpenAI, vLLM, Ollama and llama.cpp send them) as readable messages,
//! and which statuses are worth another try.

use serde::Deserialize;
use serde_json::Value;

use crate::text::one_line;

/// The most of the server's own message an error quotes.
const MAX_MESSAGE_CHARS: usize = 500;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct OpenAiError {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// A string (`invalid_api_key`) at OpenAI, a number (400) at vLLM.
    #[serde(default)]
    pub code: Option<Value>,
}

#[derive(Deserialize)]
struct Wrapped {
    error: Value,
}

/// Reads an error body: `{"error": {…}}`, or `{"error": "text"}` (some
/// servers), else nothing.
pub fn parse_error_body(body: &str) -> Option<OpenAiError> {
    let wrapped: Wrapped = serde_json::from_str(body.trim()).ok()?;
    Some(from_value(&wrapped.error))
}

/// Reads an `error` value found in a body or a stream event.
pub fn from_value(value: &Value) -> OpenAiError {
    match value {
        Value::String(text) => OpenAiError {
            message: Some(text.clone()),
            ..OpenAiError::default()
        },
        other => serde_json::from_value(other.clone()).unwrap_or_default(),
    }
}

impl OpenAiError {
    /// The numeric status an in-stream error names, if it names one.
    pub fn status(&self) -> Option<u16> {
        self.code
            .as_ref()
            .and_then(Value::as_u64)
            .and_then(|code| u16::try_from(code).ok())
            .filter(|code| (400..600).contains(code))
    }

    /// `OpenAI API error 429 (rate_limit_exceeded): <the server's message>`.
    pub fn describe(&self, http_status: Option<u16>) -> String {
        let mut head = "OpenAI API error".to_string();
        if let Some(status) = http_status.or(self.status()) {
            head.push_str(&format!(" {status}"));
        }
        let code = self.code.as_ref().and_then(Value::as_str);
        if let Some(label) = code
            .or(self.kind.as_deref())
            .filter(|l| !l.trim().is_empty())
        {
            head.push_str(&format!(" ({})", one_line(label, 80)));
        }
        match &self.message {
            Some(message) if !message.trim().is_empty() => {
                format!("{head}: {}", one_line(message, MAX_MESSAGE_CHARS))
            }
            _ => head,
        }
    }
}

/// Whether a status is worth another try, as OpenAI's own SDKs judge it:
/// a timeout, a conflict, a rate limit, the server's own trouble.
pub fn is_retryable(code: u16) -> bool {
    matches!(code, 408 | 409 | 429) || code >= 500
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_and_vllm_bodies_read_well() {
        let openai = r#"{"error": {"message": "Incorrect API key provided: sk-abc.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}"#;
        assert_eq!(
            parse_error_body(openai).unwrap().describe(Some(401)),
            "OpenAI API error 401 (invalid_api_key): Incorrect API key provided: sk-abc."
        );
        let vllm = r#"{"object": "error", "error": {"message": "max_tokens is too large", "type": "BadRequestError", "param": null, "code": 400}}"#;
        assert_eq!(
            parse_error_body(vllm).unwrap().describe(None),
            "OpenAI API error 400 (BadRequestError): max_tokens is too large"
        );
        assert_eq!(
            parse_error_body(r#"{"error": "model 'x' not found"}"#)
                .unwrap()
                .describe(Some(404)),
            "OpenAI API error 404: model 'x' not found"
        );
        assert!(parse_error_body("<html>502</html>").is_none());
    }

    #[test]
    fn a_huge_message_is_quoted_not_dumped() {
        let error = OpenAiError {
            message: Some("x".repeat(70_000)),
            ..OpenAiError::default()
        };
        assert!(error.describe(Some(500)).chars().count() < 600);
    }

    #[test]
    fn rate_limits_and_server_errors_retry_client_errors_do_not() {
        for code in [408, 409, 429, 500, 502, 503] {
            assert!(is_retryable(code), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!is_retryable(code), "{code}");
        }
    }
}
