//! Screen actions: `highlight_panel` and `open_document`. Offered only when
//! the caller can act on a screen; each returns a client action.

use serde_json::{Value, json};

use super::args::{expect_object, required_str};
use super::readers::unknown_document;
use super::{ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::event::ClientAction;
use crate::text::one_line;

/// The panels of the claim view that `highlight_panel` can point at.
pub const PANELS: [&str; 11] = [
    "overview",
    "policy",
    "incident",
    "claimant",
    "coverage",
    "liability",
    "financials",
    "risk_flags",
    "schedule",
    "documents",
    "timeline",
];

pub static HIGHLIGHT_PANEL: ToolSpec = ToolSpec {
    name: "highlight_panel",
    description: "Highlight one panel of the claim view on the handler's screen, to show them where something is. Say you highlighted it only after this succeeds.",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "panel": {"type": "string", "enum": PANELS, "description": "The panel to highlight."}
            },
            "required": ["panel"]
        })
    },
    label: |_, args| match args.get("panel").and_then(Value::as_str) {
        Some(panel) => format!(
            "Highlighting the {} panel",
            one_line(&panel.replace('_', " "), 40)
        ),
        None => "Highlighting a panel".to_string(),
    },
    run: highlight_panel,
};

fn highlight_panel(_: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let panel = required_str(args, "panel")?;
    if !PANELS.contains(&panel) {
        return Err(ToolError(format!(
            "there is no panel `{}`; the panels are: {}",
            one_line(panel, 40),
            PANELS.join(", ")
        )));
    }
    Ok(ToolOutput {
        content: format!("Highlighted the {panel} panel."),
        client_actions: vec![ClientAction::HighlightPanel {
            panel: panel.to_string(),
        }],
    })
}

pub static OPEN_DOCUMENT: ToolSpec = ToolSpec {
    name: "open_document",
    description: "Open a document from the claim file on the handler's screen. Say you opened it only after this succeeds.",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "documentId": {"type": "string", "description": "The document id, e.g. D-03."}
            },
            "required": ["documentId"]
        })
    },
    label: |_, args| match args.get("documentId").and_then(Value::as_str) {
        Some(id) => format!("Opening document {}", one_line(id, 40)),
        None => "Opening a document".to_string(),
    },
    run: open_document,
};

fn open_document(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let id = required_str(args, "documentId")?;
    let document = ctx
        .claim
        .document(id)
        .ok_or_else(|| unknown_document(ctx, id))?;
    Ok(ToolOutput {
        content: format!(
            "Opened {} ({}).",
            document.id,
            one_line(document.display_title(), 100)
        ),
        client_actions: vec![ClientAction::Navigate {
            to: format!("documents/{}", document.id),
        }],
    })
}
