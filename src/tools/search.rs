//! `search_claim_file`: case-insensitive search over the file's documents,
//! returning ranked passages with their document id and title.
//!
//! Documents are cut into passages (paragraphs, long ones into windows), and
//! each passage is scored by how many distinct query words it contains, with
//! a bonus for the whole query as a phrase, then by how often they occur.

use serde_json::{Value, json};

use super::args::{expect_object, optional_count, required_str};
use super::{ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::claims::model::Document;
use crate::text::one_line;

/// Passages returned unless the model asks for fewer.
pub const DEFAULT_RESULTS: usize = 8;
const MAX_RESULTS: usize = 20;
/// Paragraphs longer than this are cut into windows of about this size.
const PASSAGE_CHARS: usize = 600;

pub static SEARCH_CLAIM_FILE: ToolSpec = ToolSpec {
    name: "search_claim_file",
    description: "Search the claim file's documents (emails, reports, invoices, statements, notes) for words or a phrase, case-insensitively. Returns the best-matching passages, each with its document id and title; read a whole document with read_document.",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words or a phrase to look for, e.g. \"excess\" or \"dash-cam footage\"."},
                "maxResults": {"type": "integer", "description": "Most passages to return (default 8, at most 20)."}
            },
            "required": ["query"]
        })
    },
    label: |_, _| "Searching the claim file".to_string(),
    run: search_claim_file,
};

#[derive(Debug)]
struct Hit<'a> {
    document: &'a Document,
    passage: String,
    score: usize,
    order: usize,
}

fn search_claim_file(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let query = required_str(args, "query")?;
    let max = optional_count(args, "maxResults", MAX_RESULTS)?
        .unwrap_or(DEFAULT_RESULTS)
        .max(1);
    let phrase = query.to_lowercase();
    let terms = query_terms(&phrase);
    if terms.is_empty() {
        return Err(ToolError("the query has no words to search for".into()));
    }
    let mut hits = Vec::new();
    for document in &ctx.claim.file {
        for passage in passages(&document.text) {
            let lower = passage.to_lowercase();
            let distinct = terms
                .iter()
                .filter(|term| lower.contains(term.as_str()))
                .count();
            if distinct == 0 {
                continue;
            }
            let occurrences: usize = terms
                .iter()
                .map(|term| lower.matches(term.as_str()).count())
                .sum();
            let phrase_bonus = if terms.len() > 1 && lower.contains(&phrase) {
                50
            } else {
                0
            };
            hits.push(Hit {
                document,
                passage: passage.to_string(),
                score: distinct * 100 + phrase_bonus + occurrences.min(49),
                order: hits.len(),
            });
        }
    }
    hits.sort_by(|a, b| b.score.cmp(&a.score).then(a.order.cmp(&b.order)));
    let quoted = one_line(query, 80);
    if hits.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No passage in the claim file's {} documents matches \"{quoted}\".",
            ctx.claim.file.len()
        )));
    }
    let shown = hits.len().min(max);
    let mut content = format!(
        "{} passages match \"{quoted}\"; the best {shown}:",
        hits.len()
    );
    for hit in &hits[..shown] {
        let document = hit.document;
        let mut source = format!(
            "[{}] {}",
            document.id,
            one_line(document.display_title(), 100)
        );
        if let Some(date) = &document.date {
            source.push_str(&format!(" ({date})"));
        }
        content.push_str(&format!("\n\n{source}\n{}", hit.passage));
    }
    Ok(ToolOutput::text(content))
}

/// Lower-cased words of two or more characters, each once.
fn query_terms(lower_query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in lower_query.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-') {
        let word = word.trim_matches(|c: char| c == '\'' || c == '-');
        if word.chars().count() >= 2 && !terms.iter().any(|t| t == word) {
            terms.push(word.to_string());
        }
    }
    terms
}

/// Paragraphs (split at newlines), long ones cut into windows at whitespace.
fn passages(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in text.split('\n').map(str::trim).filter(|p| !p.is_empty()) {
        if paragraph.chars().count() <= PASSAGE_CHARS {
            out.push(paragraph.to_string());
            continue;
        }
        let mut window = String::new();
        for word in paragraph.split_whitespace() {
            if !window.is_empty() && window.chars().count() + word.chars().count() >= PASSAGE_CHARS
            {
                out.push(std::mem::take(&mut window));
            }
            if !window.is_empty() {
                window.push(' ');
            }
            window.push_str(word);
        }
        if !window.is_empty() {
            out.push(window);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Claim, parse_claim_bytes};
    use std::path::Path;

    fn claim() -> Claim {
        let json = json!({
            "id": "C1", "lineOfBusiness": "Motor", "status": "open",
            "policy": {"number": "P", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
            "incident": {"date": "2024-03-02", "description": "Crash"},
            "file": [
                {"id": "D-1", "title": "Letter", "date": "2024-03-05", "text": "The third party mentions dash-cam.\nNothing else here."},
                {"id": "D-2", "title": "Note", "text": "We requested the DASH-CAM footage from the third party.\nThe footage arrived."},
                {"id": "D-3", "title": "Ünïcode", "text": "Zoë said the FOOTAGE was blurry."}
            ]
        });
        parse_claim_bytes(json.to_string().as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    #[test]
    fn passages_are_ranked_by_distinct_words_then_phrase() {
        let claim = claim();
        let ctx = ToolContext { claim: &claim };
        let out = search_claim_file(&ctx, &json!({"query": "dash-cam footage"}))
            .unwrap()
            .content;
        let sources: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(
            sources,
            [
                "[D-2] Note",
                "[D-1] Letter (2024-03-05)",
                "[D-2] Note",
                "[D-3] Ünïcode"
            ]
        );
        assert!(out.starts_with("4 passages match \"dash-cam footage\"; the best 4:"));
    }

    #[test]
    fn matching_ignores_case_including_non_ascii() {
        let claim = claim();
        let ctx = ToolContext { claim: &claim };
        let out = search_claim_file(&ctx, &json!({"query": "ZOË", "maxResults": 1}))
            .unwrap()
            .content;
        assert!(out.contains("[D-3] Ünïcode\nZoë said"));
        let none = search_claim_file(&ctx, &json!({"query": "subrogation"}))
            .unwrap()
            .content;
        assert_eq!(
            none,
            "No passage in the claim file's 3 documents matches \"subrogation\"."
        );
        assert!(search_claim_file(&ctx, &json!({"query": "?!"})).is_err());
    }

    #[test]
    fn long_paragraphs_are_cut_at_word_boundaries() {
        let text = "word ".repeat(400);
        let parts = passages(&text);
        assert!(parts.len() >= 3);
        assert!(
            parts
                .iter()
                .all(|p| p.chars().count() < PASSAGE_CHARS && !p.ends_with(' '))
        );
    }
}
