//! The Gemini provider: `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`,
//! streamed — Gemini's conversions over the shared transport
//! (`provider::transport`).
//!
//! The key travels only in the `x-goog-api-key` header, marked sensitive; it
//! is never put in a URL, a message or a log. What is Gemini's here: the
//! request JSON (`wire.rs`), its chunks as events (`accumulate.rs`,
//! `usage.rs`, the transport's `Decoder`), Google's error bodies and which
//! of their statuses retry (429/500/503, honouring `RetryInfo`;
//! `errors.rs`). The transport does the rest (`transport::call`: an
//! in-stream error before any output retried like a status), as for every model client: retries (a refused
//! connection included) with notices, the SSE body under the idle timeout
//! and the call's bounds, no redirects, redaction of the key and the base
//! URL's userinfo from every message, URLs shown without userinfo or query.

mod accumulate;
pub mod errors;
pub mod schema;
mod usage;
pub mod wire;

use std::sync::Arc;

use crate::models::ModelTable;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use self::accumulate::CallAccumulator;
use self::errors::{is_retryable, parse_error_body};
use self::wire::build_request;
use super::endpoint::Endpoint;
use super::transport::HttpSettings;
use super::transport::call::{Call, call_stream};
use super::transport::{CallLimits, Failure, Peer, Protocol, Secret, Transport};
use super::{ErrorKind, ModelProvider, ModelRequest, ModelStream, ProviderError};

pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The exact message of SPEC §1.1 when there is no key.
pub const NO_KEY_MESSAGE: &str = "GEMINI_API_KEY is not configured on the API.";

#[derive(Clone)]
pub struct GeminiConfig {
    pub endpoint: Endpoint,
    /// Timeouts and retries.
    pub http: HttpSettings,
    /// The most text, body and time one call may take (`--max-call-time`).
    pub limits: CallLimits,
    /// How each model takes its thinking level (`--models` over the shipped).
    pub models: Arc<ModelTable>,
}

impl std::fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("endpoint", &self.endpoint)
            .field("http", &self.http)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for GeminiConfig {
    fn default() -> GeminiConfig {
        GeminiConfig {
            endpoint: Endpoint::new(DEFAULT_BASE_URL, None),
            http: HttpSettings::default(),
            limits: CallLimits::default(),
            models: ModelTable::shipped(),
        }
    }
}

impl GeminiConfig {
    /// Key from `GEMINI_API_KEY`, base URL from `GEMINI_BASE_URL`.
    pub fn from_env() -> GeminiConfig {
        let non_empty = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        GeminiConfig {
            endpoint: Endpoint::new(
                non_empty("GEMINI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
                non_empty("GEMINI_API_KEY"),
            ),
            ..GeminiConfig::default()
        }
    }
}

pub struct GeminiProvider {
    config: GeminiConfig,
    transport: Transport,
    /// Secrets too short to redact, named for one warning.
    unredactable: Vec<String>,
}

impl GeminiProvider {
    pub fn new(config: GeminiConfig) -> Result<GeminiProvider, ProviderError> {
        let in_url = reqwest::Url::parse(config.endpoint.base_url.trim())
            .map(|url| super::transport::redact::url_secrets(&url, "GEMINI_BASE_URL"))
            .unwrap_or_default();
        let key = config.endpoint.api_key.iter().map(|key| Secret {
            name: "GEMINI_API_KEY",
            value: key,
        });
        let url = in_url.iter().map(|(name, value)| Secret { name, value });
        let peer = Peer {
            name: WHO,
            shown: config.endpoint.to_string(),
            redirect_name: WHO.to_string(),
        };
        let (transport, unredactable) =
            Transport::connect(&config.http, key.chain(url), peer, false)
                .map_err(|error| ProviderError::of(ErrorKind::Invalid, error.to_string()))?;
        Ok(GeminiProvider {
            config,
            transport,
            unredactable,
        })
    }

    /// A warning for each secret too short to be redacted from messages.
    pub fn unredactable(&self) -> &[String] {
        &self.unredactable
    }

    /// The model's endpoint, checked and parsed.
    fn url(&self, model: &str) -> Result<reqwest::Url, ProviderError> {
        reqwest::Url::parse(&self.endpoint(model)?).map_err(|error| {
            ProviderError::of(
                ErrorKind::Invalid,
                format!("GEMINI_BASE_URL is not a URL: {error}"),
            )
        })
    }

