//! The worker protocol's conversions for the shared transport
//! (`provider::transport`): what a deployment's error statuses mean and
//! say (429 and any 5xx retry; 400, 401 and 403 say what to do), a 2xx that
//! is not an event stream, and the headers every request carries. Retries,
//! redirects, redaction and the body reader are the transport's, as for
//! every model client.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio::sync::OwnedSemaphorePermit;

use crate::chat::wire::ErrorBody;
use crate::provider::transport::{Failure, Protocol};
use crate::provider::{ErrorKind, ProviderError};

/// A response whose event stream may be read, and the in-flight slot it holds.
pub struct Accepted {
    pub response: reqwest::Response,
    pub permit: OwnedSemaphorePermit,
}

/// What a deployment's answers mean; `shown` is its endpoint as shown.
pub struct WorkerAnswers<'a> {
    pub shown: &'a str,
}

impl Protocol for WorkerAnswers<'_> {
    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &str,
    ) -> Failure {
        let kind = ErrorKind::Status {
            code: status.as_u16(),
            retryable: status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error(),
        };
        Failure {
            error: ProviderError::of(kind, status_message(status, body, self.shown)),
            retry_after,
        }
    }

    /// A 2xx that is not an event stream is a wrong endpoint (a login page,
    /// a health check), said plainly rather than as a parse error later.
    fn check_success(&self, response: reqwest::Response) -> Result<reqwest::Response, Failure> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        if content_type
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            return Ok(response);
        }
        let message = format!(
            "the deployment at {} answered HTTP {} with `{}`, not an event stream (is the endpoint its /api/chat?)",
            self.shown,
            response.status().as_u16(),
            crate::text::quote(content_type)
        );
        Err(ProviderError::of(ErrorKind::Malformed, message).into())
    }
}

/// What an error status means, with the server's own message when its body
/// is the Worker's `{"error": …}`.
pub fn status_message(status: StatusCode, body: &str, shown: &str) -> String {
    let said = match serde_json::from_str::<ErrorBody>(body) {
        Ok(parsed) => format!(": {}", crate::text::quote(&parsed.error)),
        Err(_) if body.trim().is_empty() => String::new(),
        Err(_) => format!(": {}", crate::text::quote(&one_line(body))),
    };
    let code = status.as_u16();
    match code {
        400 => format!(
            "the deployment at {shown} rejected the request (HTTP 400){said} — its request rules differ from this checkout's"
        ),
        401 | 403 => format!(
            "the deployment at {shown} refused the request (HTTP {code}){said} — check PROMPTLAB_ENDPOINT_TOKEN"
        ),
        _ => format!("the deployment at {shown} answered HTTP {code}{said}"),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The headers every request carries; the token is marked sensitive so
/// that no debug output of the request shows it.
pub fn headers(token: Option<&str>) -> Result<HeaderMap, &'static str> {
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    if let Some(token) = token {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| "PROMPTLAB_ENDPOINT_TOKEN contains characters that cannot be sent in an HTTP header")?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(headers)
}
