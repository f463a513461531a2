//! Gemini's thinking levels: a quick action's own, a deployment's default,
//! and what a model call asks for.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Gemini's thinking levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Minimal,
    Low,
    Medium,
    High,
}

/// The deployment default when neither the capability nor the caller sets one.
pub const DEFAULT_THINKING_LEVEL: ThinkingLevel = ThinkingLevel::Low;

impl ThinkingLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
        }
    }
}

/// A thinking level Gemini does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown thinking level `{}` (expected minimal, low, medium or high)",
    crate::text::quote(.0)
)]
pub struct UnknownThinkingLevel(pub String);

impl FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;
    fn from_str(text: &str) -> Result<ThinkingLevel, UnknownThinkingLevel> {
        match text {
            "minimal" => Ok(ThinkingLevel::Minimal),
            "low" => Ok(ThinkingLevel::Low),
            "medium" => Ok(ThinkingLevel::Medium),
            "high" => Ok(ThinkingLevel::High),
            other => Err(UnknownThinkingLevel(other.to_string())),
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
