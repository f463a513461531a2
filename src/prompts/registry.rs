//! The code-default prompts, quick actions and brands embedded at build time.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::brands::{Brand, BrandsFile};
use super::capabilities::Capability;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_prompts.rs"));
}

/// Prompt ids of the system blocks, in assembly order.
pub const SYSTEM_BASE: &str = "system.base";
pub const SYSTEM_SCREEN_ACTIONS: &str = "system.screen_actions";
pub const SYSTEM_SAFETY: &str = "system.safety";
pub const SYSTEM_LOCALE_UK: &str = "system.locale_uk";
pub const SYSTEM_LOCALE_US: &str = "system.locale_us";
pub const SYSTEM_VOICE: &str = "system.voice";
pub const CAPABILITY_CLAIM_QA: &str = "capability.claim_qa";
/// The id shown for the built claim brief. It is never a prompt id: an
/// override naming it is unusable.
pub const CLAIM_BRIEF: &str = "claim.brief";

const SYSTEM_IDS: [&str; 6] = [
    SYSTEM_BASE,
    SYSTEM_SCREEN_ACTIONS,
    SYSTEM_SAFETY,
    SYSTEM_LOCALE_UK,
    SYSTEM_LOCALE_US,
    SYSTEM_VOICE,
];

/// Everything under `prompts/`, parsed once.
#[derive(Debug)]
pub struct PromptRegistry {
    defaults: BTreeMap<String, String>,
    capabilities: Vec<Capability>,
    brands: BTreeMap<String, Brand>,
    default_brand: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("embedded prompt file `{0}` is missing")]
    Missing(String),
    #[error("embedded `{file}` does not parse: {message}")]
    Invalid { file: String, message: String },
}

impl PromptRegistry {
    /// The registry built into this binary. The embedded files are checked by
    /// the test suite, so a failure here is a build defect, not user input.
    pub fn embedded() -> &'static PromptRegistry {
        static REGISTRY: OnceLock<PromptRegistry> = OnceLock::new();
        REGISTRY.get_or_init(|| {
            PromptRegistry::from_files(embedded::EMBEDDED_PROMPT_FILES)
                .unwrap_or_else(|error| panic!("promptlab was built with broken prompts: {error}"))
        })
    }

    /// Builds a registry from `(file name, contents)` pairs.
    pub fn from_files(files: &[(&str, &str)]) -> Result<PromptRegistry, RegistryError> {
        let file = |name: &str| {
            files
                .iter()
                .find(|(file, _)| *file == name)
                .map(|(_, text)| *text)
                .ok_or_else(|| RegistryError::Missing(name.to_string()))
        };
        let capabilities: Vec<Capability> =
            parse_yaml("capabilities.yaml", file("capabilities.yaml")?)?;
        let brands: BrandsFile = parse_yaml("brands.yaml", file("brands.yaml")?)?;
        if !brands.brands.contains_key(&brands.default) {
            return Err(RegistryError::Invalid {
                file: "brands.yaml".into(),
                message: format!("default brand `{}` is not defined", brands.default),
            });
        }
        let mut defaults = BTreeMap::new();
        let ids = SYSTEM_IDS
            .iter()
            .map(|id| id.to_string())
            .chain(std::iter::once(CAPABILITY_CLAIM_QA.to_string()))
            .chain(capabilities.iter().map(Capability::prompt_id));
        for id in ids {
            let text = file(&format!("{id}.md"))?;
            defaults.insert(id, text.trim().to_string());
        }
        Ok(PromptRegistry {
            defaults,
            capabilities,
            brands: brands.brands,
            default_brand: brands.default,
        })
    }

    /// The code default for a prompt id, if it is one.
    pub fn default_text(&self, id: &str) -> Option<&str> {
        self.defaults.get(id).map(String::as_str)
    }

    pub fn is_prompt_id(&self, id: &str) -> bool {
        self.defaults.contains_key(id)
    }

    /// Every prompt id, in byte order.
    pub fn prompt_ids(&self) -> impl Iterator<Item = &str> {
        self.defaults.keys().map(String::as_str)
    }

    /// Quick actions in the order the capability guide lists them.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }

    pub fn capability(&self, id: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.id == id)
    }

    pub fn brand(&self, name: &str) -> Option<&Brand> {
        self.brands.get(name)
    }

    pub fn brand_names(&self) -> impl Iterator<Item = &str> {
        self.brands.keys().map(String::as_str)
    }

    pub fn default_brand(&self) -> (&str, &Brand) {
        (&self.default_brand, &self.brands[&self.default_brand])
    }
}

fn parse_yaml<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<T, RegistryError> {
    use crate::document::{DocumentFormat, parse_document};
    parse_document(text, DocumentFormat::Yaml).map_err(|problem| RegistryError::Invalid {
        file: file.to_string(),
        message: problem.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_prompts_are_complete() {
        let registry = PromptRegistry::from_files(embedded::EMBEDDED_PROMPT_FILES).unwrap();
        assert!(registry.capabilities().len() >= 8);
        for id in SYSTEM_IDS.iter().chain([&CAPABILITY_CLAIM_QA]) {
            assert!(!registry.default_text(id).unwrap().is_empty(), "{id}");
        }
        for capability in registry.capabilities() {
            assert!(registry.default_text(&capability.prompt_id()).is_some());
        }
        assert!(!registry.is_prompt_id(CLAIM_BRIEF));
    }

    #[test]
    fn a_capability_without_a_playbook_is_a_build_defect() {
        let files = [
            ("capabilities.yaml", "- {id: x, label: X}"),
            (
                "brands.yaml",
                "default: a\nbrands: {a: {assistant: A, product: P, pronunciation: A}}",
            ),
        ];
        assert!(matches!(
            PromptRegistry::from_files(&files),
            Err(RegistryError::Missing(name)) if name == "system.base.md"
        ));
    }
}
