//! `assemble_prompt`: the system instruction, block by block (SPEC §1.2).
//!
//! The order is part of the safety design — identity, screen, safety and
//! locale all come before anything read from the claim — so it lives in one
//! function that reads top to bottom in block order.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::context::build_claim_brief;
use super::request::{Locale, PromptOptions};
use crate::claims::Claim;
use crate::prompts::overrides::unusable_reason;
use crate::prompts::registry::{
    CAPABILITY_CLAIM_QA, CLAIM_BRIEF, SYSTEM_BASE, SYSTEM_LOCALE_UK, SYSTEM_LOCALE_US,
    SYSTEM_SAFETY, SYSTEM_SCREEN_ACTIONS, SYSTEM_VOICE,
};
use crate::prompts::{Brand, Capability, PromptRegistry, apply_brand, capability_guide};

/// Where a block's text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BlockSource {
    /// The code default embedded from `prompts/`.
    Default,
    /// A usable Prompt Lab override.
    Override,
    /// Built from the claim (the brief).
    Built,
}

impl BlockSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockSource::Default => "default",
            BlockSource::Override => "override",
            BlockSource::Built => "built",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptBlock {
    /// The prompt id, or `claim.brief` for the built brief.
    pub id: String,
    pub source: BlockSource,
    pub text: String,
}

/// The assembled system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssembledPrompt {
    pub blocks: Vec<PromptBlock>,
}

/// Blocks are joined with one blank line.
pub const BLOCK_SEPARATOR: &str = "\n\n";

impl AssembledPrompt {
    /// Exactly the system instruction the model receives.
    pub fn system_text(&self) -> String {
        self.blocks
            .iter()
            .map(|block| block.text.as_str())
            .collect::<Vec<_>>()
            .join(BLOCK_SEPARATOR)
    }
}

/// What decides which blocks a turn gets and how they read.
#[derive(Debug, Clone, Copy)]
pub struct PromptSettings<'a> {
    pub registry: &'a PromptRegistry,
    /// The request's overrides before the usable rule; `resolve_prompt`
    /// applies only the usable ones.
    pub overrides: &'a BTreeMap<String, String>,
    pub brand: &'a Brand,
    pub locale: Locale,
    pub screen_actions: bool,
    pub voice: bool,
    /// The quick action, or `None` for free chat.
    pub capability: Option<&'a Capability>,
}

/// A prompt option that names something this build does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptSetupError {
    /// The exact message of SPEC §1.1.
    #[error("Unknown capability \"{0}\"")]
    UnknownCapability(String),
    #[error("brand: unknown brand `{0}`")]
    UnknownBrand(String),
}

/// Resolves a request's prompt options against the registry and the claim:
/// the capability and brand by name, the locale from the claim's country
/// when the request sets none.
pub fn prompt_settings<'a>(
    options: &'a PromptOptions,
    registry: &'a PromptRegistry,
    claim: &Claim,
) -> Result<PromptSettings<'a>, PromptSetupError> {
    let capability = match &options.capability {
        Some(id) => Some(
            registry
                .capability(id)
                .ok_or_else(|| PromptSetupError::UnknownCapability(id.clone()))?,
        ),
        None => None,
    };
    let brand = match &options.brand {
        Some(name) => registry
            .brand(name)
            .ok_or_else(|| PromptSetupError::UnknownBrand(name.clone()))?,
        None => registry.default_brand().1,
    };
    Ok(PromptSettings {
        registry,
        overrides: &options.overrides,
        brand,
        locale: options
            .locale
            .unwrap_or_else(|| Locale::for_country(claim.country.as_deref())),
        screen_actions: options.screen_actions,
        voice: options.voice,
        capability,
    })
}

