//! The script provider: a model scripted in YAML, for offline demos and for
//! testing everything but the model.
//!
//! ```yaml
//! turns:                      # one entry per model call, in order
//!   - text: "Let me look at the policy."   # optional; streamed in several chunks
//!     calls:                                # optional
//!       - name: get_claim_section
//!         args: {section: policy}
//!     usage: {inputTokens: 1200, outputTokens: 40, cacheReadTokens: 900}   # optional
//!   - text: "The excess is £250."
//! ```
//! A partial `usage` counts what it leaves out as 0. The full format is in
//! `docs/scripts.md`. Also: `chunks: [..]` to stream exact pieces instead of `text`, `delayMs`
//! before each piece (a slow model), and `error: message` to fail the call
//! after its text. Turns are used in order across the provider's life, so an
//! interactive session walks on through the script.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    AiMessage, CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderError,
    ToolCall,
};
use crate::document::{DocumentFormat, DocumentProblem, parse_document};
use crate::event::Usage;
use crate::models::ModelTable;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub chunks: Option<Vec<String>>,
    #[serde(default)]
    pub calls: Vec<ScriptCall>,
    /// Absent: no tokens; `null`: a server that reported no usage.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<Option<ScriptUsage>>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// `usage: null` given is not `usage` left out: a present field, even
/// `null`, is `Some`.
fn given<'de, D: serde::Deserializer<'de>>(
    from: D,
) -> Result<Option<Option<ScriptUsage>>, D::Error> {
    Option::<ScriptUsage>::deserialize(from).map(Some)
}

/// A turn's token counts as its stand-in server reports them. A count left
/// out is 0, so `usage: {inputTokens: 900}` is enough; a count given as
/// `null` stands in for a server that did not report it (`null`, never 0,
/// in the run log and `done`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptUsage {
    #[serde(default = "no_tokens")]
    pub input_tokens: Option<u64>,
    #[serde(default = "no_tokens")]
    pub output_tokens: Option<u64>,
    #[serde(default = "no_tokens")]
    pub cache_read_tokens: Option<u64>,
}

fn no_tokens() -> Option<u64> {
    Some(0)
}

impl ScriptTurn {
    /// What this call's stand-in server reports: nothing asked, no tokens;
    /// `usage: null`, no usage at all.
    pub fn reported_usage(&self) -> Usage {
        match self.usage {
            None => Usage::ZERO,
            Some(None) => Usage::UNREPORTED,
            Some(Some(usage)) => Usage::reported(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
            ),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: Value,
}

fn empty_object() -> Value {
    json!({})
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("failed to read script `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script `{path}`: {problem}")]
    Invalid {
        path: String,
        problem: DocumentProblem,
    },
}

pub struct ScriptProvider {
    script: Arc<Script>,
    origin: String,
    /// What the script says, hashed: a changed script is another model.
    identity: String,
    next_turn: AtomicUsize,
    /// The table a turn fits its level by, as a model's would.
    models: Arc<ModelTable>,
}

impl ScriptProvider {
    pub fn new(script: Script, origin: impl Into<String>) -> ScriptProvider {
        let identity = format!(
            "script:{}",
            crate::digest::sha256_hex(serde_json::to_vec(&script).unwrap_or_default())
        );
        ScriptProvider {
            script: Arc::new(script),
            origin: origin.into(),
            identity,
            next_turn: AtomicUsize::new(0),
            models: ModelTable::shipped(),
        }
    }

    /// Fits turns' levels by `models` (`--models`) instead of the shipped table.
    pub fn with_models(mut self, models: Arc<ModelTable>) -> ScriptProvider {
        self.models = models;
        self
    }

    pub fn load(path: &Path) -> Result<ScriptProvider, ScriptError> {
        let display = path.display().to_string();
        let text = crate::input::read_input_text(path).map_err(|source| ScriptError::Read {
            path: display.clone(),
            source,
        })?;
        let script =
            parse_document(&text, DocumentFormat::detect(path, &text)).map_err(|problem| {
                ScriptError::Invalid {
                    path: display.clone(),
                    problem,
                }
            })?;
        Ok(ScriptProvider::new(script, display))
    }

    /// A fresh provider over the same script, starting at its first turn.
    pub fn restarted(&self) -> ScriptProvider {
        ScriptProvider {
            script: Arc::clone(&self.script),
            origin: self.origin.clone(),
            identity: self.identity.clone(),
            next_turn: AtomicUsize::new(0),
            models: Arc::clone(&self.models),
        }
    }
}

/// The provider_state the script attaches to its `n`th turn (1-based).
fn state_for(turn: usize) -> Value {
    json!({"script": {"turn": turn}})
}

impl ModelProvider for ScriptProvider {
    fn kind(&self) -> crate::provider::ProviderKind {
        crate::provider::ProviderKind::Script
    }