    fn endpoint(&self, model: &str) -> Result<String, ProviderError> {
        let model = model.strip_prefix("models/").unwrap_or(model);
        let valid = !model.is_empty()
            && model
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !valid {
            return Err(ProviderError::of(
                ErrorKind::Invalid,
                format!("`{model}` is not a valid Gemini model name"),
            ));
        }
        Ok(format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            self.config.endpoint.base_url.trim_end_matches('/')
        ))
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let key = self
            .config
            .endpoint
            .api_key
            .as_deref()
            .ok_or_else(not_ready)?;
        let mut value = HeaderValue::from_str(key.trim()).map_err(|_| {
            ProviderError::of(
                ErrorKind::Invalid,
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
    fn throttle(&self) -> Option<std::sync::Arc<crate::provider::transport::Throttle>> {
        Some(std::sync::Arc::clone(&self.transport.throttle))
    }

    fn kind(&self) -> crate::provider::ProviderKind {
        crate::provider::ProviderKind::Gemini
    }

    fn models(&self) -> Arc<ModelTable> {
        self.config.models.clone()
    }

    /// The endpoint too (without credentials or query): a mock's or a
    /// proxy's answers are never served as Google's.
    fn identity(&self) -> String {
        let endpoint = super::transport::endpoint_identity(&self.config.endpoint.base_url);
        format!("gemini@{endpoint}")
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        match &self.config.endpoint.api_key {
            Some(_) => Ok(()),
            None => Err(not_ready()),
        }
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let calls = call_stream(self.prepare(&request), CallAccumulator::new, cancel);
        self.transport.redacted(calls)
    }
}

impl GeminiProvider {
    /// Everything one call sends, checked before anything is.
    fn prepare(&self, request: &ModelRequest) -> Result<Call, ProviderError> {
        let url = self.url(&request.model)?;
        let body =
            serde_json::to_vec(&build_request(request, &self.config.models)).map_err(|error| {
                ProviderError::of(
                    ErrorKind::Invalid,
                    format!("could not encode the request: {error}"),
                )
            })?;
        Ok(Call {
            transport: self.transport.clone(),
            protocol: std::sync::Arc::new(GeminiAnswers),
            limits: self.config.limits,
            url,
            headers: self.headers()?,
            body: body.into(),
            lane: self.transport.throttle.lane(&request.model),
        })
    }
}

/// The error of SPEC §1.1 when there is no key.
fn not_ready() -> ProviderError {
    ProviderError::of(ErrorKind::NotReady, NO_KEY_MESSAGE)
}

/// How messages name the server.
pub(super) const WHO: &str = "Gemini";

/// What Google's error statuses mean.
struct GeminiAnswers;

impl Protocol for GeminiAnswers {
    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &str,
    ) -> Failure {
        let error = parse_error_body(body);
        let message = match &error {
            Some(error) => error.describe(Some(status.as_u16())),
            None => format!(
                "Gemini API error: HTTP {}{}",
                status,
                if body.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", excerpt(body))
                }
            ),
        };
        let code = status.as_u16();
        let quota = error.as_ref().and_then(|e| e.spent_quota());
        let (kind, message) = match quota {
            Some(quota) => (
                ErrorKind::Quota { code },
                format!("{message} (quota `{quota}` is spent: not retried)"),
            ),
            None => (
                ErrorKind::Status {
                    code,
                    retryable: is_retryable(i64::from(code)),
                },
                message,
            ),
        };
        Failure {
            error: ProviderError::of(kind, message),
            retry_after: retry_after.or_else(|| error.and_then(|e| e.retry_delay())),
        }
    }
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
    fn a_spent_daily_quota_is_a_quota_and_a_per_minute_one_is_a_rate() {
        let body = |quota_id: &str| {
            format!(
                r#"{{"error": {{"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
                "details": [{{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "{quota_id}"}}]}},
                {{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41s"}}]}}}}"#
            )
        };
        let daily = GeminiAnswers.status_failure(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            &body("GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
        );
        assert_eq!(daily.error.kind, ErrorKind::Quota { code: 429 });
        assert!(!daily.error.retryable());
        assert!(
            daily.error.message.ends_with(
                "(quota `GenerateRequestsPerDayPerProjectPerModel-FreeTier` is spent: not retried)"
            ),
            "{}",
            daily.error.message
        );
        let per_minute = GeminiAnswers.status_failure(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            &body("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        );
        assert!(per_minute.error.retryable(), "{:?}", per_minute.error.kind);
        assert_eq!(per_minute.retry_after, Some(Duration::from_secs(41)));
    }

    #[test]
    fn the_key_is_redacted_from_debug_output() {
        let config = GeminiConfig {
            endpoint: Endpoint::new(DEFAULT_BASE_URL, Some("sk-sentinel".into())),
            ..GeminiConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk-sentinel"));
        let in_url = Endpoint::new("https://u:url-sentinel@example.com/?key=q-sentinel", None);
        let shown = format!(
            "{:?}",
            GeminiConfig {
                endpoint: in_url,
                ..GeminiConfig::default()
            }
        );
        assert!(
            !shown.contains("url-sentinel") && !shown.contains("q-sentinel"),
            "{shown}"
        );
        let provider = GeminiProvider::new(config).unwrap();
        assert!(
            !provider
                .url("gemini-3.1-flash-lite")
                .unwrap()
                .as_str()
                .contains("sk-sentinel")
        );
        assert!(provider.url("../../x?key=1").is_err());
    }

    #[test]
    fn a_base_url_that_is_not_a_url_is_said_to_be_one_before_anything_is_sent() {
        let config = GeminiConfig {
            endpoint: Endpoint::new("http://[::1", Some("sk-sentinel-0123456789".into())),
            ..GeminiConfig::default()
        };
        let provider = GeminiProvider::new(config).unwrap();
        let error = provider.url("gemini-3.1-flash-lite").unwrap_err();
        assert_eq!(error.kind, ErrorKind::Invalid);
        assert_eq!(
            error.to_string(),
            "GEMINI_BASE_URL is not a URL: invalid IPv6 address"
        );
    }
}
