//! `ChatRequest`: one validated chat turn, as the engine understands it.
//!
//! Front ends (the CLI, the eval runner) build one their own way; nothing
//! here knows about clap. `validate` enforces SPEC §1.1 before any event.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::claims::LoadedClaim;
use crate::prompts::PromptRegistry;
pub use crate::prompts::thinking::{DEFAULT_THINKING_LEVEL, ThinkingLevel};

/// At most this many messages in a request.
pub const MAX_MESSAGES: usize = 60;
/// At most this many characters in one message, counted as production
/// counts them: UTF-16 code units (JavaScript's `string.length`).
pub const MAX_MESSAGE_CHARS: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation, as text only (SPEC §1.1). Unknown keys
/// (a front end's message `id`) are ignored, as production's schema drops
/// them, in `/api/chat` bodies and `--history` files alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub text: String,
}

impl ChatMessage {
    pub fn user(text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            text: text.into(),
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// The claim a turn runs against: the document itself, or an id to look up.
#[derive(Debug, Clone)]
pub enum ClaimInput {
    /// Shared: an eval sends the same document to every turn of a claim.
    Document(Arc<LoadedClaim>),
    Id(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    Uk,
    Us,
}

impl Locale {
    /// The default locale for a claim's country: `US` → us, anything else uk.
    pub fn for_country(country: Option<&str>) -> Locale {
        match country {
            Some(country) if country.eq_ignore_ascii_case("US") => Locale::Us,
            _ => Locale::Uk,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Locale::Uk => "uk",
            Locale::Us => "us",
        }
    }
}

/// A locale that is not `uk` or `us`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown locale `{}` (expected `uk` or `us`)", crate::text::quote(.0))]
pub struct UnknownLocale(pub String);

impl FromStr for Locale {
    type Err = UnknownLocale;
    fn from_str(text: &str) -> Result<Locale, UnknownLocale> {
        match text {
            "uk" => Ok(Locale::Uk),
            "us" => Ok(Locale::Us),
            other => Err(UnknownLocale(other.to_string())),
        }
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Gemini model used when neither `--model` nor `PROMPTLAB_MODEL` names one.
pub const DEFAULT_MODEL: &str = "gemini-3.1-flash-lite";

/// The model a turn asks for when none is named: `openai_model`
/// (`OPENAI_MODEL`) for an OpenAI-compatible server, whose names differ from
/// server to server so that no default fits them all (`None`: the caller
/// must ask for one); [`DEFAULT_MODEL`] for every other provider.
pub fn default_model(
    provider: crate::provider::ProviderKind,
    openai_model: Option<&str>,
) -> Option<String> {
    match provider {
        crate::provider::ProviderKind::OpenAi => openai_model
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_string),
        _ => Some(DEFAULT_MODEL.to_string()),
    }
}

/// What shapes the system prompt, apart from the claim itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptOptions {
    /// A quick-action id; `None` is free chat.
    pub capability: Option<String>,
    /// `None`: from the claim's country.
    pub locale: Option<Locale>,
    /// A brand name from `prompts/brands.yaml`; `None`: the default brand.
    pub brand: Option<String>,
    pub screen_actions: bool,
    pub voice: bool,
    /// Prompt Lab overrides, prompt id → text, before the usable rule.
    #[serde(skip)]
    pub overrides: BTreeMap<String, String>,
}

/// One chat turn's request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub claim: ClaimInput,
    /// The conversation, the new user message last.
    pub messages: Vec<ChatMessage>,
    pub prompt: PromptOptions,
    pub model: String,
    /// The deployment default; a capability's own level wins over it.
    pub thinking_level: ThinkingLevel,
    /// `thinking_level` wins even over a capability's own (an eval variant
    /// comparing thinking levels; production never sets it).
    pub force_thinking_level: bool,
    /// The date the claim brief gives as today.
    pub today: NaiveDate,
}

/// A request that breaks a rule of SPEC §1.1. The message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("messages: at least one message is required")]
    NoMessages,
    #[error("messages: at most {MAX_MESSAGES} messages are allowed, got {0}")]
    TooManyMessages(usize),
    #[error(
        "messages[{index}].text: at most {MAX_MESSAGE_CHARS} characters are allowed, got {chars}"
    )]
    MessageTooLong { index: usize, chars: usize },
    #[error("messages[{0}].text: the message is empty")]
    EmptyMessage(usize),
    #[error("messages[{0}].role: the last message must be from the user")]
    LastNotUser(usize),
    #[error("brand: unknown brand `{name}` (known: {known})")]
    UnknownBrand { name: String, known: String },
    #[error("model: the model name is empty")]
    EmptyModel,
}

