//! The Gemini provider: `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`,
//! streamed, over reqwest.
//!
//! The key travels only in the `x-goog-api-key` header, marked sensitive; it
//! is never put in a URL, a message or a log. Failed calls are retried
//! (429/500/503, at most `max_attempts` tries, backoff with jitter, honouring
//! `Retry-After` and `RetryInfo`) only while nothing of the call has been
//! forwarded. A stream that stalls past the idle timeout, drops, or sends
//! something malformed ends the call with an error, never a hang.
//!
//! The rules every model client shares come from `provider::http`: no
//! redirect is followed (the key stays with the host it was meant for),
//! every error message passes one redaction step (the key and the base
//! URL's userinfo become `[redacted]`), the base URL is shown without
//! userinfo or query, and one call is bounded in text, body and time.

mod accumulate;
pub mod errors;
mod read;
mod usage;
pub mod wire;

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use self::accumulate::StreamFault;
use self::errors::{is_retryable, parse_error_body};
use self::read::{ReadEnd, StreamReader};
use self::wire::build_request;
use super::http::{CallBudget, CallLimits, Redactor, Secret};
use super::{ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderError};

pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The exact message of SPEC §1.1 when there is no key.
pub const NO_KEY_MESSAGE: &str = "GEMINI_API_KEY is not configured on the API.";

#[derive(Clone)]
pub struct GeminiConfig {
    pub api_key: Option<String>,
    pub base_url: String,
    pub connect_timeout: Duration,
    /// The longest wait for the response to start or for its next bytes.
    pub idle_timeout: Duration,
    /// Tries per model call, the first included.
    pub max_attempts: u32,
    /// The first retry's delay before jitter; doubled for each further one.
    pub backoff: Duration,
    /// A server asking for a longer wait than this is not retried.
    pub max_retry_wait: Duration,
    /// The most text, body and time one call may take (`--max-call-time`).
    pub limits: CallLimits,
}

impl std::fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for GeminiConfig {
    fn default() -> GeminiConfig {
        GeminiConfig {
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_string(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_attempts: 3,
            backoff: Duration::from_secs(1),
            max_retry_wait: Duration::from_secs(60),
            limits: CallLimits::default(),
        }
    }
}

impl GeminiConfig {
    /// Key from `GEMINI_API_KEY`, base URL from `GEMINI_BASE_URL`.
    pub fn from_env() -> GeminiConfig {
        let non_empty = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        GeminiConfig {
            api_key: non_empty("GEMINI_API_KEY"),
            base_url: non_empty("GEMINI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
            ..GeminiConfig::default()
        }
    }
}

pub struct GeminiProvider {
    config: GeminiConfig,
    client: reqwest::Client,
    redactor: Redactor,
    /// Secrets too short to redact, named for one warning.
    unredactable: Vec<String>,
}

impl GeminiProvider {
    pub fn new(config: GeminiConfig) -> Result<GeminiProvider, ProviderError> {
        let client = super::http::client(config.connect_timeout).map_err(|error| {
            ProviderError::new(format!(
                "could not set up the HTTP client: {}",
                super::http::error_chain(error)
            ))
        })?;
        let userinfo = reqwest::Url::parse(config.base_url.trim())
            .map(|url| super::http::redact::url_userinfo(&url))
            .unwrap_or_default();
        let key = config.api_key.iter().map(|key| Secret {
            name: "GEMINI_API_KEY",
            value: key,
        });
        let url = userinfo.iter().map(|value| Secret {
            name: "the userinfo of GEMINI_BASE_URL",
            value,
        });
        let (redactor, unredactable) = Redactor::new(key.chain(url));
        Ok(GeminiProvider {
            config,
            client,
            redactor,
            unredactable,
        })
    }

    /// A warning for each secret too short to be redacted from messages.
    pub fn unredactable(&self) -> &[String] {
        &self.unredactable
    }

    fn url(&self, model: &str) -> Result<String, ProviderError> {
        let model = model.strip_prefix("models/").unwrap_or(model);
        let valid = !model.is_empty()
            && model
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !valid {
            return Err(ProviderError::new(format!(
                "`{model}` is not a valid Gemini model name"
            )));
        }
        Ok(format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            self.config.base_url.trim_end_matches('/')
        ))
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let key = self
            .config
            .api_key
            .as_deref()
            .ok_or_else(|| ProviderError::new(NO_KEY_MESSAGE))?;
        let mut value = HeaderValue::from_str(key.trim()).map_err(|_| {
            ProviderError::new(
                "GEMINI_API_KEY contains characters that cannot be sent in an HTTP header",
            )
        })?;
        value.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert("x-goog-api-key", value);
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Ok(headers)
    }
}

impl ModelProvider for GeminiProvider {
    fn name(&self) -> &'static str {
        "gemini"
    }

