//! The OpenAI-compatible provider: `POST {OPENAI_BASE_URL}/chat/completions`,
//! streamed — Chat Completions' conversions over the shared transport
//! (`provider::transport`), for OpenAI, Azure OpenAI (v1), vLLM, Ollama
//! (`/v1`), llama.cpp's server and the rest (docs/providers.md).
//!
//! The key (`OPENAI_API_KEY`, from the environment only) travels only in
//! `Authorization: Bearer`, marked sensitive, and only when there is one: a
//! local server may need none; api.openai.com itself always does. What is
//! OpenAI's here: the request JSON (`wire.rs`), its chunks as events and
//! its usage (`decode.rs`), its error bodies and which statuses retry
//! (`errors.rs`), a judge's reply schema in strict form (`schema.rs`). The
//! transport does the rest, as for Gemini (`transport::call`).

pub mod decode;
pub mod errors;
pub mod schema;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use self::decode::ChunkDecoder;
use self::errors::{is_retryable, parse_error_body};
use super::endpoint::Endpoint;
use super::transport::HttpSettings;
use super::transport::call::{Call, call_stream};
use super::transport::{CallLimits, Failure, Peer, Protocol, Secret, Transport};
use super::{ErrorKind, ModelProvider, ModelRequest, ModelStream, ProviderError, ProviderKind};
use crate::models::ModelTable;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// When the default server is asked without a key.
pub const NO_KEY_MESSAGE: &str = "OPENAI_API_KEY is not set: api.openai.com needs it (export OPENAI_API_KEY=…), or point OPENAI_BASE_URL at a server that needs none";

#[derive(Clone)]
pub struct OpenAiConfig {
    /// Its base URL up to and including the API's version segment: `…/v1`.
    pub endpoint: Endpoint,
    /// Where the key came from, for messages (`OPENAI_API_KEY`).
    pub key_name: &'static str,
    /// Timeouts and retries.
    pub http: HttpSettings,
    /// The most text, body and time one call may take (`--max-call-time`).
    pub limits: CallLimits,
    /// How each model takes its output cap and reasoning level.
    pub models: Arc<ModelTable>,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("endpoint", &self.endpoint)
            .field("http", &self.http)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for OpenAiConfig {
    fn default() -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::new(DEFAULT_BASE_URL, None),
            key_name: "OPENAI_API_KEY",
            http: HttpSettings::default(),
            limits: CallLimits::default(),
            models: ModelTable::shipped(),
        }
    }
}

fn non_empty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl OpenAiConfig {
    /// Key from `OPENAI_API_KEY`, base URL from `OPENAI_BASE_URL`.
    pub fn from_env() -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::new(
                non_empty("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
                non_empty("OPENAI_API_KEY"),
            ),
            ..OpenAiConfig::default()
        }
    }

    /// A judge's: key from `PROMPTLAB_JUDGE_API_KEY`, else `OPENAI_API_KEY`;
    /// base URL `base_url` when given, else `OPENAI_BASE_URL`.
    pub fn judge_from_env(base_url: Option<&str>) -> OpenAiConfig {
        let (api_key, key_name) = match non_empty("PROMPTLAB_JUDGE_API_KEY") {
            Some(key) => (Some(key), "PROMPTLAB_JUDGE_API_KEY"),
            None => (non_empty("OPENAI_API_KEY"), "OPENAI_API_KEY"),
        };
        let from_env = OpenAiConfig::from_env();
        let base_url = base_url.map_or(from_env.endpoint.base_url.clone(), str::to_string);
        OpenAiConfig {
            endpoint: Endpoint::new(base_url, api_key),
            key_name,
            ..from_env
        }
    }

    /// Whether the server is OpenAI's own, which always needs a key.
    fn is_openai(&self) -> bool {
        reqwest::Url::parse(self.endpoint.base_url.trim())
            .ok()
            .and_then(|url| {
                url.host_str()
                    .map(|host| host.eq_ignore_ascii_case("api.openai.com"))
            })
            .unwrap_or(false)
    }
}

