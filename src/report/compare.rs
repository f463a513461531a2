//! A comparison as page data: the conclusion with its test and p-value,
//! both sides' numbers, every pair (worst first) with a word-level diff of
//! the answers when they differ, the tools, tokens and latency of each side,
//! and the unpaired runs. Strings go through the report's string table.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

use crate::compare::render::{accounting_lines, conclusion_sentence};
use crate::compare::{Comparison, GateResult, Pair, RunEntry};

use super::page::outcome_code;
use super::strings::StringTable;

pub fn compare_data(
    c: &Comparison,
    gate: &GateResult,
    title: &str,
    generated_at: DateTime<Utc>,
) -> Value {
    let mut strings = StringTable::default();
    let pairs: Vec<Value> = c.pairs.iter().map(|p| pair_json(p, &mut strings)).collect();
    let only_a: Vec<Value> = c
        .only_in_a
        .iter()
        .map(|r| run_json(r, &mut strings))
        .collect();
    let only_b: Vec<Value> = c
        .only_in_b
        .iter()
        .map(|r| run_json(r, &mut strings))
        .collect();
    json!({
        "kind": "compare",
        "title": title,
        "generatedAt": generated_at.to_rfc3339(),
        "toolVersion": env!("CARGO_PKG_VERSION"),
        "conclusion": c.conclusion,
        "sentence": conclusion_sentence(c),
        "test": "McNemar's exact test (two-sided) over the pairs with a pass or fail verdict on both sides",
        "pValue": c.p_value,
        "passToFail": c.pass_to_fail,
        "failToPass": c.fail_to_pass,
        "errored": c.errored,
        "judgedPairs": c.judged_pairs,
        "power": c.power,
        "versions": c.versions,
        "sides": [side_json(&c.a), side_json(&c.b)],
        "accounting": accounting_lines(c),
        "warnings": c.warnings,
        "gate": gate,
        "pairs": pairs,
        "onlyA": only_a,
        "onlyB": only_b,
        "s": strings.into_strings(),
    })
}

/// A side's numbers, without the set-aside runs' full entries (their
/// paths and reasons are enough, and keep a large comparison small).
fn side_json(side: &crate::compare::SideSummary) -> Value {
    let aside = |list: &[crate::compare::SetAside]| {
        list.iter()
            .map(|a| json!([a.run.path.display().to_string(), a.reason]))
            .collect::<Vec<_>>()
    };
    json!({
        "label": side.label,
        "source": side.source,
        "versions": side.versions,
        "runs": side.runs,
        "judged": side.judged,
        "passed": side.passed,
        "passRate": side.pass_rate,
        "passRateInterval": side.pass_rate_interval,
        "inputTokens": side.input_tokens,
        "outputTokens": side.output_tokens,
        "latencyMs": side.latency_ms,
        "cacheReadShare": side.cache_read_share,
        "offlineRuns": side.offline_runs,
        "superseded": aside(&side.superseded),
        "notSelected": aside(&side.not_selected),
        "replays": aside(&side.replays),
        "unreadable": side.unreadable.iter()
            .map(|u| json!([u.path.display().to_string(), u.error]))
            .collect::<Vec<_>>(),
    })
}

fn pair_json(pair: &Pair, s: &mut StringTable) -> Value {
    let diff = if pair.answer_changed {
        let deadline = std::time::Instant::now() + WORD_DIFF_TIME;
        word_segments(&pair.a.answer, &pair.b.answer, deadline)
            .into_iter()
            .map(|(tag, text)| json!([tag, s.id(&text)]))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "ver": s.id(&pair.version),
        "claim": s.id(&pair.claim),
        "case": s.id(&pair.case),
        "n": pair.sample,
        "ch": pair.change,
        "ac": pair.answer_changed,
        "tc": pair.tools_changed,
        "a": run_json(&pair.a, s),
        "b": run_json(&pair.b, s),
        "diff": diff,
    })
}

