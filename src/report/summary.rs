//! Per-variant numbers of a report, computed from the recorded turns by the
//! one tally `eval`'s summary uses too (`runs::tally`, which states the
//! rules), so a report of an eval's runs shows exactly the numbers of `eval
//! --format ndjson`. Chat turns, which have no verdict, are their own
//! `chat · <fingerprint>` sections with no pass rate.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::runs::tally::{Tally, tally};

use super::turn::ReportTurn;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantStats {
    pub variant: String,
    /// Every fingerprint its turns were recorded with (one, unless the
    /// variant's prompts changed between runs).
    pub fingerprints: Vec<String>,
    /// Turns, verdicts, tokens, latency: the one tally, its fields inline
    /// in the page's data (`turns`, `passRate`, …).
    #[serde(flatten)]
    pub numbers: Tally,
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
        numbers,
        offline: mine
            .iter()
            .filter(|t| crate::compare::set::OFFLINE_PROVIDERS.contains(&t.provider.as_str()))
            .count(),
    }
}
