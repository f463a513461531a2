//! Small statistics for reports: percentiles, confidence intervals for a
//! pass rate, and McNemar's exact test for paired pass/fail changes.

use std::collections::BTreeMap;

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    let rank = nearest_rank(sorted.len() as u64, p)?;
    Some(sorted[(rank - 1) as usize])
}

/// The 1-based rank of the `p`th percentile among `len` values (none of none).
fn nearest_rank(len: u64, p: u32) -> Option<u64> {
    if len == 0 {
        return None;
    }
    let rank = (f64::from(p) / 100.0 * len as f64).ceil() as u64;
    Some(rank.clamp(1, len))
}

/// Values counted by value, for exact nearest-rank percentiles in memory
/// that grows with the distinct values rather than with how many there
/// are: a turn's latency is whole milliseconds, so a million turns that
/// each took under a minute keep at most 60,000 counts, where a list of
/// them took 8 MB (issue #31).
#[derive(Debug, Clone, Default)]
pub struct ValueCounts {
    by_value: BTreeMap<u64, u64>,
}

impl ValueCounts {
    pub fn add(&mut self, value: u64) {
        *self.by_value.entry(value).or_insert(0) += 1;
    }

    /// `percentile` of the values added, in any order.
    pub fn percentile(&self, p: u32) -> Option<u64> {
        let rank = nearest_rank(self.by_value.values().sum(), p)?;
        let mut counted = 0;
        self.by_value.iter().find_map(|(&value, &count)| {
            counted += count;
            (counted >= rank).then_some(value)
        })
    }
}

/// The 95% Wilson score interval for `passed` of `total`.
pub fn wilson_interval(passed: usize, total: usize) -> Option<(f64, f64)> {
    if total == 0 {
        return None;
    }
    let z = 1.959_963_984_540_054_f64;
    let n = total as f64;
    let p = passed as f64 / n;
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denominator;
    // At the extremes the bound is exactly 0 or 1; say so rather than
    // leave floating-point dust (2.8e-17) in reports.
    let low = if passed == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if passed == total {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((low, high))
}

/// McNemar's exact test: the two-sided p-value that `b` pass→fail and `c`
/// fail→pass changes among paired turns arose by chance (binomial, p = ½).
/// 1.0 when there are no discordant pairs.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let ln_factorial: Vec<f64> = std::iter::once(0.0)
        .chain((1..=n).scan(0.0, |sum, i| {
            *sum += (i as f64).ln();
            Some(*sum)
        }))
        .collect();
    let half_n = n as f64 * 0.5f64.ln();
    let tail: f64 = (0..=b.min(c))
        .map(|i| (ln_factorial[n] - ln_factorial[i] - ln_factorial[n - i] + half_n).exp())
        .sum();
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_matches_the_binomial_by_hand() {
        // 6 discordant pairs all one way: 2 × (1/2)^6.
        assert!((mcnemar_exact(6, 0) - 0.03125).abs() < 1e-12);
        assert!((mcnemar_exact(0, 6) - 0.03125).abs() < 1e-12);
        // 5 vs 1: 2 × (1 + 6) / 64.
        assert!((mcnemar_exact(5, 1) - 14.0 / 64.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert!(mcnemar_exact(600, 500) < 0.01);
    }

    #[test]
    fn wilson_intervals_are_sensible() {
        let (low, high) = wilson_interval(8, 10).unwrap();
        assert!(
            (low - 0.4902).abs() < 1e-3 && (high - 0.9433).abs() < 1e-3,
            "{low} {high}"
        );
        assert_eq!(wilson_interval(0, 0), None);
        let (low, _) = wilson_interval(0, 5).unwrap();
        assert_eq!(low, 0.0);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&values, 50), Some(50));
        assert_eq!(percentile(&values, 95), Some(95));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[1, 2, 3, 4], 50), Some(2));
    }

    /// The worked example of the nearest-rank method in Wikipedia's
    /// "Percentile" article: the percentiles of 15, 20, 35, 40, 50.
    #[test]
    fn counted_values_give_the_textbook_nearest_ranks() {
        let mut counts = ValueCounts::default();
        for value in [50, 15, 40, 20, 35] {
            counts.add(value);
        }
        let at = |p| counts.percentile(p);
        assert_eq!(
            (at(5), at(30), at(40), at(50), at(100)),
            (Some(15), Some(20), Some(20), Some(35), Some(50))
        );
        assert_eq!(ValueCounts::default().percentile(50), None);
    }

    proptest::proptest! {
        /// Counting by value picks what indexing the sorted list picks,
        /// repeats and all.
        #[test]
        fn counted_values_match_the_sorted_list(
            values in proptest::collection::vec(proptest::prop_oneof![0..5u64, proptest::num::u64::ANY], 0..300),
            p in 0..=100u32,
        ) {
            let mut counts = ValueCounts::default();
            for &value in &values {
                counts.add(value);
            }
            let mut sorted = values;
            sorted.sort_unstable();
            proptest::prop_assert_eq!(counts.percentile(p), percentile(&sorted, p));
        }
    }
}
