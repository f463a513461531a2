//! Pass rates per case tag (`eval --by tag`, the NDJSON summary's `tags`):
//! the headline of a safety review is a per-technique pass rate.

use std::collections::BTreeMap;

use serde::Serialize;

use super::plan::EvalPlan;
use super::runner::TurnResult;
use crate::runs::tally::tally;

/// One tag's numbers for one variant.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagSummary {
    pub tag: String,
    pub variant: String,
    /// Turns of cases with this tag that have a result.
    pub turns: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// passed / judged turns; absent when none was judged.
    pub pass_rate: Option<f64>,
    /// 95% Wilson interval of the pass rate.
    pub pass_rate_interval: Option<(f64, f64)>,
}

/// Every tag of the suite's cases, by variant then tag name; empty when no
/// case has a tag. The numbers are `runs::tally`'s, as the variants' are.
pub fn summarize_tags(plan: &EvalPlan, results: &[TurnResult]) -> Vec<TagSummary> {
    let cases = &plan.suite.suite.cases;
    let mut by: BTreeMap<(usize, &str), Vec<&TurnResult>> = BTreeMap::new();
    for result in results {
        for tag in &cases[result.spec.case].tags {
            by.entry((result.spec.variant, tag.as_str()))
                .or_default()
                .push(result);
        }
    }
    by.into_iter()
        .map(|((variant, tag), mine)| {
            let numbers = tally(mine.iter().map(|r| r.numbers()));
            TagSummary {
                tag: tag.to_string(),
                variant: plan.matrix.variants[variant].name.clone(),
                turns: numbers.turns,
                passed: numbers.passed,
                failed: numbers.failed,
                errors: numbers.errors,
                pass_rate: numbers.pass_rate,
                pass_rate_interval: numbers.pass_rate_interval,
            }
        })
        .collect()
}
