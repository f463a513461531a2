//! The JSON that `promptlab prompts … --json` prints, as types: the
//! assembled prompt, the registry's lists, a fingerprint and a diff. Their
//! JSON Schemas are generated from these (`docs/schemas/`).

use serde::Serialize;

use super::system::{BlockSource, PromptBlock};
use crate::prompts::brands::Brand;
use crate::prompts::capabilities::Capability;
use crate::prompts::overrides::{IgnoredOverride, OverrideFileInfo};
use crate::tools::ToolDeclaration;

/// `prompts show --json`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShownPrompt {
    pub claim_id: String,
    /// The blocks in order, each with its id, source and text.
    pub blocks: Vec<PromptBlock>,
    pub fingerprint: String,
    pub overridden: Vec<String>,
    pub ignored: Vec<IgnoredOverride>,
    pub system_sha256: String,
    /// Unicode scalar values of the whole system prompt.
    pub characters: usize,
    /// The tool declarations sent with the prompt, in order.
    pub tools: Vec<ToolDeclaration>,
}

/// `prompts list --json`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptList {
    pub prompts: Vec<PromptEntry>,
    pub capabilities: Vec<Capability>,
    pub brands: Vec<BrandEntry>,
    pub default_brand: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PromptEntry {
    pub id: String,
    /// Unicode scalar values of the code default.
    pub characters: Option<usize>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BrandEntry {
    pub name: String,
    pub brand: Option<Brand>,
}

/// `prompts fingerprint --json`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FingerprintReport {
    pub fingerprint: String,
    pub applied: Vec<String>,
    pub ignored: Vec<IgnoredOverride>,
    pub files: Vec<OverrideFileInfo>,
}

/// `prompts diff --json`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PromptDiff {
    pub a: DiffSide,
    pub b: DiffSide,
    pub blocks: Vec<BlockDiff>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffSide {
    pub label: String,
    pub fingerprint: String,
    pub system_sha256: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockDiff {
    pub id: String,
    pub changed: bool,
    pub source_a: BlockSource,
    pub source_b: BlockSource,
    /// A unified diff of the block's text, when it changed.
    pub diff: Option<String>,
}
