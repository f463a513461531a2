//! The `worker` provider: a whole turn run by a deployed chat API
//! (`POST /api/chat` answering SPEC §2 events as SSE — production, staging,
//! or `promptlab serve`) instead of in this process.
//!
//! It is not a `ModelProvider` (that is one model call inside our loop):
//! the deployment runs the loop, so this yields the same `TurnOutput`
//! stream as `run_chat_turn` — `Started` with the locally computed
//! fingerprint, then the deployment's events as they arrive — and the
//! driver, the run-log recorder, the writers and eval's observers work on
//! it unchanged. There are no `Prepared` or `ModelCall` outputs: what the
//! model was told and each call's trace stay on the deployment.

pub mod endpoint;
pub mod events;
mod transport;

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use self::events::{EventReader, MAX_EVENT_BYTES, Read};
use self::transport::{Accepted, WorkerAnswers};
use crate::chat::wire::WireRequest;
use crate::chat::{
    ChatEvent, ChatRequest, ClaimInput, RemoteTurn, TurnContext, TurnOutput, TurnStart,
    run_chat_turn,
};
use crate::prompts::{PromptRegistry, fingerprint, resolve_overrides};
use crate::provider::transport::redact::StreamRedactor;
use crate::provider::transport::{
    CallBudget, CallLimits, Failure, HttpSettings, Peer, Redactor, Secret, Sending, Slot,
    Transport, Tries,
};
use crate::provider::{ErrorKind, ProviderError, ProviderKind};

pub use endpoint::{Endpoint, EndpointError};

/// How to reach the deployment and how patient to be with it.
#[derive(Clone)]
pub struct WorkerConfig {
    pub endpoint: Endpoint,
    /// Sent as `Authorization: Bearer …`; never shown, logged or recorded.
    pub token: Option<String>,
    /// Timeouts and retries; a turn is retried only before its stream starts.
    pub http: HttpSettings,
    /// The most requests in flight at once, over every turn of this client.
    pub max_concurrent: usize,
    /// The most text, body and time one turn may take (`--max-call-time`).
    pub limits: CallLimits,
}

impl WorkerConfig {
    pub fn new(endpoint: Endpoint) -> WorkerConfig {
        WorkerConfig {
            endpoint,
            token: None,
            // A deployment is nearer than a model API: quicker, shorter retries.
            http: HttpSettings {
                backoff: Duration::from_millis(500),
                max_retry_wait: Duration::from_secs(30),
                ..HttpSettings::default()
            },
            max_concurrent: 64,
            limits: CallLimits::default(),
        }
    }
}

impl std::fmt::Debug for WorkerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerConfig")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("http", &self.http)
            .field("max_concurrent", &self.max_concurrent)
            .finish_non_exhaustive()
    }
}

