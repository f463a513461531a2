//! Per-variant numbers of a report, computed from the recorded turns by the
//! one tally `eval`'s summary uses too (`runs::tally`, which states the
//! rules), so a report of an eval's runs shows exactly the numbers of `eval
//! --format ndjson`. Chat turns, which have no verdict, are their own
//! `chat · <fingerprint>` sections with no pass rate.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::runs::tally::tally;

use super::turn::ReportTurn;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantStats {
    pub variant: String,
    /// Every fingerprint its turns were recorded with (one, unless the
    /// variant's prompts changed between runs).
    pub fingerprints: Vec<String>,
    pub turns: usize,
    /// Turns with a recorded verdict (eval turns); chat turns have none.
    pub judged: usize,
    pub passed: usize,
    pub failed: usize,
    /// Turns that errored, were cancelled or never finished.
    pub errors: usize,
    /// passed / judged, when any turn has a verdict.
    pub pass_rate: Option<f64>,
    pub pass_rate_interval: Option<(f64, f64)>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_read_share: f64,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
    /// Runs made by a provider that does not call a model (script, replay).
    pub offline: usize,
}

/// One entry per version, in name order.
pub fn summarize(turns: &[ReportTurn]) -> Vec<VariantStats> {
    let versions: BTreeSet<&str> = turns.iter().map(|t| t.version.as_str()).collect();
    versions
        .into_iter()
        .map(|version| {
            let mine: Vec<&ReportTurn> = turns.iter().filter(|t| t.version == version).collect();
            stats_of(version, &mine)
        })
        .collect()
}

/// Whether a turn counts as an error: its verdict says so, or (for a chat
/// turn, which has no verdict) it did not end `done`.
pub fn is_error(turn: &ReportTurn) -> bool {
    turn.numbers.errored
}

fn stats_of(version: &str, mine: &[&ReportTurn]) -> VariantStats {
    let numbers = tally(mine.iter().map(|t| t.numbers));
    let fingerprints: BTreeSet<String> = mine.iter().map(|t| t.fingerprint.clone()).collect();
    VariantStats {
        variant: version.to_string(),
        fingerprints: fingerprints.into_iter().collect(),
        turns: numbers.turns,
        judged: numbers.judged,
        passed: numbers.passed,
        failed: numbers.failed,
        errors: numbers.errors,
        pass_rate: numbers.pass_rate,
        pass_rate_interval: numbers.pass_rate_interval,
        input_tokens: numbers.input_tokens,
        output_tokens: numbers.output_tokens,
        cache_read_tokens: numbers.cache_read_tokens,
        cache_read_share: numbers.cache_read_share,
        latency_p50_ms: numbers.latency_p50_ms,
        latency_p95_ms: numbers.latency_p95_ms,
        offline: mine
            .iter()
            .filter(|t| crate::compare::set::OFFLINE_PROVIDERS.contains(&t.provider.as_str()))
            .count(),
    }
}
