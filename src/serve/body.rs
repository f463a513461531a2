//! The body of `POST /api/chat`: the production Worker's `ChatRequest` JSON
//! (SPEC §1.1) turned into the engine's validated `ChatRequest`, or a
//! `BodyError` whose message names the field — the HTTP 400 that comes
//! before any event. The shape itself is `chat::wire::WireRequest`, which
//! the `worker` provider writes.

use std::path::Path;
use std::sync::Arc;

use crate::chat::request::DEFAULT_MODEL;
use crate::chat::wire::WireRequest;
use crate::chat::{ChatRequest, ClaimInput, PromptOptions, ThinkingLevel};
use crate::claims::parse_claim_bytes;
use crate::prompts::PromptRegistry;
use chrono::NaiveDate;

/// Why a body is not a request; the message names the field.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("{0}")]
    Json(String),
    #[error("claim, claimId: exactly one of `claim` or `claimId` is required, got {0}")]
    ClaimChoice(&'static str),
    #[error("claim: {0}")]
    Claim(String),
    #[error("{0}")]
    Invalid(#[from] crate::chat::request::RequestError),
}

/// The server's defaults for what a body leaves out.
#[derive(Debug, Clone)]
pub struct RequestDefaults {
    pub model: String,
    pub thinking_level: ThinkingLevel,
    /// The date the claim brief gives as today; `None`: the local date.
    pub today: Option<NaiveDate>,
}

impl Default for RequestDefaults {
    fn default() -> RequestDefaults {
        RequestDefaults {
            model: DEFAULT_MODEL.to_string(),
            thinking_level: crate::chat::request::DEFAULT_THINKING_LEVEL,
            today: None,
        }
    }
}

/// Parses and validates a body. Never panics, whatever the bytes.
pub fn parse_chat_body(
    bytes: &[u8],
    defaults: &RequestDefaults,
    registry: &PromptRegistry,
) -> Result<ChatRequest, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let wire: WireRequest = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|error| BodyError::Json(json_problem(&error, FIELDS)))?;
    deserializer
        .end()
        .map_err(|error| BodyError::Json(format!("body: {error}")))?;
    refuse_duplicate_keys(bytes, FIELDS)?;
    let claim = claim_input(wire.claim, wire.claim_id)?;
    let request = ChatRequest {
        claim,
        messages: wire.messages,
        prompt: PromptOptions {
            capability: wire.capability,
            locale: wire.locale,
            brand: wire.brand,
            screen_actions: wire.screen_actions,
            voice: wire.voice,
            overrides: wire.overrides,
        },
        model: wire.model.unwrap_or_else(|| defaults.model.clone()),
        thinking_level: wire.thinking_level.unwrap_or(defaults.thinking_level),
        force_thinking_level: false,
        today: defaults
            .today
            .unwrap_or_else(|| chrono::Local::now().date_naive()),
    };
    request.validate(registry)?;
    Ok(request)
}

/// The fields of the wire request, for naming where a problem is.
pub(crate) const FIELDS: &[&str] = &[
    "claim",
    "claimId",
    "messages",
    "capability",
    "locale",
    "brand",
    "screenActions",
    "voice",
    "overrides",
    "model",
    "thinkingLevel",
];

/// `messages[2].role: unknown variant ...` when the problem is inside a
/// field of the request; `body: ...` otherwise (text that is not JSON, or a
/// key the parser had only half read).
pub(crate) fn json_problem(
    error: &serde_path_to_error::Error<serde_json::Error>,
    fields: &[&str],
) -> String {
    let path = error.path().to_string();
    let top = path.split(['.', '[']).next().unwrap_or_default();
    let field = if fields.contains(&top) {
        path.as_str()
    } else {
        "body"
    };
    format!(
        "{field}: {}",
        crate::text::quote(&error.inner().to_string())
    )
}

