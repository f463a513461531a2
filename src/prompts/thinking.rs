//! Gemini's thinking levels: a quick action's own, a deployment's default,
//! and what a model call asks for.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Gemini's thinking levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

impl FromStr for ThinkingLevel {
    type Err = String;
    fn from_str(text: &str) -> Result<ThinkingLevel, String> {
        match text {
            "minimal" => Ok(ThinkingLevel::Minimal),
            "low" => Ok(ThinkingLevel::Low),
            "medium" => Ok(ThinkingLevel::Medium),
            "high" => Ok(ThinkingLevel::High),
            other => Err(format!(
                "unknown thinking level `{other}` (expected minimal, low, medium or high)"
            )),
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
