//! `ChatEvent`: the wire format of a turn (SPEC §2). One JSON object per
//! event, tagged by `type`, camelCase fields — the SSE `data:` payload and
//! the NDJSON line. Documented with examples in `docs/events.md`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// A piece of the answer, forwarded the moment the model produced it.
    TextDelta { text: String },
    /// A known tool is about to run; `id` is the call id.
    Activity {
        id: String,
        tool: String,
        label: String,
    },
    /// A tool finished; `result` is cut to its first 400 characters.
    ToolResult {
        id: String,
        tool: String,
        ok: bool,
        result: String,
        truncated: bool,
    },
    /// Something for the host's screen to do.
    ClientAction(ClientAction),
    /// The turn finished normally. Always last unless an `error` ended it.
    Done(Done),
    /// The turn ended in an error. Always last when present.
    Error { message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ClientAction {
    HighlightPanel { panel: String },
    Navigate { to: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    /// The model the turn asked for.
    pub model: String,
    /// Summed over every model call of the turn.
    pub usage: Usage,
    /// A fresh UUID v4.
    pub turn_id: String,
    pub prompts: PromptsUsed,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    /// Includes thinking tokens.
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
}

/// Saturating: token counts come from the provider, and an absurd count must
/// not overflow (a panic in debug builds).
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptsUsed {
    /// `default`, or 12 hex characters.
    pub fingerprint: String,
    /// Ids of the applied overrides, in id order.
    pub overridden: Vec<String>,
}

impl ChatEvent {
    /// Whether this event ends the stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ChatEvent::Done(_) | ChatEvent::Error { .. })
    }

    /// The event as one line of JSON (no newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("events hold only strings, numbers and booleans")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_matches_the_spec_example_to_the_character() {
        let done = ChatEvent::Done(Done {
            model: "gemini-3.1-flash-lite".into(),
            usage: Usage {
                input_tokens: 5210,
                output_tokens: 412,
                cache_read_tokens: 3968,
            },
            turn_id: "4f6b2c1e-8a9d-4c3b-9e2f-1d7a5b0c6e93".into(),
            prompts: PromptsUsed {
                fingerprint: "default".into(),
                overridden: vec![],
            },
        });
        assert_eq!(
            done.to_json(),
            r#"{"type":"done","model":"gemini-3.1-flash-lite","usage":{"inputTokens":5210,"outputTokens":412,"cacheReadTokens":3968},"turnId":"4f6b2c1e-8a9d-4c3b-9e2f-1d7a5b0c6e93","prompts":{"fingerprint":"default","overridden":[]}}"#
        );
    }

    #[test]
    fn every_event_has_its_spec_shape_and_round_trips() {
        let cases = [
            (
                ChatEvent::TextDelta { text: "Hi".into() },
                r#"{"type":"text_delta","text":"Hi"}"#,
            ),
            (
                ChatEvent::Activity {
                    id: "c1".into(),
                    tool: "get_claim_section".into(),
                    label: "Reading the coverage section".into(),
                },
                r#"{"type":"activity","id":"c1","tool":"get_claim_section","label":"Reading the coverage section"}"#,
            ),
            (
                ChatEvent::ToolResult {
                    id: "c1".into(),
                    tool: "t".into(),
                    ok: false,
                    result: "r".into(),
                    truncated: true,
                },
                r#"{"type":"tool_result","id":"c1","tool":"t","ok":false,"result":"r","truncated":true}"#,
            ),
            (
                ChatEvent::ClientAction(ClientAction::HighlightPanel {
                    panel: "coverage".into(),
                }),
                r#"{"type":"client_action","action":"highlight_panel","panel":"coverage"}"#,
            ),
            (
                ChatEvent::ClientAction(ClientAction::Navigate {
                    to: "documents/D-1".into(),
                }),
                r#"{"type":"client_action","action":"navigate","to":"documents/D-1"}"#,
            ),
            (
                ChatEvent::Error {
                    message: "Claim X not found.".into(),
                },
                r#"{"type":"error","message":"Claim X not found."}"#,
            ),
        ];
        for (event, json) in cases {
            assert_eq!(event.to_json(), json);
            assert_eq!(serde_json::from_str::<ChatEvent>(json).unwrap(), event);
        }
    }
}
