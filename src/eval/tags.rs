//! Pass rates per case tag (`eval --by tag`, the NDJSON summary's `tags`):
//! the headline of a safety review is a per-technique pass rate.

use std::collections::BTreeMap;

use serde::Serialize;

use super::plan::EvalPlan;
use super::runner::TurnResult;
use crate::runs::tally::TallyBuilder;

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

/// Every tag's numbers while the turns are read (in any order): a count
/// per variant × tag, nothing per turn.
#[derive(Default)]
pub struct TagTotals {
    by: BTreeMap<(usize, String), TallyBuilder>,
}

impl TagTotals {
    pub fn add(&mut self, plan: &EvalPlan, result: &TurnResult) {
        for tag in &plan.suite.suite.cases[result.spec.case].tags {
            self.by
                .entry((result.spec.variant, tag.clone()))
                .or_insert_with(TallyBuilder::counts_only)
                .add(result.numbers());
        }
    }

    /// Every tag of the suite's cases, by variant then tag name; empty when
    /// no case has a tag. The numbers are `runs::tally`'s, as the variants' are.
    pub fn finish(self, plan: &EvalPlan) -> Vec<TagSummary> {
        self.by
            .into_iter()
            .map(|((variant, tag), numbers)| {
                let numbers = numbers.finish();
                TagSummary {
                    tag,
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
}