pub struct OpenAiProvider {
    config: OpenAiConfig,
    transport: Transport,
    url: Result<reqwest::Url, ProviderError>,
    /// Secrets too short to redact, named for one warning.
    unredactable: Vec<String>,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<OpenAiProvider, ProviderError> {
        let in_url = reqwest::Url::parse(config.endpoint.base_url.trim())
            .map(|url| super::transport::redact::url_secrets(&url, "OPENAI_BASE_URL"))
            .unwrap_or_default();
        let key = config.endpoint.api_key.iter().map(|key| Secret {
            name: config.key_name,
            value: key,
        });
        let url = in_url.iter().map(|(name, value)| Secret { name, value });
        let who = if config.is_openai() {
            "OpenAI"
        } else {
            "the OpenAI-compatible server"
        };
        let peer = Peer {
            name: who,
            shown: config.endpoint.to_string(),
            redirect_name: format!("{who} at {}", config.endpoint),
        };
        let (transport, unredactable) =
            Transport::connect(&config.http, key.chain(url), peer, false)
                .map_err(|error| ProviderError::of(ErrorKind::Invalid, error.to_string()))?;
        let url = endpoint(&config.endpoint.base_url);
        Ok(OpenAiProvider {
            config,
            transport,
            url,
            unredactable,
        })
    }

