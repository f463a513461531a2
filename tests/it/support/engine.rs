//! Running turns through the library with a scripted model, and watching
//! what the model was sent.

use std::path::Path;
use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use promptlab::chat::{
    ChatEvent, ChatRequest, ClaimInput, ModelCallRecord, PreparedTurn, TurnContext, TurnOutput,
    run_chat_turn,
};
use promptlab::claims::{ClaimStore, parse_claim_bytes};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::script::{Script, ScriptProvider};
use promptlab::provider::{ModelProvider, ModelRequest, ModelStream};

/// Wraps a provider and keeps every request it was sent.
pub struct Recording<P> {
    pub inner: P,
    pub requests: Arc<Mutex<Vec<ModelRequest>>>,
}

impl<P: ModelProvider> ModelProvider for Recording<P> {
    fn kind(&self) -> promptlab::provider::ProviderKind {
        self.inner.kind()
    }

    fn check_ready(&self) -> Result<(), promptlab::provider::ProviderError> {
        self.inner.check_ready()
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream_turn(request, cancel)
    }
}

/// A scripted model from YAML text.
pub fn script(yaml: &str) -> ScriptProvider {
    let script: Script = promptlab::claims::load::parse_document(
        yaml,
        promptlab::claims::load::DocumentFormat::Yaml,
    )
    .expect("test scripts parse");
    ScriptProvider::new(script, "test script")
}

pub fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()
}

/// A request against a claim document given as JSON.
pub fn request_for(claim_json: &str, message: &str) -> ChatRequest {
    let claim = parse_claim_bytes(claim_json.as_bytes(), Path::new("test.json"))
        .expect("test claims parse");
    ChatRequest::new(
        ClaimInput::Document(std::sync::Arc::new(claim)),
        message,
        today(),
    )
}

/// A request against a claim of the repository's store.
pub fn request_for_id(id: &str, message: &str) -> ChatRequest {
    ChatRequest::new(ClaimInput::Id(id.to_string()), message, today())
}

pub fn store() -> ClaimStore {
    ClaimStore::new(concat!(env!("CARGO_MANIFEST_DIR"), "/claims"))
}

/// What a turn produced.
pub struct TurnResult {
    pub events: Vec<ChatEvent>,
    pub prepared: Option<PreparedTurn>,
    pub calls: Vec<ModelCallRecord>,
    pub requests: Vec<ModelRequest>,
    /// The retries the turn announced, in order.
    pub notices: Vec<promptlab::provider::RetryNotice>,
    pub cancelled: bool,
}

impl TurnResult {
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                ChatEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The events with consecutive text deltas merged, for exact comparisons.
    pub fn shape(&self) -> Vec<String> {
        let mut shape: Vec<String> = Vec::new();
        for event in &self.events {
            let line = match event {
                ChatEvent::TextDelta { .. } => "text".to_string(),
                ChatEvent::Activity { tool, label, .. } => format!("activity {tool}: {label}"),
                ChatEvent::ToolResult {
                    tool,
                    ok,
                    truncated,
                    ..
                } => format!("tool_result {tool} ok={ok} truncated={truncated}"),
                ChatEvent::ClientAction(action) => {
                    format!("client_action {}", serde_json::to_string(action).unwrap())
                }
                ChatEvent::Done(_) => "done".to_string(),
                ChatEvent::Error { message } => format!("error {message}"),
            };
            if line == "text" && shape.last().is_some_and(|last| last == "text") {
                continue;
            }
            shape.push(line);
        }
        shape
    }
}

pub async fn run_turn(provider: impl ModelProvider + 'static, request: ChatRequest) -> TurnResult {
    run_turn_with(provider, request, CancellationToken::new(), |_| {}).await
}

/// Runs a turn; `on_event` sees each event as it arrives.
pub async fn run_turn_with(
    provider: impl ModelProvider + 'static,
    request: ChatRequest,
    cancel: CancellationToken,
    mut on_event: impl FnMut(&ChatEvent),
) -> TurnResult {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let ctx = TurnContext {
        registry: PromptRegistry::embedded(),
        store: store(),
        provider: Arc::new(Recording {
            inner: provider,
            requests: Arc::clone(&requests),
        }),
    };
    let mut result = TurnResult {
        events: Vec::new(),
        prepared: None,
        calls: Vec::new(),
        requests: Vec::new(),
        notices: Vec::new(),
        cancelled: false,
    };
    let turn = run_chat_turn(ctx, request, cancel);
    futures_util::pin_mut!(turn);
    while let Some(output) = turn.next().await {
        match output {
            TurnOutput::Event(event) => {
                on_event(&event);
                result.events.push(event);
            }
            TurnOutput::Prepared(prepared) => result.prepared = Some(*prepared),
            TurnOutput::ModelCall(call) => result.calls.push(*call),
            TurnOutput::Notice(notice) => result.notices.push(notice),
            TurnOutput::Cancelled => result.cancelled = true,
            TurnOutput::Started { .. } => {}
        }
    }
    result.requests = requests.lock().unwrap().clone();
    result
}
