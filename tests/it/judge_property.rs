//! Never-panics properties of the judge's outside input: its replies, the
//! judge script, and the evidence it is shown.

use promptlab::judge::evidence::{MAX_ANSWER_CHARS, render_pairwise, render_rubric};
use promptlab::judge::reply::{parse_pairwise, parse_rubric};
use promptlab::judge::script::ScriptJudge;
use promptlab::judge::{Evidence, ToolEvidence};
use proptest::prelude::*;
use serde_json::json;

/// Replies near the expected shape: JSON objects with odd fields and values.
fn reply() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just(json!(true)),
        Just(json!(null)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,20}".prop_map(|s| json!(s)),
        Just(json!(["first"])),
    ];
    let field = prop_oneof![
        Just("pass"),
        Just("score"),
        Just("reason"),
        Just("winner"),
        Just("x")
    ];
    prop_oneof![
        ".{0,200}",
        prop::collection::vec((field, value), 0..5).prop_map(|fields| {
            let object: serde_json::Map<String, serde_json::Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            serde_json::Value::Object(object).to_string()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn replies_parse_or_say_why_briefly(raw in reply()) {
        for error in [parse_rubric(&raw).err(), parse_pairwise(&raw).err()].into_iter().flatten() {
            prop_assert!(error.to_string().chars().count() < 600, "{error}");
        }
        if let Ok(verdict) = parse_rubric(&raw) {
            prop_assert!(verdict.score.is_none_or(|s| (0.0..=1.0).contains(&s)));
        }
    }

    #[test]
    fn judge_scripts_load_or_say_why(text in ".{0,300}", yaml in "(rubric|pairwise|reply|raw|prefer|criterion|: |\n  - |\\{|\\}|\\[|\\]|pass|true|x){0,30}") {
        let dir = tempfile::tempdir().unwrap();
        for body in [&text, &yaml] {
            let path = dir.path().join("judge.yaml");
            std::fs::write(&path, body).unwrap();
            if let Err(error) = ScriptJudge::load(&path) {
                prop_assert!(error.to_string().contains("judge script"), "{error}");
            }
        }
    }

    #[test]
    fn evidence_renders_bounded_whatever_it_holds(answer in ".{0,2000}", result in ".{0,2000}", tools in 0usize..40) {
        let evidence = Evidence {
            message: answer.clone(),
            answer: answer.repeat(30),
            tools: (0..tools).map(|i| ToolEvidence {
                name: format!("tool{i}"),
                args: json!({"q": answer}),
                result: Some((i % 2 == 0, result.repeat(5))),
            }).collect(),
        };
        let rubric = render_rubric(&answer, &evidence);
        let pairwise = render_pairwise(&answer, &evidence, &evidence);
        // Message, criterion and answer are each cut; tool results share one budget.
        let bound = 3 * (MAX_ANSWER_CHARS + 100) + 24_000 + tools * 1_300 + 2_000;
        prop_assert!(rubric.chars().count() < bound);
        prop_assert!(pairwise.chars().count() < 2 * bound);
        prop_assert_eq!(rubric.matches("</answer>").count(), 1);
    }
}
