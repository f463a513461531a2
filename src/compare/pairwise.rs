//! `compare A B --judge CRITERION`: for each paired turn, a judge model says
//! which answer better meets the criterion — asked twice, A shown first and
//! then B shown first, to cancel position bias. A side wins only when both
//! orders agree; anything else is a tie. Wins and losses are tested with a
//! two-sided sign test; a pair the judge could not judge is counted and
//! named, never taken for a tie.

use futures_util::StreamExt;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{Comparison, Pair, SIGNIFICANCE};
use crate::event::Usage;
use crate::judge::{Judge, JudgeSpend, PairwiseVerdict, Preference};
use crate::runs::evidence::evidence_of;
use crate::runs::read_run_log;
use crate::stats::mcnemar_exact;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairWinner {
    A,
    B,
    Tie,
    /// The judge failed in at least one order.
    Error,
    /// Not put to the judge: a side did not finish.
    NotJudged,
}

/// One pair's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairJudgement {
    pub winner: PairWinner,
    /// A shown first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_first: Option<PairwiseVerdict>,
    /// B shown first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_first: Option<PairwiseVerdict>,
    /// Why there was no judge call, or why the orders disagreed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairwiseConclusion {
    /// B wins significantly more often (sign test, p < 0.05).
    Better,
    Worse,
    NoSignificantDifference,
    /// No pair had a winner or a tie from the judge.
    NothingJudged,
}

/// Wins, losses and ties of one version pair (or of all).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairwiseTally {
    /// The version pair (`default`, `a ↔ b`), or `all`.
    pub version: String,
    pub b_wins: usize,
    pub a_wins: usize,
    pub ties: usize,
    /// Pairs the judge failed on.
    pub errors: usize,
    /// Pairs not put to the judge (a side did not finish).
    pub not_judged: usize,
    /// Two-sided exact sign test over wins and losses; none without any.
    pub p_value: Option<f64>,
    pub conclusion: PairwiseConclusion,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairwiseSummary {
    pub criterion: String,
    pub judge_model: String,
    pub overall: PairwiseTally,
    /// Per version pair, when there are several.
    pub by_version: Vec<PairwiseTally>,
    /// Judge answers used (cache hits included).
    pub judge_calls: usize,
    pub judge_cached: usize,
    /// Tokens of the judge calls made now.
    pub judge_usage: Usage,
    /// What they cost in USD; absent when the judge model has no price.
    pub judge_cost_usd: Option<f64>,
}

/// Puts every pair of `c` to `judge`, `concurrency` pairs at a time, and
/// adds the judgements and their tally to `c`.
pub async fn judge_pairs(
    c: &mut Comparison,
    judge: &Judge,
    criterion: &str,
    concurrency: usize,
    cancel: &CancellationToken,
) {
    let jobs = c.pairs.iter().enumerate().map(|(index, pair)| async move {
        (index, judge_pair(pair, judge, criterion, cancel).await)
    });
    let judged: Vec<(usize, PairJudgement)> = futures_util::stream::iter(jobs)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (index, judgement) in judged {
        c.pairs[index].judged = Some(judgement);
    }
    c.pairwise = Some(summarize(c, criterion, &judge.settings().model));
}

async fn judge_pair(
    pair: &Pair,
    judge: &Judge,
    criterion: &str,
    cancel: &CancellationToken,
) -> PairJudgement {
    let not_judged = |winner, note: &str| PairJudgement {
        winner,
        a_first: None,
        b_first: None,
        note: Some(note.to_string()),
    };
    if pair.a.status != "done" || pair.b.status != "done" {
        return not_judged(
            PairWinner::NotJudged,
            "a side did not finish: nothing to judge",
        );
    }
    if pair.a.answer == pair.b.answer && pair.a.tools == pair.b.tools {
        return not_judged(PairWinner::Tie, "the same answer and tools: no judge call");
    }
    let (a, b) = match (read_run_log(&pair.a.path), read_run_log(&pair.b.path)) {
        (Ok(a), Ok(b)) => (evidence_of(&a), evidence_of(&b)),
        (Err(error), _) | (_, Err(error)) => {
            return not_judged(PairWinner::Error, &format!("judge: {error}"));
        }
    };
    let (a_first, b_first) = futures_util::join!(
        judge.pairwise(criterion, &a, &b, cancel),
        judge.pairwise(criterion, &b, &a, cancel)
    );
    let (winner, note) = combine(&a_first, &b_first);
    PairJudgement {
        winner,
        a_first: Some(a_first),
        b_first: Some(b_first),
        note,
    }
}

