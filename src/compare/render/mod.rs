//! A comparison as a terminal report (`text.rs`), as Markdown to paste into
//! a pull request (`markdown.rs`), or as JSON for tools; the pieces they
//! share are here. What got worse comes first.

mod markdown;
mod pairwise;
mod text;

pub use pairwise::{judged_line, pairwise_lines};

pub use markdown::markdown;
pub use text::text;

use std::fmt::Write as _;

use similar::{ChangeTag, TextDiff};

use serde::Serialize;

use super::gate::GateResult;
use super::{
    Comparison, Conclusion, Distribution, Pair, RunEntry, SIGNIFICANCE, SideSummary, VerdictChange,
};

/// A metric grows "worse" when B's median is this much above A's.
const WORSE_BY: f64 = 0.10;

/// The JSON report (`compare --format json`): the comparison and the
/// gates' reading; its schema is `docs/schemas/compare-report.schema.json`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct CompareReport<'a> {
    #[serde(flatten)]
    pub comparison: &'a Comparison,
    pub gate: &'a GateResult,
}

pub fn json(comparison: &Comparison, gate: &GateResult) -> String {
    let text =
        serde_json::to_string_pretty(&CompareReport { comparison, gate }).unwrap_or_default();
    crate::text::json_for_terminal(text)
}

/// One sentence on the outcome.
pub fn conclusion_sentence(c: &Comparison) -> String {
    let Some(p_value) = c.p_value else {
        return match c.conclusion {
            Conclusion::NothingPaired => {
                "Nothing to compare: no run of A pairs with a run of B.".to_string()
            }
            Conclusion::NoChange => format!(
                "No change: every paired turn has the same answer and tools. No verdicts to test{}.",
                chat_note(c)
            ),
            _ => format!(
                "Answers or tools differ on {} of {} paired turns. No verdicts to test{}.",
                c.changed_pairs,
                c.paired,
                chat_note(c)
            ),
        };
    };
    let errored = if c.errored > 0 {
        format!(
            "; {} paired turn{} errored on a side and {} not counted",
            c.errored,
            if c.errored == 1 { "" } else { "s" },
            if c.errored == 1 { "is" } else { "are" }
        )
    } else {
        String::new()
    };
    let counts = format!(
        "{} paired turns went from pass to fail and {} from fail to pass (McNemar exact p = {:.4}{}){errored}",
        c.pass_to_fail,
        c.fail_to_pass,
        p_value,
        if p_value < SIGNIFICANCE {
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
        Conclusion::AnswersDiffer | Conclusion::NothingPaired => format!("{counts}."),
    }
}

fn chat_note(c: &Comparison) -> &'static str {
    if c.not_comparable == c.paired {
        " (chat turns carry none: they are compared on answers, tools, tokens and latency)"
    } else {
        ""
    }
}

/// What each side holds beyond its compared runs, and what the reader must
/// know: one line each.
pub fn accounting_lines(c: &Comparison) -> Vec<String> {
    let mut lines = pairwise_lines(c);
    let versions: Vec<String> = c
        .versions
        .iter()
        .map(|v| {
            if v.a == v.b {
                format!("`{}`", v.a)
            } else {
                format!("A `{}` with B `{}`", v.a, v.b)
            }
        })
        .collect();
    lines.push(format!(
        "Paired by prompt version ({}), suite, claim, case and sample: {} pairs, {} only in A, {} only in B.",
        versions.join(", "),
        c.paired, c.only_in_a_total, c.only_in_b_total
    ));
    if c.pairs.len() < c.paired {
        lines.push(format!(
            "Listed: the worst {} of {} pairs (pass→fail first, then errors, then the largest latency or token increases; --worst N for more).",
            c.pairs.len(),
            c.paired
        ));
    }
    for (name, side) in [("A", &c.a), ("B", &c.b)] {
        let mut counted = format!("{name}: {} runs compared", side.runs);
        for (what, count) in [
            (
                "superseded by a newer run of the same turn or variant",
                side.set_aside_totals.superseded,
            ),
            (
                "of variants not selected by --variant",
                side.set_aside_totals.not_selected,
            ),
            (
                "replays of recorded turns (not runs of their own)",
                side.set_aside_totals.replays,
            ),
            ("unreadable", side.unreadable.len()),
        ] {
            if count > 0 {
                counted.push_str(&format!(", {count} {what}"));
            }
        }
        lines.push(counted);
        // Its tokens and cost above are unknown ("–") for these calls.
        if let Some(note) = side_usage_note(side) {
            lines.push(format!("{name}: {note}"));
        }
        for aside in side
            .superseded
            .iter()
            .chain(&side.not_selected)
            .chain(&side.replays)
        {
            lines.push(format!(
                "  set aside: {} ({})",
                aside.run.path.display(),
                aside.reason
            ));
        }
        for log in &side.unreadable {
            lines.push(format!("  unreadable: {}", log.error));
        }
    }
    lines.extend(c.warnings.iter().map(|w| format!("warning: {w}")));
    lines
}

