//! The JSON that `promptlab prompts … --json` prints, as types: the
//! assembled prompt, the registry's lists, a fingerprint and a diff. Their
//! JSON Schemas are generated from these (`docs/schemas/`).

use serde::Serialize;

use super::system::{BlockSource, PromptBlock};
use crate::prompts::brands::Brand;
use crate::prompts::capabilities::Capability;
use crate::prompts::overrides::{IgnoredOverride, OverrideFileInfo, UnusableReason};
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
    /// Every override of the set, in id order, and where it stands in the
    /// context of this diff.
    pub overrides: Vec<OverrideInContext>,
}

/// One override of a `prompts diff` side.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideInContext {
    pub id: String,
    pub status: OverrideStatus,
    /// For `notInContext`: the flag that would bring its block in, e.g.
    /// `add --capability summarise`.
    pub bring_in: Option<String>,
    /// For `ignored`: why.
    pub reason: Option<UnusableReason>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OverrideStatus {
    /// Applied to a block of the prompt diffed here.
    InContext,
    /// Usable, but its block is not in this context (another quick action,
    /// locale, or without --voice / --screen-actions).
    NotInContext,
    /// Not applied anywhere: an unknown id, a blank or over-long text.
    Ignored,
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
