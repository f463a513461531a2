//! A judge's reply, parsed strictly, and the JSON schemas the judge is asked
//! to reply in. Anything but the asked-for JSON is an error naming what was
//! wrong and quoting the reply briefly.

use serde_json::{Map, Value, json};

use super::Preference;
use crate::text::quote;

/// A rubric judge's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct RubricReply {
    pub pass: bool,
    /// From 0 to 1, when the judge gave one.
    pub score: Option<f64>,
    pub reason: String,
}

/// A pairwise judge's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct PairwiseReply {
    pub winner: Preference,
    pub reason: String,
}

/// A rubric judge's reply schema, in plain JSON Schema (each provider
/// converts it to its API's dialect). The reason comes first, so that a
/// model that writes in order reasons before it decides.
pub fn rubric_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "pass": {"type": "boolean"},
            "score": {"type": "number", "minimum": 0, "maximum": 1}
        },
        "required": ["pass", "score", "reason"]
    })
}

/// A pairwise judge's reply schema, in plain JSON Schema.
pub fn pairwise_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "winner": {"type": "string", "enum": ["first", "second", "tie"]}
        },
        "required": ["winner", "reason"]
    })
}

/// Why a judge's reply was refused, quoting it briefly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("the reply has no `{field}`: \"{}\"", quote(.reply))]
    Missing { field: &'static str, reply: String },
    #[error("`{field}` must be {expected}, not {}: \"{}\"", quote(.got), quote(.reply))]
    Wrong {
        field: &'static str,
        expected: &'static str,
        got: String,
        reply: String,
    },
    #[error("the reply gives `{}` twice: \"{}\"", quote(.key), quote(.reply))]
    Twice { key: String, reply: String },
    #[error("the reply is JSON but not an object: \"{}\"", quote(.reply))]
    NotObject { reply: String },
    #[error("the reply is empty ({0})")]
    Empty(String),
    #[error("the reply is not JSON ({error}): \"{}\"", quote(.reply))]
    NotJson { error: String, reply: String },
}

/// `{pass: bool, score?: number in 0..=1, reason?: string}`: `score` and
/// `reason` may be left out, but one that is there must be of its type —
/// `null` is neither a number nor a string (docs/judging.md).
pub fn parse_rubric(raw: &str) -> Result<RubricReply, ReplyError> {
    let object = object(raw)?;
    let pass = match object.get("pass") {
        Some(Value::Bool(pass)) => *pass,
        Some(other) => return Err(wrong("pass", "true or false", other, raw)),
        None => return Err(missing("pass", raw)),
    };
    let score = match object.get("score") {
        None => None,
        Some(Value::Number(n)) => match n.as_f64().filter(|s| (0.0..=1.0).contains(s)) {
            Some(score) => Some(score),
            None => {
                return Err(wrong(
                    "score",
                    "a number from 0 to 1",
                    &Value::Number(n.clone()),
                    raw,
                ));
            }
        },
        Some(other) => return Err(wrong("score", "a number from 0 to 1", other, raw)),
    };
    Ok(RubricReply {
        pass,
        score,
        reason: reason(&object, raw)?,
    })
}

/// `{winner: "first"|"second"|"tie", reason?: string}`.
pub fn parse_pairwise(raw: &str) -> Result<PairwiseReply, ReplyError> {
    let object = object(raw)?;
    let winner = match object.get("winner") {
        Some(Value::String(w)) if w == "first" => Preference::First,
        Some(Value::String(w)) if w == "second" => Preference::Second,
        Some(Value::String(w)) if w == "tie" => Preference::Tie,
        Some(other) => {
            return Err(wrong(
                "winner",
                "\"first\", \"second\" or \"tie\"",
                other,
                raw,
            ));
        }
        None => return Err(missing("winner", raw)),
    };
    Ok(PairwiseReply {
        winner,
        reason: reason(&object, raw)?,
    })
}

fn object(raw: &str) -> Result<Map<String, Value>, ReplyError> {
    let reply = || raw.trim().to_string();
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(_)) if let Some(key) = duplicate_key(raw) => Err(ReplyError::Twice {
            key,
            reply: reply(),
        }),
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ReplyError::NotObject { reply: reply() }),
        Err(error) if raw.trim().is_empty() => Err(ReplyError::Empty(error.to_string())),
        Err(error) => Err(ReplyError::NotJson {
            error: error.to_string(),
            reply: reply(),
        }),
    }
}