    fn models(&self) -> Arc<ModelTable> {
        Arc::clone(&self.models)
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let index = self.next_turn.fetch_add(1, Ordering::SeqCst);
        let number = index + 1;
        let Some(turn) = self.script.turns.get(index).cloned() else {
            let message = format!(
                "script `{}` has no turn {number}: the model was called {number} times but the script has {} turns",
                self.origin,
                self.script.turns.len()
            );
            return futures_util::stream::iter([Err(ProviderError::new(message))]).boxed();
        };
        if let Err(error) = check_replayed_state(&request.messages, &self.origin) {
            return futures_util::stream::iter([Err(error)]).boxed();
        }
        Box::pin(async_stream::stream! {
            let delay = turn.delay_ms.map(Duration::from_millis);
            for chunk in chunks(&turn) {
                if let Some(delay) = delay {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
                yield Ok(ModelEvent::TextDelta(chunk));
            }
            if let Some(message) = &turn.error {
                yield Err(ProviderError::new(message.clone()));
                return;
            }
            for call in &turn.calls {
                yield Ok(ModelEvent::ToolCall(ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                }));
            }
            yield Ok(ModelEvent::Done(CallSummary {
                usage: turn.reported_usage(),
                provider_state: Some(state_for(number)),
                model_version: Some("script".to_string()),
                finish_reason: Some("STOP".to_string()),
                ..CallSummary::default()
            }));
        })
    }
}

/// Every assistant turn of the current request (after the last user text)
/// must come back with the provider_state this script gave it, unchanged.
fn check_replayed_state(messages: &[AiMessage], origin: &str) -> Result<(), ProviderError> {
    let start = messages
        .iter()
        .rposition(|message| matches!(message, AiMessage::User { .. }))
        .map_or(0, |index| index + 1);
    for message in &messages[start..] {
        if let AiMessage::Assistant { provider_state, .. } = message {
            let ours = provider_state
                .as_ref()
                .and_then(|state| state.pointer("/script/turn"))
                .and_then(Value::as_u64)
                .is_some_and(|turn| provider_state.as_ref() == Some(&state_for(turn as usize)));
            if !ours {
                return Err(ProviderError::new(format!(
                    "script `{origin}`: an assistant turn was replayed without the provider_state the model gave it"
                )));
            }
        }
    }
    Ok(())
}

/// The pieces to stream: `chunks` as given, or `text` cut after every few
/// words so that a consumer sees it arrive in parts.
fn chunks(turn: &ScriptTurn) -> Vec<String> {
    if let Some(chunks) = &turn.chunks {
        return chunks.clone();
    }
    let Some(text) = &turn.text else {
        return Vec::new();
    };
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for (index, word) in text.split_inclusive(' ').enumerate() {
        piece.push_str(word);
        if index % 3 == 2 {
            pieces.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_into_several_chunks_that_join_back() {
        let turn = ScriptTurn {
            text: Some("The excess is £250 on this policy, payable once.".into()),
            ..ScriptTurn::default()
        };
        let pieces = chunks(&turn);
        assert!(pieces.len() >= 3);
        assert_eq!(
            pieces.concat(),
            "The excess is £250 on this policy, payable once."
        );
    }

    #[test]
    fn a_script_file_error_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, "turns:\n  - text: hi\n    cals: []\n").unwrap();
        let error = ScriptProvider::load(&path).err().unwrap().to_string();
        assert!(error.contains("s.yaml"), "{error}");
        assert!(error.contains("line 3"), "{error}");
    }

    fn parse(text: &str) -> Result<Script, DocumentProblem> {
        parse_document(text, DocumentFormat::Yaml)
    }

    #[test]
    fn a_count_left_out_is_zero_and_a_null_one_is_unreported() {
        let usage = |yaml: &str| parse(yaml).unwrap().turns[0].reported_usage();
        assert_eq!(
            usage("turns:\n  - text: hi\n    usage: {inputTokens: 900}\n"),
            Usage::known(900, 0, 0)
        );
        assert_eq!(usage("turns:\n  - usage: {}\n"), Usage::ZERO);
        assert_eq!(usage("turns:\n  - text: hi\n"), Usage::ZERO);
        assert_eq!(usage("turns:\n  - usage: null\n"), Usage::UNREPORTED);
        assert_eq!(
            usage("turns:\n  - usage: {inputTokens: 9, outputTokens: null}\n"),
            Usage::reported(Some(9), None, Some(0))
        );
    }

    #[test]
    fn a_misspelt_or_negative_usage_count_is_an_error() {
        let misspelt = parse("turns:\n  - usage: {inputTokenz: 1}\n").unwrap_err();
        assert!(misspelt.to_string().contains("inputTokenz"), "{misspelt}");
        assert!(parse("turns:\n  - usage: {outputTokens: -3}\n").is_err());
    }
}
