//! The conversation between turns is text only; `to_ai_messages` turns it
//! into the model's history for a new turn.

use super::request::{ChatMessage, Role};
use crate::provider::AiMessage;

/// Text history → model messages, dropping any leading assistant messages
/// so that the model always starts with the user.
pub fn to_ai_messages(messages: &[ChatMessage]) -> Vec<AiMessage> {
    messages
        .iter()
        .skip_while(|message| message.role == Role::Assistant)
        .map(|message| match message.role {
            Role::User => AiMessage::User {
                text: message.text.clone(),
            },
            Role::Assistant => AiMessage::Assistant {
                text: message.text.clone(),
                tool_calls: Vec::new(),
                provider_state: None,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_assistant_messages_are_dropped_and_the_rest_kept() {
        let history = [
            ChatMessage::assistant("Hello, how can I help?"),
            ChatMessage::assistant("Ask me about the claim."),
            ChatMessage::user("What is the excess?"),
            ChatMessage::assistant("£350."),
            ChatMessage::user("And the limit?"),
        ];
        let messages = to_ai_messages(&history);
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[0],
            AiMessage::User {
                text: "What is the excess?".into()
            }
        );
        assert!(matches!(&messages[1], AiMessage::Assistant { text, .. } if text == "£350."));
    }
}
