//! Small statistics for reports: percentiles, confidence intervals for a
//! pass rate, and McNemar's exact test for paired pass/fail changes.

use std::collections::BTreeMap;

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    let rank = nearest_rank(sorted.len() as u64, p)?;
    Some(sorted[(rank - 1) as usize])
}

/// The 1-based rank of the `p`th percentile among `len` values (none of none).
pub fn nearest_rank(len: u64, p: u32) -> Option<u64> {
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
    let z = Z_95;
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

/// The standard normal's 97.5% quantile: the z of every 95% interval here
/// (statsmodels' `norm.isf(0.025)`).
pub const Z_95: f64 = 1.959_963_984_540_054;

/// Two raters' verdicts on the same items, pass/fail each: `[[both pass,
/// first pass, second fail], [first fail, second pass, both fail]]` — rows
/// the first rater (a person), columns the second (a judge).
pub type Agreement2x2 = [[u64; 2]; 2];

/// Cohen's kappa with its asymptotic standard error and 95% interval;
/// those two are undefined (`None`) when one rater gave every item one
/// class (a zero marginal: the variance collapses, and statsmodels says
/// nan).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kappa {
    pub kappa: f64,
    pub std_error: Option<f64>,
    pub interval: Option<(f64, f64)>,
}

/// Why kappa cannot be computed on a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoKappa {
    /// No items.
    Empty,
    /// Both raters gave one and the same class to every item: chance
    /// agreement is 1 and kappa is 0 ÷ 0.
    OneClass,
}

impl std::fmt::Display for NoKappa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoKappa::Empty => "no turn has both a judge verdict and a label",
            NoKappa::OneClass => {
                "every turn is in one class for both the labels and the judge, so agreement by \
                 chance is 1 and kappa is undefined; label turns of the other class"
            }
        })
    }
}

/// Cohen's (unweighted) kappa of a 2 × 2 table, with the asymptotic
/// standard error and interval (z = 1.96) that statsmodels'
/// `cohens_kappa` computes (its SAS-manual variance, not the one under
/// kappa = 0).
pub fn cohens_kappa(table: &Agreement2x2) -> Result<Kappa, NoKappa> {
    let n: u64 = table.iter().flatten().sum();
    if n == 0 {
        return Err(NoKappa::Empty);
    }
    let total = n as f64;
    let p = |i: usize, j: usize| table[i][j] as f64 / total;
    let row = |i: usize| p(i, 0) + p(i, 1);
    let col = |j: usize| p(0, j) + p(1, j);
    let observed = p(0, 0) + p(1, 1);
    let chance = row(0) * col(0) + row(1) * col(1);
    if chance >= 1.0 {
        return Err(NoKappa::OneClass);
    }
    let kappa = (observed - chance) / (1.0 - chance);
    let on_diagonal: f64 = (0..2)
        .map(|i| p(i, i) * (1.0 - (row(i) + col(i)) * (1.0 - kappa)).powi(2))
        .sum();
    let off_diagonal = (1.0 - kappa).powi(2)
        * (p(0, 1) * (col(0) + row(1)).powi(2) + p(1, 0) * (col(1) + row(0)).powi(2));
    let correction = (kappa - chance * (1.0 - kappa)).powi(2);
    let variance = (on_diagonal + off_diagonal - correction) / (1.0 - chance).powi(2) / total;
    let one_class = [row(0), row(1), col(0), col(1)].contains(&0.0);
    // Rounding can leave a perfect table's variance a hair under zero.
    let std_error = (!one_class).then(|| variance.max(0.0).sqrt());
    Ok(Kappa {
        kappa,
        std_error,
        interval: std_error.map(|se| (kappa - Z_95 * se, kappa + Z_95 * se)),
    })
}

/// How many more items, in the same proportions, would bring the 95%
/// interval's half-width under `target` (the standard error falls as the
/// square root of the count); 0 when it is there already.
/// `None` when the interval is undefined.
pub fn more_items_for_half_width(kappa: &Kappa, items: u64, target: f64) -> Option<u64> {
    let half = Z_95 * kappa.std_error?;
    if half < target || items == 0 {
        return Some(0);
    }
    let needed = (items as f64 * (half / target).powi(2)).floor() as u64 + 1;
    Some(needed.saturating_sub(items))
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
