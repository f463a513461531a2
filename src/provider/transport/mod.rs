//! The one HTTP transport every model and deployment client streams over
//! (SPEC §10): a protocol adapter (Gemini, the worker) supplies only its
//! conversions — the request it sends, what an error status means, whether
//! a 2xx body is its stream, and what each SSE item decodes to — and this
//! module does the rest, each rule once:
//!
//! - the client and its no-redirect policy, URLs shown without userinfo or
//!   query, transport errors without URLs (`client.rs`);
//! - redaction of known secrets before anything quotes what a server sent
//!   (`redact.rs`);
//! - the bounds on one call: text, body and `--max-call-time` (`bounds.rs`);
//! - one retry policy with its notices (`retry.rs`), driven here by
//!   `Transport::send_with_retries`;
//! - how many calls go to one model at once, learnt from its 429s
//!   (`throttle.rs`);
//! - one SSE body reader: idle timeout, caps, cancellation (`body.rs`);
//! - one streamed model call over them, a protocol's `Decoder` turning its
//!   items into events (`call.rs`).

pub mod body;
pub mod bounds;
pub mod call;
pub mod client;
pub mod redact;
pub mod retry;
pub mod throttle;

pub use body::{BodyRead, SseBody};
pub use bounds::{CallBudget, CallLimits};
pub use client::{client, endpoint_identity, error_chain, redirect_message, shown, shown_url};
pub use redact::{Redactor, Secret};
pub use retry::{Decision, Failure, RetryNotice, RetryPolicy, Tries, backoff_delay, retry_after};
pub use throttle::{Announcer, Lane, RateLimits, Slot, Throttle};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use crate::provider::{CallSummary, ErrorKind, ModelEvent, ProviderError};

/// How long a rate-limited call may wait in all, by default (SPEC §14).
pub const DEFAULT_MAX_RATE_WAIT: Duration = Duration::from_secs(600);

/// The most of an error response's body that is read.
pub const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How messages name the server a transport talks to.
#[derive(Debug, Clone)]
pub struct Peer {
    /// `Gemini`, `the deployment`: `{name}'s stream stalled`.
    pub name: &'static str,
    /// Its URL as it may be shown (`client::shown_url`).
    pub shown: String,
    /// How a 3xx names it: `Gemini`, `the deployment at {url}`.
    pub redirect_name: String,
}

/// What a protocol says about the answers a transport gets.
pub trait Protocol: Send + Sync {
    /// An error status and its (redacted, capped) body, as this protocol
    /// words and classifies it.
    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &str,
    ) -> Failure;

    /// A 2xx answer: whether its body is this protocol's stream.
    fn check_success(&self, response: reqwest::Response) -> Result<reqwest::Response, Failure> {
        Ok(response)
    }
}

/// How patient a client is with its server — the settings Gemini's,
/// OpenAI-compatible servers' and the deployment's clients share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    /// The longest wait for the response to start or for its next bytes.
    pub idle_timeout: Duration,
    /// Tries per call, the first included.
    pub max_attempts: u32,
    /// The first retry's delay before jitter; doubled for each further one.
    pub backoff: Duration,
    /// A server asking for a longer wait than this is not retried.
    pub max_retry_wait: Duration,
    /// The most a rate-limited call waits in all (`--max-rate-wait`).
    pub max_rate_wait: Duration,
    /// The most calls to one model at once, and where its live limit
    /// starts (`-j`, `serve --max-concurrent`).
    pub max_concurrency: usize,
    /// The flag the command took the idle timeout from (`--idle-timeout`),
    /// named when a stream stalls; none where the command has no such flag.
    pub idle_timeout_flag: Option<&'static str>,
}

impl Default for HttpSettings {
    /// A model API's: 10 s to connect, 120 s idle, 3 tries from 1 s apart,
    /// at most a 60 s wait asked for; a rate-limited call waits up to
    /// 10 minutes in all; 32 calls to a model at once.
    fn default() -> HttpSettings {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_attempts: 3,
            backoff: Duration::from_secs(1),
            max_retry_wait: Duration::from_secs(60),
            max_rate_wait: DEFAULT_MAX_RATE_WAIT,
            max_concurrency: 32,
            idle_timeout_flag: None,
        }
    }
}

impl HttpSettings {
    /// The retry policy these settings make; `count_tries`: see `RetryPolicy`.
    pub fn policy(&self, count_tries: bool) -> RetryPolicy {
        RetryPolicy {
            max_attempts: self.max_attempts,
            backoff: self.backoff,
            max_retry_wait: self.max_retry_wait,
            max_rate_wait: self.max_rate_wait,
            count_tries,
        }
    }
}

