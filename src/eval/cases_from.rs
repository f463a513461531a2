//! `casesFrom: FILE`: cases from a question bank, one per row of a CSV file
//! with a header row or one per line of a JSONL file (`docs/suites.md`).
//!
//! A row becomes the JSON object an inline case would be, so one serde type
//! (`Case`) and one set of rules judge both; an error names the file, the
//! row and the column (or field) it is about.

use serde_json::{Map, Value};

use super::matrix::MAX_PLANNED_TURNS;
use super::suite::Case;
use crate::document::check_json_keys;

/// The fields of a case a column may name; `expect.*` takes these.
const CASE_FIELDS: [&str; 15] = [
    "name",
    "from",
    "message",
    "history",
    "claims",
    "script",
    "tags",
    "capability",
    "locale",
    "brand",
    "screenActions",
    "voice",
    "today",
    "passThreshold",
    "minPasses",
];

const EXPECT_FIELDS: [&str; 14] = [
    "answerContains",
    "answerNotContains",
    "answerMatches",
    "ignoreCase",
    "toolCalled",
    "toolNotCalled",
    "clientAction",
    "clientActionNot",
    "noError",
    "maxRounds",
    "maxOutputTokens",
    "maxLatencyMs",
    "rubric",
    "rubricThreshold",
];

/// Columns whose cell is a `|`-separated list (unless it is a JSON list).
const LIST_COLUMNS: [&str; 7] = [
    "tags",
    "expect.answerContains",
    "expect.answerNotContains",
    "expect.answerMatches",
    "expect.toolCalled",
    "expect.toolNotCalled",
    "expect.rubric",
];

/// Columns whose cell is always JSON (an object or a list of them).
const JSON_COLUMNS: [&str; 4] = [
    "history",
    "claims",
    "expect.clientAction",
    "expect.clientActionNot",
];

/// Columns whose cell is a number or `true`/`false`.
const SCALAR_COLUMNS: [&str; 10] = [
    "screenActions",
    "voice",
    "passThreshold",
    "minPasses",
    "expect.ignoreCase",
    "expect.noError",
    "expect.maxRounds",
    "expect.maxOutputTokens",
    "expect.maxLatencyMs",
    "expect.rubricThreshold",
];

/// What went wrong where: `row` is the spreadsheet's (the header is row 1)
/// or the JSONL line; `column` the column or field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    pub row: usize,
    pub column: Option<String>,
    pub message: String,
}

impl std::fmt::Display for RowProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.column {
            Some(column) => write!(f, "row {}, column `{column}`: {}", self.row, self.message),
            None => write!(f, "row {}: {}", self.row, self.message),
        }
    }
}

fn problem(row: usize, column: Option<&str>, message: impl Into<String>) -> RowProblem {
    RowProblem {
        row,
        column: column.map(crate::text::quote),
        message: message.into(),
    }
}

/// Cases from `text`, read as JSONL when `jsonl`, else as CSV.
pub fn parse_cases(text: &str, jsonl: bool) -> Result<Vec<(usize, Case)>, RowProblem> {
    // Spreadsheets save UTF-8 with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rows = if jsonl {
        jsonl_rows(text)?
    } else {
        csv_rows(text)?
    };
    rows.into_iter()
        .map(|(row, value)| to_case(row, value).map(|case| (row, case)))
        .collect()
}

fn too_many(row: usize) -> RowProblem {
    problem(
        row,
        None,
        format!("more than {MAX_PLANNED_TURNS} cases (the most turns a suite may plan)"),
    )
}

fn jsonl_rows(text: &str) -> Result<Vec<(usize, Value)>, RowProblem> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let row = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        if rows.len() == MAX_PLANNED_TURNS {
            return Err(too_many(row));
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|error| problem(row, None, format!("not a JSON object: {error}")))?;
        check_json_keys(line).map_err(|twice| {
            problem(
                row,
                twice.field.as_deref().and_then(column_of).as_deref(),
                twice.message,
            )
        })?;
        let Value::Object(object) = &value else {
            return Err(problem(row, None, "not a JSON object"));
        };
        check_keys(row, object)?;
        rows.push((row, value));
    }
    Ok(rows)
}

fn csv_rows(text: &str) -> Result<Vec<(usize, Value)>, RowProblem> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|error| problem(1, None, csv_message(&error)))?
        .clone();
    let columns: Vec<String> = headers.iter().map(|h| h.trim().to_string()).collect();
    check_header(&columns)?;
    let mut rows = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let row = index + 2;
        let record = record.map_err(|error| problem(row, None, csv_message(&error)))?;
        // A spreadsheet saves an emptied row as `,,,,`: no case, as a blank
        // JSONL line is none.
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if rows.len() == MAX_PLANNED_TURNS {
            return Err(too_many(row));
        }
        let mut object = Map::new();
        for (column, cell) in columns.iter().zip(record.iter()) {
            if cell.trim().is_empty() {
                continue;
            }
            let value =
                cell_value(column, cell).map_err(|e| problem(row, Some(column), e.to_string()))?;
            insert_at(&mut object, column, value);
        }
        rows.push((row, Value::Object(object)));
    }
    Ok(rows)
}

/// The csv crate's message without its own position (we give the row).
fn csv_message(error: &csv::Error) -> String {
    match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} cells where the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
        _ => error.to_string(),
    }
}

