//! The body of `POST /api/chat` is outside input: no body panics the parser
//! (random bytes, random JSON-ish text, random damage to a valid body), and
//! every rejection is a message that starts with the field it names.

use promptlab::prompts::PromptRegistry;
use promptlab::serve::{RequestDefaults, parse_chat_body};
use proptest::prelude::*;

const STRUCTURE: &str = "[\\[\\]{}:,\"'\\- \n\tA-Za-z0-9.\\\\é😀\u{0}\u{FEFF}]{0,300}";

const VALID: &str = r#"{"claimId":"CLM-HH-0001","messages":[{"role":"user","text":"What is the excess?"}],"capability":"summary","locale":"uk","brand":"harbour","screenActions":true,"voice":false,"overrides":{"system.role":"x"},"model":"m","thinkingLevel":"low"}"#;

const FIELDS: &[&str] = &[
    "body:",
    "claim",
    "messages",
    "capability",
    "locale",
    "brand",
    "screenActions",
    "voice",
    "overrides",
    "model",
    "thinkingLevel",
];

fn check(bytes: &[u8]) {
    if let Err(error) = parse_chat_body(
        bytes,
        &RequestDefaults::default(),
        PromptRegistry::embedded(),
    ) {
        let message = error.to_string();
        assert!(
            FIELDS.iter().any(|field| message.starts_with(field)),
            "the message names a field: {message}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check(&bytes);
    }

    #[test]
    fn random_structure_never_panics(text in STRUCTURE) {
        check(text.as_bytes());
    }

    #[test]
    fn a_damaged_valid_body_never_panics(at in 0usize..400, remove in 0usize..20, insert in STRUCTURE) {
        let mut bytes = VALID.as_bytes().to_vec();
        let at = at % (bytes.len() + 1);
        let end = (at + remove).min(bytes.len());
        bytes.splice(at..end, insert.bytes());
        check(&bytes);
    }
}

#[test]
fn the_valid_body_is_accepted() {
    parse_chat_body(
        VALID.as_bytes(),
        &RequestDefaults::default(),
        PromptRegistry::embedded(),
    )
    .expect("the valid body parses");
}