/// The turn's system prompt, a function of its settings, its claim and
/// the date the brief gives as today.
pub fn assemble_prompt(
    settings: &PromptSettings<'_>,
    claim: &Claim,
    today: NaiveDate,
) -> AssembledPrompt {
    let mut blocks = Vec::with_capacity(7);
    let prompt = |id: &str| resolve_prompt(id, settings);

    blocks.push(prompt(SYSTEM_BASE));
    if settings.screen_actions {
        blocks.push(prompt(SYSTEM_SCREEN_ACTIONS));
    }
    blocks.push(prompt(SYSTEM_SAFETY));
    blocks.push(prompt(match settings.locale {
        Locale::Uk => SYSTEM_LOCALE_UK,
        Locale::Us => SYSTEM_LOCALE_US,
    }));
    // Nothing read from the claim may come before this point.
    blocks.push(PromptBlock {
        id: CLAIM_BRIEF.to_string(),
        source: BlockSource::Built,
        text: build_claim_brief(claim, today),
    });
    match settings.capability {
        Some(capability) => {
            let playbook = prompt(&capability.prompt_id());
            let heading = apply_brand(&format!("## Task: {}", capability.label), settings.brand);
            blocks.push(PromptBlock {
                text: format!("{heading}\n\n{}", playbook.text),
                ..playbook
            });
        }
        None => {
            let guidance = prompt(CAPABILITY_CLAIM_QA);
            let guide = apply_brand(
                &capability_guide(settings.registry.capabilities()),
                settings.brand,
            );
            blocks.push(PromptBlock {
                text: format!("{}\n\n{guide}", guidance.text),
                ..guidance
            });
        }
    }
    if settings.voice {
        blocks.push(prompt(SYSTEM_VOICE));
    }
    AssembledPrompt { blocks }
}

/// The usable override for `id`, else the code default; then branded.
/// Surrounding whitespace is trimmed so that blocks join with exactly one
/// blank line; with JavaScript's `trim()` set, as production trims.
pub fn resolve_prompt(id: &str, settings: &PromptSettings<'_>) -> PromptBlock {
    let usable_override = settings
        .overrides
        .get(id)
        .filter(|text| unusable_reason(id, text, settings.registry).is_none());
    let (text, source) = match usable_override {
        Some(text) => (text.as_str(), BlockSource::Override),
        None => (
            settings.registry.default_text(id).unwrap_or_default(),
            BlockSource::Default,
        ),
    };
    PromptBlock {
        id: id.to_string(),
        source,
        text: apply_brand(
            text.trim_matches(crate::text::is_js_whitespace),
            settings.brand,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::parse_claim_bytes;
    use std::path::Path;

    fn claim(description: &str) -> Claim {
        let json = format!(
            r#"{{"id": "C1", "lineOfBusiness": "Household", "status": "open",
            "policy": {{"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"}},
            "incident": {{"date": "2024-03-02", "description": {description:?}}}}}"#
        );
        parse_claim_bytes(json.as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()
    }

    fn ids(prompt: &AssembledPrompt) -> Vec<&str> {
        prompt
            .blocks
            .iter()
            .map(|block| block.id.as_str())
            .collect()
    }

    #[test]
    fn block_order_holds_for_every_combination() {
        let registry = PromptRegistry::embedded();
        let (_, brand) = registry.default_brand();
        let overrides = BTreeMap::new();
        let summarise = registry.capability("summarise");
        for screen_actions in [false, true] {
            for locale in [Locale::Uk, Locale::Us] {
                for capability in [None, summarise] {
                    for voice in [false, true] {
                        let settings = PromptSettings {
                            registry,
                            overrides: &overrides,
                            brand,
                            locale,
                            screen_actions,
                            voice,
                            capability,
                        };
                        let prompt = assemble_prompt(&settings, &claim("Leak"), today());
                        let mut expected = vec!["system.base"];
                        if screen_actions {
                            expected.push("system.screen_actions");
                        }
                        expected.push("system.safety");
                        expected.push(match locale {
                            Locale::Uk => "system.locale_uk",
                            Locale::Us => "system.locale_us",
                        });
                        expected.push("claim.brief");
                        expected.push(if capability.is_some() {
                            "capability.summarise"
                        } else {
                            "capability.claim_qa"
                        });
                        if voice {
                            expected.push("system.voice");
                        }
                        assert_eq!(ids(&prompt), expected);
                    }
                }
            }
        }
    }

    #[test]
    fn the_system_text_joins_blocks_with_one_blank_line() {
        let registry = PromptRegistry::embedded();
        let (_, brand) = registry.default_brand();
        let overrides = BTreeMap::from([("system.base".to_string(), "\n\nBase.\n\n".to_string())]);
        let settings = PromptSettings {
            registry,
            overrides: &overrides,
            brand,
            locale: Locale::Uk,
            screen_actions: false,
            voice: false,
            capability: None,
        };
        let text = assemble_prompt(&settings, &claim("Leak"), today()).system_text();
        assert!(
            text.starts_with("Base.\n\nSafety and boundaries:"),
            "{text}"
        );
        assert!(!text.contains("\n\n\n"));
    }
}