fn missing(field: &'static str, raw: &str) -> ReplyError {
    ReplyError::Missing {
        field,
        reply: raw.trim().to_string(),
    }
}

/// The first key a JSON object gives twice (a parsed `Value` keeps only the
/// last, which would let `{"pass": false, …, "pass": true}` pass).
fn duplicate_key(raw: &str) -> Option<String> {
    struct FirstDuplicate;
    impl<'de> serde::de::Visitor<'de> for FirstDuplicate {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut duplicate = None;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                if !seen.insert(key.clone()) && duplicate.is_none() {
                    duplicate = Some(key);
                }
            }
            Ok(duplicate)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    serde::Deserializer::deserialize_map(&mut deserializer, FirstDuplicate)
        .ok()
        .flatten()
}

fn reason(object: &Map<String, Value>, raw: &str) -> Result<String, ReplyError> {
    match object.get("reason") {
        None => Ok(String::new()),
        Some(Value::String(reason)) => Ok(reason.clone()),
        Some(other) => Err(wrong("reason", "a string", other, raw)),
    }
}

fn wrong(field: &'static str, expected: &'static str, got: &Value, raw: &str) -> ReplyError {
    ReplyError::Wrong {
        field,
        expected,
        got: serde_json::to_string(got).unwrap_or_default(),
        reply: raw.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_is_asked_for_the_same_schemas_as_before_they_were_plain() {
        use crate::provider::gemini::schema::to_gemini;
        assert_eq!(
            to_gemini(&rubric_schema()),
            json!({
                "type": "OBJECT",
                "properties": {
                    "pass": {"type": "BOOLEAN"},
                    "score": {"type": "NUMBER", "minimum": 0, "maximum": 1},
                    "reason": {"type": "STRING"}
                },
                "required": ["pass", "score", "reason"],
                "propertyOrdering": ["reason", "pass", "score"]
            })
        );
        assert_eq!(
            to_gemini(&pairwise_schema())["propertyOrdering"],
            json!(["reason", "winner"])
        );
        assert_eq!(
            to_gemini(&pairwise_schema())["properties"]["winner"],
            json!({"type": "STRING", "enum": ["first", "second", "tie"]})
        );
    }

    #[test]
    fn a_well_formed_reply_parses() {
        assert_eq!(
            parse_rubric(r#"{"reason": "cites £350", "pass": true, "score": 0.9}"#),
            Ok(RubricReply {
                pass: true,
                score: Some(0.9),
                reason: "cites £350".into()
            })
        );
        assert_eq!(
            parse_pairwise(r#"{"winner": "second", "reason": "r"}"#).map(|r| r.winner),
            Ok(Preference::Second)
        );
    }

    #[test]
    fn anything_else_is_an_error_saying_what() {
        let cases = [
            ("Sure! It passes.", "the reply is not JSON"),
            ("", "the reply is empty"),
            ("[true]", "JSON but not an object"),
            (r#"{"score": 1}"#, "the reply has no `pass`"),
            (
                r#"{"pass": "yes"}"#,
                "`pass` must be true or false, not \"yes\"",
            ),
            (
                r#"{"pass": true, "score": 7}"#,
                "`score` must be a number from 0 to 1, not 7",
            ),
            (
                r#"{"pass": true, "score": "high"}"#,
                "`score` must be a number",
            ),
            (
                r#"{"pass": true, "reason": 3}"#,
                "`reason` must be a string",
            ),
            (
                r#"{"pass": true, "score": 0.9, "reason": null}"#,
                "`reason` must be a string",
            ),
            (
                r#"{"pass": true, "score": null, "reason": "r"}"#,
                "`score` must be a number from 0 to 1",
            ),
        ];
        for (raw, expected) in cases {
            let error = parse_rubric(raw).expect_err(raw).to_string();
            assert!(error.contains(expected), "{raw}: {error}");
        }
        assert!(
            parse_pairwise(r#"{"winner": "A"}"#)
                .unwrap_err()
                .to_string()
                .contains("`winner` must be")
        );
    }

    #[test]
    fn a_long_reply_is_quoted_briefly() {
        let raw = "x".repeat(10_000);
        assert!(parse_rubric(&raw).unwrap_err().to_string().chars().count() < 400);
    }
}
