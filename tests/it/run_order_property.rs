//! `--max-cost` runs variants in turn (round-robin): the same turns as the
//! matrix order, each with its own index (so shards and `--resume` keep
//! their turns), only reordered. The oracle is the matrix order itself.

use crate::support;

use std::collections::BTreeSet;

use proptest::prelude::*;

use promptlab::eval::{EvalPlan, Selection, Shard, TurnSpec};

const CLAIMS: [&str; 3] = ["CLM-HH-0001", "CLM-MTR-0002", "CLM-PL-0005"];

fn plan(
    variants: usize,
    cases: usize,
    claims: usize,
    repeats: u32,
    selection: Selection,
) -> EvalPlan {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!(
        "name: order\nclaims: {{ids: [{}]}}\nrepeats: {repeats}\nvariants:\n",
        CLAIMS[..claims].join(", ")
    );
    for v in 0..variants {
        text.push_str(&format!(
            "  - name: v{v}\n    prompts: {{system.base: Variant {v}.}}\n"
        ));
    }
    text.push_str("cases:\n");
    for c in 0..cases {
        text.push_str(&format!("  - name: c{c}\n    message: Question {c}?\n"));
    }
    support::plans::plan_of(dir.path(), &text, selection)
}

fn key(spec: &TurnSpec) -> (usize, usize, usize, String, u32) {
    (
        spec.index,
        spec.variant,
        spec.case,
        spec.claim_id.clone(),
        spec.sample,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn round_robin_runs_the_same_turns_with_the_same_indexes(
        variants in 1usize..4,
        cases in 1usize..4,
        claims in 1usize..4,
        repeats in 1u32..3,
        shard in proptest::option::of((1usize..5).prop_flat_map(|n| (1..=n, Just(n)))),
        only_case in proptest::option::of(0usize..3),
        done in proptest::collection::btree_set(0usize..60, 0..5),
    ) {
        let selection = Selection {
            cases: only_case.map(|c| vec![format!("c{c}")]).unwrap_or_default(),
            claims: Vec::new(),
            shard: shard.map(|(index, count)| Shard { index, count }),
        };
        let mut plan = plan(variants, cases, claims, repeats, selection);
        plan.done = done.into_iter().collect();
        let matrix_order: Vec<TurnSpec> = plan.to_run().collect();
        let round_robin: Vec<TurnSpec> = plan.to_run_round_robin().collect();
        let expected: BTreeSet<_> = matrix_order.iter().map(key).collect();
        let got: BTreeSet<_> = round_robin.iter().map(key).collect();
        prop_assert_eq!(round_robin.len(), matrix_order.len());
        prop_assert_eq!(got, expected);
        // In turn: every variant's k-th turn of the matrix before any
        // variant's (k+1)-th, i.e. the offset within a variant never falls.
        let per_variant = plan.matrix.planned / variants;
        let offsets: Vec<usize> = round_robin
            .iter()
            .map(|spec| spec.index - spec.variant * per_variant)
            .collect();
        prop_assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{:?}", offsets);
    }
}
