//! Sending a turn's request to the deployment: the in-flight cap, retries
//! only before the stream starts (a refused connection, 429 or a 5xx —
//! nothing of the turn has been shown yet, so trying again is invisible),
//! and error statuses turned into messages that say what to do. A redirect
//! is never followed (`provider::http`): the claim and the token stay with
//! the deployment they were meant for.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::WorkerClient;
use crate::chat::wire::ErrorBody;
use crate::provider::http;

/// Why no stream came back.
#[derive(Debug)]
pub enum SendFailure {
    Cancelled,
    /// The message of the turn's `error` event.
    Failed(String),
}

/// A response whose event stream may be read, and the in-flight slot it holds.
pub struct Accepted {
    pub response: reqwest::Response,
    pub permit: OwnedSemaphorePermit,
}

/// One attempt's failure, and whether another may follow.
struct Attempt {
    message: String,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl WorkerClient {
    /// Sends `body` until a streaming 2xx response comes back, at most
    /// `max_attempts` tries. The in-flight slot is held from each try's send
    /// to the end of its stream, and given up while waiting to retry.
    pub(super) async fn send(
        &self,
        body: &[u8],
        cancel: &CancellationToken,
    ) -> Result<Accepted, SendFailure> {
        let mut retries = 0;
        loop {
            let permit = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(SendFailure::Cancelled),
                permit = self.in_flight.clone().acquire_owned() => permit
                    .map_err(|_| SendFailure::Failed("the worker client was shut down".into()))?,
            };
            let attempt = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(SendFailure::Cancelled),
                attempt = self.attempt(body) => attempt,
            };
            let failure = match attempt {
                Ok(response) => {
                    return Ok(Accepted { response, permit });
                }
                Err(failure) => failure,
            };
            drop(permit);
            if !failure.retryable || retries + 1 >= self.config.max_attempts {
                let tries = if retries > 0 {
                    format!(" (after {} tries)", retries + 1)
                } else {
                    String::new()
                };
                return Err(SendFailure::Failed(format!("{}{tries}", failure.message)));
            }
            let delay = match failure.retry_after {
                Some(delay) if delay > self.config.max_retry_wait => {
                    return Err(SendFailure::Failed(format!(
                        "{} (it asked to wait {:.0} s before retrying, longer than the {} s allowed)",
                        failure.message,
                        delay.as_secs_f64().min(1e9),
                        self.config.max_retry_wait.as_secs()
                    )));
                }
                Some(delay) => delay,
                None => http::backoff_delay(self.config.backoff, retries + 1),
            };
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(SendFailure::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            retries += 1;
        }
    }

    /// One try: a 2xx event stream, or why not.
    async fn attempt(&self, body: &[u8]) -> Result<reqwest::Response, Attempt> {
        let request = self
            .http
            .post(self.config.endpoint.url().clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send();
        let shown = self.config.endpoint.shown();
        let response = match tokio::time::timeout(self.config.idle_timeout, request).await {
            Err(_) => {
                return Err(Attempt::final_(format!(
                    "the deployment at {shown} did not answer within {} s (--idle-timeout)",
                    self.config.idle_timeout.as_secs_f64()
                )));
            }
            Ok(Err(error)) => {
                // A refused connection: nothing reached the server, so a retry
                // cannot run the turn twice.
                let retryable = error.is_connect();
                return Err(Attempt {
                    message: format!(
                        "could not reach the deployment at {shown}: {}",
                        http::error_chain(error)
                    ),
                    retryable,
                    retry_after: None,
                });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return check_event_stream(response, shown);
        }
        if let Some(message) =
            http::redirect_message(&format!("the deployment at {shown}"), &response)
        {
            return Err(Attempt::final_(message));
        }
        let retry_after = http::retry_after(response.headers());
        let body = http::read_error_body(response, self.config.idle_timeout, &self.redactor).await;
        Err(Attempt {
            message: status_message(status, &body, shown),
            retryable: status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error(),
            retry_after,
        })
    }
}

impl Attempt {
    fn final_(message: String) -> Attempt {
        Attempt {
            message,
            retryable: false,
            retry_after: None,
        }
    }
}

/// A 2xx that is not an event stream is a wrong endpoint (a login page, a
/// health check), said plainly rather than as a parse error later.
fn check_event_stream(
    response: reqwest::Response,
    shown: &str,
) -> Result<reqwest::Response, Attempt> {
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
    Err(Attempt::final_(format!(
        "the deployment at {shown} answered HTTP {} with `{}`, not an event stream (is the endpoint its /api/chat?)",
        response.status().as_u16(),
        crate::text::quote(content_type)
    )))
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
