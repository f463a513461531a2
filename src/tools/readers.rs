//! Readers: `get_claim_section` and `read_document`.

use serde_json::{Value, json};

use super::args::{expect_object, optional_count, required_str};
use super::{ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::claims::sections::{section, section_names};
use crate::text::one_line;

pub static GET_CLAIM_SECTION: ToolSpec = ToolSpec {
    name: "get_claim_section",
    description: "Read one named section of the claim as JSON. The claim brief lists the sections this claim has (for example overview, policy, incident, claimant, coverage, liability, financials, risk_flags, documents, timeline).",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "section": {"type": "string", "description": "The section name, as listed in the claim brief."}
            },
            "required": ["section"]
        })
    },
    label: |_, args| match args.get("section").and_then(Value::as_str) {
        Some(name) => format!(
            "Reading the {} section",
            one_line(&name.replace('_', " "), 40)
        ),
        None => "Reading a claim section".to_string(),
    },
    run: get_claim_section,
};

fn get_claim_section(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let name = required_str(args, "section")?;
    let value = section(ctx.claim, name).ok_or_else(|| {
        ToolError(format!(
            "this claim has no section `{}`; its sections are: {}",
            one_line(name, 60),
            section_names(ctx.claim).join(", ")
        ))
    })?;
    Ok(ToolOutput::text(
        serde_json::to_string_pretty(&value).unwrap_or_default(),
    ))
}

/// Characters per page of `read_document` unless the model asks otherwise.
pub const DEFAULT_PAGE_CHARS: usize = 4_000;
/// The most one call returns.
pub const MAX_PAGE_CHARS: usize = 12_000;

pub static READ_DOCUMENT: ToolSpec = ToolSpec {
    name: "read_document",
    description: "Read a document from the claim file by its id (for example D-03). Long documents come in pages: the reply says where the next page starts; pass that as offset.",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "documentId": {"type": "string", "description": "The document id, as listed in the documents section or in search results."},
                "offset": {"type": "integer", "description": "Character offset to start from (default 0)."},
                "limit": {"type": "integer", "description": "Most characters to return (default 4000, at most 12000)."}
            },
            "required": ["documentId"]
        })
    },
    label: |ctx, args| match args.get("documentId").and_then(Value::as_str) {
        Some(id) => match ctx.claim.document(id.trim()) {
            Some(document) => format!(
                "Reading {} ({})",
                one_line(&document.id, 40),
                one_line(document.display_title(), 60)
            ),
            None => format!("Reading document {}", one_line(id, 40)),
        },
        None => "Reading a document".to_string(),
    },
    run: read_document,
};

fn read_document(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let id = required_str(args, "documentId")?;
    let document = ctx
        .claim
        .document(id)
        .ok_or_else(|| unknown_document(ctx, id))?;
    let total = document.text.chars().count();
    let offset = optional_count(args, "offset", usize::MAX)?.unwrap_or(0);
    let limit = optional_count(args, "limit", MAX_PAGE_CHARS)?
        .unwrap_or(DEFAULT_PAGE_CHARS)
        .max(1);
    if offset > total {
        return Err(ToolError(format!(
            "offset {offset} is past the end of {} ({total} characters)",
            document.id
        )));
    }
    let page: String = document.text.chars().skip(offset).take(limit).collect();
    let end = offset + page.chars().count();
    let mut header = vec![document.id.clone(), document.display_title().to_string()];
    header.extend(document.kind.clone());
    header.extend(document.date.as_ref().map(ToString::to_string));
    header.extend(document.author.clone());
    let mut content = format!(
        "{}\nCharacters {offset}–{end} of {total}.\n\n{page}",
        header.join(" · ")
    );
    if end < total {
        content.push_str(&format!(
            "\n\n[The document continues: call read_document with offset {end} for the next part.]"
        ));
    }
    Ok(ToolOutput::text(content))
}

/// The error for a document id the claim does not have, listing some it does.
pub fn unknown_document(ctx: &ToolContext<'_>, id: &str) -> ToolError {
    const LISTED: usize = 30;
    let ids: Vec<&str> = ctx
        .claim
        .file
        .iter()
        .take(LISTED)
        .map(|d| d.id.as_str())
        .collect();
    let more = ctx.claim.file.len().saturating_sub(LISTED);
    let known = match (ids.is_empty(), more) {
        (true, _) => "the claim file has no documents".to_string(),
        (false, 0) => format!("its documents are: {}", ids.join(", ")),
        (false, more) => format!(
            "its documents include: {} (and {more} more)",
            ids.join(", ")
        ),
    };
    ToolError(format!(
        "no document `{}` on this claim; {known}",
        one_line(id, 60)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Claim, parse_claim_bytes};
    use std::path::Path;

    fn claim() -> Claim {
        let json = json!({
            "id": "C1", "lineOfBusiness": "Household", "status": "open",
            "policy": {"number": "P", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
            "incident": {"date": "2024-03-02", "description": "Leak"},
            "coverage": {"position": "Confirmed"},
            "file": [{"id": "D-1", "title": "Report", "type": "report", "text": "é".repeat(10_000)}]
        });
        parse_claim_bytes(json.to_string().as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    #[test]
    fn a_section_is_read_or_the_sections_are_named() {
        let claim = claim();
        let ctx = ToolContext { claim: &claim };
        let out = get_claim_section(&ctx, &json!({"section": "coverage"})).unwrap();
        assert!(out.content.contains("\"position\": \"Confirmed\""));
        let error = get_claim_section(&ctx, &json!({"section": "vehicle"})).unwrap_err();
        assert_eq!(
            error.0,
            "this claim has no section `vehicle`; its sections are: overview, policy, incident, coverage, documents"
        );
        assert_eq!(
            (GET_CLAIM_SECTION.label)(&ctx, &json!({"section": "risk_flags"})),
            "Reading the risk flags section"
        );
    }

    #[test]
    fn long_documents_come_in_pages_of_characters() {
        let claim = claim();
        let ctx = ToolContext { claim: &claim };
        let first = read_document(&ctx, &json!({"documentId": "D-1"}))
            .unwrap()
            .content;
        assert!(first.starts_with("D-1 · Report · report\nCharacters 0–4000 of 10000.\n\n"));
        assert!(first.ends_with("call read_document with offset 4000 for the next part.]"));
        let last = read_document(
            &ctx,
            &json!({"documentId": "D-1", "offset": 8000, "limit": 5000}),
        )
        .unwrap()
        .content;
        assert!(last.contains("Characters 8000–10000 of 10000."));
        assert!(!last.contains("continues"));
        assert!(read_document(&ctx, &json!({"documentId": "D-1", "offset": 10_001})).is_err());
        assert_eq!(
            read_document(&ctx, &json!({"documentId": "D-9"}))
                .unwrap_err()
                .0,
            "no document `D-9` on this claim; its documents are: D-1"
        );
    }
}