fn run_json(run: &RunEntry, s: &mut StringTable) -> Value {
    let verdict = run.verdict.as_ref();
    json!({
        "ver": s.id(run.version()),
        "claim": s.id(&run.claim),
        "case": s.id(&run.case),
        "n": run.sample,
        "o": outcome_code(verdict.map(|v| v.outcome)),
        "st": s.id(&run.status),
        "f": verdict.map_or_else(Vec::new, |v| v.failures.iter().map(|f| s.id(f)).collect()),
        "tools": run.tools.iter().map(|t| s.id(t)).collect::<Vec<_>>(),
        "u": [run.usage.input_tokens, run.usage.output_tokens, run.usage.cache_read_tokens],
        "ms": run.latency_ms,
        "p": s.id(&run.path.display().to_string()),
        "pv": s.id(&run.provider),
        "a": s.id(&run.answer),
    })
}

/// How long one word diff may search for the smallest one: Myers' diff of
/// two long, unlike answers is quadratic (200,000 characters a side took
/// 16–37 s of CPU, issue 61). Past it the rest is said as replaced: still
/// both answers exactly, less finely.
pub const WORD_DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// The answers' word-level diff as runs of (tag, text): 0 unchanged,
/// -1 only in A, 1 only in B. Neighbouring words of one tag are joined.
/// Searched until `deadline` (`similar`'s), then coarser.
pub fn word_segments(old: &str, new: &str, deadline: std::time::Instant) -> Vec<(i8, String)> {
    let diff = TextDiff::configure()
        .deadline(deadline)
        .diff_words(old, new);
    let mut segments: Vec<(i8, String)> = Vec::new();
    for change in diff.iter_all_changes() {
        let tag = match change.tag() {
            ChangeTag::Equal => 0,
            ChangeTag::Delete => -1,
            ChangeTag::Insert => 1,
        };
        match segments.last_mut() {
            Some((last, text)) if *last == tag => text.push_str(change.value()),
            _ => segments.push((tag, change.value().to_string())),
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_rebuild_both_answers() {
        let (a, b) = (
            "The excess is £350 today.",
            "The excess is £500 today, <b>.",
        );
        let segments = word_segments(a, b, std::time::Instant::now() + WORD_DIFF_TIME);
        let side = |keep: i8| -> String {
            segments
                .iter()
                .filter(|(tag, _)| *tag == 0 || *tag == keep)
                .map(|(_, text)| text.as_str())
                .collect()
        };
        assert_eq!(side(-1), a);
        assert_eq!(side(1), b);
        assert!(
            segments
                .iter()
                .any(|(tag, text)| *tag == 1 && text.contains("£500"))
        );
    }

    /// Issue 61: the word diff had no time bound. With its deadline
    /// passed, the search stops: what is left is said as replaced (no
    /// word in common found inside it), and both answers still rebuild.
    #[test]
    fn a_passed_deadline_stops_the_search_and_keeps_both_answers() {
        let a: String = (0..400).map(|i| format!("w{} ", i % 7)).collect();
        let b: String = (0..400).map(|i| format!("w{} ", (i * 3) % 7)).collect();
        let a = format!("same start {a}same end");
        let b = format!("same start {b}same end");
        let side = |segments: &[(i8, String)], keep: i8| -> String {
            segments
                .iter()
                .filter(|(tag, _)| *tag == 0 || *tag == keep)
                .map(|(_, text)| text.as_str())
                .collect()
        };
        let unhurried = word_segments(&a, &b, std::time::Instant::now() + WORD_DIFF_TIME * 60);
        let stopped = word_segments(&a, &b, std::time::Instant::now());
        for segments in [&unhurried, &stopped] {
            assert_eq!(side(segments, -1), a);
            assert_eq!(side(segments, 1), b);
        }
        let equal =
            |segments: &[(i8, String)]| segments.iter().filter(|(tag, _)| *tag == 0).count();
        assert!(equal(&unhurried) > 10, "{unhurried:?}");
        // The common start and end only (prefix and suffix are found
        // before any search).
        assert!(equal(&stopped) <= 2, "{stopped:?}");
    }
}