/// The column names a case may have: its fields and `expect.*`.
fn known_columns() -> Vec<String> {
    CASE_FIELDS
        .iter()
        .map(|f| f.to_string())
        .chain(EXPECT_FIELDS.iter().map(|f| format!("expect.{f}")))
        .collect()
}

/// `column` is not a case field: say which one it may have meant.
fn unknown(row: usize, column: &str) -> RowProblem {
    let known = known_columns();
    let hint = match crate::text::closest(column, known.iter().map(String::as_str)) {
        Some(near) => format!("unknown field; did you mean `{near}`?"),
        None => "unknown field (a case field, or `expect.` and an expectation)".to_string(),
    };
    problem(row, Some(column), hint)
}

/// A JSONL object's keys, checked as a CSV header's are.
fn check_keys(row: usize, object: &Map<String, Value>) -> Result<(), RowProblem> {
    let known = known_columns();
    for (key, value) in object {
        if key == "expect"
            && let Value::Object(expect) = value
        {
            for inner in expect.keys() {
                let column = format!("expect.{inner}");
                if !known.contains(&column) {
                    return Err(unknown(row, &column));
                }
            }
        } else if key != "expect" && !known.contains(key) {
            return Err(unknown(row, key));
        }
    }
    Ok(())
}

/// Every column must be a case field or `expect.` and an expectation.
fn check_header(columns: &[String]) -> Result<(), RowProblem> {
    let known = known_columns();
    // A header without one case field is not a header of cases but the
    // first line of some other file (`.env`, a key file): it is named by
    // position, never quoted, since that line may be a secret.
    if !columns.iter().any(|column| known.contains(column)) {
        return Err(problem(
            1,
            None,
            format!(
                "the header names no case field ({} column(s), none of them one): \
                 not a cases CSV, whose first line names its columns (`name`, `message`, `expect.…`)",
                columns.len()
            ),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for column in columns {
        if !known.contains(column) {
            return Err(unknown(1, column));
        }
        if !seen.insert(column.as_str()) {
            return Err(problem(1, Some(column), "the column is given twice"));
        }
    }
    if !columns.iter().any(|c| c == "name") {
        return Err(problem(1, None, "the header needs a `name` column"));
    }
    Ok(())
}

/// What is wrong with a cell.
#[derive(Debug, thiserror::Error)]
enum CellProblem {
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A key given twice, in the documents' words.
    #[error("{0}")]
    KeyTwice(String),
    #[error("an empty item in the `|` list")]
    EmptyItem,
}

/// A cell as the JSON value an inline case would hold there.
fn cell_value(column: &str, cell: &str) -> Result<Value, CellProblem> {
    let trimmed = cell.trim();
    let list = LIST_COLUMNS.contains(&column);
    if JSON_COLUMNS.contains(&column) || (list && trimmed.starts_with('[')) {
        return json_cell(trimmed);
    }
    if list {
        // An empty item (`a||b`, `excess|`, `|`) is refused, not skipped: it
        // is a slip, and a list left empty by it would check nothing.
        return trimmed
            .split('|')
            .map(str::trim)
            .map(|item| match item {
                "" => Err(CellProblem::EmptyItem),
                _ if item.starts_with('{') => json_cell(item),
                _ => Ok(Value::String(item.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    if SCALAR_COLUMNS.contains(&column) {
        // Not JSON: left as text, for serde to name the type it wanted.
        return Ok(serde_json::from_str(trimmed).unwrap_or(Value::String(trimmed.to_string())));
    }
    Ok(Value::String(cell.to_string()))
}

/// JSON in a cell, read under the documents' rule that no object gives a
/// key twice.
fn json_cell(text: &str) -> Result<Value, CellProblem> {
    let value = serde_json::from_str(text)?;
    check_json_keys(text).map_err(|twice| CellProblem::KeyTwice(twice.message))?;
    Ok(value)
}

/// `expect.x` goes into the `expect` object.
fn insert_at(object: &mut Map<String, Value>, column: &str, value: Value) {
    match column.split_once('.') {
        Some((outer, inner)) => {
            let nested = object
                .entry(outer.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(nested) = nested {
                nested.insert(inner.to_string(), value);
            }
        }
        None => {
            object.insert(column.to_string(), value);
        }
    }
}

/// The row's object as a `Case`, an error naming the field it is in.
fn to_case(row: usize, value: Value) -> Result<Case, RowProblem> {
    serde_path_to_error::deserialize::<_, Case>(value).map_err(|error| {
        let path = error.path().to_string();
        let column = column_of(&path);
        let message = error.into_inner().to_string();
        problem(row, column.as_deref(), message)
    })
}

/// `expect.toolCalled[0].args` → `expect.toolCalled`; `.` → none.
fn column_of(path: &str) -> Option<String> {
    let mut parts = path.split('.').map(|p| p.split('[').next().unwrap_or(p));
    let first = parts.next().filter(|p| !p.is_empty() && *p != "?")?;
    match (first, parts.next()) {
        ("expect", Some(inner)) if !inner.is_empty() && inner != "?" => {
            Some(format!("expect.{inner}"))
        }
        _ => Some(first.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_of_paths() {
        assert_eq!(
            column_of("expect.toolCalled[0].args").as_deref(),
            Some("expect.toolCalled")
        );
        assert_eq!(column_of("tags[1]").as_deref(), Some("tags"));
        assert_eq!(column_of("."), None);
    }
}
