//! The rules a comparison is folded by, one pair or one run at a time, so
//! that a comparison read into memory (folders of logs) and one streamed
//! from the index (two eval runs) count alike: a pair's verdict change and
//! rank, the pair counts, the worst N pairs kept, and a side's figures.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::event::Usage;
use crate::judge::JudgeSpend;
use crate::runs::record::Outcome;
use crate::stats::wilson_interval;

use super::set::RunEntry;
use super::{Distribution, SideSummary, VerdictChange};

/// How two verdicts compare: an error on either side cannot be judged.
pub fn change_of(a: Option<Outcome>, b: Option<Outcome>) -> VerdictChange {
    match (a, b) {
        (Some(Outcome::Error), Some(_)) | (Some(_), Some(Outcome::Error)) => VerdictChange::Errored,
        (Some(Outcome::Pass), Some(Outcome::Fail)) => VerdictChange::PassToFail,
        (Some(Outcome::Fail), Some(Outcome::Pass)) => VerdictChange::FailToPass,
        (Some(_), Some(_)) => VerdictChange::Same,
        _ => VerdictChange::NotComparable,
    }
}

/// A verdict, answer or tool change worth showing.
pub fn is_changed(change: VerdictChange, answer_or_tools_changed: bool) -> bool {
    answer_or_tools_changed
        || matches!(
            change,
            VerdictChange::PassToFail | VerdictChange::FailToPass | VerdictChange::Errored
        )
}

/// Worst first: pass→fail, errors, fail→pass, other changes, the rest.
pub fn rank(change: VerdictChange, answer_or_tools_changed: bool) -> u8 {
    match (change, answer_or_tools_changed) {
        (VerdictChange::PassToFail, _) => 0,
        (VerdictChange::Errored, _) => 1,
        (VerdictChange::FailToPass, _) => 2,
        (_, true) => 3,
        _ => 4,
    }
}

/// How many pairs there are of each kind, however few are listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairCounts {
    pub pairs: usize,
    pub changed: usize,
    pub pass_to_fail: usize,
    pub fail_to_pass: usize,
    pub same: usize,
    pub errored: usize,
    pub not_comparable: usize,
}

impl PairCounts {
    pub fn add(&mut self, change: VerdictChange, answer_or_tools_changed: bool) {
        self.pairs += 1;
        self.changed += usize::from(is_changed(change, answer_or_tools_changed));
        let slot = match change {
            VerdictChange::PassToFail => &mut self.pass_to_fail,
            VerdictChange::FailToPass => &mut self.fail_to_pass,
            VerdictChange::Same => &mut self.same,
            VerdictChange::Errored => &mut self.errored,
            VerdictChange::NotComparable => &mut self.not_comparable,
        };
        *slot += 1;
    }

    /// Pairs with a pass/fail verdict on both sides.
    pub fn judged(&self) -> usize {
        self.pass_to_fail + self.fail_to_pass + self.same
    }
}

/// The order the worst pairs are chosen in: pass→fail first, then errors,
/// fail→pass and other changes (`rank`); within a rank, the largest
/// latency increase, then the largest token increase (unknown last); ties
/// by version, claim, case and sample.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorstKey {
    pub rank: u8,
    pub latency_increase: Reverse<Option<i128>>,
    pub token_increase: Reverse<Option<i128>>,
    pub version: String,
    pub claim: String,
    pub case: String,
    pub sample: u32,
}

/// B's figure less A's; unknown when either is.
pub fn increase(a: Option<u64>, b: Option<u64>) -> Option<i128> {
    Some(i128::from(b?) - i128::from(a?))
}

/// Input plus output tokens; unknown when either is.
pub fn tokens(usage: &Usage) -> Option<u64> {
    usage.input_tokens?.checked_add(usage.output_tokens?)
}

struct Ranked<T> {
    key: WorstKey,
    item: T,
}