/// Why a worker client cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("{0}")]
    Token(&'static str),
    #[error(transparent)]
    Client(#[from] crate::provider::transport::ClientError),
}

/// One deployment, shared by every turn of a command (and so by every
/// eval job): one connection pool, one in-flight cap.
#[derive(Clone)]
pub struct WorkerClient {
    config: Arc<WorkerConfig>,
    registry: &'static PromptRegistry,
    /// Its redactor takes the token and the endpoint's userinfo out of
    /// every message.
    transport: Transport,
    headers: reqwest::header::HeaderMap,
    in_flight: Arc<Semaphore>,
    /// Secrets too short to redact, named for one warning.
    unredactable: Vec<String>,
    /// Fingerprint pairs (local, reported) already warned about.
    mismatches: Arc<Mutex<HashSet<(String, String)>>>,
}

/// Shows the configuration, whose own Debug hides the token.
impl std::fmt::Debug for WorkerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WorkerClient {
    pub fn new(
        config: WorkerConfig,
        registry: &'static PromptRegistry,
    ) -> Result<WorkerClient, WorkerError> {
        let headers = transport::headers(config.token.as_deref()).map_err(WorkerError::Token)?;
        let in_flight = Arc::new(Semaphore::new(config.max_concurrent.max(1)));
        let in_url =
            crate::provider::transport::redact::url_secrets(config.endpoint.url(), "--endpoint");
        let token = config.token.iter().map(|value| Secret {
            name: "PROMPTLAB_ENDPOINT_TOKEN",
            value,
        });
        let url = in_url.iter().map(|(name, value)| Secret { name, value });
        let shown = config.endpoint.shown().to_string();
        let peer = Peer {
            name: WHO,
            redirect_name: format!("the deployment at {shown}"),
            shown,
        };
        // The worker's messages count the tries (docs/worker.md).
        let (transport, unredactable) =
            Transport::connect(&config.http, token.chain(url), peer, true)?;
        Ok(WorkerClient {
            config: Arc::new(config),
            registry,
            transport,
            headers,
            in_flight,
            unredactable,
            mismatches: Arc::default(),
        })
    }

    /// A warning for each secret too short to be redacted from messages.
    pub fn unredactable(&self) -> &[String] {
        &self.unredactable
    }

    /// The endpoint as it may be shown.
    pub fn endpoint(&self) -> &str {
        self.config.endpoint.shown()
    }

    /// The warning for a deployment that reported another prompt version
    /// than this checkout computes, once per pair of fingerprints.
    pub fn fingerprint_warning(&self, local: &str, reported: &str) -> Option<String> {
        if local == reported {
            return None;
        }
        let first = (self.mismatches.lock()).insert((local.to_string(), reported.to_string()));
        first.then(|| {
            format!(
                "the deployment at {} reported prompt fingerprint `{reported}` where this checkout computes `{local}`: \
                 its prompt defaults or override rules differ from this checkout's",
                self.endpoint()
            )
        })
    }

    /// Runs one turn on the deployment. The request must already be
    /// validated; every failure after `Started` is the turn's `error` event.
    pub fn run_turn(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> impl futures_util::Stream<Item = TurnOutput> + Send + 'static {
        let redactor = self.transport.redactor.clone();
        let mut text = StreamRedactor::new(redactor.clone());
        self.turn_outputs(request, cancel)
            .map(Some)
            .chain(futures_util::stream::iter([None]))
            .flat_map(move |output| {
                let mut out = Vec::with_capacity(2);
                let held = match output {
                    Some(TurnOutput::Event(ChatEvent::TextDelta { text: delta })) => {
                        text.push(&delta)
                    }
                    Some(other) => {
                        let held = text.finish();
                        if !held.is_empty() {
                            out.push(TurnOutput::Event(ChatEvent::TextDelta { text: held }));
                        }
                        out.push(redact_output(&redactor, other));
                        String::new()
                    }
                    None => text.finish(),
                };
                if !held.is_empty() {
                    out.push(TurnOutput::Event(ChatEvent::TextDelta { text: held }));
                }
                futures_util::stream::iter(out)
            })
    }

    /// The turn's outputs before redaction.
    fn turn_outputs(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> impl futures_util::Stream<Item = TurnOutput> + Send + 'static {
        let client = self.clone();
        async_stream::stream! {
            let mut budget = CallBudget::start(client.config.limits);
            yield client.started(&request);
            let body = match WireRequest::from_request(&request)
                .and_then(|wire| Ok(serde_json::to_vec(&wire)?))
            {
                Ok(body) => body,
                Err(error) => {
                    yield error_output(error.to_string());
                    return;
                }
            };
            let mut sent = None;
            {
                let sending = client.send(&body, &mut budget, &cancel);
                futures_util::pin_mut!(sending);
                while let Some(step) = sending.next().await {
                    match step {
                        Sending::Notice(notice) => yield TurnOutput::Notice(notice),
                        Sending::Sent(result, _) => sent = Some(result),
                    }
                }
            }
            let accepted = match sent {
                Some(Ok((_, accepted))) => accepted,
                Some(Err(error)) if error.kind == ErrorKind::Cancelled => {
                    yield TurnOutput::Cancelled;
                    return;
                }
                Some(Err(error)) => {
                    yield error_output(error.message);
                    return;
                }
                None => return,
            };
            // Held until the stream is read to its end or dropped.
            let _permit = accepted.permit;
            let mut reader = EventReader::new(
                client.transport.sse_body(accepted.response, MAX_EVENT_BYTES),
            );
            loop {
                match reader.next(&mut budget, &cancel).await {
                    Read::Event(event) => {
                        if let ChatEvent::TextDelta { text } = &event
                            && let Err(fault) = budget.text(WHO, text.len())
                        {
                            yield error_output(fault.message);
                            return;
                        }
                        let last = matches!(event, ChatEvent::Done(_) | ChatEvent::Error { .. });
                        yield TurnOutput::Event(event);
                        if last {
                            return;
                        }
                    }
                    Read::Fault(fault) => {
                        yield error_output(fault.message);
                        return;
                    }
                    Read::Cancelled => {
                        yield TurnOutput::Cancelled;
                        return;
                    }
                }
            }
        }
    }

    /// The turn's first output: its id and time, and the prompt version
    /// this checkout computes for the overrides sent.
    fn started(&self, request: &ChatRequest) -> TurnOutput {
        let resolved = resolve_overrides(&request.prompt.overrides, self.registry);
        TurnOutput::Started(Box::new(TurnStart {
            turn_id: uuid::Uuid::new_v4().to_string(),
            started_at: Utc::now(),
            fingerprint: fingerprint(&resolved.applied),
            applied_overrides: resolved.applied,
            ignored_overrides: resolved.ignored,
            unknown_placeholders: resolved.unknown_placeholders,
            remote: Some(RemoteTurn {
                endpoint: self.endpoint().to_string(),
                claim_sent: matches!(request.claim, ClaimInput::Document(_)),
                overrides: request.prompt.overrides.clone(),
            }),
        }))
    }

    /// Sends `body` until a streaming 2xx response comes back, by the
    /// transport's retry policy. The in-flight slot is held from each try's
    /// send to the end of its stream, and given up while waiting to retry.
    fn send<'a>(
        &'a self,
        body: &'a [u8],
        budget: &'a mut CallBudget,
        cancel: &'a CancellationToken,
    ) -> impl futures_util::Stream<Item = Sending<(Option<Slot>, Accepted)>> + Send + 'a {
        // The deployment's own `max_concurrent` bounds its turns: no lane.
        self.transport
            .send_with_retries(budget, cancel, Tries::default(), None, move || {
                self.attempt(body)
            })
    }

    /// One try, in an in-flight slot.
    async fn attempt(&self, body: &[u8]) -> Result<Accepted, Failure> {
        let permit =
            self.in_flight.clone().acquire_owned().await.map_err(|_| {
                ProviderError::of(ErrorKind::Other, "the worker client was shut down")
            })?;
        let request = self.transport.post(
            self.config.endpoint.url().clone(),
            self.headers.clone(),
            bytes::Bytes::copy_from_slice(body),
        );
        let answers = WorkerAnswers {
            shown: self.config.endpoint.shown(),
        };
        let response = self.transport.send_once(request, &answers).await?;
        Ok(Accepted { response, permit })
    }
}

