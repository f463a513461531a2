//! The loop's decisions as plain functions (SPEC §1.5): whether to go round
//! again, the eighth-round limit, call ids, and which events a tool outcome
//! produces. The async driver in `service.rs` only wires these together.

use super::event::ChatEvent;
use crate::provider::ToolCall;
use crate::tools::run::RESULT_PREVIEW_CHARS;
use crate::tools::{ToolOutcome, truncate_chars};

/// Model calls per turn at most.
pub const MAX_ROUNDS: u32 = 8;
/// `max_output_tokens` of every model call, unless the model table caps
/// the model lower (`models::ModelTable::output_cap`).
pub const MAX_OUTPUT_TOKENS: u32 = 8000;

/// Appended when the eighth round still ends in tool calls. U+2019 and U+2014.
pub const LIMIT_MESSAGE: &str = "I\u{2019}ve reached my limit of lookups for this question \u{2014} ask me to continue if you need more.";

/// What the loop does after a model call has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// No tool calls: the answer is complete.
    Finish,
    /// Run the tools, then call the model again.
    RunToolsAndContinue,
    /// Run the tools, then stop with the limit message.
    RunToolsThenLimit,
}

pub fn next_step(round: u32, tool_calls: usize) -> NextStep {
    match (tool_calls, round >= MAX_ROUNDS) {
        (0, _) => NextStep::Finish,
        (_, false) => NextStep::RunToolsAndContinue,
        (_, true) => NextStep::RunToolsThenLimit,
    }
}

/// The limit text, preceded by a blank line when answer text already streamed.
pub fn limit_text(answer_streamed: bool) -> String {
    if answer_streamed {
        format!("\n\n{LIMIT_MESSAGE}")
    } else {
        LIMIT_MESSAGE.to_string()
    }
}

/// The model's id for a call, or a stable one of ours: `call_<round>_<n>`.
pub fn call_id(call: &ToolCall, round: u32, index: usize) -> String {
    match &call.id {
        Some(id) if !id.is_empty() => id.clone(),
        _ => format!("call_{round}_{}", index + 1),
    }
}

/// The result an unknown tool name gets. The model reads it; no event.
pub fn unknown_tool_message(name: &str) -> String {
    format!("Unknown tool {name}")
}

/// The events after a known tool ran: its result (cut to 400 characters),
/// then one client action per screen action it returned.
pub fn tool_events(call_id: &str, tool: &str, outcome: &ToolOutcome) -> Vec<ChatEvent> {
    let (result, truncated) = truncate_chars(&outcome.content, RESULT_PREVIEW_CHARS);
    let mut events = vec![ChatEvent::ToolResult {
        id: call_id.to_string(),
        tool: tool.to_string(),
        ok: outcome.ok,
        result,
        truncated,
    }];
    events.extend(
        outcome
            .client_actions
            .iter()
            .cloned()
            .map(ChatEvent::ClientAction),
    );
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::event::ClientAction;

    #[test]
    fn the_eighth_round_is_the_last() {
        assert_eq!(next_step(1, 0), NextStep::Finish);
        assert_eq!(next_step(1, 2), NextStep::RunToolsAndContinue);
        assert_eq!(next_step(7, 1), NextStep::RunToolsAndContinue);
        assert_eq!(next_step(8, 1), NextStep::RunToolsThenLimit);
        assert_eq!(next_step(8, 0), NextStep::Finish);
    }

    #[test]
    fn the_limit_message_is_exact() {
        assert_eq!(
            limit_text(false),
            "I’ve reached my limit of lookups for this question — ask me to continue if you need more."
        );
        assert!(limit_text(true).starts_with("\n\nI’ve"));
    }

    #[test]
    fn client_actions_follow_the_result() {
        let outcome = ToolOutcome {
            ok: true,
            content: "Highlighted.".into(),
            client_actions: vec![ClientAction::HighlightPanel {
                panel: "coverage".into(),
            }],
        };
        let events = tool_events("c1", "highlight_panel", &outcome);
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[1], ChatEvent::ClientAction(ClientAction::HighlightPanel { panel }) if panel == "coverage")
        );
    }
}
