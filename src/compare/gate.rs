//! CI gates on a comparison: what makes `compare` exit 1, and every reason
//! it cannot judge. A gate that cannot judge fails rather than passing.

use serde::Serialize;

use super::pairwise::{PairwiseConclusion, PairwiseSummary};
use super::{Comparison, Conclusion, SIGNIFICANCE};

/// The gates a CI run asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gates {
    /// Fail when B is significantly worse (McNemar, p < 0.05).
    pub fail_if_worse: bool,
    /// Fail when more paired turns than this went from pass to fail
    /// (`--fail-on-regression` is 0).
    pub max_regressions: Option<usize>,
    /// Runs of A with no partner in B do not fail a gate.
    pub allow_unpaired: bool,
}

impl Gates {
    pub fn any(&self) -> bool {
        self.fail_if_worse || self.max_regressions.is_some()
    }
}

/// The gates' reading: why it fails, and what the reader should know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateResult {
    pub failures: Vec<String>,
    pub notes: Vec<String>,
}

impl GateResult {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Applies `gates` to `c`. Nothing paired always fails: there is nothing to
/// judge.
pub fn apply(c: &Comparison, gates: Gates) -> GateResult {
    let mut result = GateResult::default();
    if c.conclusion == Conclusion::NothingPaired {
        result
            .failures
            .push("no run of A pairs with a run of B: there is nothing to compare".into());
        return result;
    }
    let worth_saying = gates.fail_if_worse || c.power.discordant > 0;
    if let Some(note) = power_note(c).filter(|_| worth_saying) {
        if gates.fail_if_worse && c.pairwise.is_none() {
            result.notes.push(format!(
                "{note}: --fail-if-worse cannot fire on these pairs; --fail-on-regression gates on any pass→fail change"
            ));
        } else {
            result.notes.push(note);
        }
    }
    if !gates.any() {
        return result;
    }
    let pairwise_judged = c.pairwise.as_ref().is_some_and(|p| {
        p.overall.conclusion != super::pairwise::PairwiseConclusion::NothingJudged
    });
    if c.judged_pairs == 0 && !pairwise_judged {
        result.failures.push(
            "no paired turn has a verdict on both sides (chat turns, or only errors): the gates cannot judge"
                .into(),
        );
    }
    if let Some(allowed) = gates.max_regressions
        && c.pass_to_fail > allowed
    {
        result.failures.push(format!(
            "{} paired turn{} went from pass to fail ({allowed} allowed)",
            c.pass_to_fail,
            plural(c.pass_to_fail)
        ));
    }
    if gates.fail_if_worse && c.conclusion == Conclusion::Worse {
        result.failures.push(format!(
            "B is significantly worse than A (McNemar exact p = {:.4} < {SIGNIFICANCE})",
            c.p_value.unwrap_or(1.0)
        ));
    }
    if let Some(pairwise) = &c.pairwise {
        pairwise_gate(pairwise, gates, &mut result);
    }
    if c.errored > 0 {
        result.failures.push(format!(
            "{} paired turn{} ended in an error or a cancellation on one side: {} cannot be judged",
            c.errored,
            plural(c.errored),
            if c.errored == 1 { "it" } else { "they" }
        ));
    }
    let unpaired = c.only_in_a_total;
    if unpaired > 0 && !gates.allow_unpaired {
        result.failures.push(format!(
            "{unpaired} run{} of A {} no partner in B, so a regression there would go unseen (--allow-unpaired to accept)",
            plural(unpaired),
            if unpaired == 1 { "has" } else { "have" }
        ));
    }
    result
}

/// `--fail-if-worse` on the pairwise judge's sign test; pairs the judge
/// failed on fail any gate, since a loss among them would go unseen.
fn pairwise_gate(pairwise: &PairwiseSummary, gates: Gates, result: &mut GateResult) {
    let tally = &pairwise.overall;
    let decided = tally.a_wins + tally.b_wins;
    if gates.fail_if_worse && tally.conclusion == PairwiseConclusion::Worse {
        result.failures.push(format!(
            "the pairwise judge prefers A: A in {} pairs, B in {} (sign test p = {:.4} < {SIGNIFICANCE})",
            tally.a_wins,
            tally.b_wins,
            tally.p_value.unwrap_or(1.0)
        ));
    } else if gates.fail_if_worse && decided < 6 {
        result.notes.push(format!(
            "the pairwise judge decided {decided} pair{} (the rest are ties): the sign test needs at least 6 decided pairs to reach p < {SIGNIFICANCE}, so --fail-if-worse cannot fire on it",
            plural(decided)
        ));
    }
    if tally.errors > 0 {
        result.failures.push(format!(
            "the pairwise judge failed on {} pair{}: {} cannot be judged",
            tally.errors,
            plural(tally.errors),
            if tally.errors == 1 { "it" } else { "they" }
        ));
    }
}

/// Says when McNemar's test cannot reach significance on these pairs, and
/// how many more regressions it would take.
pub fn power_note(c: &Comparison) -> Option<String> {
    if c.judged_pairs == 0 || c.conclusion == Conclusion::Worse {
        return None;
    }
    let power = c.power;
    let more = power.more_regressions_needed?;
    if power.discordant >= power.discordant_needed && more > 0 && c.pass_to_fail > 0 {
        return Some(format!(
            "not significant: {} more pass→fail pair{} would be needed for McNemar's test to call B worse",
            more,
            plural(more)
        ));
    }
    (power.discordant < power.discordant_needed).then(|| {
        format!(
            "too few discordant pairs for McNemar's test: {} ({} pass→fail, {} fail→pass), and at least {} are needed to ever reach p < {SIGNIFICANCE}; {} more pass→fail pair{} would be needed to call B worse",
            power.discordant,
            c.pass_to_fail,
            c.fail_to_pass,
            power.discordant_needed,
            more,
            plural(more)
        )
    })
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
