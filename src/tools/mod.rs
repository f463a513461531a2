//! The tools the model may call (SPEC §1.4): declarations, the readers, the
//! screen actions, and `run_tool`.
//!
//! `all_tools` offers the shared readers first in a fixed order, so that the
//! cacheable prefix of every request is the same, then the screen actions
//! only when the caller can act on a screen.

pub mod args;
pub mod readers;
pub mod run;
pub mod schedule;
pub mod screen;
pub mod search;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::claims::Claim;
use crate::event::ClientAction;

pub use run::{ToolOutcome, run_tool, truncate_chars};

/// What a tool runs against.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    pub claim: &'a Claim,
}

/// A tool's successful output: text for the model, and any screen actions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    pub content: String,
    pub client_actions: Vec<ClientAction>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            client_actions: Vec::new(),
        }
    }
}

/// A failure the model reads as the tool's result, e.g. a bad argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// One tool: its declaration for the model, its activity label, its code.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub parameters: fn() -> Value,
    /// The present-tense activity label for a call with these arguments.
    pub label: fn(&ToolContext<'_>, &Value) -> String,
    pub run: fn(&ToolContext<'_>, &Value) -> Result<ToolOutput, ToolError>,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .finish()
    }
}

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolDeclaration {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolSpec {
    pub fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: (self.parameters)(),
        }
    }
}

/// Readers, in the fixed order every request offers them.
pub static READERS: [&ToolSpec; 4] = [
    &readers::GET_CLAIM_SECTION,
    &search::SEARCH_CLAIM_FILE,
    &readers::READ_DOCUMENT,
    &schedule::GET_SCHEDULE,
];

/// Screen actions, offered only with `screenActions`.
pub static SCREEN_ACTIONS: [&ToolSpec; 2] = [&screen::HIGHLIGHT_PANEL, &screen::OPEN_DOCUMENT];

/// Every tool a turn offers: readers first, then screen actions if asked.
pub fn all_tools(screen_actions: bool) -> Vec<&'static ToolSpec> {
    let mut tools: Vec<&'static ToolSpec> = READERS.to_vec();
    if screen_actions {
        tools.extend(SCREEN_ACTIONS);
    }
    tools
}

/// What a turn offers the model: the declarations of `all_tools`, and the
/// SHA-256 of their JSON that run logs record (`toolsSha256`).
#[derive(Debug)]
pub struct OfferedTools {
    /// Shared by every turn and call that offers them.
    pub declarations: std::sync::Arc<[ToolDeclaration]>,
    pub sha256: String,
}

/// The tools a turn offers, built once per process for each choice: they
/// are fixed, and building and hashing them was a part of every turn.
pub fn offered_tools(screen_actions: bool) -> &'static OfferedTools {
    static OFFERED: [std::sync::OnceLock<OfferedTools>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    OFFERED[usize::from(screen_actions)].get_or_init(|| {
        let declarations: Vec<ToolDeclaration> = all_tools(screen_actions)
            .iter()
            .map(|tool| tool.declaration())
            .collect();
        let json = serde_json::to_string(&declarations).unwrap_or_default();
        OfferedTools {
            sha256: crate::digest::sha256_hex(json),
            declarations: declarations.into(),
        }
    })
}

/// The tool called `name` among those offered.
pub fn find_tool<'a>(tools: &[&'a ToolSpec], name: &str) -> Option<&'a ToolSpec> {
    tools.iter().copied().find(|tool| tool.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_come_first_and_screen_actions_only_when_asked() {
        let names = |tools: Vec<&ToolSpec>| tools.iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(
            names(all_tools(false)),
            [
                "get_claim_section",
                "search_claim_file",
                "read_document",
                "get_schedule"
            ]
        );
        assert_eq!(
            names(all_tools(true)),
            [
                "get_claim_section",
                "search_claim_file",
                "read_document",
                "get_schedule",
                "highlight_panel",
                "open_document"
            ]
        );
    }

    #[test]
    fn every_declaration_is_an_object_schema_with_a_description() {
        for tool in all_tools(true) {
            let declaration = tool.declaration();
            assert!(!declaration.description.is_empty());
            assert_eq!(declaration.parameters["type"], "object", "{}", tool.name);
            assert!(
                declaration.parameters["properties"].is_object(),
                "{}",
                tool.name
            );
        }
    }
}
