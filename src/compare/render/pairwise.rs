//! The pairwise judge's reading, as the lines every report shows.

use crate::compare::pairwise::{PairWinner, PairwiseConclusion, PairwiseTally};
use crate::compare::{Comparison, Pair};

/// The tally, overall and per version pair, and what the judge cost.
pub fn pairwise_lines(c: &Comparison) -> Vec<String> {
    let Some(pairwise) = &c.pairwise else {
        return Vec::new();
    };
    let mut lines = vec![format!(
        "pairwise judge ({}) on \"{}\": {}",
        pairwise.judge_model,
        crate::text::one_line(&pairwise.criterion, 100),
        tally_text(&pairwise.overall)
    )];
    for tally in &pairwise.by_version {
        lines.push(format!("  {}: {}", tally.version, tally_text(tally)));
    }
    lines.push(format!(
        "pairwise judge: each pair asked in both orders; {} answers used ({} asked now, {} from the cache), judge tokens {}, judge cost {} (apart from the chat's){}",
        pairwise.judge_calls,
        pairwise.judge_calls - pairwise.judge_cached,
        pairwise.judge_cached,
        pairwise.judge_usage.in_out(),
        crate::cost::Cost::from(pairwise.judge_cost_usd).display(),
        pairwise
            .judge_usage
            .unreported_note()
            .map(|note| format!("; judge {note}"))
            .unwrap_or_default()
    ));
    lines
}

fn tally_text(tally: &PairwiseTally) -> String {
    let mut text = format!(
        "B preferred in {}, A in {}, {} tie{}",
        tally.b_wins,
        tally.a_wins,
        tally.ties,
        if tally.ties == 1 { "" } else { "s" }
    );
    if tally.errors > 0 {
        text.push_str(&format!(", {} the judge failed on", tally.errors));
    }
    if tally.not_judged > 0 {
        text.push_str(&format!(", {} not judged", tally.not_judged));
    }
    let p = tally
        .p_value
        .map(|p| format!(" (sign test p = {p:.4})"))
        .unwrap_or_default();
    let reading = match tally.conclusion {
        PairwiseConclusion::Better => "B is better",
        PairwiseConclusion::Worse => "B is worse",
        PairwiseConclusion::NoSignificantDifference => "no significant difference",
        PairwiseConclusion::NothingJudged => "nothing judged",
    };
    format!("{text} → {reading}{p}")
}

/// A pair's judgement in one line, when it was judged.
pub fn judged_line(pair: &Pair) -> Option<String> {
    let judged = pair.judged.as_ref()?;
    let reason = [&judged.a_first, &judged.b_first]
        .into_iter()
        .flatten()
        .map(|v| v.reason.as_str())
        .find(|r| !r.is_empty())
        .unwrap_or_default();
    let what = match judged.winner {
        PairWinner::A => format!("A preferred in both orders: {reason}"),
        PairWinner::B => format!("B preferred in both orders: {reason}"),
        PairWinner::Tie => judged
            .note
            .clone()
            .unwrap_or_else(|| format!("a tie: {reason}")),
        PairWinner::Error | PairWinner::NotJudged => judged.note.clone().unwrap_or_default(),
    };
    Some(format!("judge: {}", crate::text::one_line(&what, 240)))
}
