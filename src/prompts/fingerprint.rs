//! The prompt fingerprint (SPEC §1.6): which Prompt Lab versions a turn ran.
//!
//! `default` when no override applied; otherwise the first 12 hex characters
//! of SHA-256 over the canonical form — the applied overrides sorted by id
//! (byte order) as a compact JSON array of `[id, text]` pairs, non-ASCII left
//! unescaped. serde_json's compact writer escapes exactly what a browser's
//! `JSON.stringify` escapes (`"`, `\`, and control characters, with the
//! short forms `\b \f \n \r \t` and lowercase `\u00xx` for the rest), which
//! the vectors in `tests/data/fingerprint.json` pin down.

use std::collections::BTreeMap;

use crate::digest::sha256_hex;

/// The fingerprint of a turn that applied no override.
pub const DEFAULT_FINGERPRINT: &str = "default";

/// The canonical form of the applied overrides, or `None` when there are none.
pub fn canonical_form(applied: &BTreeMap<String, String>) -> Option<String> {
    if applied.is_empty() {
        return None;
    }
    // A BTreeMap<String, _> iterates in byte order of its keys.
    let pairs: Vec<[&str; 2]> = applied
        .iter()
        .map(|(id, text)| [id.as_str(), text.as_str()])
        .collect();
    Some(serde_json::to_string(&pairs).expect("a list of string pairs always serializes"))
}

/// `default`, or 12 lowercase hex characters.
pub fn fingerprint(applied: &BTreeMap<String, String>) -> String {
    match canonical_form(applied) {
        None => DEFAULT_FINGERPRINT.to_string(),
        Some(canonical) => sha256_hex(canonical)[..12].to_string(),
    }
}

/// Whether `text` has the shape of a fingerprint (for telling fingerprints
/// from paths on the command line).
pub fn looks_like_fingerprint(text: &str) -> bool {
    text == DEFAULT_FINGERPRINT
        || (text.len() == 12 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}
