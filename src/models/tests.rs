//! The model table's rules: the shipped tables load, levels fit, files are checked.

use super::*;
use ThinkingLevel::{High, Low, Medium, Minimal};

#[test]
fn the_shipped_table_loads_with_a_source_and_date_and_valid_rules() {
    let table = ModelTable::embedded();
    for (model, rules) in table.models() {
        assert!(
            !rules.source.is_empty() && !rules.date.is_empty(),
            "{model}"
        );
        rules.check().unwrap_or_else(|e| panic!("{model}: {e}"));
    }
    // Every priced model has rules.
    for (key, _) in crate::cost::PriceTable::embedded().models() {
        let model = key.split_once('/').map_or(key, |(_, model)| model);
        assert!(
            table.get(model).is_some(),
            "{model} is priced but has no rules"
        );
    }
}

#[test]
fn a_missing_level_goes_up_else_to_the_highest() {
    let table = ModelTable::embedded();
    let pro = |asked| table.fit("gemini-3-pro-preview", asked);
    assert_eq!(pro(Minimal).sent, Low);
    assert_eq!(pro(Medium).sent, High);
    assert_eq!(
        pro(Medium).note.as_deref(),
        Some("note: gemini-3-pro-preview takes low or high: medium sent as high")
    );
    assert_eq!(pro(High).note, None);
    assert_eq!(
        table.fit("models/gemini-3.1-pro-preview", Minimal).sent,
        Low
    );
    let rules = ModelRules {
        source: "s".into(),
        date: "d".into(),
        thinking_level: Some(vec![Low]),
        thinking_budget: None,
        reasoning_effort: None,
        max_tokens_field: None,
        max_output_tokens: None,
    };
    assert_eq!(rules.fit(High), Low, "nothing higher: the highest it has");
    let unknown = table.fit("gemini-9-ultra", Medium);
    assert_eq!(unknown.sent, Medium);
    assert!(
        unknown
            .note
            .unwrap()
            .contains("its thinking rules are unknown")
    );
}

#[test]
fn budget_models_get_a_budget_and_level_models_a_level() {
    let table = ModelTable::embedded();
    assert_eq!(
        table.control("gemini-2.5-pro", Minimal),
        GeminiThinking::Budget(128)
    );
    assert_eq!(
        table.control("gemini-2.5-flash", Minimal),
        GeminiThinking::Budget(0)
    );
    assert_eq!(
        table.control("gemini-2.5-flash", High),
        GeminiThinking::Budget(24_576)
    );
    assert_eq!(
        table.control("gemini-2.5-pro", Medium),
        GeminiThinking::Budget(8_192)
    );
    assert_eq!(
        table.control("gemini-3-pro-preview", High),
        GeminiThinking::Level(High)
    );
    assert_eq!(table.fit("gemini-2.5-pro", Minimal).note, None);
}

#[test]
fn a_forced_level_the_model_lacks_is_refused_naming_its_levels() {
    let table = ModelTable::embedded();
    assert_eq!(
        table
            .check_forced("gemini-3-pro-preview", Minimal)
            .unwrap_err()
            .to_string(),
        "gemini-3-pro-preview takes low or high, not minimal"
    );
    assert!(table.check_forced("gemini-3-pro-preview", Low).is_ok());
    assert!(table.check_forced("gemini-9-ultra", Minimal).is_ok());
}

#[test]
fn max_output_tokens_lowers_the_cap_and_never_raises_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("models.yaml");
    std::fs::write(
        &path,
        "models:\n  smollm2:\n    source: s\n    date: d\n    maxTokensField: max_tokens\n    maxOutputTokens: 512\n",
    )
    .unwrap();
    let table = ModelTable::embedded().with_file(&path).unwrap();
    assert_eq!(table.output_cap("smollm2", 8000), 512);
    assert_eq!(table.output_cap("smollm2", 100), 100, "a lower ask stays");
    assert_eq!(
        table.output_cap("gpt-5-mini", 8000),
        8000,
        "no cap: as asked"
    );
    assert_eq!(table.output_cap("not-in-the-table", 8000), 8000);

    // A cap alone is a model's whole entry (an OpenAI-compatible model
    // without reasoning).
    std::fs::write(
        &path,
        "models:\n  tiny:\n    source: s\n    date: d\n    maxOutputTokens: 64\n",
    )
    .unwrap();
    let table = ModelTable::embedded().with_file(&path).unwrap();
    assert_eq!(table.output_cap("tiny", 8000), 64);

    for cap in [0, 8001] {
        std::fs::write(
            &path,
            format!("models:\n  tiny:\n    source: s\n    date: d\n    maxOutputTokens: {cap}\n"),
        )
        .unwrap();
        let error = ModelTable::embedded().with_file(&path).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "--models `{}`: model `tiny`: maxOutputTokens {cap} is not between 1 and 8000 (it lowers a turn's cap of 8000, never raises it)",
                path.display()
            )
        );
    }
}
