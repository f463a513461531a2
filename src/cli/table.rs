//! Tables in the house style: compact borders, wrapped to the terminal.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

pub fn new_table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}
