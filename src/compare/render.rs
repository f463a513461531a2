//! A comparison as a terminal report, as Markdown to paste into a pull
//! request, or as JSON for tools. What got worse comes first.

use std::fmt::Write as _;

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use similar::{ChangeTag, TextDiff};

use super::{
    Comparison, Conclusion, Distribution, Pair, RunEntry, SIGNIFICANCE, SideSummary, VerdictChange,
};
use crate::sink::{Style, printable};

/// A metric grows "worse" when B's median is this much above A's.
const WORSE_BY: f64 = 0.10;

pub fn json(comparison: &Comparison) -> String {
    serde_json::to_string_pretty(comparison).unwrap_or_default()
}

/// One sentence on the outcome.
pub fn conclusion_sentence(c: &Comparison) -> String {
    let counts = format!(
        "{} paired turns went from pass to fail and {} from fail to pass (McNemar exact p = {:.4}{})",
        c.pass_to_fail,
        c.fail_to_pass,
        c.p_value,
        if c.p_value < SIGNIFICANCE {
            format!(", significant at {SIGNIFICANCE}")
        } else {
            format!(", not significant at {SIGNIFICANCE}")
        }
    );
    match c.conclusion {
        Conclusion::NoChange => format!(
            "No change: every paired turn has the same verdict, answer and tools; {counts}."
        ),
        Conclusion::NoSignificantChange => format!("No significant change in pass rate: {counts}."),
        Conclusion::Better => format!("Better: {counts}."),
        Conclusion::Worse => format!("Worse: {counts}."),
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or("–".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn pass_rate(side: &SideSummary) -> String {
    match (side.pass_rate, side.pass_rate_interval) {
        (Some(rate), Some((low, high))) => format!(
            "{} ({}/{}; 95% CI {:.1}–{:.1}%)",
            percent(Some(rate)),
            side.passed,
            side.judged,
            low * 100.0,
            high * 100.0
        ),
        _ => "– (no verdicts: not eval runs)".to_string(),
    }
}

fn distribution(d: Distribution, unit: &str) -> String {
    let show = |v: Option<u64>| v.map_or("–".to_string(), |v| format!("{v}{unit}"));
    format!("{} / {}", show(d.median), show(d.p95))
}

/// "▲ worse" when B's median is more than 10% above A's.
fn trend(a: Distribution, b: Distribution) -> &'static str {
    match (a.median, b.median) {
        (Some(a), Some(b)) if b as f64 > a as f64 * (1.0 + WORSE_BY) && b > a => "▲ worse",
        (Some(a), Some(b)) if (b as f64) < a as f64 * (1.0 - WORSE_BY) => "▼ better",
        _ => "",
    }
}

/// The metric rows: name, A, B, change.
fn metric_rows(c: &Comparison) -> Vec<[String; 4]> {
    let cache_trend = if c.b.cache_read_share + WORSE_BY < c.a.cache_read_share {
        "▲ worse"
    } else {
        ""
    };
    vec![
        [
            "runs".into(),
            c.a.runs.to_string(),
            c.b.runs.to_string(),
            String::new(),
        ],
        [
            "pass rate".into(),
            pass_rate(&c.a),
            pass_rate(&c.b),
            rate_trend(c),
        ],
        [
            "input tokens (median / p95)".into(),
            distribution(c.a.input_tokens, ""),
            distribution(c.b.input_tokens, ""),
            trend(c.a.input_tokens, c.b.input_tokens).into(),
        ],
        [
            "output tokens (median / p95)".into(),
            distribution(c.a.output_tokens, ""),
            distribution(c.b.output_tokens, ""),
            trend(c.a.output_tokens, c.b.output_tokens).into(),
        ],
        [
            "latency (median / p95)".into(),
            distribution(c.a.latency_ms, " ms"),
            distribution(c.b.latency_ms, " ms"),
            trend(c.a.latency_ms, c.b.latency_ms).into(),
        ],
        [
            "cache-read share".into(),
            percent(Some(c.a.cache_read_share)),
            percent(Some(c.b.cache_read_share)),
            cache_trend.into(),
        ],
    ]
}

fn rate_trend(c: &Comparison) -> String {
    match c.conclusion {
        Conclusion::Worse => "▲ worse".into(),
        Conclusion::Better => "▼ better".into(),
        _ => String::new(),
    }
}

fn verdict_text(run: &RunEntry) -> &'static str {
    run.verdict.as_ref().map_or("–", |v| v.outcome.as_str())
}

fn change_text(pair: &Pair) -> String {
    match pair.change {
        VerdictChange::PassToFail => format!("pass → {} (worse)", verdict_text(&pair.b)),
        VerdictChange::FailToPass => format!("{} → pass (better)", verdict_text(&pair.a)),
        VerdictChange::Same => format!("{} (same)", verdict_text(&pair.a)),
        VerdictChange::NotComparable => {
            format!("{} → {}", verdict_text(&pair.a), verdict_text(&pair.b))
        }
    }
}

fn tools_text(run: &RunEntry) -> String {
    if run.tools.is_empty() {
        "—".into()
    } else {
        run.tools.join(", ")
    }
}

fn usage_text(pair: &Pair) -> String {
    format!(
        "{}/{} → {}/{}",
        pair.a.usage.input_tokens,
        pair.a.usage.output_tokens,
        pair.b.usage.input_tokens,
        pair.b.usage.output_tokens
    )
}

fn latency_text(pair: &Pair) -> String {
    let show = |v: Option<u64>| v.map_or("–".to_string(), |v| format!("{v} ms"));
    format!("{} → {}", show(pair.a.latency_ms), show(pair.b.latency_ms))
}

fn pair_label(pair: &Pair) -> String {
    format!("{} · {} #{}", pair.claim, pair.case, pair.sample)
}

fn changed(pair: &Pair) -> bool {
    pair.answer_changed
        || pair.tools_changed
        || matches!(
            pair.change,
            VerdictChange::PassToFail | VerdictChange::FailToPass
        )
}

/// A word-level diff: `[-removed-]{+added+}`, long unchanged runs elided.
/// Whitespace between two changes joins them, so that a rewritten phrase
/// reads as one change rather than word by word.
pub fn word_diff(old: &str, new: &str) -> String {
    let diff = TextDiff::from_words(old, new);
    let mut out = String::new();
    let (mut equal, mut removed, mut added, mut gap) =
        (String::new(), String::new(), String::new(), String::new());
    let flush_change = |out: &mut String, removed: &mut String, added: &mut String| {
        if !removed.trim().is_empty() {
            let _ = write!(out, " [-{}-]", removed.trim());
        }
        if !added.trim().is_empty() {
            let _ = write!(out, "{{+{}+}} ", added.trim());
        }
        removed.clear();
        added.clear();
    };
    for change in diff.iter_all_changes() {
        let value = change.value();
        let pending = !(removed.is_empty() && added.is_empty());
        match change.tag() {
            ChangeTag::Delete | ChangeTag::Insert => {
                if !equal.is_empty() {
                    out.push_str(&elide(&equal));
                    equal.clear();
                }
                removed.push_str(&gap);
                added.push_str(&gap);
                gap.clear();
                if change.tag() == ChangeTag::Delete {
                    removed.push_str(value);
                } else {
                    added.push_str(value);
                }
            }
            ChangeTag::Equal if pending && value.trim().is_empty() => gap.push_str(value),
            ChangeTag::Equal => {
                flush_change(&mut out, &mut removed, &mut added);
                equal.push_str(&gap);
                gap.clear();
                equal.push_str(value);
            }
        }
    }
    flush_change(&mut out, &mut removed, &mut added);
    out.push_str(&elide(&equal));
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keeps the first and last eight words of a long unchanged run.
fn elide(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= 16 {
        return format!(" {text} ");
    }
    format!(
        " {} … {} ",
        words[..8].join(" "),
        words[words.len() - 8..].join(" ")
    )
}

fn unpaired_line(run: &RunEntry) -> String {
    format!(
        "{} · {} #{} ({}, verdict {})",
        run.claim,
        run.case,
        run.sample,
        run.status,
        verdict_text(run)
    )
}

/// Markdown fit to paste into a pull request.
pub fn markdown(c: &Comparison) -> String {
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
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| changed(p)).collect();
    let _ = writeln!(
        md,
        "### What changed ({} of {} paired turns)\n",
        changed.len(),
        c.pairs.len()
    );
    if !changed.is_empty() {
        let _ = writeln!(
            md,
            "| turn | verdict | tools A | tools B | tokens in/out A → B | latency A → B |\n|---|---|---|---|---|---|"
        );
        for pair in &changed {
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
        for pair in &changed {
            let _ = writeln!(
                md,
                "\n<details><summary>{}</summary>\n",
                md_cell(&pair_label(pair))
            );
            if let Some(verdict) = pair.b.verdict.as_ref().filter(|v| !v.failures.is_empty()) {
                let _ = writeln!(md, "Failures in B:\n");
                for failure in &verdict.failures {
                    let _ = writeln!(md, "- {}", md_cell(failure));
                }
                let _ = writeln!(md);
            }
            if pair.answer_changed {
                let _ = writeln!(
                    md,
                    "Answer (word diff, `[-A-]{{+B+}}`):\n\n> {}\n",
                    md_cell(&word_diff(&pair.a.answer, &pair.b.answer))
                );
            }
            let _ = writeln!(md, "</details>");
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

fn md_cell(text: &str) -> String {
    printable(text).replace('|', "\\|").replace('\n', " ")
}

/// The terminal report.
pub fn text(c: &Comparison, style: Style, show_all: bool) -> String {
    let mut out = String::new();
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header([
            "",
            &format!("A: {}", c.a.label),
            &format!("B: {}", c.b.label),
            "",
        ]);
    for row in metric_rows(c) {
        table.add_row(row);
    }
    let _ = writeln!(out, "A: {}\nB: {}\n{table}\n", c.a.source, c.b.source);
    let sentence = conclusion_sentence(c);
    let _ = writeln!(
        out,
        "{}\n",
        match c.conclusion {
            Conclusion::Worse => style.red(&sentence),
            Conclusion::Better => style.green(&sentence),
            _ => style.bold(&sentence),
        }
    );
    let changed: Vec<&Pair> = c.pairs.iter().filter(|p| show_all || changed(p)).collect();
    if !changed.is_empty() {
        let mut pairs = Table::new();
        pairs
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header([
                "turn",
                "verdict",
                "tools A",
                "tools B",
                "tokens in/out",
                "latency",
            ]);
        for pair in &changed {
            pairs.add_row([
                printable(&pair_label(pair)),
                change_text(pair),
                tools_text(&pair.a),
                tools_text(&pair.b),
                usage_text(pair),
                latency_text(pair),
            ]);
        }
        let _ = writeln!(out, "{pairs}");
        for pair in changed.iter().filter(|p| p.answer_changed) {
            let _ = writeln!(
                out,
                "{}\n  {}",
                style.bold(&printable(&pair_label(pair))),
                printable(&word_diff(&pair.a.answer, &pair.b.answer))
            );
            if let Some(verdict) = &pair.b.verdict {
                for failure in &verdict.failures {
                    let _ = writeln!(out, "  {}", style.red(&format!("- {}", printable(failure))));
                }
            }
        }
    } else {
        let _ = writeln!(out, "{} paired turns, none changed.", c.pairs.len());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_diffs_mark_what_went_and_came() {
        assert_eq!(
            word_diff("The excess is £350.", "The excess is £500."),
            "The excess is [-£350.-]{+£500.+}"
        );
        assert_eq!(word_diff("same words", "same words"), "same words");
        let long = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen";
        assert_eq!(
            word_diff(&format!("{long} end"), &format!("{long} finish")),
            "one two three four five six seven eight … eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen [-end-]{+finish+}"
        );
        assert_eq!(
            word_diff("The excess is recorded here.", "I could not find it here."),
            "[-The excess is recorded-]{+I could not find it+} here."
        );
    }
}