impl<T> PartialEq for Ranked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Ranked<T> {}
impl<T> PartialOrd for Ranked<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Ranked<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// The `keep` worst of the items offered, by `WorstKey`: memory for
/// `keep` of them, however many are offered.
pub struct Worst<T> {
    keep: usize,
    heap: BinaryHeap<Ranked<T>>,
}

impl<T> Worst<T> {
    pub fn new(keep: usize) -> Worst<T> {
        Worst {
            keep,
            heap: BinaryHeap::new(),
        }
    }

    pub fn offer(&mut self, key: WorstKey, item: T) {
        if self.keep == 0 {
            return;
        }
        if self.heap.len() == self.keep {
            match self.heap.peek() {
                Some(least_bad) if key < least_bad.key => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        self.heap.push(Ranked { key, item });
    }

    /// The kept items, worst first.
    pub fn into_sorted(self) -> Vec<(WorstKey, T)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| (r.key, r.item))
            .collect()
    }
}

/// The first `keep` items offered, and how many were.
#[derive(Debug, Clone)]
pub struct FirstN<T> {
    keep: usize,
    pub total: usize,
    pub first: Vec<T>,
}

impl<T> FirstN<T> {
    pub fn new(keep: usize) -> FirstN<T> {
        FirstN {
            keep,
            total: 0,
            first: Vec::new(),
        }
    }

    /// The same list and total, each item listed turned into another.
    pub fn map<U>(self, change: impl FnMut(T) -> U) -> FirstN<U> {
        FirstN {
            keep: self.keep,
            total: self.total,
            first: self.first.into_iter().map(change).collect(),
        }
    }

    pub fn offer(&mut self, item: T) {
        self.total += 1;
        if self.first.len() < self.keep {
            self.first.push(item);
        }
    }
}

/// A run that did not end `done`, or whose verdict is an error (the index
/// selects the others by `index::pairs`' `FINISHED`).
pub fn errored(run: &RunEntry) -> bool {
    run.status != "done"
        || run
            .verdict
            .as_ref()
            .is_some_and(|v| v.outcome == Outcome::Error)
}

/// A side's counts, folded one run at a time; its distributions are given
/// at the end (from the runs in memory, or from SQL).
#[derive(Debug)]
pub struct SideFold {
    runs: usize,
    judged: usize,
    passed: usize,
    errored: usize,
    usage: Usage,
    judge: JudgeSpend,
    cost: crate::cost::Cost,
    cached: usize,
    offline: usize,
    models: BTreeSet<String>,
    versions: BTreeSet<String>,
}

/// A side's token and latency distributions.
#[derive(Debug, Clone, Copy, Default)]
pub struct SideDistributions {
    pub input_tokens: Distribution,
    pub output_tokens: Distribution,
    pub latency_ms: Distribution,
}

impl Default for SideFold {
    fn default() -> SideFold {
        SideFold::new()
    }
}

impl SideFold {
    pub fn new() -> SideFold {
        SideFold {
            runs: 0,
            judged: 0,
            passed: 0,
            errored: 0,
            usage: Usage::default(),
            judge: JudgeSpend::default(),
            cost: crate::cost::Cost::ZERO,
            cached: 0,
            offline: 0,
            models: BTreeSet::new(),
            versions: BTreeSet::new(),
        }
    }

    /// Adds a compared run and the judge calls behind its verdict.
    pub fn add(&mut self, run: &RunEntry, judge: JudgeSpend) {
        self.runs += 1;
        if let Some(verdict) = &run.verdict {
            self.judged += 1;
            self.passed += usize::from(verdict.outcome == Outcome::Pass);
        }
        self.errored += usize::from(errored(run));
        self.usage += run.usage;
        self.judge += judge;
        self.cost = self.cost + crate::cost::Cost::from(run.cost_usd);
        self.cached += usize::from(run.cached_calls > 0);
        self.offline += usize::from(run.is_offline());
        if !self.models.contains(&run.model) {
            self.models.insert(run.model.clone());
        }
        if !self.versions.contains(run.version()) {
            self.versions.insert(run.version().to_string());
        }
    }

