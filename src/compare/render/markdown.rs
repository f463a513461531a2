//! The comparison as Markdown, fit to paste into a pull request or a CI
//! step summary.

use std::fmt::Write as _;

use super::{
    accounting_lines, change_text, changed, conclusion_sentence, failures_of, gate_lines,
    latency_text, metric_rows, pair_label, tools_text, unpaired_line, usage_text, word_diff,
};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, Pair};
use crate::sink::printable;

pub fn markdown(c: &Comparison, gate: &GateResult) -> String {
    let mut md = summary(c, gate);
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| changed(p)).collect();
    let _ = writeln!(
        md,
        "### What changed ({} of {} paired turns)\n",
        changed.len(),
        c.pairs.len()
    );
    if !changed.is_empty() {
        md.push_str(&pairs_table(&changed));
        for pair in &changed {
            md.push_str(&pair_details(pair));
        }
    }
    for (title, runs) in [("Only in A", &c.only_in_a), ("Only in B", &c.only_in_b)] {
        if !runs.is_empty() {
            let _ = writeln!(md, "\n### {title} ({} unpaired)\n", runs.len());
            for run in runs {
                let _ = writeln!(md, "- {}", md_cell(&unpaired_line(run)));
            }
        }
    }
    md
}

/// The title, the metrics table, the conclusion, what was counted and the gates.
fn summary(c: &Comparison, gate: &GateResult) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Prompt comparison: `{}` → `{}`\n",
        c.a.label, c.b.label
    );
    let _ = writeln!(
        md,
        "| | A: `{}` | B: `{}` | |\n|---|---|---|---|",
        c.a.label, c.b.label
    );
    let _ = writeln!(md, "| source | {} | {} | |", c.a.source, c.b.source);
    for [name, a, b, change] in metric_rows(c) {
        let _ = writeln!(md, "| {name} | {a} | {b} | {change} |");
    }
    let _ = writeln!(md, "\n**{}**\n", conclusion_sentence(c));
    for line in accounting_lines(c) {
        let _ = writeln!(md, "- {}", md_cell(&line));
    }
    for line in gate_lines(gate) {
        let _ = writeln!(md, "- **{}**", md_cell(&line));
    }
    md.push('\n');
    md
}

fn pairs_table(changed: &[&Pair]) -> String {
    let mut md = String::from(
        "| turn | verdict | tools A | tools B | tokens in/out A → B | latency A → B |\n|---|---|---|---|---|---|\n",
    );
    for pair in changed {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            md_cell(&pair_label(pair)),
            change_text(pair),
            tools_text(&pair.a),
            tools_text(&pair.b),
            usage_text(pair),
            latency_text(pair)
        );
    }
    md
}

/// A changed pair's failures and answer diff, folded.
fn pair_details(pair: &Pair) -> String {
    let mut md = format!(
        "\n<details><summary>{}</summary>\n\n",
        md_cell(&pair_label(pair))
    );
    let failures = failures_of(pair);
    if !failures.is_empty() {
        md.push_str("Failures:\n\n");
        for (side, failure) in failures {
            let _ = writeln!(md, "- {side}: {}", md_cell(failure));
        }
        md.push('\n');
    }
    if pair.answer_changed {
        let _ = writeln!(
            md,
            "Answer (word diff, `[-A-]{{+B+}}`):\n\n> {}\n",
            md_cell(&word_diff(&pair.a.answer, &pair.b.answer))
        );
    }
    if let Some(line) = super::judged_line(pair) {
        let _ = writeln!(md, "{}\n", md_cell(&line));
    }
    md.push_str("</details>\n");
    md
}

fn md_cell(text: &str) -> String {
    printable(text).replace('|', "\\|").replace('\n', " ")
}
