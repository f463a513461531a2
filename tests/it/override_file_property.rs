//! Property: an override file written for the Prompt Lab page
//! (`render_override_file` + `save_override_file`) is read back by
//! `--overrides FILE`'s reader (`OverrideSet::load`) to exactly the texts
//! that were saved — trailing newlines, leading spaces, CRLF, U+FEFF, `#`,
//! `: `, quotes, YAML indicators and control characters included — so its
//! fingerprint is the one the page showed. The oracle is the reader's
//! parse of the bytes on disk, not the writer.

use std::collections::BTreeMap;

use promptlab::prompts::override_file::{
    OverrideFileName, render_override_file, save_override_file,
};
use promptlab::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};
use proptest::prelude::*;

/// Pieces that YAML treats specially, mixed with ordinary text.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        Just("\r".to_string()),
        Just("\u{feff}".to_string()),
        Just("  ".to_string()),
        Just("\t".to_string()),
        Just("# not a comment".to_string()),
        Just("key: value".to_string()),
        Just("- item".to_string()),
        Just("---".to_string()),
        Just("...".to_string()),
        Just("\"quoted\"".to_string()),
        Just("'single'".to_string()),
        Just("|".to_string()),
        Just(">".to_string()),
        Just("&anchor *alias !tag %dir @at `tick`".to_string()),
        Just("{{assistant}}".to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("0x1F".to_string()),
        Just("\u{0}\u{7}\u{1b}\u{7f}\u{85}\u{2028}".to_string()),
        Just("£350 — naïve 中文 🙂".to_string()),
        "[a-zA-Z .,]{0,12}",
        any::<String>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..8).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_saved_file_reads_back_to_the_same_texts(
        texts in prop::collection::btree_map(
            prop_oneof![Just("system.base".to_string()), Just("system.safety".to_string()), "[a-z]{1,8}\\.[a-z]{1,8}"],
            text(),
            1..4,
        )
    ) {
        let dir = tempfile::tempdir().unwrap();
        let yaml = render_override_file(&texts).expect("every string can be written");
        let name = OverrideFileName::parse("lab").unwrap();
        let path = save_override_file(dir.path(), &name, &yaml, false).unwrap();
        let loaded = OverrideSet::load(&[path]).unwrap();
        prop_assert_eq!(&loaded.prompts, &texts);
        let registry = PromptRegistry::embedded();
        prop_assert_eq!(
            fingerprint(&resolve_overrides(&loaded.prompts, registry).applied),
            fingerprint(&resolve_overrides(&texts, registry).applied)
        );
    }

    #[test]
    fn names_never_panic_and_follow_the_rule(name in any::<String>()) {
        let oracle = regex_lite_rule(&name);
        prop_assert_eq!(OverrideFileName::parse(&name).is_ok(), oracle);
    }
}

/// The rule as the issue states it, as a regex.
fn regex_lite_rule(name: &str) -> bool {
    regex::Regex::new(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")
        .unwrap()
        .is_match(name)
}

#[test]
fn an_existing_file_is_kept_unless_replaced_and_a_link_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let name = OverrideFileName::parse("mine").unwrap();
    let first = BTreeMap::from([("system.base".to_string(), "one".to_string())]);
    let second = BTreeMap::from([("system.base".to_string(), "two".to_string())]);
    let path = save_override_file(
        dir.path(),
        &name,
        &render_override_file(&first).unwrap(),
        false,
    )
    .unwrap();
    let refused = save_override_file(
        dir.path(),
        &name,
        &render_override_file(&second).unwrap(),
        false,
    );
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("`mine.yaml` exists"),
        "a second save without replace is refused"
    );
    assert_eq!(
        OverrideSet::load(std::slice::from_ref(&path))
            .unwrap()
            .prompts,
        first
    );
    save_override_file(
        dir.path(),
        &name,
        &render_override_file(&second).unwrap(),
        true,
    )
    .unwrap();
    assert_eq!(OverrideSet::load(&[path]).unwrap().prompts, second);

    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "keep me").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("linked.yaml")).unwrap();
    let linked = OverrideFileName::parse("linked").unwrap();
    let yaml = render_override_file(&first).unwrap();
    assert!(save_override_file(dir.path(), &linked, &yaml, false).is_err());
    save_override_file(dir.path(), &linked, &yaml, true).unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");
    assert!(!dir.path().join("linked.yaml").is_symlink());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files are left");
}

#[test]
fn a_multi_line_text_is_written_as_a_block_a_person_can_edit() {
    let texts = BTreeMap::from([(
        "system.base".to_string(),
        "You are {{assistant}}.\nAnswer briefly.\n".to_string(),
    )]);
    let yaml = render_override_file(&texts).unwrap();
    assert!(
        yaml.contains("system.base: |\n    You are {{assistant}}.\n    Answer briefly.\n"),
        "{yaml}"
    );
}
