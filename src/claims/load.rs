//! Parsing a claim document from JSON or YAML, with errors that name the
//! file, the field and the line.

use std::path::Path;

use super::ClaimError;
use super::model::Claim;
use crate::digest::sha256_hex;
// The document parser lives in `crate::document`; claims are its first user.
pub use crate::document::{
    DocumentFormat, DocumentProblem, MAX_YAML_ALIASES, MAX_YAML_DEPTH, parse_document, yaml_options,
};

/// A parsed claim and what identifies the document it came from.
#[derive(Debug, Clone)]
pub struct LoadedClaim {
    pub claim: Claim,
    /// SHA-256 of the document's bytes, as recorded in run logs.
    pub sha256: String,
    /// Where the claim came from, for messages: a path, or `<stdin>`.
    pub origin: String,
}

/// Reads and parses a claim file.
pub fn load_claim_file(path: &Path) -> Result<LoadedClaim, ClaimError> {
    let bytes = crate::input::read_input(path).map_err(|source| ClaimError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse_claim_bytes(&bytes, path)
}

/// Parses claim bytes; `path` names the origin and picks the format.
pub fn parse_claim_bytes(bytes: &[u8], path: &Path) -> Result<LoadedClaim, ClaimError> {
    let origin = path.display().to_string();
    let text = std::str::from_utf8(bytes).map_err(|error| ClaimError::Invalid {
        origin: origin.clone(),
        problem: DocumentProblem {
            field: None,
            line: None,
            column: None,
            message: format!(
                "not UTF-8 text (invalid byte at offset {})",
                error.valid_up_to()
            ),
        },
    })?;
    let format = DocumentFormat::detect(path, text);
    let claim: Claim = parse_document(text, format).map_err(|problem| ClaimError::Invalid {
        origin: origin.clone(),
        problem,
    })?;
    if !super::is_valid_claim_id(&claim.id) {
        return Err(ClaimError::Invalid {
            origin,
            problem: DocumentProblem {
                field: Some("id".into()),
                line: None,
                column: None,
                message: format!(
                    "`{}` is not a claim id: 1 to 128 of A-Z a-z 0-9 . _ -, starting with a letter or digit",
                    crate::text::quote(&claim.id).escape_debug()
                ),
            },
        });
    }
    Ok(LoadedClaim {
        claim,
        sha256: sha256_hex(bytes),
        origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL_JSON: &str = r#"{
  "id": "CLM-1",
  "lineOfBusiness": "Household",
  "status": "open",
  "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
  "incident": {"date": "2024-03-02", "description": "Water leak"}
}"#;

    fn invalid(text: &str, name: &str) -> DocumentProblem {
        match parse_claim_bytes(text.as_bytes(), Path::new(name)) {
            Err(ClaimError::Invalid { problem, .. }) => problem,
            other => panic!("expected an invalid claim, got {other:?}"),
        }
    }

    #[test]
    fn a_minimal_claim_parses_and_keeps_unknown_fields() {
        let text = MINIMAL_JSON.replace(
            "\"status\": \"open\",",
            "\"status\": \"open\", \"vehicle\": {\"reg\": \"AB12 CDE\"},",
        );
        let loaded = parse_claim_bytes(text.as_bytes(), Path::new("c.json")).unwrap();
        assert_eq!(loaded.claim.id, "CLM-1");
        assert_eq!(loaded.claim.extra["vehicle"]["reg"], "AB12 CDE");
        assert_eq!(loaded.sha256.len(), 64);
    }

    #[test]
    fn a_missing_nested_field_is_named_with_its_path() {
        let text = MINIMAL_JSON.replace("\"number\": \"P-1\", ", "");
        let problem = invalid(&text, "c.json");
        assert_eq!(problem.field.as_deref(), Some("policy.number"));
        assert_eq!(problem.message, "missing required field");
        assert_eq!(problem.line, Some(5));
    }

    #[test]
    fn a_bad_date_names_field_and_line() {
        let text = MINIMAL_JSON.replace("\"2024-03-02\"", "\"02/03/2024\"");
        let problem = invalid(&text, "c.json");
        assert_eq!(problem.field.as_deref(), Some("incident.date"));
        assert_eq!(problem.line, Some(6));
        assert!(
            problem.message.contains("YYYY-MM-DD"),
            "{}",
            problem.message
        );
    }

    const MINIMAL_YAML: &str = "id: CLM-2\nlineOfBusiness: Motor\nstatus: open\npolicy:\n  number: P-2\n  periodStart: 2024-01-01\n  periodEnd: 2024-12-31\nincident:\n  date: 2024-02-01\n  description: Hit a bollard\n";

    #[test]
    fn a_duplicate_yaml_key_is_an_error_with_its_line() {
        let problem = invalid(&format!("{MINIMAL_YAML}status: closed\n"), "c.yaml");
        assert_eq!(problem.line, Some(11));
        assert!(problem.message.contains("duplicate"), "{}", problem.message);
        assert!(!problem.message.contains("Options"), "{}", problem.message);
    }

    #[test]
    fn deep_nesting_and_alias_bombs_are_refused() {
        let deep = format!("{MINIMAL_YAML}extra: {}\n", "[".repeat(100_000));
        assert!(invalid(&deep, "c.yaml").message.len() < 400);
        let deep_block: String = (0..200)
            .map(|depth| format!("{}k:\n", "  ".repeat(depth)))
            .collect();
        invalid(
            &format!("{MINIMAL_YAML}extra:\n{}", deep_block.replace("\n", "\n  ")),
            "c.yaml",
        );
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let prev = level - 1;
            bomb.push_str(&format!(
                "a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        invalid(&format!("{MINIMAL_YAML}{bomb}"), "c.yaml");
    }

    #[test]
    fn an_amount_with_extra_fields_parses() {
        let text = format!(
            "{MINIMAL_YAML}lossEstimate: {{amount: \"84250.10\", currency: GBP, basis: adjuster preliminary}}\n"
        );
        let loaded = parse_claim_bytes(text.as_bytes(), Path::new("c.yaml")).unwrap();
        let estimate = loaded.claim.loss_estimate.unwrap();
        assert_eq!(estimate.extra["basis"], "adjuster preliminary");
    }

    #[test]
    fn a_huge_string_is_quoted_not_dumped() {
        let text = format!("\"{}\"", "x".repeat(1_000_000));
        let problem = invalid(&text, "c.yaml");
        assert!(problem.message.len() < 600, "{}", problem.message.len());
        let problem = invalid(&text, "c.json");
        assert!(problem.message.len() < 600, "{}", problem.message.len());
    }

    #[test]
    fn yaml_errors_name_field_and_line() {
        let yaml = "id: CLM-2\nlineOfBusiness: Motor\nstatus: open\npolicy:\n  number: P-2\n  periodStart: 2024-01-01\n  periodEnd: 2024-12-31\nincident:\n  date: 2024-02-01\n  description: Hit a bollard\nlossEstimate: lots\n";
        let problem = invalid(yaml, "c.yaml");
        assert_eq!(problem.field.as_deref(), Some("lossEstimate"));
        assert_eq!(problem.line, Some(11));
        assert!(
            problem.message.contains("decimal amount"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn a_schedule_row_error_names_its_index() {
        let text = MINIMAL_JSON.replace(
            "\"status\": \"open\",",
            "\"status\": \"open\", \"schedule\": [{\"id\": \"S1\", \"description\": \"TV\"}, {\"id\": \"S2\"}],",
        );
        let problem = invalid(&text, "c.json");
        assert_eq!(problem.field.as_deref(), Some("schedule[1].description"));
    }

    #[test]
    fn trailing_garbage_and_non_utf8_are_refused() {
        let text = format!("{MINIMAL_JSON} x");
        assert!(invalid(&text, "c.json").line.is_some());
        let bytes = [b'{', 0xff, b'}'];
        assert!(matches!(
            parse_claim_bytes(&bytes, Path::new("c.json")),
            Err(ClaimError::Invalid { .. })
        ));
    }
}