    /// The endpoint too (without credentials or query): a mock's or a
    /// proxy's answers are never served as Google's.
    fn identity(&self) -> String {
        let endpoint = match reqwest::Url::parse(&self.config.base_url) {
            Ok(mut url) => {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.set_query(None);
                url.set_fragment(None);
                url.to_string()
            }
            Err(_) => crate::digest::sha256_hex(&self.config.base_url),
        };
        format!("gemini@{endpoint}")
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        match &self.config.api_key {
            Some(_) => Ok(()),
            None => Err(ProviderError::new(NO_KEY_MESSAGE)),
        }
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let calls = call_stream(self.prepare(&request), cancel);
        // The one redaction step: every message a server could have
        // shaped passes here before anything shows or records it.
        let redactor = self.redactor.clone();
        Box::pin(calls.map(move |item| {
            // The usage of a call that stopped early stays with its error.
            item.map_err(|error| ProviderError {
                message: redactor.redact(&error.message).into_owned(),
                ..error
            })
        }))
    }
}

impl GeminiProvider {
    /// Everything one call sends, checked before anything is.
    fn prepare(&self, request: &ModelRequest) -> Result<Call, ProviderError> {
        let url = self.url(&request.model)?;
        let body = serde_json::to_vec(&build_request(request)).map_err(|error| {
            ProviderError::new(format!("could not encode the request: {error}"))
        })?;
        Ok(Call {
            client: self.client.clone(),
            config: self.config.clone(),
            base_shown: super::http::shown_url(&self.config.base_url),
            redactor: self.redactor.clone(),
            url,
            headers: self.headers()?,
            body,
        })
    }
}

/// One model call as a stream: sent (with retries while nothing was
/// forwarded), read, and ended by its budget's deadline if it runs long.
fn call_stream(
    prepared: Result<Call, ProviderError>,
    cancel: CancellationToken,
) -> impl futures_util::Stream<Item = Result<ModelEvent, ProviderError>> {
    async_stream::stream! {
        let call = match prepared {
            Ok(call) => call,
            Err(error) => {
                yield Err(error);
                return;
            }
        };
        let mut budget = CallBudget::start(call.config.limits);
        let timed_out = |budget: &CallBudget| Err(ProviderError::new(budget.timed_out(WHO)));
        let mut retries = 0;
        'attempts: loop {
            let sent = tokio::time::timeout_at(
                budget.deadline(),
                call.send_with_retries(&mut retries, &cancel),
            );
            let response = match sent.await {
                Ok(Ok(response)) => response,
                Ok(Err(error)) => {
                    yield Err(error);
                    return;
                }
                Err(_) => {
                    yield timed_out(&budget);
                    return;
                }
            };
            let mut reader = StreamReader::new(response);
            loop {
                let (events, end) = reader.next(&call, &mut budget, &cancel).await;
                for event in events {
                    yield Ok(event);
                }
                let fault = match end {
                    None => continue,
                    Some(ReadEnd::Cancelled) => return,
                    Some(ReadEnd::Finished) => {
                        yield std::mem::take(&mut reader.accumulator)
                            .finish(retries)
                            .map(ModelEvent::Done)
                            .map_err(ProviderError::from);
                        return;
                    }
                    Some(ReadEnd::Fault(fault)) => fault,
                };
                // Retried only while nothing of this call was shown.
                if fault.retryable && !reader.forwarded && retries + 1 < call.config.max_attempts {
                    let wait = call.wait_before_retry(retries + 1, None, &cancel);
                    match tokio::time::timeout_at(budget.deadline(), wait).await {
                        Ok(Ok(())) => {
                            retries += 1;
                            continue 'attempts;
                        }
                        Ok(Err(refused)) => {
                            yield Err(ProviderError::new(format!("{} ({refused})", fault.message)));
                            return;
                        }
                        Err(_) => {
                            yield timed_out(&budget);
                            return;
                        }
                    }
                }
                // The usage the stream reported before it was cut stays
                // with the error; what was billed is unknown (`partial`).
                let partial = match std::mem::take(&mut reader.accumulator).finish(retries) {
                    Ok(summary) => Some(summary),
                    Err(end) => end.summary.map(|summary| *summary),
                };
                yield Err(ProviderError::new(fault.message).with_summary(partial.map(|mut summary| {
                    summary.partial = true;
                    summary
                })));
                return;
            }
        }
    }
}

/// How messages name the server.
pub(super) const WHO: &str = "Gemini";

