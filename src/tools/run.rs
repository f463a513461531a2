//! `run_tool`: runs one tool call so that nothing inside a tool — an error,
//! a bad argument, even a panic — can crash the turn. The model reads an
//! error result instead.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use super::{ToolContext, ToolSpec};
use crate::event::ClientAction;

/// The longest `tool_result` event text, in UTF-16 code units (JavaScript's
/// `string.length`, as production counts).
pub const RESULT_PREVIEW_CHARS: usize = 400;

/// What came of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub ok: bool,
    /// The full result the model reads: the output, or the error message.
    pub content: String,
    pub client_actions: Vec<ClientAction>,
}

impl ToolOutcome {
    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            ok: false,
            content: message.into(),
            client_actions: Vec::new(),
        }
    }
}

pub fn run_tool(tool: &ToolSpec, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
    match catch_unwind(AssertUnwindSafe(|| (tool.run)(ctx, args))) {
        Ok(Ok(output)) => ToolOutcome {
            ok: true,
            content: output.content,
            client_actions: output.client_actions,
        },
        Ok(Err(error)) => ToolOutcome::error(error.0),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no detail".to_string());
            ToolOutcome::error(format!(
                "the tool {} failed unexpectedly: {detail}",
                tool.name
            ))
        }
    }
}

/// The first `max` UTF-16 code units of `text` (JavaScript's `length`),
/// never cut inside a character, so never inside a surrogate pair; and
/// whether anything was cut.
pub fn truncate_chars(text: &str, max: usize) -> (String, bool) {
    let (cut, truncated) = crate::text::cut_utf16(text, max);
    (cut.to_string(), truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Claim, parse_claim_bytes};
    use crate::tools::{ToolError, ToolOutput};
    use serde_json::json;
    use std::path::Path;

    fn claim() -> Claim {
        let json = r#"{"id": "C1", "lineOfBusiness": "Pet", "status": "open",
            "policy": {"number": "P", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
            "incident": {"date": "2024-03-02", "description": "Vet"}}"#;
        parse_claim_bytes(json.as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    static PANICS: ToolSpec = ToolSpec {
        name: "panics",
        description: "test",
        parameters: || json!({}),
        label: |_, _| String::new(),
        run: |_, _| panic!("index out of bounds"),
    };

    static FAILS: ToolSpec = ToolSpec {
        name: "fails",
        description: "test",
        parameters: || json!({}),
        label: |_, _| String::new(),
        run: |_, _| Err(ToolError("no such thing".into())),
    };

    static WORKS: ToolSpec = ToolSpec {
        name: "works",
        description: "test",
        parameters: || json!({}),
        label: |_, _| String::new(),
        run: |_, _| Ok(ToolOutput::text("fine")),
    };

    #[test]
    fn a_panic_or_an_error_becomes_an_error_result() {
        let claim = claim();
        let ctx = ToolContext { claim: &claim };
        assert_eq!(
            run_tool(&PANICS, &ctx, &json!({})),
            ToolOutcome::error("the tool panics failed unexpectedly: index out of bounds")
        );
        assert_eq!(
            run_tool(&FAILS, &ctx, &json!({})),
            ToolOutcome::error("no such thing")
        );
        assert!(run_tool(&WORKS, &ctx, &json!({})).ok);
    }

    #[test]
    fn truncation_never_splits_a_character() {
        assert_eq!(truncate_chars("abc", 400), ("abc".to_string(), false));
        let text = "€".repeat(401);
        let (cut, truncated) = truncate_chars(&text, 400);
        assert!(truncated);
        assert_eq!(cut.chars().count(), 400);
        assert_eq!(cut.len(), 1200);
        assert!(!truncate_chars(&"€".repeat(400), 400).1);
        // An emoji is two code units, and a pair is never split.
        let (cut, truncated) = truncate_chars(&"😀".repeat(201), 401);
        assert!(truncated);
        assert_eq!(cut.chars().count(), 200);
    }
}
