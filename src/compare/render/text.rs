//! The comparison as a terminal report, fitted to `width` columns by the
//! rule of `crate::table`: turn labels, verdicts and numbers stay whole; the
//! tools are cut with `…`; tokens and latency go first on a narrow terminal;
//! and the metrics, when A and B side by side do not fit, are stacked.

use std::fmt::Write as _;

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::{
    accounting_lines, change_text, changed, conclusion_sentence, failures_of, gate_lines,
    latency_text, metric_rows, more_unpaired, pair_label, shows_failures, tools_text,
    unpaired_line, usage_text, word_diff,
};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, Conclusion, Pair};
use crate::sink::{Style, printable};
use crate::table::{Fit, fit_table, hidden_note, widest_line};

/// The report for a terminal `width` columns wide (`crate::table::terminal_width`).
pub fn text(
    c: &Comparison,
    gate: &GateResult,
    style: Style,
    show_all: bool,
    width: usize,
) -> String {
    let mut out = summary(c, gate, style, width);
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| show_all || changed(p)).collect();
    if changed.is_empty() {
        let _ = writeln!(out, "{} paired turns, none changed.", c.paired);
    } else {
        out.push_str(&pairs_table(&changed, style, width));
        for pair in changed
            .iter()
            .filter(|p| p.answer_changed || shows_failures(p))
        {
            out.push_str(&pair_details(pair, style));
        }
    }
    for (title, runs, total) in [
        ("Only in A", &c.only_in_a, c.only_in_a_total),
        ("Only in B", &c.only_in_b, c.only_in_b_total),
    ] {
        if total > 0 {
            let _ = writeln!(out, "\n{} ({total} unpaired):", style.yellow(title));
            for run in runs {
                let _ = writeln!(out, "  {}", printable(&unpaired_line(run)));
            }
            if let Some(more) = more_unpaired(runs.len(), total) {
                let _ = writeln!(out, "  {more}");
            }
        }
    }
    out
}

/// The metrics, A and B side by side; or, when that is wider than `width`,
/// stacked: each metric on a line with its trend, then A's and B's values
/// (a value is a number with its interval, and is never cut).
fn metrics(c: &Comparison, width: usize) -> String {
    let rows: Vec<[String; 4]> = metric_rows(c)
        .into_iter()
        .map(|row| row.map(|cell| printable(&cell)))
        .collect();
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header([
            String::new(),
            printable(&format!("A: {}", c.a.label)),
            printable(&format!("B: {}", c.b.label)),
            String::new(),
        ]);
    for row in &rows {
        table.add_row(row);
    }
    let side_by_side = table.to_string();
    if widest_line(&side_by_side) <= width {
        return side_by_side;
    }
    // A and B are named on the two lines above the metrics.
    let mut out = String::new();
    for [metric, a, b, trend] in rows {
        let _ = writeln!(out, "{}", format!("{metric}  {trend}").trim_end());
        let _ = writeln!(out, "  A  {a}\n  B  {b}");
    }
    out.trim_end().to_string()
}

/// The metrics, the conclusion, what was counted and the gates.
fn summary(c: &Comparison, gate: &GateResult, style: Style, width: usize) -> String {
    let mut out = format!(
        "A: {}\nB: {}\n{}\n\n",
        c.a.source,
        c.b.source,
        metrics(c, width)
    );
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

const PAIR_HEADER: [&str; 5] = ["turn", "verdict", "tools A → B", "tokens in/out", "latency"];
/// The turn and its verdict are what the table is read for; the tools are
/// free text; latency goes first, then tokens (both are in the metrics).
const PAIR_FITS: [Fit; 5] = [Fit::Keep, Fit::Keep, Fit::Free, Fit::Drop(2), Fit::Drop(1)];

/// The changed pairs, and under them the columns a narrow terminal left out.
fn pairs_table(changed: &[&Pair], style: Style, width: usize) -> String {
    let rows: Vec<[String; 5]> = changed
        .iter()
        .map(|pair| {
            [
                pair_label(pair),
                change_text(pair),
                format!("{} → {}", tools_text(&pair.a), tools_text(&pair.b)),
                usage_text(pair),
                latency_text(pair),
            ]
            .map(|cell| printable(&cell))
        })
        .collect();
    let fitted = fit_table(PAIR_HEADER, PAIR_FITS, &rows, width);
    let mut out = format!("{fitted}\n");
    if let Some(note) = hidden_note(&fitted.hidden, "--format json") {
        let _ = writeln!(out, "{}", style.dim(&note));
    }
    out
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
