//! Which provider answers — the one list every command, the run log and
//! (later) telemetry name providers by: `gemini`, `openai`, `script`,
//! `replay`, `worker`. Whether its answers are billed is a property of the kind
//! (`bills`), not a list of names compared as strings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Google's Gemini API (needs GEMINI_API_KEY).
    Gemini,
    /// Any OpenAI-compatible Chat Completions server: OpenAI, Azure OpenAI,
    /// vLLM, Ollama, llama.cpp (OPENAI_BASE_URL, OPENAI_API_KEY).
    #[serde(rename = "openai")]
    OpenAi,
    /// A model scripted in a YAML file (--script).
    Script,
    /// The model turns of a recorded run log (--replay).
    Replay,
    /// The whole turn, run by a deployed chat API (--endpoint).
    Worker,
}

/// A name that is no provider's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown provider `{}` (expected gemini, openai, script, replay or worker)",
    crate::text::quote(.0)
)]
pub struct UnknownProvider(pub String);

impl ProviderKind {
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::Gemini,
        ProviderKind::OpenAi,
        ProviderKind::Script,
        ProviderKind::Replay,
        ProviderKind::Worker,
    ];

    /// The name run logs record (`header.provider`) and flags take.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Script => "script",
            ProviderKind::Replay => "replay",
            ProviderKind::Worker => "worker",
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "Google's Gemini API (needs GEMINI_API_KEY)",
            ProviderKind::OpenAi => {
                "An OpenAI-compatible server: OpenAI, Azure, vLLM, Ollama, llama.cpp (OPENAI_BASE_URL, OPENAI_API_KEY)"
            }
            ProviderKind::Script => "A model scripted in a YAML file (--script)",
            ProviderKind::Replay => "The model turns of a recorded run log (--replay)",
            ProviderKind::Worker => "The whole turn, run by a deployed chat API (--endpoint)",
        }
    }

    /// Whether its answers come from a model that bills for them. A script
    /// or a replay reaches no model and costs nothing; a call of a billing
    /// kind without a price costs "unknown", never 0.
    pub fn bills(self) -> bool {
        match self {
            ProviderKind::Gemini | ProviderKind::OpenAi | ProviderKind::Worker => true,
            ProviderKind::Script | ProviderKind::Replay => false,
        }
    }

    /// Whether a provider named `name` (a run log's `header.provider`)
    /// reaches no model: a known kind that does not bill.
    pub fn named_costs_nothing(name: &str) -> bool {
        name.parse::<ProviderKind>().is_ok_and(|kind| !kind.bills())
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(text: &str) -> Result<ProviderKind, UnknownProvider> {
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| UnknownProvider(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_models_bill() {
        for kind in ProviderKind::ALL {
            assert_eq!(kind.name().parse::<ProviderKind>(), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.name())
            );
        }
        assert!(ProviderKind::named_costs_nothing("script"));
        assert!(ProviderKind::named_costs_nothing("replay"));
        assert!(!ProviderKind::named_costs_nothing("gemini"));
        assert!(!ProviderKind::named_costs_nothing("openai"));
        assert!(!ProviderKind::named_costs_nothing("someone-else"));
        assert!("Gemini".parse::<ProviderKind>().is_err());
    }
}