/// A side wins when both orders prefer it; one order's error is an error.
fn combine(a_first: &PairwiseVerdict, b_first: &PairwiseVerdict) -> (PairWinner, Option<String>) {
    let side = |preference, a_is_first: bool| match (preference, a_is_first) {
        (Preference::First, true) | (Preference::Second, false) => PairWinner::A,
        (Preference::Second, true) | (Preference::First, false) => PairWinner::B,
        (Preference::Tie, _) => PairWinner::Tie,
    };
    match (a_first.preference, b_first.preference) {
        (Some(x), Some(y)) => {
            let (x, y) = (side(x, true), side(y, false));
            if x == y {
                (x, None)
            } else {
                let note = format!(
                    "the orders disagree ({} with A first, {} with B first): a tie",
                    name(x),
                    name(y)
                );
                (PairWinner::Tie, Some(note))
            }
        }
        _ => {
            let error = a_first.error.as_deref().or(b_first.error.as_deref());
            (PairWinner::Error, error.map(str::to_string))
        }
    }
}

fn name(winner: PairWinner) -> &'static str {
    match winner {
        PairWinner::A => "A preferred",
        PairWinner::B => "B preferred",
        PairWinner::Tie => "a tie",
        PairWinner::Error => "an error",
        PairWinner::NotJudged => "not judged",
    }
}

fn summarize(c: &Comparison, criterion: &str, model: &str) -> PairwiseSummary {
    let mut versions: Vec<&str> = c.pairs.iter().map(|p| p.version.as_str()).collect();
    versions.dedup();
    versions.sort_unstable();
    versions.dedup();
    let by_version = if versions.len() > 1 {
        versions
            .iter()
            .map(|version| tally(version, c.pairs.iter().filter(|p| p.version == *version)))
            .collect()
    } else {
        Vec::new()
    };
    let spend = JudgeSpend::of(
        c.pairs
            .iter()
            .filter_map(|p| p.judged.as_ref())
            .flat_map(|j| [&j.a_first, &j.b_first])
            .flatten()
            .filter_map(|verdict| verdict.call.as_ref()),
    );
    PairwiseSummary {
        criterion: criterion.to_string(),
        judge_model: model.to_string(),
        overall: tally("all", c.pairs.iter()),
        by_version,
        judge_calls: spend.calls,
        judge_cached: spend.cached,
        judge_usage: spend.usage,
        judge_cost_usd: spend.cost.usd(),
    }
}

fn tally<'a>(version: &str, pairs: impl Iterator<Item = &'a Pair>) -> PairwiseTally {
    let mut counts = [0usize; 5];
    for pair in pairs {
        let winner = pair
            .judged
            .as_ref()
            .map_or(PairWinner::NotJudged, |j| j.winner);
        counts[winner as usize] += 1;
    }
    let [a_wins, b_wins, ties, errors, not_judged] = counts;
    let p_value = (a_wins + b_wins > 0).then(|| mcnemar_exact(a_wins, b_wins));
    let conclusion = match p_value {
        _ if a_wins + b_wins + ties == 0 => PairwiseConclusion::NothingJudged,
        Some(p) if p < SIGNIFICANCE && b_wins > a_wins => PairwiseConclusion::Better,
        Some(p) if p < SIGNIFICANCE && a_wins > b_wins => PairwiseConclusion::Worse,
        _ => PairwiseConclusion::NoSignificantDifference,
    };
    PairwiseTally {
        version: version.to_string(),
        b_wins,
        a_wins,
        ties,
        errors,
        not_judged,
        p_value,
        conclusion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(preference: Option<Preference>) -> PairwiseVerdict {
        PairwiseVerdict {
            preference,
            reason: String::new(),
            error: preference
                .is_none()
                .then(|| "judge: the reply is not JSON".to_string()),
            call: None,
        }
    }

    #[test]
    fn a_win_needs_both_orders() {
        use Preference::{First, Second, Tie};
        // A first: "first" is A. B first: "second" is A.
        assert_eq!(
            combine(&said(Some(First)), &said(Some(Second))).0,
            PairWinner::A
        );
        assert_eq!(
            combine(&said(Some(Second)), &said(Some(First))).0,
            PairWinner::B
        );
        // Always the first shown: position bias, so a tie.
        let (winner, note) = combine(&said(Some(First)), &said(Some(First)));
        assert_eq!(winner, PairWinner::Tie);
        assert!(note.unwrap().contains("disagree"));
        assert_eq!(
            combine(&said(Some(Tie)), &said(Some(Second))).0,
            PairWinner::Tie
        );
        assert_eq!(
            combine(&said(None), &said(Some(Second))).0,
            PairWinner::Error
        );
    }

    #[test]
    fn the_sign_test_needs_enough_wins() {
        let tally_of = |a, b| {
            let p = mcnemar_exact(a, b);
            (p < SIGNIFICANCE, p)
        };
        assert!(!tally_of(0, 5).0, "5 wins to none is p = 0.0625");
        assert!(tally_of(0, 6).0, "6 to none is p = 0.03125");
    }
}