    /// The side's summary; what it set aside is filled in by its caller.
    pub fn finish(self, label: &str, source: &str, spread: SideDistributions) -> SideSummary {
        SideSummary {
            label: label.to_string(),
            source: source.to_string(),
            versions: self.versions.into_iter().collect(),
            models: self.models.into_iter().collect(),
            runs: self.runs,
            judged: self.judged,
            passed: self.passed,
            pass_rate: (self.judged > 0).then(|| self.passed as f64 / self.judged as f64),
            pass_rate_interval: wilson_interval(self.passed, self.judged),
            errored_runs: self.errored,
            input_tokens: spread.input_tokens,
            output_tokens: spread.output_tokens,
            latency_ms: spread.latency_ms,
            cost_usd: self.cost.usd(),
            cached_runs: self.cached,
            cache_read_share: self.usage.cache_read_share(),
            usage: self.usage,
            offline_runs: self.offline,
            judge_calls: self.judge.calls,
            judge_usage: self.judge.usage,
            superseded: Vec::new(),
            not_selected: Vec::new(),
            replays: Vec::new(),
            unreadable: Vec::new(),
            set_aside_totals: super::SetAsideTotals::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(rank: u8, latency: Option<i8>, tokens: Option<i8>, case: u8) -> WorstKey {
        WorstKey {
            rank,
            latency_increase: Reverse(latency.map(i128::from)),
            token_increase: Reverse(tokens.map(i128::from)),
            version: "v".into(),
            claim: "c".into(),
            case: format!("{case:03}"),
            sample: 1,
        }
    }

    #[test]
    fn the_worst_are_regressions_then_errors_then_the_largest_increases() {
        let mut worst = Worst::new(4);
        worst.offer(key(4, Some(90), None, 1), "slower");
        worst.offer(key(4, Some(5), Some(50), 2), "more tokens");
        worst.offer(key(4, None, None, 3), "unknown");
        worst.offer(key(1, Some(0), None, 4), "error");
        worst.offer(key(0, Some(-3), None, 5), "pass to fail");
        worst.offer(key(4, Some(90), Some(1), 0), "slower, key first");
        let kept: Vec<&str> = worst.into_sorted().into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            kept,
            ["pass to fail", "error", "slower, key first", "slower"]
        );
    }

    proptest! {
        /// Whatever is offered, in whatever order, the kept are the N
        /// least keys, worst first: what sorting them all and taking N gives.
        #[test]
        fn the_kept_are_the_n_worst_of_all_offered(
            offered in proptest::collection::vec(
                (0u8..5, proptest::option::of(any::<i8>()), proptest::option::of(any::<i8>()), any::<u8>()),
                0..60,
            ),
            keep in 0usize..12,
        ) {
            let keys: Vec<WorstKey> = offered
                .iter()
                .map(|&(rank, latency, tokens, case)| key(rank, latency, tokens, case))
                .collect();
            let mut worst = Worst::new(keep);
            for key in &keys {
                worst.offer(key.clone(), ());
            }
            let kept: Vec<WorstKey> = worst.into_sorted().into_iter().map(|(k, ())| k).collect();
            let mut all = keys;
            all.sort();
            all.truncate(keep);
            prop_assert_eq!(kept, all);
        }

        #[test]
        fn first_n_counts_every_item_and_keeps_the_first(items in proptest::collection::vec(any::<u16>(), 0..50), keep in 0usize..10) {
            let mut first = FirstN::new(keep);
            items.iter().for_each(|&i| first.offer(i));
            prop_assert_eq!(first.total, items.len());
            prop_assert_eq!(&first.first[..], &items[..keep.min(items.len())]);
        }
    }
}
