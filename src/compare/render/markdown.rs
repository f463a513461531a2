//! The comparison as Markdown, fit to paste into a pull request or a CI
//! step summary. Every piece of text from the runs (labels, paths, tool
//! names, failures, answers) goes through `crate::markdown`'s escaping.

use std::fmt::Write as _;

use super::{
    accounting_lines, change_text, changed, conclusion_sentence, failures_of, gate_lines,
    latency_text, metric_rows, more_unpaired, pair_label, tools_text, unpaired_line, usage_text,
    word_diff,
};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, Pair};
use crate::markdown::{CELL_CHARS, code, code_in_table, html, inline};

/// How much of an answer's word diff is shown.
const DIFF_CHARS: usize = 2_000;

pub fn markdown(c: &Comparison, gate: &GateResult) -> String {
    let mut md = summary(c, gate);
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| changed(p)).collect();
    let _ = writeln!(
        md,
        "### What changed ({} of {} paired turns)\n",
        c.changed_pairs, c.paired
    );
    if !changed.is_empty() {
        md.push_str(&pairs_table(&changed));
        for pair in &changed {
            md.push_str(&pair_details(pair));
        }
    }
    for (title, runs, total) in [
        ("Only in A", &c.only_in_a, c.only_in_a_total),
        ("Only in B", &c.only_in_b, c.only_in_b_total),
    ] {
        if total > 0 {
            let _ = writeln!(md, "\n### {title} ({total} unpaired)\n");
            for run in runs {
                let _ = writeln!(md, "- {}", md_cell(&unpaired_line(run)));
            }
            if let Some(more) = more_unpaired(runs.len(), total) {
                let _ = writeln!(md, "- {more}");
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
        "## Prompt comparison: {} → {}\n",
        code(&c.a.label, CELL_CHARS),
        code(&c.b.label, CELL_CHARS)
    );
    let _ = writeln!(
        md,
        "| | A: {} | B: {} | |\n|---|---|---|---|",
        code_in_table(&c.a.label, CELL_CHARS),
        code_in_table(&c.b.label, CELL_CHARS)
    );
    let _ = writeln!(
        md,
        "| source | {} | {} | |",
        md_cell(&c.a.source.to_string()),
        md_cell(&c.b.source.to_string())
    );
    for row in metric_rows(c) {
        let [name, a, b, change] = row.map(|cell| md_cell(&cell));
        let _ = writeln!(md, "| {name} | {a} | {b} | {change} |");
    }
    let _ = writeln!(md, "\n**{}**\n", md_cell(&conclusion_sentence(c)));
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
            md_cell(&change_text(pair)),
            md_cell(&tools_text(&pair.a)),
            md_cell(&tools_text(&pair.b)),
            md_cell(&usage_text(pair)),
            md_cell(&latency_text(pair))
        );
    }
    md
}

/// A changed pair's failures and answer diff, folded.
fn pair_details(pair: &Pair) -> String {
    // `<summary>` is in an HTML block, where only HTML escaping holds.
    let mut md = format!(
        "\n<details><summary>{}</summary>\n\n",
        html(&pair_label(pair), CELL_CHARS)
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
            inline(&word_diff(&pair.a.answer, &pair.b.answer), DIFF_CHARS)
        );
    }
    if let Some(line) = super::judged_line(pair) {
        let _ = writeln!(md, "{}\n", md_cell(&line));
    }
    md.push_str("</details>\n");
    md
}

fn md_cell(text: &str) -> String {
    inline(text, CELL_CHARS)
}
