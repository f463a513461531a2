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

// The one sum rule is `AddAssign` below; every total of usage goes through it.
/// Token counts: one model call's, as its server reported them, or the sum
/// of calls' (a turn's, a variant's). A count a server did not report is
/// `null`, never 0 (SPEC §1.6); in a sum, a count any call lacked is
/// `null`, and `usageUnreported` says how many calls lacked some count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    // Always written, `null` when unknown: required in the schema, nullable.
    #[schemars(required, schema_with = "count_or_null")]
    pub input_tokens: Option<u64>,
    /// Includes thinking tokens.
    #[schemars(required, schema_with = "count_or_null")]
    pub output_tokens: Option<u64>,
    #[schemars(required, schema_with = "count_or_null")]
    pub cache_read_tokens: Option<u64>,
    /// Calls whose server left out some or all of their counts; absent when
    /// none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage_unreported: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// A token count, or `null` for one not reported.
fn count_or_null(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["integer", "null"], "minimum": 0})
}

impl Usage {
    /// No tokens: the sum of no calls.
    pub const ZERO: Usage = Usage {
        input_tokens: Some(0),
        output_tokens: Some(0),
        cache_read_tokens: Some(0),
        usage_unreported: 0,
    };

    /// One call whose server reported no usage at all.
    pub const UNREPORTED: Usage = Usage {
        input_tokens: None,
        output_tokens: None,
        cache_read_tokens: None,
        usage_unreported: 1,
    };

    /// One call's counts as its server reported them, `None` where it did
    /// not: a call that lacked any is one call of unreported usage.
    pub fn reported(
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cache_read_tokens: Option<u64>,
    ) -> Usage {
        let counts = [input_tokens, output_tokens, cache_read_tokens];
        Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            usage_unreported: u32::from(counts.iter().any(Option::is_none)),
        }
    }

    /// One call whose server reported every count.
    pub fn known(input_tokens: u64, output_tokens: u64, cache_read_tokens: u64) -> Usage {
        Usage::reported(
            Some(input_tokens),
            Some(output_tokens),
            Some(cache_read_tokens),
        )
    }

    /// Every count is known.
    pub fn is_known(&self) -> bool {
        self.usage_unreported == 0
            && self.input_tokens.is_some()
            && self.output_tokens.is_some()
            && self.cache_read_tokens.is_some()
    }

    /// No count is known (a call's record says `usage: null`).
    pub fn is_unreported(&self) -> bool {
        self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.cache_read_tokens.is_none()
    }

    /// What every view says beside counts a server left out: `usage not
    /// reported by the server (2 calls)`; `None` when every call reported.
    pub fn unreported_note(&self) -> Option<String> {
        match self.usage_unreported {
            0 if self.is_known() => None,
            // A sum read from a hand-edited log, with a null count and no
            // call counted, still lacks that count.
            0 => unreported_note(1),
            calls => unreported_note(calls),
        }
    }

    /// `input/output` as the tables show it, `–` for a count not reported.
    pub fn in_out(&self) -> String {
        format!(
            "{}/{}",
            count_or_dash(self.input_tokens),
            count_or_dash(self.output_tokens)
        )
    }

    /// Cache-read tokens over input tokens; 0 without input, `None` when
    /// either count is unknown.
    pub fn cache_read_share(&self) -> Option<f64> {
        let (input, cached) = (self.input_tokens?, self.cache_read_tokens?);
        Some(if input == 0 {
            0.0
        } else {
            cached as f64 / input as f64
        })
    }
}

/// The one wording of calls without reported usage, for every view:
/// `usage not reported by the server (2 calls)`; `None` for 0 calls.
pub fn unreported_note(calls: u32) -> Option<String> {
    let noun = match calls {
        0 => return None,
        1 => "call",
        _ => "calls",
    };
    Some(format!("usage not reported by the server ({calls} {noun})"))
}

/// A token count as text, `–` when it was not reported.
pub fn count_or_dash(count: Option<u64>) -> String {
    count.map_or_else(|| "–".to_string(), |n| n.to_string())
}