/// How messages name the server.
const WHO: &str = "the deployment";

fn error_output(message: String) -> TurnOutput {
    TurnOutput::Event(ChatEvent::Error { message })
}

/// The one redaction step for what the deployment could have shaped: our
/// error messages (they quote its answers), its own `error` events, and
/// whatever else of its events a front end shows (labels, tool results);
/// its text deltas are redacted as a stream by `run_turn`.
fn redact_output(redactor: &Redactor, output: TurnOutput) -> TurnOutput {
    let text = |text: String| redactor.redact_owned(text);
    let event = match output {
        TurnOutput::Event(event) => event,
        other => return other,
    };
    TurnOutput::Event(match event {
        ChatEvent::Error { message } => ChatEvent::Error {
            message: text(message),
        },
        ChatEvent::Activity { id, tool, label } => ChatEvent::Activity {
            id,
            tool,
            label: text(label),
        },
        ChatEvent::ToolResult {
            id,
            tool,
            ok,
            result,
            truncated,
        } => ChatEvent::ToolResult {
            id,
            tool,
            ok,
            result: text(result),
            truncated,
        },
        other => other,
    })
}

/// Where a command's turns run: here, through the engine, or on a
/// deployment. Both yield the same outputs, so everything downstream of
/// the turn is the same code.
#[derive(Clone)]
pub enum TurnRunner {
    Local(TurnContext),
    Worker(Box<WorkerClient>),
}

impl TurnRunner {
    pub fn run(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, TurnOutput> {
        match self {
            TurnRunner::Local(ctx) => run_chat_turn(ctx.clone(), request, cancel).boxed(),
            TurnRunner::Worker(client) => client.run_turn(request, cancel).boxed(),
        }
    }

    /// The provider's name as run logs record it.
    pub fn provider_name(&self) -> &'static str {
        self.kind().name()
    }

    /// Which provider answers.
    pub fn kind(&self) -> ProviderKind {
        match self {
            TurnRunner::Local(ctx) => ctx.provider.kind(),
            TurnRunner::Worker(_) => ProviderKind::Worker,
        }
    }
}
