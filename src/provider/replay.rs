//! The replay provider: re-runs a recorded turn's model calls — the same
//! text in the same pieces, the same tool calls, usage and provider_state —
//! offline and deterministically, and notes where the new run diverges from
//! the recording: a tool result that changed, or a model call the recording
//! does not have.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::models::ModelTable;

use super::{
    AiMessage, CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderError,
    ToolCall, ToolResultMessage,
};

/// One recorded model call, ready to play back: plain data, so that this
/// provider does not depend on how recordings are stored (`crate::runs`
/// builds these from a run log).
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// The text pieces streamed before the call finished, in order.
    pub deltas: Vec<String>,
    pub tool_calls: Vec<ToolCall>,
    /// The tool results the call was given (the previous round's).
    pub tool_results_in: Vec<ToolResultMessage>,
    /// `None` when the call never finished.
    pub summary: Option<CallSummary>,
    pub error: Option<String>,
}

/// Where a replayed turn differs from its recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// 1-based model call.
    pub model_call: usize,
    pub message: String,
}

pub struct ReplayProvider {
    calls: Vec<RecordedCall>,
    origin: String,
    /// The id of the recorded turn played back, when it has one: what a
    /// recorder names as the turn a replay replays (`replayOf`).
    turn_id: Option<String>,
    next_call: AtomicUsize,
    divergences: Arc<Mutex<Vec<Divergence>>>,
    /// The table the replayed turn fits its level by.
    models: Arc<ModelTable>,
    /// The provider that recorded the turn, whose rules fit its level.
    recorded_by: Option<crate::provider::ProviderKind>,
}

impl ReplayProvider {
    /// Plays back `calls`; `origin` names the recording in messages.
    pub fn new(calls: Vec<RecordedCall>, origin: String) -> ReplayProvider {
        ReplayProvider {
            calls,
            origin,
            turn_id: None,
            next_call: AtomicUsize::new(0),
            divergences: Arc::new(Mutex::new(Vec::new())),
            models: ModelTable::shipped(),
            recorded_by: None,
        }
    }

    /// Fits the turn's level as `kind` (the recording's provider) does: an
    /// OpenAI turn's model is looked up for its effort, not its Gemini level.
    pub fn recorded_by(mut self, kind: crate::provider::ProviderKind) -> ReplayProvider {
        self.recorded_by = Some(kind);
        self
    }

    /// Fits the turn's level by `models` (`--models`) instead of the shipped table.
    pub fn with_models(mut self, models: Arc<ModelTable>) -> ReplayProvider {
        self.models = models;
        self
    }

    /// Names the recorded turn played back (`turn_id`).
    pub fn with_turn_id(mut self, turn_id: String) -> ReplayProvider {
        self.turn_id = Some(turn_id);
        self
    }

    /// The recorded turn played back, when it was named.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// How many model calls the recording holds.
    pub fn recorded_calls(&self) -> usize {
        self.calls.len()
    }

    /// Divergences noted so far.
    pub fn divergences(&self) -> Vec<Divergence> {
        self.divergences.lock().clone()
    }

    fn note(&self, model_call: usize, message: String) {
        self.divergences.lock().push(Divergence {
            model_call,
            message,
        });
    }
}

impl ModelProvider for ReplayProvider {
    fn kind(&self) -> crate::provider::ProviderKind {
        crate::provider::ProviderKind::Replay
    }

    fn models(&self) -> Arc<ModelTable> {
        Arc::clone(&self.models)
    }

    fn fits_thinking_as(&self) -> crate::provider::ProviderKind {
        self.recorded_by
            .unwrap_or(crate::provider::ProviderKind::Replay)
    }

    fn stream_turn(&self, request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let index = self.next_call.fetch_add(1, Ordering::SeqCst);
        let number = index + 1;
        let Some(call) = self.calls.get(index).cloned() else {
            let message = format!(
                "the new run made model call {number}, but the recording `{}` has only {}",
                self.origin,
                self.calls.len()
            );
            self.note(number, message.clone());
            return futures_util::stream::iter([Err(ProviderError::new(format!(
                "replay: {message}"
            )))])
            .boxed();
        };
        for message in compare_results(&request.messages, &call.tool_results_in) {
            self.note(number, message);
        }
        let mut items: Vec<Result<ModelEvent, ProviderError>> = call
            .deltas
            .into_iter()
            .map(|text| Ok(ModelEvent::TextDelta(text)))
            .collect();
        match (call.error, call.summary) {
            (Some(error), _) => items.push(Err(ProviderError::new(error))),
            (None, Some(summary)) => {
                items.extend(call.tool_calls.into_iter().map(|c| Ok(ModelEvent::ToolCall(c))));
                items.push(Ok(ModelEvent::Done(summary)));
            }
            (None, None) => items.push(Err(ProviderError::new(format!(
                "replay: model call {number} of the recording never finished (the turn was cancelled)"
            )))),
        }
        futures_util::stream::iter(items).boxed()
    }
}

/// The tool results this call was given now, against the recording's.
fn compare_results(messages: &[AiMessage], recorded: &[ToolResultMessage]) -> Vec<String> {
    let now: &[ToolResultMessage] = match messages.last() {
        Some(AiMessage::ToolResults { results }) => results,
        _ => &[],
    };
    let mut differences = Vec::new();
    if now.len() != recorded.len() {
        differences.push(format!(
            "the model was given {} tool results; the recording has {}",
            now.len(),
            recorded.len()
        ));
    }
    for (new, old) in now.iter().zip(recorded) {
        if new == old {
            continue;
        }
        let call = new
            .call_id
            .as_deref()
            .map(|id| format!(" ({id})"))
            .unwrap_or_default();
        let mut message = format!("the result of {}{call} changed", new.name);
        if new.ok != old.ok {
            message.push_str(&format!(
                ": it {} now",
                if new.ok { "succeeds" } else { "fails" }
            ));
        }
        let (recorded, replayed) = first_difference(&old.content, &new.content);
        message.push_str(&format!(
            "\n    recorded: {recorded}\n    replayed: {replayed}"
        ));
        differences.push(message);
    }
    differences
}

/// Excerpts of two texts around where they first differ.
pub fn first_difference(old: &str, new: &str) -> (String, String) {
    let common = old
        .chars()
        .zip(new.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let start = common.saturating_sub(20);
    let excerpt = |text: &str| {
        let piece: String = text.chars().skip(start).take(80).collect();
        let piece = piece.replace('\n', "⏎");
        let prefix = if start > 0 { "…" } else { "" };
        let suffix = if text.chars().count() > start + 80 {
            "…"
        } else {
            ""
        };
        format!("{prefix}{piece}{suffix}")
    };
    (excerpt(old), excerpt(new))
}
