//! Small statistics for reports: percentiles, confidence intervals for a
//! pass rate, and McNemar's exact test for paired pass/fail changes.

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (f64::from(p) / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
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
}
