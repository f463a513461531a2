//! A prompt version's system text, shared by the turns that assemble it
//! with its SHA-256: an eval assembles the same text for every repeat and
//! variant of a claim × case, and hashing it (~9 KB) for the header's
//! `systemSha256` was a tenth of the prompt's cost per turn. Shared, the
//! same `Arc` reaches every call, which lets a provider keep the text's
//! JSON encoding by that `Arc` (`memo::ByAddress`) instead of escaping
//! ~9 KB each call (BENCHMARKS.md, issue #31).
//!
//! Keyed by the text itself: two turns share an entry only when their
//! texts are equal byte for byte (the map compares them on a hash match).

use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

use crate::digest::sha256_hex;
use crate::memo::Bounded;

/// Texts kept, and their bytes (`memo::Bounded`). An eval's repeats of a
/// claim × case come one after another (the matrix's innermost loop), and
/// at most `-j` of them run at once, so a few texts are all it reuses; a
/// bigger memo would only grow the peak memory of a corpus of many claims.
const KEPT_TEXTS: usize = 64;
const KEPT_BYTES: usize = 4 * 1024 * 1024;

/// A memo of shared texts; the process has one (`shared_system_text`).
struct SharedTexts(Mutex<Bounded<Arc<str>, Arc<str>>>);

impl SharedTexts {
    fn new() -> SharedTexts {
        SharedTexts(Mutex::new(Bounded::new(KEPT_TEXTS, KEPT_BYTES)))
    }

    fn share(&self, text: String) -> (Arc<str>, Arc<str>) {
        if let Some((shared, sha256)) = self.0.lock().get_key_value(text.as_str()) {
            return (Arc::clone(shared), Arc::clone(sha256));
        }
        let sha256: Arc<str> = sha256_hex(&text).into();
        let shared: Arc<str> = text.into();
        let bytes = shared.len() + sha256.len();
        self.0
            .lock()
            .insert(Arc::clone(&shared), Arc::clone(&sha256), bytes);
        (shared, sha256)
    }
}

/// `text` as one `Arc` for every turn with the same text, and its SHA-256
/// (lowercase hex).
pub fn shared_system_text(text: String) -> (Arc<str>, Arc<str>) {
    static TEXTS: OnceLock<SharedTexts> = OnceLock::new();
    TEXTS.get_or_init(SharedTexts::new).share(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_arc_and_each_has_its_own_digest() {
        let memo = SharedTexts::new();
        let texts = ["You are the assistant.", "You are the assistant!", ""];
        for _ in 0..3 {
            for text in texts {
                let (shared, sha256) = memo.share(text.to_string());
                assert_eq!(&*shared, text);
                assert_eq!(&*sha256, sha256_hex(text));
                let (again, _) = memo.share(text.to_string());
                assert!(Arc::ptr_eq(&shared, &again), "{text:?} shared");
            }
        }
    }

    #[test]
    fn a_text_too_big_to_keep_still_gets_its_digest() {
        let memo = SharedTexts::new();
        let text = "x".repeat(KEPT_BYTES / 16 + 1);
        let (shared, sha256) = memo.share(text.clone());
        assert_eq!(&*sha256, sha256_hex(&text));
        let (again, _) = memo.share(text);
        assert!(!Arc::ptr_eq(&shared, &again), "not kept");
    }
}
