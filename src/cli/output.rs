//! Output helpers shared by the commands: tables in the house style, pretty
//! JSON, and short lists.

use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

/// A table with compact borders, wrapped to the terminal.
pub fn new_table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}

/// Under a table that left columns out to fit: which, and how to see them.
pub fn write_hidden(out: &mut impl Write, hidden: &[String]) -> io::Result<()> {
    if hidden.is_empty() {
        return Ok(());
    }
    let note = format!(
        "({} hidden to fit the terminal; widen it, set COLUMNS, or use --json)",
        hidden.join(", ")
    );
    writeln!(out, "{}", promptlab::sink::Style::for_stdout().dim(&note))
}

/// `value` as pretty JSON and a newline.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    writeln!(out, "{text}")
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