    /// A warning for each secret too short to be redacted from messages.
    pub fn unredactable(&self) -> &[String] {
        &self.unredactable
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(key) = self.config.endpoint.api_key.as_deref() {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                    ProviderError::of(
                        ErrorKind::Invalid,
                        format!(
                            "{} contains characters that cannot be sent in an HTTP header",
                            self.config.key_name
                        ),
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// Everything one call sends, checked before anything is.
    fn prepare(&self, request: &ModelRequest) -> Result<Call, ProviderError> {
        self.check_ready()?;
        check_model(&request.model)?;
        let url = self.url.clone()?;
        let body = serde_json::to_vec(&wire::build_request(request, &self.config.models)).map_err(
            |error| {
                ProviderError::of(
                    ErrorKind::Invalid,
                    format!("could not encode the request: {error}"),
                )
            },
        )?;
        Ok(Call {
            transport: self.transport.clone(),
            protocol: Arc::new(OpenAiAnswers),
            limits: self.config.limits,
            url,
            headers: self.headers()?,
            body: body.into(),
            lane: self.transport.throttle.lane(&request.model),
        })
    }
}

/// `{base}/chat/completions`, for an http(s) base URL without a query.
fn endpoint(text: &str) -> Result<reqwest::Url, ProviderError> {
    let invalid =
        |why: String| ProviderError::of(ErrorKind::Invalid, format!("OPENAI_BASE_URL {why}"));
    let url = reqwest::Url::parse(text.trim())
        .map_err(|error| invalid(format!("is not a URL: {error}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "must be http or https, not `{}`",
            crate::text::quote(url.scheme())
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            "must have no query or fragment: it ends at the API's version, like https://api.openai.com/v1".to_string(),
        ));
    }
    let endpoint = format!("{}/chat/completions", url.as_str().trim_end_matches('/'));
    reqwest::Url::parse(&endpoint).map_err(|error| invalid(format!("is not a URL: {error}")))
}

/// A model name goes in the body, so any name a server gives is fine
/// (`llama3.1:8b`, `Qwen/Qwen3-8B`) as long as it is one printable line.
fn check_model(model: &str) -> Result<(), ProviderError> {
    let valid = !model.trim().is_empty()
        && model.chars().count() <= 256
        && !model.chars().any(char::is_control);
    if valid {
        Ok(())
    } else {
        Err(ProviderError::of(
            ErrorKind::Invalid,
            format!(
                "`{}` is not a valid model name (one line, at most 256 characters)",
                crate::text::quote(model)
            ),
        ))
    }
}

impl ModelProvider for OpenAiProvider {
    fn throttle(&self) -> Option<std::sync::Arc<crate::provider::transport::Throttle>> {
        Some(std::sync::Arc::clone(&self.transport.throttle))
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn models(&self) -> Arc<ModelTable> {
        self.config.models.clone()
    }

    /// The endpoint too (without credentials or query): answers of one
    /// server are never served as another's from the model-call cache.
    fn identity(&self) -> String {
        let endpoint = super::transport::endpoint_identity(self.config.endpoint.base_url.trim());
        format!("openai@{endpoint}")
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        if self.config.endpoint.api_key.is_none() && self.config.is_openai() {
            return Err(ProviderError::of(ErrorKind::NotReady, NO_KEY_MESSAGE));
        }
        Ok(())
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let calls = call_stream(self.prepare(&request), ChunkDecoder::new, cancel);
        self.transport.redacted(calls)
    }
}

/// What OpenAI-compatible error statuses mean.
struct OpenAiAnswers;

impl Protocol for OpenAiAnswers {
    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &str,
    ) -> Failure {
        let code = status.as_u16();
        let parsed = parse_error_body(body);
        // OpenAI's word for a spent balance or monthly limit: not a rate.
        let spent = parsed.as_ref().is_some_and(|error| {
            error.kind.as_deref() == Some("insufficient_quota")
                || error.code.as_ref().and_then(serde_json::Value::as_str)
                    == Some("insufficient_quota")
        });
        let message = match parsed {
            Some(error) => error.describe(Some(code)),
            None if body.trim().is_empty() => format!("OpenAI API error {code}"),
            None => format!(
                "OpenAI API error {code}: {}",
                crate::text::one_line(body, 200)
            ),
        };
        let (kind, message) = match spent {
            true => (
                ErrorKind::Quota { code },
                format!("{message} (the quota `insufficient_quota` is spent: not retried)"),
            ),
            false => (
                ErrorKind::Status {
                    code,
                    retryable: is_retryable(code),
                },
                message,
            ),
        };
        Failure {
            error: ProviderError::of(kind, message),
            retry_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insufficient_quota_is_a_quota_and_rate_limit_exceeded_a_rate() {
        let quota = OpenAiAnswers.status_failure(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            r#"{"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}"#,
        );
        assert_eq!(quota.error.kind, ErrorKind::Quota { code: 429 });
        assert!(
            quota
                .error
                .message
                .contains("`insufficient_quota` is spent"),
            "{}",
            quota.error.message
        );
        let rate = OpenAiAnswers.status_failure(
            StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(1)),
            r#"{"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}"#,
        );
        assert!(rate.error.retryable());
    }

    #[test]
    fn base_urls_are_checked_and_the_key_never_shows() {
        let config = OpenAiConfig {
            endpoint: Endpoint::new(DEFAULT_BASE_URL, Some("sk-sentinel-0123456789".into())),
            ..OpenAiConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk-sentinel"));
        let parse = endpoint;
        assert_eq!(
            parse("http://127.0.0.1:11434/v1/").unwrap().as_str(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert!(parse("ftp://x/v1").is_err());
        assert!(parse("https://x/v1?api-version=1").is_err());
        assert!(check_model("llama3.1:8b").is_ok());
        assert!(check_model("Qwen/Qwen3-8B").is_ok());
        assert!(check_model("a\nb").is_err());
        assert!(check_model(" ").is_err());
    }

    #[test]
    fn only_openai_itself_needs_a_key() {
        let openai = OpenAiProvider::new(OpenAiConfig::default()).unwrap();
        assert_eq!(openai.check_ready().unwrap_err().kind, ErrorKind::NotReady);
        let local = OpenAiProvider::new(OpenAiConfig {
            endpoint: Endpoint::new("http://127.0.0.1:8000/v1", None),
            ..OpenAiConfig::default()
        })
        .unwrap();
        assert!(local.check_ready().is_ok());
        assert_eq!(local.identity(), "openai@http://127.0.0.1:8000/v1");
    }
}
