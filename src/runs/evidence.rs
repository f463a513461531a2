//! What a judge reads of a recorded turn: the handler's last message, the
//! answer, and each tool call with the result the model read.

use super::store::RunLog;
use crate::chat::event::ChatEvent;
use crate::chat::request::Role;
use crate::judge::Evidence;
use crate::judge::evidence::add_model_call;

pub fn evidence_of(log: &RunLog) -> Evidence {
    let message = log
        .header
        .request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.text.clone())
        .unwrap_or_default();
    let answer = log
        .events()
        .filter_map(|event| match event {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut tools = Vec::new();
    for call in log.model_calls() {
        add_model_call(&mut tools, &call.tool_results_in, &call.tool_calls);
    }
    Evidence {
        message,
        answer,
        tools,
    }
}
