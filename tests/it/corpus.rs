//! The claim corpus and the default prompts: what the corpus promises to
//! cover (so that a later edit cannot quietly drop a hard case), and that
//! every quick action assembles for a UK and a US claim.

use std::path::Path;

use chrono::NaiveDate;
use promptlab::chat::{Locale, PromptOptions, assemble_prompt, prompt_settings};
use promptlab::claims::{Claim, ClaimStore, load_claim_file};
use promptlab::prompts::PromptRegistry;

fn corpus() -> Vec<(String, Claim)> {
    let store = ClaimStore::new(concat!(env!("CARGO_MANIFEST_DIR"), "/claims"));
    store
        .entries()
        .unwrap()
        .into_iter()
        .map(|entry| {
            let loaded = load_claim_file(&entry.path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(loaded.claim.id, entry.id, "a store file carries its own id");
            (entry.path.display().to_string(), loaded.claim)
        })
        .collect()
}

#[test]
fn the_corpus_covers_what_the_readme_says_it_covers() {
    let claims = corpus();
    assert!(claims.len() >= 24, "{} claims", claims.len());
    let has = |predicate: &dyn Fn(&Claim) -> bool| claims.iter().any(|(_, claim)| predicate(claim));
    let lines: std::collections::BTreeSet<&str> = claims
        .iter()
        .map(|(_, c)| c.line_of_business.as_str())
        .collect();
    for wanted in [
        "motor",
        "household",
        "commercial property",
        "employers' liability",
        "public liability",
        "travel",
        "pet",
        "marine cargo",
        "cyber",
    ] {
        assert!(
            lines
                .iter()
                .any(|line| line.to_lowercase().contains(wanted)),
            "no {wanted} claim in {lines:?}"
        );
    }
    for country in ["GB", "US"] {
        assert!(has(&|c| c.country.as_deref() == Some(country)), "{country}");
    }
    for status in [
        "first notification",
        "open",
        "settled",
        "closed",
        "declined",
        "reopened",
        "investigation",
    ] {
        assert!(
            has(&|c| c.status.to_lowercase().contains(status)),
            "status {status}"
        );
    }
    for flag in [
        "LATE_NOTIFICATION",
        "FRAUD_INDICATORS",
        "VULNERABLE_CUSTOMER",
        "LITIGATION",
        "SUBROGATION_POTENTIAL",
        "LARGE_LOSS",
    ] {
        assert!(
            has(&|c| c.risk_flags.iter().any(|f| f.code == flag)),
            "flag {flag}"
        );
    }
    let rows: Vec<usize> = claims.iter().map(|(_, c)| c.schedule.len()).collect();
    assert_eq!(rows.iter().min(), Some(&0));
    assert!(rows.iter().max() >= Some(&300));
    let documents: Vec<usize> = claims.iter().map(|(_, c)| c.file.len()).collect();
    assert_eq!(documents.iter().min(), Some(&0));
    assert!(documents.iter().max() >= Some(&60));
    let long_documents = claims
        .iter()
        .flat_map(|(_, c)| &c.file)
        .filter(|d| d.text.chars().count() >= 10_000)
        .count();
    assert!(long_documents >= 2, "{long_documents} long documents");
    // Hard cases.
    assert!(
        claims.iter().any(|(path, _)| path.ends_with(".yaml")),
        "one claim in YAML"
    );
    assert!(
        has(&|c| c.reference.is_none()
            && c.claimant.is_none()
            && c.financials.is_none()
            && c.file.is_empty()),
        "a claim with only the required fields"
    );
    assert!(
        has(&|c| {
            let mut currencies: Vec<&str> = c
                .schedule
                .iter()
                .filter_map(|r| r.claimed.as_ref())
                .map(|m| m.currency_or(c.currency()))
                .collect();
            currencies.sort();
            currencies.dedup();
            currencies.len() >= 2
        }),
        "amounts in several currencies"
    );
    assert!(
        has(&|c| c.file.iter().any(|d| d
            .text
            .to_lowercase()
            .contains("ignore your previous instructions"))),
        "a document that tries to instruct the assistant"
    );
    assert!(
        has(&|c| c
            .claimant
            .as_ref()
            .and_then(|p| p.display_name())
            .is_some_and(|n| !n.is_ascii())),
        "non-ASCII names"
    );
}

#[test]
fn every_quick_action_assembles_for_a_uk_and_a_us_claim() {
    let registry = PromptRegistry::embedded();
    assert!(registry.capabilities().len() >= 8);
    let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, locale) in [
        ("claims/CLM-HH-0001.json", Locale::Uk),
        ("claims/CLM-CPR-0003.json", Locale::Us),
    ] {
        let claim = load_claim_file(&root.join(file)).unwrap().claim;
        for capability in registry.capabilities() {
            let options = PromptOptions {
                capability: Some(capability.id.clone()),
                ..PromptOptions::default()
            };
            let settings = prompt_settings(&options, registry, &claim).unwrap();
            assert_eq!(
                settings.locale, locale,
                "{file}: the locale follows the claim's country"
            );
            let prompt = assemble_prompt(&settings, &claim, today);
            let ids: Vec<&str> = prompt.blocks.iter().map(|b| b.id.as_str()).collect();
            let locale_id = match locale {
                Locale::Uk => "system.locale_uk",
                Locale::Us => "system.locale_us",
            };
            let task_id = capability.prompt_id();
            assert_eq!(
                ids,
                [
                    "system.base",
                    "system.safety",
                    locale_id,
                    "claim.brief",
                    task_id.as_str()
                ]
            );
            let task = &prompt.blocks[4].text;
            assert!(
                task.starts_with(&format!("## Task: {}\n\n", capability.label)),
                "{task}"
            );
            assert!(
                task.contains("Tools first") || task.contains("tools"),
                "{}: the playbook says which tools to call first",
                capability.id
            );
            assert!(
                !prompt.system_text().contains("{{"),
                "{}: a placeholder was left unfilled",
                capability.id
            );
        }
    }
}
