//! Output helpers shared by the commands: the note under a fitted table,
//! pretty JSON, plurals and short lists.

use std::io::{self, Write};

use serde::Serialize;

/// Under a table that left columns out to fit: which, and how to see them
/// (`machine_flag` is the command's JSON output: `--json`, `--format ndjson`).
pub fn write_hidden(out: &mut impl Write, hidden: &[String], machine_flag: &str) -> io::Result<()> {
    if let Some(note) = promptlab::table::hidden_note(hidden, machine_flag) {
        writeln!(out, "{}", promptlab::sink::Style::for_stdout().dim(&note))?;
    }
    Ok(())
}

/// `value` as pretty JSON and a newline, C1 controls escaped
/// (`text::json_for_terminal`).
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    writeln!(out, "{}", promptlab::text::json_for_terminal(text))
}

/// `one` for a count of 1, else `many`: "1 run", "2 runs".
pub fn plural<'a>(count: usize, one: &'a str, many: &'a str) -> &'a str {
    if count == 1 { one } else { many }
}

/// `a, b, c`, or `none`.
pub fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
