//! The comparison as a terminal report.

use std::fmt::Write as _;

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::{
    accounting_lines, change_text, changed, conclusion_sentence, failures_of, gate_lines,
    latency_text, metric_rows, pair_label, shows_failures, tools_text, unpaired_line, usage_text,
    word_diff,
};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, Conclusion, Pair};
use crate::sink::{Style, printable};

pub fn text(c: &Comparison, gate: &GateResult, style: Style, show_all: bool) -> String {
    let mut out = summary(c, gate, style);
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| show_all || changed(p)).collect();
    if changed.is_empty() {
        let _ = writeln!(out, "{} paired turns, none changed.", c.pairs.len());
    } else {
        let _ = writeln!(out, "{}", pairs_table(&changed));
        for pair in changed
            .iter()
            .filter(|p| p.answer_changed || shows_failures(p))
        {
            out.push_str(&pair_details(pair, style));
        }
    }
    for (title, runs) in [("Only in A", &c.only_in_a), ("Only in B", &c.only_in_b)] {
        if !runs.is_empty() {
            let _ = writeln!(out, "\n{} ({} unpaired):", style.yellow(title), runs.len());
            for run in runs {
                let _ = writeln!(out, "  {}", printable(&unpaired_line(run)));
            }
        }
    }
    out
}

fn table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}

/// The metrics table, the conclusion, what was counted and the gates.
fn summary(c: &Comparison, gate: &GateResult, style: Style) -> String {
    let mut metrics = table([
        "",
        &format!("A: {}", c.a.label),
        &format!("B: {}", c.b.label),
        "",
    ]);
    for row in metric_rows(c) {
        metrics.add_row(row);
    }
    let mut out = format!("A: {}\nB: {}\n{metrics}\n\n", c.a.source, c.b.source);
    let sentence = conclusion_sentence(c);
    let sentence = match c.conclusion {
        Conclusion::Worse => style.red(&sentence),
        Conclusion::Better => style.green(&sentence),
        _ => style.bold(&sentence),
    };
    let _ = writeln!(out, "{sentence}\n");
    for line in accounting_lines(c) {
        let shown = printable(&line);
        let shown = if line.starts_with("warning:") {
            style.yellow(&shown)
        } else {
            shown
        };
        let _ = writeln!(out, "{shown}");
    }
    for line in gate_lines(gate) {
        let shown = printable(&line);
        let shown = if line.starts_with("note:") {
            style.yellow(&shown)
        } else {
            style.red(&shown)
        };
        let _ = writeln!(out, "{shown}");
    }
    out.push('\n');
    out
}

fn pairs_table(changed: &[&Pair]) -> Table {
    let mut pairs = table([
        "turn",
        "verdict",
        "tools A",
        "tools B",
        "tokens in/out",
        "latency",
    ]);
    for pair in changed {
        pairs.add_row([
            printable(&pair_label(pair)),
            change_text(pair),
            tools_text(&pair.a),
            tools_text(&pair.b),
            usage_text(pair),
            latency_text(pair),
        ]);
    }
    pairs
}

/// A changed pair's answer diff and the failures that made it fail.
fn pair_details(pair: &Pair, style: Style) -> String {
    let mut out = format!("{}\n", style.bold(&printable(&pair_label(pair))));
    if pair.answer_changed {
        let diff = word_diff(&pair.a.answer, &pair.b.answer);
        let _ = writeln!(out, "  {}", printable(&diff));
    }
    for (side, failure) in failures_of(pair) {
        let line = format!("- {side}: {}", printable(failure));
        let _ = writeln!(out, "  {}", style.red(&line));
    }
    if let Some(line) = super::judged_line(pair) {
        let _ = writeln!(out, "  {}", printable(&line));
    }
    out
}
