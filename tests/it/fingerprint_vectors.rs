//! Every vector of `tests/data/fingerprint.json` (copied from the product's
//! shared test vectors): the canonical form and the fingerprint must match
//! to the character, so that the same Prompt Lab versions fingerprint the
//! same in a browser and here.

use std::collections::BTreeMap;

use promptlab::prompts::fingerprint::{canonical_form, fingerprint};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vector {
    name: String,
    applied: BTreeMap<String, String>,
    canonical: Option<String>,
    fingerprint: String,
}

#[test]
fn every_fingerprint_vector_matches() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fingerprint.json"
    ))
    .unwrap();
    let vectors: Vec<Vector> = serde_json::from_str(&text).unwrap();
    assert!(vectors.len() >= 5);
    for vector in vectors {
        assert_eq!(
            canonical_form(&vector.applied),
            vector.canonical,
            "{}",
            vector.name
        );
        assert_eq!(
            fingerprint(&vector.applied),
            vector.fingerprint,
            "{}",
            vector.name
        );
    }
}