/// One server's transport: its client, retry policy, idle timeout, the
/// secrets taken out of what it sends back, and how messages name it.
/// Cheap to clone.
#[derive(Clone)]
pub struct Transport {
    client: reqwest::Client,
    pub redactor: Redactor,
    pub peer: Arc<Peer>,
    pub policy: RetryPolicy,
    /// The longest wait for the response to start or for its next bytes.
    pub idle_timeout: Duration,
    /// The flag that set it, for the stall message, where one did.
    pub idle_timeout_flag: Option<&'static str>,
    /// How many calls go to each of this server's models at once.
    pub throttle: Arc<Throttle>,
}

/// What `send_with_retries` yields: a notice before each retry, then the
/// outcome and the retries it took.
#[derive(Debug)]
pub enum Sending<T> {
    Notice(RetryNotice),
    Sent(Result<T, ProviderError>, Tries),
}

/// The HTTP client could not be built (no TLS backend, a bad setting).
#[derive(Debug, thiserror::Error)]
#[error("could not set up the HTTP client: {0}")]
pub struct ClientError(String);

impl Transport {
    /// The transport to one server, as every client builds it: a client
    /// that follows no redirect, the retry policy and idle timeout of
    /// `http`, and a redactor of `secrets`; with a warning for each secret
    /// too short to redact. `count_tries`: see `RetryPolicy`.
    pub fn connect<'a>(
        http: &HttpSettings,
        secrets: impl IntoIterator<Item = Secret<'a>>,
        peer: Peer,
        count_tries: bool,
    ) -> Result<(Transport, Vec<String>), ClientError> {
        let tls = client::may_need_tls(&peer.shown);
        let client =
            client(http.connect_timeout, tls).map_err(|error| ClientError(error_chain(error)))?;
        let (redactor, unredactable) = Redactor::new(secrets);
        let policy = http.policy(count_tries);
        let mut transport = Transport::new(client, redactor, peer, policy, http.idle_timeout);
        transport.idle_timeout_flag = http.idle_timeout_flag;
        transport.throttle = Arc::new(Throttle::new(http.max_concurrency));
        Ok((transport, unredactable))
    }

    /// A call's stream redacted: the one redaction step, before anything
    /// shows, records, caches or traces what a server could have shaped.
    /// The text is redacted as a stream (`StreamRedactor`: a secret echoed
    /// over two deltas is caught where they join), what the call assembles
    /// (tool calls, `providerState`, its summary) as a whole, and every
    /// error message. An early stop's usage stays with its error.
    pub fn redacted(
        &self,
        calls: impl Stream<Item = Result<ModelEvent, ProviderError>> + Send + 'static,
    ) -> crate::provider::ModelStream {
        let redactor = self.redactor.clone();
        let mut text = redact::StreamRedactor::new(redactor.clone());
        let items = calls
            .map(Some)
            .chain(futures_util::stream::iter([None]))
            .flat_map(move |item| {
                let mut out = Vec::with_capacity(2);
                match item {
                    Some(Ok(ModelEvent::TextDelta(delta))) => {
                        push_text(&mut out, text.push(&delta));
                    }
                    Some(Ok(event)) => {
                        // A tool call between deltas does not end the text:
                        // the call's text is one, however it is cut.
                        if !matches!(event, ModelEvent::ToolCall(_)) {
                            push_text(&mut out, text.finish());
                        }
                        out.push(Ok(redact_event(&redactor, event)));
                    }
                    Some(Err(error)) => {
                        push_text(&mut out, text.finish());
                        out.push(Err(redact_error(&redactor, error)));
                    }
                    None => push_text(&mut out, text.finish()),
                }
                futures_util::stream::iter(out)
            });
        Box::pin(items)
    }

    pub fn new(
        client: reqwest::Client,
        redactor: Redactor,
        peer: Peer,
        policy: RetryPolicy,
        idle_timeout: Duration,
    ) -> Transport {
        Transport {
            client,
            redactor,
            peer: Arc::new(peer),
            policy,
            idle_timeout,
            idle_timeout_flag: None,
            throttle: Arc::new(Throttle::new(HttpSettings::default().max_concurrency)),
        }
    }

    /// A POST to `url`, to be sent by `send_once`. The URL is parsed once by
    /// the caller, and the body shared, not copied, by each try.
    pub fn post(
        &self,
        url: reqwest::Url,
        headers: HeaderMap,
        body: bytes::Bytes,
    ) -> reqwest::RequestBuilder {
        self.client.post(url).headers(headers).body(body)
    }

    /// Sends `request` once: a 2xx answer the protocol accepts, or why not.
    pub async fn send_once(
        &self,
        request: reqwest::RequestBuilder,
        protocol: &dyn Protocol,
    ) -> Result<reqwest::Response, Failure> {
        let response = match tokio::time::timeout(self.idle_timeout, request.send()).await {
            Err(_) => return Err(self.stalled().into()),
            Ok(Err(error)) => {
                // A refused connection: nothing reached the server, so a
                // retry cannot run the call twice.
                let kind = if error.is_connect() {
                    ErrorKind::Unreachable
                } else {
                    ErrorKind::Dropped
                };
                let message = format!(
                    "could not reach {} at {}: {}",
                    self.peer.name,
                    self.peer.shown,
                    error_chain(error)
                );
                return Err(ProviderError::of(kind, message).into());
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return protocol.check_success(response);
        }
        if let Some(message) = redirect_message(&self.peer.redirect_name, &response) {
            return Err(ProviderError::of(ErrorKind::Redirected, message).into());
        }
        let delay = retry_after(response.headers());
        let body = read_error_body(response, self.idle_timeout, &self.redactor).await;
        Err(protocol.status_failure(status, delay, &body))
    }

    /// Tries `attempt` until it succeeds or the policy gives up, within the
    /// call's deadline and until `cancel` fires, announcing each retry.
    /// `tries` are what this call has made already. With a `lane`, each
    /// try first takes a slot in it (the time waiting for one, like a 429's
    /// wait, does not count against the call's deadline), holds it for as
    /// long as the caller keeps the response, and tells the lane of 429s,
    /// server errors and spent quotas.
    pub fn send_with_retries<'a, T, F, Fut>(
        &'a self,
        budget: &'a mut CallBudget,
        cancel: &'a CancellationToken,
        tries: Tries,
        lane: Option<Arc<Lane>>,
        mut attempt: F,
    ) -> impl Stream<Item = Sending<(Option<Slot>, T)>> + Send + 'a
    where
        T: Send + 'a,
        F: FnMut() -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, Failure>> + Send + 'a,
    {
        async_stream::stream! {
            let mut tries = tries;
            loop {
                let slot = match &lane {
                    None => None,
                    Some(lane) => {
                        let asked = tokio::time::Instant::now();
                        let Some(slot) = lane.acquire(cancel).await else {
                            yield Sending::Sent(Err(retry::cancelled()), tries);
                            return;
                        };
                        let queued = asked.elapsed();
                        budget.extend(queued);
                        tries.queued = tries.queued.saturating_add(queued);
                        Some(slot)
                    }
                };
                let tried = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => Err(retry::cancelled().into()),
                    () = tokio::time::sleep_until(budget.deadline()) => Err(budget.timed_out(self.peer.name).into()),
                    tried = attempt() => tried,
                };
                let failure: Failure = match tried {
                    Ok(sent) => {
                        yield Sending::Sent(Ok((slot, sent)), tries);
                        return;
                    }
                    Err(failure) => failure,
                };
                drop(slot);
                if let Some(lane) = &lane {
                    tell_lane(lane, &failure);
                }
                if matches!(failure.error.kind, ErrorKind::Cancelled | ErrorKind::TimedOut) {
                    yield Sending::Sent(Err(failure.error), tries);
                    return;
                }
                match self.policy.decide(self.peer.name, tries, failure) {
                    Decision::GiveUp(error) => {
                        yield Sending::Sent(Err(error), tries);
                        return;
                    }
                    Decision::Retry { wait, notice } => {
                        let next = tries.after(&notice, wait);
                        let rate_limited = notice.rate_limited;
                        yield Sending::Notice(notice);
                        if let Err(error) = self.pause(wait, rate_limited, lane.as_deref(), budget, cancel).await {
                            yield Sending::Sent(Err(error), tries);
                            return;
                        }
                        tries = next;
                    }
                }
            }
        }
    }

    /// Waits `wait` before a retry, unless the call is cancelled or its
    /// deadline comes first. A rate-limited call's wait has its own bound
    /// (`--max-rate-wait`), so it moves the deadline on by itself.
    pub async fn pause(
        &self,
        wait: Duration,
        rate_limited: bool,
        lane: Option<&Lane>,
        budget: &mut CallBudget,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        if rate_limited {
            budget.extend(wait);
            if let Some(lane) = lane {
                lane.waited(wait);
            }
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(retry::cancelled()),
            () = tokio::time::sleep_until(budget.deadline()) => Err(budget.timed_out(self.peer.name)),
            () = tokio::time::sleep(wait) => Ok(()),
        }
    }

    /// The error when nothing arrives within the idle timeout.
    pub fn stalled(&self) -> ProviderError {
        ProviderError::of(
            ErrorKind::Stalled,
            format!(
                "{}'s stream stalled: nothing arrived for {} s ({})",
                self.peer.name,
                self.idle_timeout.as_secs_f64(),
                self.idle_timeout_flag.unwrap_or("the idle timeout"),
            ),
        )
    }

    /// `response`'s body as an SSE stream read under this transport's rules.
    pub fn sse_body(&self, response: reqwest::Response, max_event_bytes: usize) -> SseBody {
        SseBody::new(self.clone(), response, max_event_bytes)
    }
}