/// Everything one model call needs, moved into its stream.
struct Call {
    client: reqwest::Client,
    pub(super) config: GeminiConfig,
    /// The base URL as messages show it: no userinfo, no query.
    base_shown: String,
    /// Applied to error bodies and stream events as they arrive, before
    /// anything quotes or cuts them.
    pub(super) redactor: Redactor,
    url: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Why a request got no usable response.
struct SendFailure {
    message: String,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Call {
    /// Sends the request until a 2xx response comes back, retrying what is
    /// retryable (429, 500, 503) after the server's delay or a backoff, at
    /// most `max_attempts` tries in all; `retries` counts the retries made.
    async fn send_with_retries(
        &self,
        retries: &mut u32,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ProviderError> {
        loop {
            let attempt = *retries + 1;
            let failure = match self.send(cancel).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= self.config.max_attempts {
                return Err(ProviderError::new(failure.message));
            }
            if let Err(refused) = self
                .wait_before_retry(attempt, failure.retry_after, cancel)
                .await
            {
                return Err(ProviderError::new(format!(
                    "{} ({refused})",
                    failure.message
                )));
            }
            *retries += 1;
        }
    }

    /// Sends the request and returns a 2xx response, or why not.
    async fn send(&self, cancel: &CancellationToken) -> Result<reqwest::Response, SendFailure> {
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(self.body.clone())
            .send();
        let response = tokio::select! {
            _ = cancel.cancelled() => return Err(SendFailure { message: "cancelled".into(), retryable: false, retry_after: None }),
            response = tokio::time::timeout(self.config.idle_timeout, request) => response,
        };
        let response = match response {
            Err(_) => return Err(self.fail(self.idle_fault().message)),
            Ok(Err(error)) => {
                return Err(self.fail(format!(
                    "could not reach Gemini at {}: {}",
                    self.base_shown,
                    super::http::error_chain(error)
                )));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if let Some(message) = super::http::redirect_message(WHO, &response) {
            return Err(self.fail(message));
        }
        let header_delay = super::http::retry_after(response.headers());
        let body =
            super::http::read_error_body(response, self.config.idle_timeout, &self.redactor).await;
        let error = parse_error_body(&body);
        let message = match &error {
            Some(error) => error.describe(Some(status.as_u16())),
            None => format!(
                "Gemini API error: HTTP {}{}",
                status,
                if body.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", excerpt(&body))
                }
            ),
        };
        Err(SendFailure {
            message,
            retryable: is_retryable(i64::from(status.as_u16())),
            retry_after: header_delay.or_else(|| error.and_then(|e| e.retry_delay())),
        })
    }

    fn fail(&self, message: String) -> SendFailure {
        SendFailure {
            message,
            retryable: false,
            retry_after: None,
        }
    }

    pub(super) fn idle_fault(&self) -> StreamFault {
        StreamFault {
            message: format!(
                "Gemini's stream stalled: nothing arrived for {} s (the idle timeout)",
                self.config.idle_timeout.as_secs_f64()
            ),
            retryable: false,
        }
    }

    /// Waits before try `attempt + 1`: the server's delay if it gave one,
    /// else exponential backoff with jitter.
    async fn wait_before_retry(
        &self,
        attempt: u32,
        server_delay: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<(), RetryRefused> {
        let delay = match server_delay {
            Some(delay) if delay > self.config.max_retry_wait => {
                return Err(RetryRefused::TooLong(too_long_to_wait(
                    delay,
                    self.config.max_retry_wait,
                )));
            }
            Some(delay) => delay,
            None => super::http::backoff_delay(self.config.backoff, attempt),
        };
        tokio::select! {
            _ = cancel.cancelled() => Err(RetryRefused::Cancelled),
            _ = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

/// Why a retryable failure was not retried.
#[derive(Debug, thiserror::Error)]
enum RetryRefused {
    #[error("{0}")]
    TooLong(String),
    #[error("cancelled")]
    Cancelled,
}

/// Why a retry is not attempted. The delay is the server's and may be
/// absurd (`1e20s` saturates to `Duration::MAX`): say "over a day" rather
/// than print a 20-digit number of seconds.
fn too_long_to_wait(delay: Duration, cap: Duration) -> String {
    let asked = if delay > Duration::from_secs(86_400) {
        "over a day".to_string()
    } else {
        format!("{:.1} s", delay.as_secs_f64())
    };
    format!(
        "Gemini asked to wait {asked} before retrying, longer than the {} s allowed",
        cap.as_secs()
    )
}

fn excerpt(body: &str) -> String {
    let text: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    if text.chars().count() > 200 {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_redacted_from_debug_output() {
        let config = GeminiConfig {
            api_key: Some("sk-sentinel".into()),
            ..GeminiConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk-sentinel"));
        let provider = GeminiProvider::new(config).unwrap();
        assert!(
            !provider
                .url("gemini-3.1-flash-lite")
                .unwrap()
                .contains("sk-sentinel")
        );
        assert!(provider.url("../../x?key=1").is_err());
    }
}