impl ChatRequest {
    /// A request with the defaults, for one user message.
    pub fn new(claim: ClaimInput, message: impl Into<String>, today: NaiveDate) -> ChatRequest {
        ChatRequest {
            claim,
            messages: vec![ChatMessage::user(message)],
            prompt: PromptOptions::default(),
            model: DEFAULT_MODEL.to_string(),
            thinking_level: DEFAULT_THINKING_LEVEL,
            force_thinking_level: false,
            today,
        }
    }

    /// Checks the rules that reject a request before any event (SPEC §1.1).
    pub fn validate(&self, registry: &PromptRegistry) -> Result<(), RequestError> {
        validate_messages(&self.messages)?;
        self.prompt.validate(registry)?;
        if self.model.trim().is_empty() {
            return Err(RequestError::EmptyModel);
        }
        Ok(())
    }
}

impl PromptOptions {
    /// The brand must exist; the capability is checked once streaming has
    /// started (it becomes an `error` event, SPEC §1.1).
    pub fn validate(&self, registry: &PromptRegistry) -> Result<(), RequestError> {
        match &self.brand {
            Some(name) if registry.brand(name).is_none() => Err(RequestError::UnknownBrand {
                name: name.clone(),
                known: registry.brand_names().collect::<Vec<_>>().join(", "),
            }),
            _ => Ok(()),
        }
    }
}

/// The message rules: count, length, non-empty, the user speaks last.
pub fn validate_messages(messages: &[ChatMessage]) -> Result<(), RequestError> {
    if messages.is_empty() {
        return Err(RequestError::NoMessages);
    }
    if messages.len() > MAX_MESSAGES {
        return Err(RequestError::TooManyMessages(messages.len()));
    }
    for (index, message) in messages.iter().enumerate() {
        // UTF-16 code units and JavaScript's trim(), as production counts.
        let chars = crate::text::utf16_len(&message.text);
        if chars > MAX_MESSAGE_CHARS {
            return Err(RequestError::MessageTooLong { index, chars });
        }
        if crate::text::is_js_blank(&message.text) {
            return Err(RequestError::EmptyMessage(index));
        }
    }
    let last = messages.len() - 1;
    if messages[last].role != Role::User {
        return Err(RequestError::LastNotUser(last));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(count: usize) -> Vec<ChatMessage> {
        (0..count)
            .map(|i| ChatMessage::user(format!("q{i}")))
            .collect()
    }

    #[test]
    fn each_message_rule_is_enforced_and_named() {
        assert_eq!(validate_messages(&[]), Err(RequestError::NoMessages));
        assert_eq!(validate_messages(&users(60)), Ok(()));
        assert_eq!(
            validate_messages(&users(61)),
            Err(RequestError::TooManyMessages(61))
        );

        let at_limit = vec![ChatMessage::user("é".repeat(MAX_MESSAGE_CHARS))];
        assert_eq!(validate_messages(&at_limit), Ok(()));
        let over = vec![
            ChatMessage::assistant("hi"),
            ChatMessage::user("é".repeat(20_001)),
        ];
        assert_eq!(
            validate_messages(&over),
            Err(RequestError::MessageTooLong {
                index: 1,
                chars: 20_001
            })
        );

        // Production counts UTF-16 code units: an emoji is two.
        let emoji = vec![ChatMessage::user("😀".repeat(MAX_MESSAGE_CHARS / 2 + 1))];
        assert_eq!(
            validate_messages(&emoji),
            Err(RequestError::MessageTooLong {
                index: 0,
                chars: 20_002
            })
        );

        let blank = vec![ChatMessage::user("  \n\u{FEFF}")];
        assert_eq!(
            validate_messages(&blank),
            Err(RequestError::EmptyMessage(0))
        );

        let assistant_last = vec![ChatMessage::user("q"), ChatMessage::assistant("a")];
        assert_eq!(
            validate_messages(&assistant_last),
            Err(RequestError::LastNotUser(1))
        );
        assert_eq!(
            RequestError::LastNotUser(1).to_string(),
            "messages[1].role: the last message must be from the user"
        );
    }

    #[test]
    fn parsing_names_the_accepted_values() {
        assert_eq!("us".parse::<Locale>(), Ok(Locale::Us));
        assert!(
            "fr".parse::<Locale>()
                .unwrap_err()
                .to_string()
                .contains("`uk` or `us`")
        );
        assert_eq!("high".parse::<ThinkingLevel>(), Ok(ThinkingLevel::High));
        assert!("max".parse::<ThinkingLevel>().is_err());
    }
}
