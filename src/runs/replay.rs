//! Re-running a recorded turn: the request rebuilt from its run log, and a
//! comparison of the replayed events with the recorded ones.

use std::path::Path;
use std::sync::Arc;

use crate::chat::event::ChatEvent;
use crate::chat::request::{ChatRequest, ClaimInput, PromptOptions};
use crate::claims::{ClaimStore, load_claim_file};
use crate::provider::replay::{RecordedCall, ReplayProvider, first_difference};

use super::RunLog;
use super::store::LogEntry;

/// The recorded request, with the claim looked up again (from the store by
/// id, or from its file) unless `claim` replaces it. Warnings (a claim that
/// changed since the recording) are returned beside it.
/// Why a recorded turn's request cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum ReplayRequestError {
    #[error("the run log names no claim")]
    NoClaim,
    #[error("the recorded claim file cannot be loaded: {0}")]
    Claim(#[from] crate::claims::ClaimError),
}

pub fn request_from_log(
    log: &RunLog,
    store: &ClaimStore,
    claim: Option<ClaimInput>,
) -> Result<(ChatRequest, Vec<String>), ReplayRequestError> {
    let recorded = &log.header.request;
    let mut warnings = Vec::new();
    // A different claim asked for on purpose has not "changed": only the
    // recorded claim (looked up again, or named again by its id) is checked.
    let same_claim = match (&claim, &log.header.claim) {
        (None, _) => true,
        (Some(ClaimInput::Id(id)), Some(recorded_claim)) => *id == recorded_claim.id,
        (Some(_), _) => false,
    };
    let claim = match (claim, &recorded.claim_id, &recorded.claim_file) {
        (Some(claim), _, _) => claim,
        (None, Some(id), _) => ClaimInput::Id(id.clone()),
        (None, None, Some(file)) => {
            let loaded = load_claim_file(Path::new(file))?;
            ClaimInput::Document(Arc::new(loaded))
        }
        (None, None, None) => return Err(ReplayRequestError::NoClaim),
    };
    if let (true, Some(recorded_claim), Some(now)) =
        (same_claim, &log.header.claim, current_sha(&claim, store))
        && recorded_claim.sha256 != now
    {
        warnings.push(format!(
            "claim {} has changed since the recording (sha256 {} then, {} now)",
            recorded_claim.id,
            crate::digest::short_sha(&recorded_claim.sha256),
            crate::digest::short_sha(&now)
        ));
    }
    if log.prompt.is_none() && !log.header.overridden.is_empty() {
        warnings.push(match &log.prompt_missing {
            Some(why) => format!("{why}: its overrides cannot be re-applied"),
            None => "the run log has no prompt record: its overrides cannot be re-applied".into(),
        });
    }
    let overrides = log
        .prompt
        .as_ref()
        .map(|prompt| prompt.applied_overrides.clone())
        .unwrap_or_default();
    let request = ChatRequest {
        claim,
        messages: recorded.messages.clone(),
        prompt: PromptOptions {
            capability: recorded.capability.clone(),
            locale: recorded.locale,
            brand: recorded.brand.clone(),
            screen_actions: recorded.screen_actions,
            voice: recorded.voice,
            overrides,
        },
        model: log.header.model.clone(),
        thinking_level: recorded.thinking_level,
        force_thinking_level: recorded.force_thinking_level,
        today: recorded.today,
    };
    Ok((request, warnings))
}

fn current_sha(claim: &ClaimInput, store: &ClaimStore) -> Option<String> {
    match claim {
        ClaimInput::Document(loaded) => Some(loaded.sha256.clone()),
        ClaimInput::Id(id) => store.load(id).ok().map(|loaded| loaded.sha256),
    }
}

/// Where the replayed events differ from the recorded ones; empty when they
/// match. A `done`'s turn id is fresh on every run and is not compared.
pub fn compare_events(recorded: &[ChatEvent], replayed: &[ChatEvent]) -> Vec<String> {
    let mut differences = Vec::new();
    for (index, (old, new)) in recorded.iter().zip(replayed).enumerate() {
        if same_event(old, new) {
            continue;
        }
        let (old_text, new_text) = first_difference(&old.to_json(), &new.to_json());
        differences.push(format!(
            "event {}: {} differs\n    recorded: {old_text}\n    replayed: {new_text}",
            index + 1,
            describe(old)
        ));
    }
    if recorded.len() != replayed.len() {
        differences.push(format!(
            "the recording has {} events; the replay has {}",
            recorded.len(),
            replayed.len()
        ));
    }
    differences
}

fn same_event(old: &ChatEvent, new: &ChatEvent) -> bool {
    match (old, new) {
        (ChatEvent::Done(old), ChatEvent::Done(new)) => {
            old.model == new.model && old.usage == new.usage && old.prompts == new.prompts
        }
        _ => old == new,
    }
}

fn describe(event: &ChatEvent) -> String {
    match event {
        ChatEvent::TextDelta { .. } => "text_delta".to_string(),
        ChatEvent::Activity { tool, .. } => format!("activity of {tool}"),
        ChatEvent::ToolResult { tool, .. } => format!("tool_result of {tool}"),
        ChatEvent::ClientAction(_) => "client_action".to_string(),
        ChatEvent::Done(_) => "done".to_string(),
        ChatEvent::Error { .. } => "error".to_string(),
    }
}

/// A replay provider that plays back `log`'s model calls.
pub fn replay_provider(log: &RunLog) -> ReplayProvider {
    let provider = ReplayProvider::new(recorded_calls(log), log.path.display().to_string())
        .with_turn_id(log.header.turn_id.clone());
    match log.header.provider.parse() {
        Ok(kind) => provider.recorded_by(kind),
        Err(_) => provider,
    }
}

/// Pairs each model-call trace with the text deltas streamed before it, so
/// that playback repeats the original pieces.
fn recorded_calls(log: &RunLog) -> Vec<RecordedCall> {
    let mut records = Vec::new();
    let mut deltas = Vec::new();
    for entry in &log.entries {
        match entry {
            LogEntry::Event(_, ChatEvent::TextDelta { text }) => deltas.push(text.clone()),
            LogEntry::Event(..) => {}
            LogEntry::ModelCall(call) => records.push(RecordedCall {
                deltas: std::mem::take(&mut deltas),
                tool_calls: call.tool_calls.clone(),
                tool_results_in: call.tool_results_in.clone(),
                summary: call.summary.clone(),
                error: call.error.clone(),
            }),
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_the_event_and_show_both_sides() {
        let recorded = vec![ChatEvent::ToolResult {
            id: "c1".into(),
            tool: "get_claim_section".into(),
            ok: true,
            result: "{\"position\": \"Confirmed\"}".into(),
            truncated: false,
        }];
        let mut replayed = recorded.clone();
        replayed[0] = ChatEvent::ToolResult {
            id: "c1".into(),
            tool: "get_claim_section".into(),
            ok: true,
            result: "{\"position\": \"Declined\"}".into(),
            truncated: false,
        };
        replayed.push(ChatEvent::TextDelta { text: "x".into() });
        let differences = compare_events(&recorded, &replayed);
        assert_eq!(differences.len(), 2);
        assert!(
            differences[0].starts_with("event 1: tool_result of get_claim_section differs"),
            "{}",
            differences[0]
        );
        assert!(differences[0].contains("Confirmed") && differences[0].contains("Declined"));
        assert_eq!(
            differences[1],
            "the recording has 1 events; the replay has 2"
        );
        assert!(compare_events(&recorded, &recorded).is_empty());
    }
}