impl Default for Usage {
    fn default() -> Usage {
        Usage::ZERO
    }
}

/// The sum rule: counts add (saturating: token counts come from the
/// provider, and an absurd count must not overflow — a panic in debug
/// builds); a count either side lacks is unknown in the sum, never taken as
/// 0; the calls that lacked usage add up.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        let add = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_add(b?));
        self.input_tokens = add(self.input_tokens, other.input_tokens);
        self.output_tokens = add(self.output_tokens, other.output_tokens);
        self.cache_read_tokens = add(self.cache_read_tokens, other.cache_read_tokens);
        self.usage_unreported = self.usage_unreported.saturating_add(other.usage_unreported);
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(calls: I) -> Usage {
        let mut total = Usage::ZERO;
        for usage in calls {
            total += usage;
        }
        total
    }
}

/// A model call's usage in its record: `null` when its server reported
/// none, else the counts (`null` each where it left one out).
pub mod usage_or_null {
    use super::Usage;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(usage: &Usage, to: S) -> Result<S::Ok, S::Error> {
        if usage.is_unreported() {
            to.serialize_none()
        } else {
            usage.serialize(to)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Usage, D::Error> {
        Ok(Option::<Usage>::deserialize(from)?.unwrap_or(Usage::UNREPORTED))
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
            usage: Usage::known(5210, 412, 3968),
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

    /// SPEC §1.6: a count some call's server did not report is `null` in
    /// the sum, never 0, and `usageUnreported` counts those calls.
    #[test]
    fn a_count_any_call_lacked_is_null_in_the_sum_and_the_calls_are_counted() {
        let mut turn = Usage::ZERO;
        turn += Usage::known(100, 10, 40);
        turn += Usage::reported(Some(50), None, None);
        assert_eq!(turn, Usage::reported(Some(150), None, None));
        turn += Usage::UNREPORTED;
        assert_eq!(
            turn,
            Usage {
                input_tokens: None,
                output_tokens: None,
                cache_read_tokens: None,
                usage_unreported: 2,
            }
        );
        assert_eq!(
            serde_json::to_string(&turn).unwrap(),
            r#"{"inputTokens":null,"outputTokens":null,"cacheReadTokens":null,"usageUnreported":2}"#
        );
        assert_eq!(
            turn.unreported_note().as_deref(),
            Some("usage not reported by the server (2 calls)")
        );
        let known: Usage = [Usage::known(1, 2, 0), Usage::known(3, 4, 1)]
            .into_iter()
            .sum();
        assert_eq!(known, Usage::known(4, 6, 1));
        assert_eq!(known.unreported_note(), None);
        // An absurd count saturates, never overflows.
        let mut big = Usage::known(u64::MAX, 0, 0);
        big += Usage::known(1, 0, 0);
        assert_eq!(big.input_tokens, Some(u64::MAX));
    }

    #[test]
    fn a_call_without_usage_is_recorded_as_null_and_older_records_read_as_before() {
        #[derive(Serialize, Deserialize, Debug, PartialEq)]
        struct Call {
            #[serde(with = "usage_or_null")]
            usage: Usage,
        }
        let written = |usage| serde_json::to_string(&Call { usage }).unwrap();
        assert_eq!(written(Usage::UNREPORTED), r#"{"usage":null}"#);
        assert_eq!(
            written(Usage::reported(Some(12), None, None)),
            r#"{"usage":{"inputTokens":12,"outputTokens":null,"cacheReadTokens":null,"usageUnreported":1}}"#
        );
        let read = |json: &str| serde_json::from_str::<Call>(json).unwrap().usage;
        assert_eq!(read(r#"{"usage":null}"#), Usage::UNREPORTED);
        // A log written before usage could be unknown.
        assert_eq!(
            read(r#"{"usage":{"inputTokens":1500,"outputTokens":20,"cacheReadTokens":1100}}"#),
            Usage::known(1500, 20, 1100)
        );
    }
}
