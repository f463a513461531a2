//! Model providers: one streaming model call each (`stream_turn`).
//!
//! A provider owns its wire format and its `provider_state` — opaque data it
//! attaches to an assistant turn and gets back unchanged when that turn is
//! replayed (Gemini's signed parts). The loop never looks inside it.

pub mod build;
pub mod cache;
pub mod endpoint;
mod error;
pub mod gemini;
mod kind;
pub mod openai;
pub mod replay;
pub mod script;
pub mod sse;
pub mod transport;

pub use error::{ErrorKind, ProviderError};
pub use kind::{ProviderKind, UnknownProvider};
pub use transport::RetryNotice;

use std::sync::Arc;

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::event::Usage;
use crate::prompts::thinking::ThinkingLevel;
use crate::tools::ToolDeclaration;

/// One model call's input.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub model: String,
    /// Shared with the turn and its other calls: it is most of a request.
    pub system: Arc<str>,
    pub messages: Vec<AiMessage>,
    /// In the loop's order: readers first, then screen actions.
    pub tools: Arc<[ToolDeclaration]>,
    pub thinking_level: ThinkingLevel,
    pub max_output_tokens: u32,
    /// A JSON reply in this shape (plain JSON Schema; each adapter converts
    /// it to its API's dialect) instead of free text; only for calls
    /// without tools (a judge's).
    pub response_schema: Option<Value>,
}

/// The conversation as the model sees it within one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum AiMessage {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The provider's own record of this turn, replayed verbatim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_state: Option<Value>,
    },
    ToolResults {
        results: Vec<ToolResultMessage>,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The model's id for the call, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

/// One tool's result as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The model's id of the call this answers, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub name: String,
    pub ok: bool,
    pub content: String,
}

/// What a model call streams.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// Answer text, as soon as it arrives. Thought text is never sent here.
    TextDelta(String),
    /// A complete tool call.
    ToolCall(ToolCall),
    /// The call finished; always the last item of a successful call.
    Done(CallSummary),
    /// A failed try is about to be retried (nothing of it was forwarded):
    /// said to the user and recorded, never part of the answer.
    Retry(RetryNotice),
}

/// How a model call finished.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSummary {
    /// As the server reported it: `null` in the record when it reported
    /// none, `null` counts where it left some out (never 0).
    #[serde(with = "crate::event::usage_or_null")]
    pub usage: Usage,
    /// The provider's own token counts, kept for the run log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_detail: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<Value>,
    /// The model version the provider reports serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Attempts that failed and were retried before this one succeeded.
    #[serde(default)]
    pub retries: u32,
    /// Time the call waited for a slot under its model's live concurrency
    /// limit (SPEC §14): part of the turn's wall time, not of the model's
    /// latency, so compare leaves it out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queued_ms: u64,
    /// Of `usage.output_tokens`, the model's thinking (Gemini's
    /// `thoughtsTokenCount`), priced at its own rate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thinking_tokens: u64,
    /// Replayed from the model-call cache: no call was made, nothing billed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// What the provider left out of this call and why (a usage field that
    /// was not a count, a part it skipped), kept in the run log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The call was cut short before its end (a bound, a broken stream): its
    /// usage is what the stream had reported so far, and what was billed is
    /// unknown — counted as tokens, never priced as if it were all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Where a call's `provider_state` holds its answer as plain text, as JSON
/// pointers, whichever provider made it: strings a run log may leave out
/// and put back from the answer it keeps once. Signed and unknown parts are
/// opaque and never named (`runs::answer_text`).
pub fn plain_text_slots(state: &Value) -> Vec<String> {
    let mut slots = gemini::wire::plain_text_slots(state);
    slots.extend(openai::wire::plain_text_slots(state));
    slots
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

pub type ModelStream = BoxStream<'static, Result<ModelEvent, ProviderError>>;

/// One streaming model call. Implementations must stop promptly once
/// `cancel` fires (the loop also stops polling them).
pub trait ModelProvider: Send + Sync {
    /// Which provider this is: what run logs name, whether it bills.
    fn kind(&self) -> ProviderKind;

    /// A short name for logs: `gemini`, `script`, `replay`.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Whether the provider can be called at all (e.g. has its key). Checked
    /// once at the start of a turn; the error becomes the turn's `error` event.
    fn check_ready(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream;

    /// What answers, for the model-call cache's key: the provider's name,
    /// or more where the name alone does not tell (a script's content).
    fn identity(&self) -> String {
        self.name().to_string()
    }

    /// The model table it sends by (thinking levels and budgets, efforts,
    /// the cap's field): the one it was built with (`--models` over the
    /// shipped one), for the turn to fit its level to.
    fn models(&self) -> std::sync::Arc<crate::models::ModelTable> {
        crate::models::ModelTable::shipped()
    }

    /// How many calls go to each of its server's models at once, learnt
    /// from 429s (SPEC §14); none for a provider that calls no server.
    fn throttle(&self) -> Option<std::sync::Arc<transport::Throttle>> {
        None
    }

    /// Whose rules fit the turn's thinking level: its own, or — for a
    /// replay — those of the provider that recorded the turn.
    fn fits_thinking_as(&self) -> ProviderKind {
        self.kind()
    }
}
