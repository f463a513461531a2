//! Per-variant numbers of a report, computed from the recorded turns by the
//! same rules as `eval`'s summary (`eval::report::summarize`): the pass rate
//! over the turns with a verdict (every turn of an eval variant; chat turns,
//! which have none, are their own `chat · <fingerprint>` sections with no
//! pass rate) with its 95% Wilson interval, errors apart, tokens summed,
//! the cache-read share, and latency at p50/p95 (nearest rank) over the turns
//! that did not error — so a report of an eval's runs shows exactly the
//! numbers of `eval --format ndjson`.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::runs::record::Outcome;
use crate::stats::{percentile, wilson_interval};

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
    match turn.outcome {
        Some(outcome) => outcome == Outcome::Error,
        None => turn.status != "done",
    }
}

fn stats_of(version: &str, mine: &[&ReportTurn]) -> VariantStats {
    let count = |outcome| mine.iter().filter(|t| t.outcome == Some(outcome)).count();
    let sum = |f: fn(&ReportTurn) -> u64| mine.iter().map(|t| f(t)).sum::<u64>();
    let input = sum(|t| t.usage.input_tokens);
    let cache = sum(|t| t.usage.cache_read_tokens);
    let mut latencies: Vec<u64> = mine
        .iter()
        .filter(|t| !is_error(t))
        .filter_map(|t| t.latency_ms)
        .collect();
    latencies.sort_unstable();
    let judged = mine.iter().filter(|t| t.outcome.is_some()).count();
    let passed = count(Outcome::Pass);
    let fingerprints: BTreeSet<String> = mine.iter().map(|t| t.fingerprint.clone()).collect();
    VariantStats {
        variant: version.to_string(),
        fingerprints: fingerprints.into_iter().collect(),
        turns: mine.len(),
        judged,
        passed,
        failed: count(Outcome::Fail),
        errors: mine.iter().filter(|t| is_error(t)).count(),
        pass_rate: (judged > 0).then(|| passed as f64 / judged as f64),
        pass_rate_interval: if judged > 0 {
            wilson_interval(passed, judged)
        } else {
            None
        },
        input_tokens: input,
        output_tokens: sum(|t| t.usage.output_tokens),
        cache_read_tokens: cache,
        cache_read_share: if input == 0 {
            0.0
        } else {
            cache as f64 / input as f64
        },
        latency_p50_ms: percentile(&latencies, 50),
        latency_p95_ms: percentile(&latencies, 95),
        offline: mine
            .iter()
            .filter(|t| crate::compare::set::OFFLINE_PROVIDERS.contains(&t.provider.as_str()))
            .count(),
    }
}
