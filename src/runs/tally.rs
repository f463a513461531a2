//! One tally of turns' numbers, the one rule behind every per-variant
//! figure: `eval`'s summary (`eval::totals::gather`) and the HTML
//! report's (`report::summary`) both fold their turns through `tally`, so
//! they cannot disagree. The rules: the pass rate over the turns with a
//! verdict, with its 95% Wilson interval; errors apart; tokens summed by
//! `Usage`'s one sum rule (saturating: a hand-edited log may hold any
//! count; a count any turn's server left out is unknown, never 0); the
//! cache-read share of input tokens (unknown with either); latency p50/p95 (nearest rank) over the turns that
//! neither errored nor had a model call answered from the cache (which takes
//! no time).

use crate::event::Usage;
use crate::runs::record::Outcome;
use crate::stats::{ValueCounts, wilson_interval};

/// What one turn contributes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TurnNumbers {
    /// Its verdict; `None` for a chat turn.
    pub outcome: Option<Outcome>,
    /// It errored, was cancelled or never finished.
    pub errored: bool,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    /// A model call was answered from the model-call cache.
    pub cached: bool,
}

/// The numbers of a set of turns.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub turns: usize,
    /// Turns with a verdict.
    pub judged: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// passed / judged; `None` without a verdict.
    pub pass_rate: Option<f64>,
    pub pass_rate_interval: Option<(f64, f64)>,
    /// The turns' tokens, and the calls whose server left some out
    /// (`inputTokens`, …, `usageUnreported`, inline).
    #[serde(flatten)]
    pub usage: Usage,
    /// `None` when input or cache-read tokens are unknown.
    pub cache_read_share: Option<f64>,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
}

pub fn tally(turns: impl IntoIterator<Item = TurnNumbers>) -> Tally {
    let mut builder = TallyBuilder::default();
    for turn in turns {
        builder.add(turn);
    }
    builder.finish()
}

/// `tally` one turn at a time, for a reader that streams its turns (the
/// end of an eval run reads them from its spill file): the counts, and the
/// latencies for exact percentiles, counted by value — the only part that
/// grows, with the distinct latencies (whole milliseconds), not the turns.
#[derive(Debug, Clone, Default)]
pub struct TallyBuilder {
    total: Tally,
    latencies: ValueCounts,
    /// Counts only: no latency kept, none reported.
    counts_only: bool,
}

impl TallyBuilder {
    /// A builder that keeps no latency (its percentiles stay `None`), for
    /// figures that show none (the per-tag pass rates).
    pub fn counts_only() -> TallyBuilder {
        TallyBuilder {
            counts_only: true,
            ..TallyBuilder::default()
        }
    }

    pub fn add(&mut self, turn: TurnNumbers) {
        let total = &mut self.total;
        total.turns += 1;
        match turn.outcome {
            Some(Outcome::Pass) => total.passed += 1,
            Some(Outcome::Fail) => total.failed += 1,
            Some(Outcome::Error) | None => {}
        }
        total.judged += usize::from(turn.outcome.is_some());
        total.errors += usize::from(turn.errored);
        total.usage += turn.usage;
        if let Some(latency) = turn.latency_ms.filter(|_| !turn.errored && !turn.cached)
            && !self.counts_only
        {
            self.latencies.add(latency);
        }
    }

    pub fn finish(self) -> Tally {
        let (mut total, latencies) = (self.total, self.latencies);
        total.pass_rate = (total.judged > 0).then(|| total.passed as f64 / total.judged as f64);
        total.pass_rate_interval = wilson_interval(total.passed, total.judged);
        total.cache_read_share = total.usage.cache_read_share();
        total.latency_p50_ms = latencies.percentile(50);
        total.latency_p95_ms = latencies.percentile(95);
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(outcome: Option<Outcome>, latency: u64, cached: bool) -> TurnNumbers {
        TurnNumbers {
            outcome,
            errored: outcome == Some(Outcome::Error),
            usage: Usage::known(100, 10, 40),
            latency_ms: Some(latency),
            cached,
        }
    }

    #[test]
    fn errors_and_cached_turns_stay_out_of_latency_and_chat_turns_out_of_the_rate() {
        let numbers = tally([
            turn(Some(Outcome::Pass), 100, false),
            turn(Some(Outcome::Fail), 300, false),
            turn(Some(Outcome::Error), 9_000, false),
            turn(Some(Outcome::Pass), 1, true),
            turn(None, 200, false),
        ]);
        assert_eq!((numbers.turns, numbers.judged, numbers.passed), (5, 4, 2));
        assert_eq!((numbers.failed, numbers.errors), (1, 1));
        assert_eq!(numbers.pass_rate, Some(0.5));
        assert_eq!(numbers.latency_p50_ms, Some(200));
        assert_eq!(numbers.latency_p95_ms, Some(300));
        assert_eq!(numbers.usage.input_tokens, Some(500));
        assert!((numbers.cache_read_share.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(tally([turn(None, 5, false)]).pass_rate, None);
    }

    #[test]
    fn a_turn_whose_server_reported_no_usage_makes_the_counts_unknown_not_smaller() {
        let mut unreported = turn(Some(Outcome::Pass), 100, false);
        unreported.usage = Usage::UNREPORTED;
        let numbers = tally([turn(Some(Outcome::Pass), 100, false), unreported]);
        assert_eq!(numbers.usage.input_tokens, None);
        assert_eq!(numbers.usage.usage_unreported, 1);
        assert_eq!(numbers.cache_read_share, None);
        let json = serde_json::to_value(&numbers).unwrap();
        assert_eq!(json["inputTokens"], serde_json::Value::Null);
        assert_eq!(json["usageUnreported"], 1);
    }
}