/// A body that gives a key twice in any object, `overrides` included, is
/// refused naming the key: a map (`overrides`: prompt id → text) would
/// keep the last one without a word, where the derived request refuses a
/// field given twice — one rule for every JSON input (`document`'s).
pub(crate) fn refuse_duplicate_keys(bytes: &[u8], fields: &[&str]) -> Result<(), BodyError> {
    // Bytes that are not UTF-8 have been refused by the parse before.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(());
    };
    crate::document::check_json_keys(text).map_err(|problem| {
        let path = problem.field.unwrap_or_default();
        let top = path.split(['.', '[']).next().unwrap_or_default();
        let field = if fields.contains(&top) {
            path.as_str()
        } else {
            "body"
        };
        BodyError::Json(format!("{field}: {}", problem.message))
    })
}

fn claim_input(
    claim: Option<serde_json::Value>,
    claim_id: Option<String>,
) -> Result<ClaimInput, BodyError> {
    match (claim, claim_id) {
        (Some(_), Some(_)) => Err(BodyError::ClaimChoice("both")),
        (None, None) => Err(BodyError::ClaimChoice("neither")),
        (None, Some(id)) => Ok(ClaimInput::Id(id)),
        (Some(document), None) => {
            let bytes = serde_json::to_vec(&document)
                .map_err(|error| BodyError::Claim(error.to_string()))?;
            let loaded = parse_claim_bytes(&bytes, Path::new("<request>.json"))
                .map_err(|error| BodyError::Claim(error.to_string()))?;
            Ok(ClaimInput::Document(Arc::new(loaded)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Locale;

    fn parse(body: &str) -> Result<ChatRequest, BodyError> {
        parse_chat_body(
            body.as_bytes(),
            &RequestDefaults::default(),
            PromptRegistry::embedded(),
        )
    }

    fn error(body: &str) -> String {
        match parse(body) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("expected {body} to be rejected"),
        }
    }

    #[test]
    fn a_wire_request_becomes_the_engine_request() {
        let request = parse(
            r#"{"claimId":"CLM-1","messages":[{"role":"user","text":"hi"}],
                "capability":"summary","locale":"us","screenActions":true,
                "overrides":{"system.role":"x"},"thinkingLevel":"high","extra":1}"#,
        )
        .unwrap();
        assert!(matches!(request.claim, ClaimInput::Id(ref id) if id == "CLM-1"));
        assert_eq!(request.prompt.locale, Some(Locale::Us));
        assert!(request.prompt.screen_actions);
        assert_eq!(request.prompt.overrides.len(), 1);
        assert_eq!(request.thinking_level, ThinkingLevel::High);
        assert_eq!(request.model, DEFAULT_MODEL);
    }

    #[test]
    fn each_bad_body_names_its_field() {
        let m = r#""messages":[{"role":"user","text":"hi"}]"#;
        assert!(error("not json").starts_with("body:"));
        assert!(error(&format!("{{{m}}}")).starts_with("claim, claimId:"));
        assert!(error(&format!(r#"{{"claim":{{}},"claimId":"a",{m}}}"#)).contains("got both"));
        assert!(error(&format!(r#"{{"claim":{{"id":1}},{m}}}"#)).starts_with("claim:"));
        assert!(error(r#"{"claimId":"a"}"#).contains("messages"));
        assert!(
            error(r#"{"claimId":"a","messages":[{"role":"bot","text":"x"}]}"#)
                .starts_with("messages[0].role:")
        );
        assert!(error(r#"{"claimId":"a","messages":[]}"#).starts_with("messages:"));
        assert!(error(&format!(r#"{{"claimId":"a",{m},"locale":"fr"}}"#)).starts_with("locale:"));
        assert!(error(&format!(r#"{{"claimId":"a",{m},"brand":"nope"}}"#)).starts_with("brand:"));
        assert!(error(&format!(r#"{{"claimId":"a",{m}}} trailing"#)).starts_with("body:"));
    }
}