/// What a failed try tells its lane: a 429 starts or joins an episode, a
/// server error or a stall pauses growth, a spent quota is recorded.
pub fn tell_lane(lane: &Lane, failure: &Failure) {
    match failure.error.kind {
        ErrorKind::Status { code: 429, .. } => {
            lane.rate_limited(failure.retry_after);
        }
        ErrorKind::Status { code, .. } if code >= 500 => lane.faltered(),
        ErrorKind::Stalled | ErrorKind::TimedOut => lane.faltered(),
        ErrorKind::Quota { .. } => lane.quota(&failure.error.message),
        _ => {}
    }
}

/// At most `ERROR_BODY_LIMIT` bytes of an error response, each read
/// within `idle`; what does not arrive in time is left out. Redacted here,
/// before any message quotes and cuts it: a secret cut in half by a
/// 200-character excerpt would no longer be recognised.
pub async fn read_error_body(
    response: reqwest::Response,
    idle: Duration,
    redactor: &Redactor,
) -> String {
    let encoding = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_ascii_lowercase())
        .filter(|value| !value.is_empty() && value != "identity");
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Ok(Some(Ok(bytes))) = tokio::time::timeout(idle, stream.next()).await {
        body.extend_from_slice(&bytes);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    if let Some(said) = not_text(&body, encoding.as_deref()) {
        return said;
    }
    redactor
        .redact(&String::from_utf8_lossy(&body))
        .into_owned()
}

