//! Screen actions: `highlight_panel` and `open_document`. Offered only when
//! the caller can act on a screen; each returns a client action.

use serde_json::{Value, json};

use super::args::{expect_object, required_str};
use super::readers::unknown_document;
use super::{ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::claims::sections::FIXED_SECTIONS;
use crate::event::ClientAction;
use crate::text::one_line;

/// The panels of the claim view that `highlight_panel` can point at.
pub const PANELS: [&str; FIXED_SECTIONS.len() + 1] = panels();

/// The claim screen's panels, derived from the claim's sections so the two
/// lists cannot drift: one panel per section, plus the schedule (read with
/// `get_schedule`, not as a section) after the risk flags, in screen order.
const fn panels() -> [&'static str; FIXED_SECTIONS.len() + 1] {
    let mut panels = [""; FIXED_SECTIONS.len() + 1];
    let (mut from, mut to) = (0, 0);
    while from < FIXED_SECTIONS.len() {
        panels[to] = FIXED_SECTIONS[from];
        to += 1;
        if same(FIXED_SECTIONS[from], "risk_flags") {
            panels[to] = "schedule";
            to += 1;
        }
        from += 1;
    }
    panels
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_is_a_panel_and_the_schedule_too() {
        assert_eq!(
            PANELS,
            [
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
                "timeline"
            ]
        );
    }
}