/// `usage not reported by the server (N calls)` for a side with such calls,
/// its judge's apart.
fn side_usage_note(side: &SideSummary) -> Option<String> {
    let notes: Vec<String> = [
        side.usage.unreported_note(),
        side.judge_usage
            .unreported_note()
            .map(|note| format!("judge {note}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!notes.is_empty()).then(|| notes.join("; "))
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

/// A side whose every run errored has no tokens or latency to compare.
fn cannot_be_judged(c: &Comparison) -> Option<String> {
    [("A", &c.a), ("B", &c.b)]
        .into_iter()
        .find(|(_, side)| side.runs > 0 && side.errored_runs == side.runs)
        .map(|(name, _)| format!("cannot be judged: every run of {name} errored"))
}

/// The change column of a token or latency row.
fn metric_trend(c: &Comparison, a: Distribution, b: Distribution) -> String {
    cannot_be_judged(c).unwrap_or_else(|| trend(a, b).to_string())
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
    let mut rows = quality_rows(c);
    rows.extend(spend_rows(c));
    rows
}

/// What the turns did: runs, model, pass rate, tokens, latency, cache reads.
fn quality_rows(c: &Comparison) -> Vec<[String; 4]> {
    let cache_trend = match (c.a.cache_read_share, c.b.cache_read_share) {
        (Some(a), Some(b)) if b + WORSE_BY < a => "▲ worse",
        _ => "",
    };
    vec![
        [
            "runs".into(),
            c.a.runs.to_string(),
            c.b.runs.to_string(),
            String::new(),
        ],
        [
            "model".into(),
            c.a.models.join(", "),
            c.b.models.join(", "),
            if c.a.models == c.b.models {
                String::new()
            } else {
                "≠ differs".into()
            },
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
            metric_trend(c, c.a.input_tokens, c.b.input_tokens),
        ],
        [
            "output tokens (median / p95)".into(),
            distribution(c.a.output_tokens, ""),
            distribution(c.b.output_tokens, ""),
            metric_trend(c, c.a.output_tokens, c.b.output_tokens),
        ],
        [
            "latency (median / p95)".into(),
            distribution(c.a.latency_ms, " ms"),
            distribution(c.b.latency_ms, " ms"),
            metric_trend(c, c.a.latency_ms, c.b.latency_ms),
        ],
        [
            "cache-read share".into(),
            percent(c.a.cache_read_share),
            percent(c.b.cache_read_share),
            cache_trend.into(),
        ],
    ]
}

/// What the turns cost: the chat calls, runs from the cache, the judge.
fn spend_rows(c: &Comparison) -> Vec<[String; 4]> {
    let cost = |side: &SideSummary| crate::cost::Cost::from(side.cost_usd).display();
    let difference = match (c.a.cost_usd, c.b.cost_usd) {
        (Some(a), Some(b)) => {
            let sign = if b >= a { "+" } else { "−" };
            format!("{sign}{}", crate::cost::format_usd((b - a).abs()))
        }
        _ => String::new(),
    };
    let mut rows = vec![[
        "cost (chat calls)".into(),
        cost(&c.a),
        cost(&c.b),
        difference,
    ]];
    if c.a.cached_runs + c.b.cached_runs > 0 {
        rows.push([
            "runs from the model cache (no latency)".into(),
            c.a.cached_runs.to_string(),
            c.b.cached_runs.to_string(),
            String::new(),
        ]);
    }
    if c.a.judge_calls + c.b.judge_calls > 0 {
        let judge = |side: &SideSummary| {
            format!(
                "{} verdicts, {} tokens",
                side.judge_calls,
                side.judge_usage.in_out()
            )
        };
        rows.push([
            "rubric judge (apart from the chat)".to_string(),
            judge(&c.a),
            judge(&c.b),
            String::new(),
        ]);
    }
    rows
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
    format!("{}{}", verdict_change(pair), votes_text(pair))
}

fn verdict_change(pair: &Pair) -> String {
    match pair.change {
        VerdictChange::PassToFail => format!("pass → {} (worse)", verdict_text(&pair.b)),
        VerdictChange::FailToPass => format!("{} → pass (better)", verdict_text(&pair.a)),
        VerdictChange::Same => format!("{} (same)", verdict_text(&pair.a)),
        VerdictChange::Errored | VerdictChange::NotComparable => {
            format!("{} → {}", verdict_text(&pair.a), verdict_text(&pair.b))
        }
    }
}

/// ` · votes A +1 −0, B +0 −2` when either side was voted on in `serve`.
fn votes_text(pair: &Pair) -> String {
    if !pair.a.votes.any() && !pair.b.votes.any() {
        return String::new();
    }
    let side = |v: super::set::Votes| format!("+{} −{}", v.up, v.down);
    format!(
        " · votes A {}, B {}",
        side(pair.a.votes),
        side(pair.b.votes)
    )
}

fn tools_text(run: &RunEntry) -> String {
    if run.tools.is_empty() {
        "—".into()
    } else {
        run.tools.join(", ")
    }
}

fn usage_text(pair: &Pair) -> String {
    format!("{} → {}", pair.a.usage.in_out(), pair.b.usage.in_out())
}

fn latency_text(pair: &Pair) -> String {
    let show = |v: Option<u64>| v.map_or("–".to_string(), |v| format!("{v} ms"));
    format!("{} → {}", show(pair.a.latency_ms), show(pair.b.latency_ms))
}

fn pair_label(pair: &Pair) -> String {
    let cached = match (pair.a.cached_calls > 0, pair.b.cached_calls > 0) {
        (false, false) => "",
        (true, false) => " (A cached)",
        (false, true) => " (B cached)",
        (true, true) => " (cached)",
    };
    format!(
        "{} · {} · {} #{}{cached}",
        pair.version, pair.claim, pair.case, pair.sample
    )
}

fn changed(pair: &Pair) -> bool {
    pair.changed()
}

/// Pass→fail and errored pairs always show why.
fn shows_failures(pair: &Pair) -> bool {
    matches!(
        pair.change,
        VerdictChange::PassToFail | VerdictChange::Errored
    )
}

/// The failures (or errors) of each side that did not pass.
fn failures_of(pair: &Pair) -> Vec<(&'static str, &String)> {
    let mut lines = Vec::new();
    for (side, run) in [("A", &pair.a), ("B", &pair.b)] {
        if let Some(verdict) = &run.verdict {
            lines.extend(verdict.failures.iter().map(|f| (side, f)));
        }
    }
    lines
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

/// `… and N more` under a list of runs only in one side that lists the
/// first of them.
fn more_unpaired(listed: usize, total: usize) -> Option<String> {
    (total > listed).then(|| format!("… and {} more (--worst N lists more)", total - listed))
}

fn unpaired_line(run: &RunEntry) -> String {
    format!(
        "{} · {} · {} #{} ({}, verdict {})",
        run.version(),
        run.claim,
        run.case,
        run.sample,
        run.status,
        verdict_text(run)
    )
}

/// The gates' notes, then why they fail.
pub fn gate_lines(gate: &GateResult) -> Vec<String> {
    let notes = gate.notes.iter().map(|n| format!("note: {n}"));
    let failures = gate.failures.iter().map(|f| format!("gate failed: {f}"));
    notes.chain(failures).collect()
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
