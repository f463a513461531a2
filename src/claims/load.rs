//! Parsing a claim document from JSON or YAML, with errors that name the
//! file, the field and the line.

use std::fmt;
use std::path::Path;

use serde::de::DeserializeOwned;

use super::ClaimError;
use super::model::Claim;
use crate::digest::sha256_hex;

/// A parsed claim and what identifies the document it came from.
#[derive(Debug, Clone)]
pub struct LoadedClaim {
    pub claim: Claim,
    /// SHA-256 of the document's bytes, as recorded in run logs.
    pub sha256: String,
    /// Where the claim came from, for messages: a path, or `<stdin>`.
    pub origin: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    Json,
    Yaml,
}

impl DocumentFormat {
    /// By extension; a name without a known one (stdin) is sniffed from its
    /// first character.
    pub fn detect(path: &Path, text: &str) -> DocumentFormat {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("json") => DocumentFormat::Json,
            Some("yaml" | "yml") => DocumentFormat::Yaml,
            _ if text.trim_start().starts_with(['{', '[']) => DocumentFormat::Json,
            _ => DocumentFormat::Yaml,
        }
    }
}

/// What is wrong with a document, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentProblem {
    /// Dotted path to the field, e.g. `policy.periodStart` or `file[2].id`.
    pub field: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for DocumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(field) = &self.field {
            write!(f, "field `{field}`")?;
        }
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                let sep = if self.field.is_some() { ", " } else { "" };
                write!(f, "{sep}line {line} column {column}")?;
            }
            (Some(line), None) => write!(f, " line {line}")?,
            _ => {}
        }
        if self.field.is_some() || self.line.is_some() {
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
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

/// Parses any serde type from JSON or YAML text, tracking the field path.
pub fn parse_document<T: DeserializeOwned>(
    text: &str,
    format: DocumentFormat,
) -> Result<T, DocumentProblem> {
    match format {
        DocumentFormat::Json => parse_json(text),
        DocumentFormat::Yaml => parse_yaml(text),
    }
}

fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = inner.to_string();
        let message = strip_location(&message);
        problem(&path, Some(inner.line()), Some(inner.column()), message)
    })?;
    deserializer.end().map_err(|error| {
        problem(
            ".",
            Some(error.line()),
            Some(error.column()),
            strip_location(&error.to_string()),
        )
    })?;
    Ok(value)
}

/// The limits every YAML document is parsed under: deep nesting and alias
/// bombs are refused in linear time, before they cost seconds or memory.
/// Duplicate keys are an error (not "later wins"), so that a mistyped
/// second `system.base` cannot silently replace the first.
pub fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_YAML_DEPTH;
    budget.max_aliases = MAX_YAML_ALIASES;
    // Text size is bounded by the input cap, as for JSON: a claim valid as
    // JSON is valid as YAML.
    let input_cap = usize::try_from(crate::input::MAX_INPUT_BYTES).unwrap_or(usize::MAX);
    budget.max_total_scalar_bytes = input_cap;
    budget.max_reader_input_bytes = Some(input_cap);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    options
}

/// Deepest nesting of a YAML document: claims, suites and scripts need a
/// handful of levels; the headroom is for unknown fields a claim keeps.
pub const MAX_YAML_DEPTH: usize = 64;
/// Most alias uses (`*name`) in one YAML document.
pub const MAX_YAML_ALIASES: usize = 1_000;

fn parse_yaml<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
    let mut path: Option<String> = None;
    let result = serde_saphyr::with_deserializer_from_str_with_options(
        text,
        yaml_options(),
        |deserializer| {
            serde_path_to_error::deserialize(deserializer).map_err(|error| {
                path = Some(error.path().to_string());
                error.into_inner()
            })
        },
    );
    result.map_err(|error| {
        let location = error.location();
        let message = yaml_message(&error);
        problem(
            path.as_deref().unwrap_or("."),
            location
                .as_ref()
                .and_then(|l| usize::try_from(l.line()).ok())
                .filter(|l| *l > 0),
            location
                .as_ref()
                .and_then(|l| usize::try_from(l.column()).ok())
                .filter(|c| *c > 0),
            &message,
        )
    })
}

/// The error's own message, without its locations (the problem carries
/// the first; an alias error adds where the anchor was defined) and without
/// advice about the parser's options, which a user cannot set.
fn yaml_message(error: &serde_saphyr::Error) -> String {
    let message = error.to_string();
    let message = match message.split_once(", set DuplicateKeyPolicy") {
        Some((head, _)) => head,
        None => &message,
    };
    match message.find(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

/// Turns a serde path and message into a problem, folding `missing field`
/// into the field path so that the message names the field that is absent.
fn problem(
    path: &str,
    line: Option<usize>,
    column: Option<usize>,
    message: &str,
) -> DocumentProblem {
    // `?` is serde_path_to_error's "somewhere unknown" (a duplicate key, for
    // one): name the enclosing field, or none.
    let path = path.strip_suffix(".?").unwrap_or(path);
    let parent = (path != "." && path != "?" && !path.is_empty()).then(|| crate::text::quote(path));
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'));
    let (field, message) = match missing {
        Some(name) => {
            let field = match &parent {
                Some(parent) => format!("{parent}.{name}"),
                None => name.to_string(),
            };
            (Some(field), "missing required field".to_string())
        }
        None => (parent, crate::text::quote(message)),
    };
    DocumentProblem {
        field,
        line,
        column,
        message,
    }
}

fn strip_location(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(index) => &message[..index],
        None => message,
    }
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