/// What an error body is when it is no text to quote: compressed (we ask
/// for no encoding, and decompressing a stranger's bytes is a bomb's way
/// in) or binary. Said in words, never as hundreds of replacement
/// characters. `None` for text (a last character cut by the limit aside).
fn not_text(body: &[u8], encoding: Option<&str>) -> Option<String> {
    let size = body.len();
    let gzip_magic = body.starts_with(&[0x1f, 0x8b]);
    if let Some(encoding) = encoding.or(gzip_magic.then_some("gzip")) {
        let encoding = crate::text::quote(encoding);
        return Some(format!(
            "(a body of {size} bytes encoded as `{encoding}`, not shown)"
        ));
    }
    match std::str::from_utf8(body) {
        Ok(_) => None,
        // A character cut by the limit at the very end is still text.
        Err(error) if error.error_len().is_none() => None,
        Err(_) => Some(format!(
            "(a body of {size} bytes that is not UTF-8 text, not shown)"
        )),
    }
}

fn push_text(out: &mut Vec<Result<ModelEvent, ProviderError>>, text: String) {
    if !text.is_empty() {
        out.push(Ok(ModelEvent::TextDelta(text)));
    }
}

/// An event other than text, its server-shaped strings redacted whole.
fn redact_event(redactor: &Redactor, event: ModelEvent) -> ModelEvent {
    match event {
        ModelEvent::ToolCall(mut call) => {
            call.name = redactor.redact_owned(call.name);
            call.id = call.id.map(|id| redactor.redact_owned(id));
            redactor.redact_value(&mut call.args);
            ModelEvent::ToolCall(call)
        }
        ModelEvent::Done(summary) => ModelEvent::Done(redact_summary(redactor, summary)),
        ModelEvent::TextDelta(_) | ModelEvent::Retry(_) => event,
    }
}

fn redact_error(redactor: &Redactor, error: ProviderError) -> ProviderError {
    let mut error = error.map_message(|message| redactor.redact_owned(message));
    error.summary = error
        .summary
        .map(|summary| Box::new(redact_summary(redactor, *summary)));
    error
}

/// A call's summary as a whole: its `providerState` holds the call's
/// text joined (a secret split over deltas is whole there), its warnings
/// and names quote the server.
fn redact_summary(redactor: &Redactor, mut summary: CallSummary) -> CallSummary {
    if let Some(state) = summary.provider_state.as_mut() {
        redactor.redact_value(state);
    }
    if let Some(detail) = summary.usage_detail.as_mut() {
        redactor.redact_value(detail);
    }
    summary.model_version = summary.model_version.map(|v| redactor.redact_owned(v));
    summary.finish_reason = summary.finish_reason.map(|r| redactor.redact_owned(r));
    summary.warnings = summary
        .warnings
        .into_iter()
        .map(|warning| redactor.redact_owned(warning))
        .collect();
    summary
}
